"""A deploy record that is not as a deploy wrote it never makes retire remove anything (#33): corrupt, cut
short, of a future version, of the wrong shape, failing its checksum, or another environment's, it is refused
with the path and what to do, and the deploy stops before any host is touched. Hostile paths inside a
record that reads are never removed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployError, DeployRequest, deploy_targets, plans_for
from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.record import RECORD_FILE, RECORD_VERSION, RecordError, _checksum, read_record, update_record
from clusterforge.deploy.retire import retire_component
from clusterforge.deploy.runner import HostResult

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The lab deployed whole, as its record reads back (version 3, checksummed)."""
    record = tmp_path_factory.mktemp("record")
    plans = plans_for(LAB, DeployRequest(), None, load_checked(LAB).index, whole=True)
    update_record(record, plans.values(), [HostResult(n, "changed") for n in plans], engine="pyinfra", env=LAB,
                  targets={n: f"ssh:{p.address}" for n, p in plans.items()})
    doc: dict[str, Any] = json.loads((record / RECORD_FILE).read_text())
    assert doc["version"] == RECORD_VERSION == 3 and doc["env"] == "lab" and doc["sha256"] == _checksum(doc["hosts"])
    return doc


def _write(where: Path, doc: Any, *, resign: bool = True) -> Path:
    if resign and isinstance(doc, dict) and isinstance(doc.get("hosts"), dict):
        doc = {**doc, "sha256": _checksum(doc["hosts"])}
    (where / RECORD_FILE).write_text(json.dumps(doc))
    return where


def _refused(where: Path, says: str, env: str | None = "lab") -> str:
    with pytest.raises(RecordError) as exc:
        read_record(where, env)
    text = str(exc.value)
    assert text.startswith(str(where / RECORD_FILE)), text
    assert says in text, text
    return text


def test_the_good_record_reads(good: dict[str, Any], tmp_path: Path) -> None:
    assert read_record(_write(tmp_path, good), "lab") == good["hosts"]


@pytest.mark.parametrize(("version", "says"), [
    ("4", "written by a newer clusterforge"), ("99", "written by a newer clusterforge"), ("0", "version 0"),
    ('"3"', "version '3'"), ("null", "version None"), ("true", "version True"), ("3.0", "version 3.0"),
    ("1" * 5000, "not a deploy record"),  # past Python's int-from-text limit: refused, never a traceback
], ids=["4", "99", "0", "text", "null", "true", "float", "5000-digits"])
def test_a_version_this_release_does_not_know(good: dict[str, Any], tmp_path: Path, version: str,
                                              says: str) -> None:
    body = json.dumps({**good, "version": "@V@"}).replace('"@V@"', version)
    (tmp_path / RECORD_FILE).write_text(body)
    _refused(tmp_path, says)


def _edit(good: dict[str, Any], change: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(good))
    change(doc["hosts"])
    return dict(doc)


@pytest.mark.parametrize(("change", "says"), [
    (lambda h: h.update(gpu01=[]), "hosts.gpu01: input should be a valid dictionary"),
    (lambda h: h["gpu01"].update(components="base"), "hosts.gpu01.components: input should be a valid dict"),
    (lambda h: h["gpu01"].update(target=7), "hosts.gpu01.target: input should be a valid string"),
    (lambda h: h["gpu01"].pop("components"), "hosts.gpu01.components: field required"),
    (lambda h: h["gpu01"]["components"]["base"].update(files="/etc/x"), "hosts.gpu01.components.base"),
    (lambda h: h["gpu01"]["components"]["base"]["files"].append(3), "hosts.gpu01.components.base"),
    (lambda h: h["gpu01"]["components"]["base"].update(rm=["/"]), "hosts.gpu01.components.base"),
    (lambda h: h["gpu01"].update(extra=1), "hosts.gpu01.extra: extra inputs are not permitted"),
])
def test_a_field_of_the_wrong_shape(good: dict[str, Any], tmp_path: Path, change: Any, says: str) -> None:
    text = _refused(_write(tmp_path, _edit(good, change)), says)
    assert "move it away" in text


def test_a_record_edited_by_hand_fails_its_checksum(good: dict[str, Any], tmp_path: Path) -> None:
    doc = _edit(good, lambda h: h["gpu01"]["components"]["base"]["files"].append("/etc/ssh/sshd_config"))
    _refused(_write(tmp_path, doc, resign=False), "checksum does not match")
    _refused(_write(tmp_path, {k: v for k, v in doc.items() if k != "sha256"}, resign=False), "without its checksum")


def test_a_record_of_another_environment(good: dict[str, Any], tmp_path: Path) -> None:
    _refused(_write(tmp_path, {**good, "env": "prod"}), "written for environment 'prod', not 'lab'")


@pytest.mark.parametrize("body", [
    b"", b"{", b"[]", b"null", b'{"version": 3}', b"\x00" * 64, "{}".encode("utf-16"), b"[" * 100_000,
    b'{"version": 3, "hosts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
])
def test_garbage_is_refused_not_a_traceback(tmp_path: Path, body: bytes) -> None:
    (tmp_path / RECORD_FILE).write_bytes(body)
    _refused(tmp_path, "move it away")


def test_cut_short_at_every_tenth_of_its_length(good: dict[str, Any], tmp_path: Path) -> None:
    text = json.dumps({**good})
    for k in range(1, 10):
        (tmp_path / RECORD_FILE).write_text(text[: len(text) * k // 10])
        _refused(tmp_path, "not a deploy record")


@pytest.mark.parametrize("kind", ["directory", "fifo", "loop", "dangling"])
def test_a_record_that_is_no_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / RECORD_FILE
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path)
    else:
        path.symlink_to(tmp_path / "gone")
    _refused(tmp_path, "not a deploy record")


def test_the_deploy_is_refused_before_any_host(good: dict[str, Any], tmp_path: Path) -> None:
    """The run stops at the record: no plan is made, so no retire and no connection."""
    _write(tmp_path, {**good, "version": 4})
    req, index = DeployRequest(record_dir=tmp_path), load_checked(LAB).index
    with pytest.raises(DeployError, match="written by a newer clusterforge"), deploy_targets(LAB, req, index):
        pytest.fail("targets were made from a record that cannot be read")


def test_hostile_paths_in_a_record_that_reads_are_never_removed(good: dict[str, Any]) -> None:
    """A record that reads (a version 2 one has no checksum) names files no component wants any more: only
    those in the trees the deploy writes, normal, and not one a host cannot do without, are removed."""
    plans = plans_for(LAB, DeployRequest(), None, load_checked(LAB).index, whole=True)
    hostile = ["/", "/etc", "/etc/passwd", "/etc/shadow", "/etc/fstab", "/etc/hosts", "/root/.ssh/authorized_keys",
               "/boot/vmlinuz", "/var/lib/dpkg/status", "/usr/bin/sudo", "/etc/../root/x", "/etc//x", "etc/x",
               "/etc/x\n/etc/passwd", "/usr/local/../bin/x", "/etc/cf-old.conf", "/usr/local/sbin/cf-old"]
    recorded = {"base": {"digest": "x", "services": [], "holds": [], "files": hostile}}
    retire = retire_component(plans["gpu01"], recorded, COMPONENTS)
    assert retire is not None and retire.remove == ("/etc/cf-old.conf", "/usr/local/sbin/cf-old")
