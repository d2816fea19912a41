"""Small helpers shared by the parser tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.parse import ParseError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture(rel: str) -> str:
    """Text of ``tests/fixtures/<rel>`` (``rel`` without ``.txt``)."""
    return (FIXTURES / f"{rel}.txt").read_bytes().decode("utf-8")


def raises_at(fn: object, text: str, line_no: int | None = None) -> ParseError:
    """Assert ``fn(text)`` raises ParseError (at ``line_no`` if given) and return it."""
    with pytest.raises(ParseError) as info:
        fn(text)  # type: ignore[operator]
    err = info.value
    if line_no is not None:
        assert err.line_no == line_no, str(err)
    assert str(err).startswith(f"line {err.line_no}: ")
    return err
