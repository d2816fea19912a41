"""Mount units are named as systemd names them (#40): the escaping against the real `systemd-escape --path
--suffix=mount` over a table of paths, the writer accepting every name it produces, a valid Lustre or PCC mount
point (`/lustre/lfs-01`, `/mnt/pcc-cache`, `/mnt/.pcc`) rendered and written, and `check` refusing a mount
point systemd cannot name, with the field and why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _storage_util import data, index_of, issues

from clusterforge.render import render_environment
from clusterforge.render.writer import read_manifest, write_tree
from clusterforge.util.systemd_unit import UNIT_NAME_MAX, UnitNameError, escape_path, mount_unit

SYSTEMD_ESCAPE = shutil.which("systemd-escape") or "/bin/systemd-escape"  # systemd is in scripts/lab-deps.sh

PATHS = [
    "/lustre/lfs01", "/lustre/lfs-01", "/mnt/pcc-cache", "/mnt/.pcc", "/.pcc", "/.hidden/x.y", "/a..b/..c",
    "/mnt/a.b.c", "/-lead", "/trail-", "/a--b", "/a:b", "/a_b", "/a b", "/a\\b", "/a~b", "/a%b", "/a+b@c",
    "/mnt/é", "/mnt/日本", "/mnt/ü-ß", "//lustre//lfs01", "/a/./b", "/a/", "/a//b/", "/", "//", "/x" * 60,
]


def _systemd(path: str) -> str:
    run = subprocess.run([SYSTEMD_ESCAPE, "--path", "--suffix=mount", path], capture_output=True, text=True,
                         timeout=10, check=True)
    return run.stdout.rstrip("\n")


@pytest.mark.parametrize("path", PATHS)
def test_the_unit_name_is_systemd_escapes(path: str) -> None:
    assert mount_unit(path) == _systemd(path)


@pytest.mark.parametrize("path", ["/a/../b", "/..", "/a/.."])
def test_a_path_with_dotdot_cannot_be_named_as_systemd_cannot(path: str) -> None:
    run = subprocess.run([SYSTEMD_ESCAPE, "--path", path], capture_output=True, text=True, timeout=10)
    assert run.returncode != 0  # systemd refuses it too
    with pytest.raises(UnitNameError, match="not a normalized path"):
        escape_path(path)


def test_a_name_over_systemds_limit_is_refused() -> None:
    ok = "/" + "a" * (UNIT_NAME_MAX - len(".mount"))
    assert len(mount_unit(ok)) == UNIT_NAME_MAX
    with pytest.raises(UnitNameError, match="at most 255"):
        mount_unit(ok + "a")
    with pytest.raises(UnitNameError, match="at most 255"):
        mount_unit("/" + "-" * 70)  # 70 characters, each escaped to 4


@pytest.mark.parametrize("path", PATHS)
def test_the_writer_accepts_every_name_the_escaping_produces(path: str, tmp_path: Path) -> None:
    rel = f"hosts/n1/etc/systemd/system/{mount_unit(path)}"
    write_tree(tmp_path, {rel: "[Mount]\n"})
    assert (tmp_path / rel).read_text() == "[Mount]\n"
    assert read_manifest(tmp_path) == [rel]


@pytest.mark.parametrize(("fs_mount", "pcc_mount"), [
    ("/lustre/lfs-01", "/mnt/pcc-cache"), ("/lustre/lfs01", "/mnt/.pcc"), ("/lustre/.lfs-01", "/mnt/pcc"),
])
def test_valid_mount_points_render_and_write(fs_mount: str, pcc_mount: str, tmp_path: Path) -> None:
    d = data()
    d["lustre"][0]["mount"] = fs_mount
    d["lustre"][0]["pcc"].update(mount=pcc_mount, block_device="/dev/md/pcc")  # the cache's own mount unit
    assert issues(d) == []
    files = render_environment(index_of(d), "mini")
    fs_unit, pcc_unit = _systemd(fs_mount), _systemd(pcc_mount)
    unit_path = f"hosts/gpu01/etc/systemd/system/{fs_unit}"
    assert f"Where={fs_mount}\n" in files[unit_path]
    assert f"hosts/gpu01/etc/systemd/system/{pcc_unit}" in files
    service = files["hosts/gpu01/etc/systemd/system/lustre-pcc-lfs01.service"]
    assert f"Requires={fs_unit} {pcc_unit}\n" in service and f"After={fs_unit} {pcc_unit}\n" in service
    report = write_tree(tmp_path, files)  # the writer takes what render names
    assert unit_path in report.written


def _mount_issues(d: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [i for i in issues(d) if i[0].endswith(".mount")]


def test_check_refuses_a_mount_point_systemd_cannot_name() -> None:
    d = data()
    d["lustre"][0]["mount"] = "/lustre/" + "-".join(["scratch"] * 40)
    d["lustre"][0]["pcc"]["mount"] = "/" + "-" * 80
    found = _mount_issues(d)
    assert [(p, r) for p, r, _ in found] == [("lustre[0].mount", "INV-STORAGE"), ("lustre[0].pcc.mount", "INV-STORAGE")]
    assert all("systemd names units of at most 255" in m for _, _, m in found)
    assert "needs a mount unit name of 449 characters" in found[0][2]


def test_check_refusal_is_reported_before_render_fails(tmp_path: Path) -> None:
    """The CLI: `check` exits 3 naming file:line and field; nothing reaches the writer."""
    import yaml
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    root = Path(__file__).resolve().parents[3]
    env = tmp_path / "env"
    shutil.copytree(root / "inventories" / "lab", env)
    services = env / "services.yaml"
    doc = yaml.safe_load(services.read_text())
    doc["lustre"][0]["mount"] = "/" + "-" * 80
    services.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = CliRunner().invoke(app, ["render", str(env), "--output", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "services.yaml:" in result.output and "lustre[0].mount:" in result.output
    assert "at most 255" in result.output
    assert not (tmp_path / "out").exists()
