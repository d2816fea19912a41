"""The JSON state files (plan file, apply journal, deploy record and history, validate's declared-fabric cache):
garbage in them is a clean refusal, or ignored and rebuilt, never a traceback (issue #27, class 5). Deep
nesting (100,000 levels), `/dev/zero` and a FIFO as the file, and a hypothesis fuzz of each reader with bounded
nesting and size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.day2.journal import Journal, JournalError
from clusterforge.day2.planfile import FORMAT, TOOL, PlanFile, PlanFileError, document_digest, read_plan_file
from clusterforge.deploy.record import HISTORY_FILE, RECORD_FILE, RecordError, last_deploy, read_record
from clusterforge.util.jsonstate import MAX_DEPTH, StateFileError, depth, loads, read_bytes
from clusterforge.validate import quick

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJ = '{"a":' * 100_000 + "1" + "}" * 100_000
CLI = str(Path(sys.executable).parent / "clusterforge")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])

# JSON values of bounded nesting and size, with the keys the readers look for
KEYS = st.sampled_from(["meta", "digest", "steps", "format", "tool", "env_path", "inventories", "record", "n",
                        "kind", "journal", "plan", "hosts", "version", "commit", "fast", "links", "switches",
                        "hcas", "locks", "key", "x"])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
VALUES = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(KEYS, kids, max_size=5),
                      max_leaves=30)


def test_loads_bounds_nesting_and_depth_skips_strings() -> None:
    for text in (DEEP, DEEP_OBJ, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        with pytest.raises(StateFileError, match="nested deeper"):
            loads(text)
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert depth(b'{"a": "[[[[\\"[[", "b": [1, {"c": []}]}') == 4
    with pytest.raises(ValueError):
        loads("[" * 10)  # not JSON: a ValueError like any other


def test_read_bytes_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="not a regular file"):
        read_bytes(Path("/dev/zero"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(StateFileError, match="not a regular file"):
        read_bytes(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(StateFileError, match="larger than"):
        read_bytes(big, max_bytes=1000)


# --- the plan file (apply) ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["deep-array", "deep-object", "dev-zero", "fifo", "directory"])
def test_apply_refuses_a_plan_file_cleanly(tmp_path: Path, kind: str) -> None:
    plan = tmp_path / "plan.json"
    if kind == "deep-array":
        plan.write_text(DEEP)
    elif kind == "deep-object":
        plan.write_text(DEEP_OBJ)
    elif kind == "dev-zero":
        plan = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(plan)
    else:
        plan.mkdir()
    proc = subprocess.run([CLI, "apply", str(plan), "--dry-run"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"apply: {plan}: ") and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 1000


def _plan_doc(doc: Any) -> Any:
    """`doc` made to pass the plan file's first gates when it is a dict (format, tool, digest), so that the fuzz
    reaches the steps and meta checks."""
    if isinstance(doc, dict):
        meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
        doc["meta"] = {**meta, "format": FORMAT, "tool": TOOL}
        doc["digest"] = document_digest(doc)
    return doc


@FUZZ
@given(doc=VALUES, shaped=st.booleans())
def test_fuzz_plan_file(tmp_path: Path, doc: Any, shaped: bool) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan_doc(doc) if shaped else doc))
    try:
        assert isinstance(read_plan_file(path), PlanFile)
    except PlanFileError as exc:
        assert str(exc).startswith(f"{path}: ")


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzz_plan_file_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(data)
    with pytest.raises(PlanFileError):
        read_plan_file(path)


# --- the apply journal --------------------------------------------------------------------------------------

def test_a_deep_journal_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json.journal"
    path.write_text(json.dumps({"journal": 1, "plan": "d"}) + "\n" + DEEP + "\n" + "{}\n")
    with pytest.raises(JournalError, match=":2: not a journal line"):
        Journal.open(path, "d")


@FUZZ
@given(lines=st.lists(VALUES, max_size=5), tail=st.binary(max_size=50))
def test_fuzz_journal(tmp_path: Path, lines: list[Any], tail: bytes) -> None:
    path = tmp_path / "plan.json.journal"
    path.write_bytes(b"".join(json.dumps(v).encode() + b"\n" for v in lines) + tail)
    try:
        assert isinstance(Journal.open(path, "d"), Journal)
    except JournalError as exc:
        assert str(exc).startswith(str(path))


# --- the deploy record and history ---------------------------------------------------------------------------

def test_a_deep_history_line_is_passed_over_and_a_deep_record_refused(tmp_path: Path) -> None:
    good = {"commit": "abc", "when": 1}
    (tmp_path / HISTORY_FILE).write_text(json.dumps(good) + "\n" + DEEP + "\n")
    assert last_deploy(tmp_path) == good
    (tmp_path / RECORD_FILE).write_text(DEEP_OBJ)
    with pytest.raises(RecordError, match="nested deeper"):
        read_record(tmp_path)


@FUZZ
@given(lines=st.lists(VALUES, max_size=5), tail=st.binary(max_size=50))
def test_fuzz_history(tmp_path: Path, lines: list[Any], tail: bytes) -> None:
    (tmp_path / HISTORY_FILE).write_bytes(b"".join(json.dumps(v).encode() + b"\n" for v in lines) + tail)
    try:
        run = last_deploy(tmp_path)
        assert run is None or isinstance(run, dict)
    except RecordError as exc:
        assert str(exc).startswith(str(tmp_path / HISTORY_FILE))


@FUZZ
@given(doc=VALUES)
def test_fuzz_record(tmp_path: Path, doc: Any) -> None:
    (tmp_path / RECORD_FILE).write_text(json.dumps(doc))
    try:
        assert isinstance(read_record(tmp_path), dict)
    except RecordError as exc:
        assert str(exc).startswith(str(tmp_path / RECORD_FILE))


# --- validate's declared-fabric cache ------------------------------------------------------------------------

@pytest.fixture
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(quick.STATE_DIR_ENV, str(tmp_path / "state"))
    env = tmp_path / "env"
    env.mkdir()
    (env / "a.yaml").write_text("site: {name: x}\n")
    quick.cache_path(env).parent.mkdir(parents=True)
    return env


def _write_cache(env: Path, body: bytes) -> None:
    import hashlib

    quick.cache_path(env).write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body + b"\n")


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJ])
def test_a_deep_cache_is_ignored(cache_env: Path, body: str) -> None:
    """With its digest line intact (RecursionError before): ignored, so the full run writes it again."""
    _write_cache(cache_env, body.encode())
    assert quick.read_cache(cache_env, "k") is None


@FUZZ
@given(doc=VALUES, keyed=st.booleans())
def test_fuzz_cache(cache_env: Path, doc: Any, keyed: bool) -> None:
    if keyed and isinstance(doc, dict):
        doc.update(format=quick.CACHE_FORMAT, key="k")
    _write_cache(cache_env, json.dumps(doc).encode())
    got = quick.read_cache(cache_env, "k")
    assert got is None or isinstance(got, dict)


def test_validate_with_a_deep_cache_runs_the_full_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = Path(__file__).resolve().parents[2] / "inventories" / "lab"
    monkeypatch.setenv(quick.STATE_DIR_ENV, str(tmp_path / "state"))
    quick.cache_path(lab).parent.mkdir(parents=True)
    _write_cache(lab, DEEP.encode())
    cap = tmp_path / "cap"
    (cap / "fabric").mkdir(parents=True)
    (cap / "fabric" / "ibnetdiscover.txt").write_text("#\n")
    assert quick.fast_validate(["validate", str(lab), "--from", str(cap), "--fabric-only"]) is None
    result = CliRunner().invoke(app, ["validate", str(lab), "--from", str(cap), "--fabric-only"])
    assert result.exit_code == 4, result.output
