"""The single exception type raised by every parser in :mod:`clusterforge.parse`."""

from __future__ import annotations

__all__ = ["ParseError"]


class ParseError(Exception):
    """Input that is not (complete, well-formed) output of the tool.

    Attributes:
        tool: parser name, one of the keys of ``clusterforge.parse.PARSERS``
            (or ``"ibnetdiscover-p"``).
        line_no: 1-based line number the problem was found on (1 for empty input).
        line: the offending line, verbatim ("" when the input ended early).
        message: human-readable description.

    ``str(err)`` is ``"line <line_no>: <message>"``.
    """

    tool: str
    line_no: int
    line: str
    message: str

    def __init__(self, tool: str, line_no: int, line: str, message: str) -> None:
        super().__init__(tool, line_no, line, message)
        self.tool = tool
        self.line_no = line_no
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"ParseError(tool={self.tool!r}, line_no={self.line_no}, "
            f"line={self.line!r}, message={self.message!r})"
        )
