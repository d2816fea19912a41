"""The deploy history is read defensively: damaged bytes are a clear error naming file, line and offset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.deploy.record import HISTORY_FILE, RecordError, last_deploy

ROOT = Path(__file__).resolve().parents[3]


def _history(tmp_path: Path, tail: bytes) -> Path:
    (tmp_path / HISTORY_FILE).write_bytes(json.dumps({"commit": "abc"}).encode() + b"\n" + tail)
    return tmp_path


def test_non_utf8_line_names_file_line_and_byte_offset(tmp_path: Path) -> None:
    _history(tmp_path, b'{"commit": "d\xffef"}\n')
    with pytest.raises(RecordError) as exc:
        last_deploy(tmp_path)
    assert str(exc.value).startswith(f"{tmp_path / HISTORY_FILE}:2: not valid UTF-8 (byte 0xff at byte offset 31)")


def test_a_line_cut_short_is_skipped(tmp_path: Path) -> None:
    _history(tmp_path, b'{"commit": "de')
    assert last_deploy(tmp_path) == {"commit": "abc"}


def test_unreadable_history_is_a_record_error(tmp_path: Path) -> None:
    (tmp_path / HISTORY_FILE).mkdir()
    with pytest.raises(RecordError, match="cannot read the deploy history"):
        last_deploy(tmp_path)


def test_diff_deployed_with_damaged_history_exits_2(tmp_path: Path) -> None:
    _history(tmp_path, b'{"commit": "\xfe"}\n')
    result = CliRunner().invoke(app, ["diff", str(ROOT / "inventories" / "lab"), "--deployed", "--record",
                                      str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "not valid UTF-8" in result.output and "Traceback" not in result.output


def test_non_utf8_record_names_line_and_offset(tmp_path: Path) -> None:
    from clusterforge.deploy.record import RECORD_FILE, read_record

    (tmp_path / RECORD_FILE).write_bytes(b'{"version": 1,\n "hosts": {"g\xe9": {}}}\n')
    with pytest.raises(RecordError) as exc:
        read_record(tmp_path)
    assert str(exc.value).startswith(f"{tmp_path / RECORD_FILE}:2: not valid UTF-8 (byte 0xe9 at byte offset 28)")
