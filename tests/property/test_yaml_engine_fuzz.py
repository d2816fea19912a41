"""Fuzz the YAML engine: yaml-rs never fails but with a syntax error, and agrees with the fallback on structure."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.inventory import yaml_engine
from clusterforge.inventory.load_text import alias_bomb, read_text
from clusterforge.inventory.yaml_engine import YamlSyntaxError, loads, loads_pyyaml
from clusterforge.util.errors import InventoryIssue

ERRORS = Path(__file__).resolve().parents[1] / "errors"

# YAML's punctuation and the scalars that decide types, so random text reaches the parser's corners
TOKENS = [":", " ", "\n", "- ", "[", "]", "{", "}", ",", "&a", "*a", "!!str", "!", "|", ">", "'", '"', "#",
          "? ", "---", "...", "%YAML 1.2", "\t", "  ", "a", "0o17", "1_0", "~", "null", "true", ".inf",
          "\\", "é", "\u2028", "<<", "@", "`", "%", "0x", "1e3", "-"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map("".join))
def test_yaml_rs_gives_a_value_or_a_syntax_error(text: str) -> None:
    _yaml_rs_itself(text)


def _yaml_rs_itself(text: str) -> None:
    """yaml-rs without the engine's fallback: a panic (BaseException) here fails the test."""
    assert yaml_engine._yaml_rs is not None
    with contextlib.suppress(yaml_engine._yaml_rs.YAMLDecodeError, RecursionError):
        yaml_engine._yaml_rs.loads(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_unicode_text_gives_a_value_or_a_syntax_error(text: str) -> None:
    _yaml_rs_itself(text)


_scalars = (
    st.none() | st.booleans() | st.integers(-(2**62), 2**62)
    | st.floats(allow_nan=False, allow_infinity=True, width=64) | st.text(max_size=20)
)
_data = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40,
)


class _QuotingDumper(yaml.SafeDumper):
    """Every string double-quoted: the text's structure and numbers are what both engines must agree on."""


_QuotingDumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style='"'))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(_data, st.booleans())
def test_both_engines_read_dumped_data_back_alike(data: Any, flow: bool) -> None:
    text = yaml.dump({"root": data}, Dumper=_QuotingDumper, default_flow_style=flow, allow_unicode=True)
    rs, py = loads(text), loads_pyyaml(text)
    assert _same(rs, py), text
    assert _same(rs, {"root": data}), text


CORPUS = sorted(ERRORS.glob("*/*.yaml"))


@pytest.mark.parametrize("file", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_error_corpus_reads_alike_or_fails_alike(file: Path) -> None:
    text = read_text(file)
    if isinstance(text, InventoryIssue) or alias_bomb(file, text) is not None:
        # refused by the guards before any parser sees it: those cases and no others
        assert file.parent.name in {"non-utf8-bytes", "nul-byte-mid-file", "yaml-alias-bomb", "yaml-recursive-alias"}
        return
    outcomes = []
    for parse in (yaml_engine.loads, yaml_engine.loads_pyyaml):
        try:
            outcomes.append(("ok", parse(text)))
        except YamlSyntaxError:
            outcomes.append(("error", None))
    assert outcomes[0][0] == outcomes[1][0]
    assert _same(outcomes[0][1], outcomes[1][1])
