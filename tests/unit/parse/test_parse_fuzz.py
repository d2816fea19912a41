"""Property tests: no parser raises anything but ParseError, whatever the input.

Inputs are random text, lines spliced from every fixture (all tools mixed), and
real fixtures mutated by truncation, line deletion/duplication/swaps and character
flips.  A successful parse must also be encodable by ``to_jsonable`` into plain JSON.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from _parse_fixtures import DIR_TO_TOOL, fixture_files, parse_fn, read_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.parse import PARSERS, ParseError, to_jsonable

TOOLS = sorted(set(DIR_TO_TOOL.values()))
ALL_TOOLS = sorted(set(TOOLS) | set(PARSERS))  # those without a real capture to mutate too (#33: every parser)
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MAX_FIXTURE = 120_000  # bytes; keeps the run short (the 300 KB fabric is covered elsewhere)


@cache
def texts_by_tool() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {t: [] for t in TOOLS}
    for path in fixture_files():
        if path.stat().st_size <= MAX_FIXTURE:
            out[DIR_TO_TOOL[path.parent.name]].append(read_text(path))
    return out


@cache
def all_lines() -> list[str]:
    return sorted({ln for texts in texts_by_tool().values() for t in texts
                   for ln in t.split("\n")})


def check(tool: str, text: str) -> None:
    try:
        records = parse_fn(tool)(text)
    except ParseError as err:
        assert err.tool == tool
        assert err.line_no >= 1
        assert str(err).startswith(f"line {err.line_no}: ")
        return
    assert records is not None
    out = to_jsonable(tool, records)
    assert json.loads(json.dumps(out)) == out


TOKENS = [
    *"\n\t \"'[]()#:=,-./0123456789abcdefxX@<>|\ré\x00",
    "GPU", "NIC", "Port", "CA", "Switch", "lid", "NV12", "\x1b[4m", "0x", "Link", "N/A",
]
NOISE = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(TOKENS), max_size=200).map("".join),
)


@st.composite
def mutated(draw: st.DrawFn, tool: str) -> str:
    texts = texts_by_tool()[tool]
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.split("\n")
        op = draw(st.sampled_from(["cut", "delete", "dup", "swap", "flip", "insert"]))
        if op == "cut":
            text = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
        elif op == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            text = "\n".join(lines)
        elif op == "dup" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif op == "swap" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif op == "flip" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + draw(st.sampled_from(list("\n\t x0:[]\"'#-9/\x00é"))) + text[i + 1:]
        elif op == "insert":
            i = draw(st.integers(0, len(lines)))
            lines.insert(i, draw(st.sampled_from(all_lines())))
            text = "\n".join(lines)
    return text


@pytest.mark.parametrize("tool", ALL_TOOLS)
@SETTINGS
@given(data=st.data())
def test_random_text(tool: str, data: st.DataObject) -> None:
    check(tool, data.draw(NOISE))


@pytest.mark.parametrize("tool", ALL_TOOLS)
@SETTINGS
@given(data=st.data())
def test_spliced_fixture_lines(tool: str, data: st.DataObject) -> None:
    lines = data.draw(st.lists(st.sampled_from(all_lines()), max_size=30))
    check(tool, "\n".join(lines))


@pytest.mark.parametrize("tool", TOOLS)
@SETTINGS
@given(data=st.data())
def test_mutated_fixtures(tool: str, data: st.DataObject) -> None:
    check(tool, data.draw(mutated(tool)))


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_every_fixture_of_other_tools(tool: str) -> None:
    """Feeding one tool's real output to another parser is handled (usually ParseError)."""
    for path in fixture_files():
        if path.stat().st_size <= MAX_FIXTURE:
            check(tool, read_text(path))


def test_fixture_count_sanity() -> None:
    assert sum(len(v) for v in texts_by_tool().values()) >= 80
    assert all(texts_by_tool()[t] for t in TOOLS), "every tool has a fixture to mutate"
    assert Path(__file__).name.startswith("test_parse_")
