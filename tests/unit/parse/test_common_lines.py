"""The parsers' shared line loop: non-blank lines, numbered as an editor numbers them."""

from __future__ import annotations

from clusterforge.parse._common import numbered, split_lines


def test_numbered_skips_blank_lines_and_keeps_editor_numbers() -> None:
    text = "first\n\n   \n  third  \r\nlast\n"
    assert list(numbered(split_lines(text))) == [
        (1, "first", "first"),
        (4, "  third  ", "third"),
        (5, "last", "last"),
    ]
    assert list(numbered([])) == [] and list(numbered(["", " \t"])) == []
