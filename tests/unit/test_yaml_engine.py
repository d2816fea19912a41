"""The YAML engine: yaml-rs first, PyYAML (YAML 1.2 core schema) as the fallback; where they agree and differ."""

from __future__ import annotations

import datetime
import glob
from pathlib import Path

import pytest

from clusterforge.inventory import yaml_engine
from clusterforge.inventory.load import load_inventory
from clusterforge.inventory.yaml_engine import YamlSyntaxError, loads, loads_pyyaml

ROOT = Path(__file__).resolve().parents[2]

# plain scalars both parsers resolve alike: the YAML 1.2 core schema
AGREE = {
    "yes": "yes", "on": "on", "off": "off", "y": "y", "tRUE": "tRUE",
    "true": True, "True": True, "FALSE": False,
    "null": None, "NULL": None, "~": None, "": None, "nULL": "nULL",
    "0o17": 15, "017": 17, "0777": 777, "0x1F": 31, "0x1f": 31, "-1": -1, "+12": 12, "00": 0,
    "1e3": 1000.0, "1.5E3": 1500.0, "1e-3": 0.001, ".5": 0.5, "-.5": -0.5, "1.": 1.0, "+1.5e+3": 1500.0,
    ".inf": float("inf"), "-.INF": float("-inf"), "inf": "inf", "nan": "nan",
    "1,000": "1,000", "1:2": "1:2", "0.0.0.0": "0.0.0.0", "1.2.3": "1.2.3", "0o8": "0o8", "0x": "0x",
    "2001-1-1": "2001-1-1", "leaf01/17": "leaf01/17", "10.0.0.1/24": "10.0.0.1/24",
}

# where yaml-rs goes past the core schema: the fallback keeps these as strings (docs/architecture.md)
DIFFER = {
    "1_000": (1000, "1_000"),
    "_1": (1, "_1"),
    "0b101": (5, "0b101"),
    "0O7": (7, "0O7"),
    "0X1F": (31, "0X1F"),
    "0x_1F": (31, "0x_1F"),
    "-0o17": (-15, "-0o17"),
    "1e1_0": (1e10, "1e1_0"),
    ".nAn": ("nan", ".nAn"),
    "2001-12-14": (datetime.date(2001, 12, 14), "2001-12-14"),
    "12:30:00": (datetime.time(12, 30), "12:30:00"),
}


@pytest.mark.parametrize("scalar", sorted(AGREE))
def test_both_engines_resolve_core_scalars_alike(scalar: str) -> None:
    rs, py = loads(f"a: {scalar}\n")["a"], loads_pyyaml(f"a: {scalar}\n")["a"]
    assert rs == AGREE[scalar] and py == AGREE[scalar]
    assert type(rs) is type(py)


@pytest.mark.parametrize("scalar", sorted(DIFFER))
def test_the_documented_differences_hold(scalar: str) -> None:
    rs_expected, py_expected = DIFFER[scalar]
    rs, py = loads(f"a: {scalar}\n")["a"], loads_pyyaml(f"a: {scalar}\n")["a"]
    if rs_expected == "nan":
        assert rs != rs  # NaN
    else:
        assert rs == rs_expected
    assert py == py_expected


def test_nan_agrees_where_core_spells_it() -> None:
    for spelling in (".nan", ".NaN", ".NAN"):
        rs, py = loads(f"a: {spelling}")["a"], loads_pyyaml(f"a: {spelling}")["a"]
        assert rs != rs and py != py


@pytest.mark.parametrize("text", ["a: 1\na: 2\n", "a: [1, 2\n", "a: *undefined\n", "- a\nb: c\n", "a: b: c\n"])
def test_both_engines_refuse_broken_text(text: str) -> None:
    with pytest.raises(YamlSyntaxError):
        loads(text)
    with pytest.raises(YamlSyntaxError):
        loads_pyyaml(text)


def test_merge_keys_are_plain_keys_in_both() -> None:
    text = "b: &x {k: 1}\nc:\n  <<: *x\n  j: 2\n"
    assert loads(text) == loads_pyyaml(text) == {"b": {"k": 1}, "c": {"<<": {"k": 1}, "j": 2}}


@pytest.mark.parametrize("env", ["lab", "staging", "prod"])
def test_every_shipped_environment_reads_the_same_with_either_engine(env: str) -> None:
    files = sorted(glob.glob(str(ROOT / "inventories" / env / "*.yaml")))
    assert files
    for file in files:
        text = Path(file).read_text()
        assert loads(text) == loads_pyyaml(text), file


@pytest.mark.parametrize("env", ["lab", "prod"])
def test_the_fallback_engine_loads_the_same_inventory(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = load_inventory(ROOT / "inventories" / env)
    monkeypatch.setenv(yaml_engine.ENGINE_ENV, "pyyaml")
    assert yaml_engine.engine() == "pyyaml"
    assert load_inventory(ROOT / "inventories" / env) == fast


def test_the_engine_is_chosen_by_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(yaml_engine.ENGINE_ENV, raising=False)
    assert yaml_engine.engine() == "yaml-rs"
    monkeypatch.setenv(yaml_engine.ENGINE_ENV, "PyYAML")
    assert yaml_engine.engine() == "pyyaml"
    assert loads("a: 017") == {"a": 17}  # the fallback, by the core schema


def test_yaml_rs_is_pinned_exactly() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '"yaml-rs==' in text
