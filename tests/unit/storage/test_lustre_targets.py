"""The Lustre servers' side rendered from prod (render/lustre_targets.py): each target's mkfs.lustre argv, its
mount on the primary and the failover server, and `cf-lustre-format`, run for real against image files: it
refuses a device that holds a file system (a real ext4 made by mkfs.ext4, read by the real blkid), an
unconfirmed or foreign target, and a second format; mkfs.lustre is a recording stand-in (constructed: no
Lustre here)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from clusterforge.api import Checked
from clusterforge.model.services import failover_of

ROOT = Path(__file__).resolve().parents[3]


def test_every_target_on_its_server_and_its_failover(prod: Checked, files: dict[str, str]) -> None:
    (fs,) = prod.index.inv.lustre
    nids = prod.index.addresses.nids[0]
    for t in fs.targets:
        name = f"{fs.name}-{t.kind.upper()}{t.index:04x}"
        partner = failover_of(fs, t)
        mine = json.loads(files[f"hosts/{t.server}/etc/clusterforge/lustre/{name}.json"])
        assert mine == json.loads(files[f"hosts/{partner}/etc/clusterforge/lustre/{name}.json"])
        argv = mine["mkfs"]
        assert argv[0] == "mkfs.lustre" and argv[-1] == t.block_device
        assert f"--{t.kind}" in argv and f"--index={t.index}" in argv and f"--fsname={fs.name}" in argv
        if t.mgs:
            assert "--mgs" in argv and not any(a.startswith("--mgsnode=") for a in argv)
        else:
            assert [a for a in argv if a.startswith("--mgsnode=")] == [f"--mgsnode={n}" for n in nids]
        service = [a.split("=", 1)[1] for a in argv if a.startswith("--servicenode=")]
        assert len(service) == 2 and all(n.endswith(f"@{fs.lnet}") for n in service)
        unit = f"etc/systemd/system/mnt-lustre-{fs.name}-{name.split('-')[1]}.mount"
        primary, failover = files[f"hosts/{t.server}/{unit}"], files[f"hosts/{partner}/{unit}"]
        assert "WantedBy=multi-user.target" in primary and "ConditionPathExists=" + mine["marker"] in primary
        assert "[Install]" not in failover and "ConditionPathExists" not in failover
    assert not any(p.startswith("hosts/gpu") and "/lustre/" in p for p in files)  # clients get none of it


def _format_env(tmp: Path, files: dict[str, str], device: Path) -> tuple[Path, Path, dict[str, str]]:
    script = tmp / "cf-lustre-format"
    script.write_text(files["hosts/lus01/usr/local/lib/clusterforge/cf-lustre-format"])
    conf = tmp / "conf"
    conf.mkdir()
    t = json.loads(files["hosts/lus01/etc/clusterforge/lustre/lfs01-OST0000.json"])
    t["mkfs"][-1] = t["device"] = str(device)
    t["marker"] = str(tmp / "markers" / "lfs01-OST0000.formatted")
    (conf / "lfs01-OST0000.json").write_text(json.dumps(t))
    stub = tmp / "bin"
    stub.mkdir()
    (stub / "mkfs.lustre").write_text(f'#!/bin/sh\necho "$@" >> {tmp}/mkfs.log\n')  # constructed stand-in
    (stub / "mkfs.lustre").chmod(0o755)
    env = {**os.environ, "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}{os.pathsep}/usr/sbin:/sbin"}
    return script, conf, env


def _fmt(script: Path, conf: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), "lfs01-OST0000", "--config", str(conf), "--node", "lus01",
                           "--allow-file", *args], capture_output=True, text=True, timeout=120, env=env, check=False)


def test_format_refuses_what_would_destroy_data_and_formats_once(files: dict[str, str], tmp_path: Path) -> None:
    image = tmp_path / "ost0.img"
    with image.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # blank: no signature
    script, conf, env = _format_env(tmp_path, files, image)
    ok = "--confirm", "lfs01-OST0000"
    assert _fmt(script, conf, env).returncode == 1  # no --confirm
    r = _fmt(script, conf, env, "--confirm", "lfs01-OST0001")
    assert r.returncode == 1 and "repeat its name" in r.stderr
    r = subprocess.run([sys.executable, str(script), "lfs01-OST0000", "--config", str(conf), "--node", "lus02",
                        "--allow-file", *ok], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert r.returncode == 1 and "served by lus01" in r.stderr  # the failover server does not format
    r = _fmt(script, conf, env, *ok, "--dry-run")
    assert r.returncode == 0 and r.stdout.startswith("would run: mkfs.lustre --fsname=lfs01 --ost --index=0")
    assert not (tmp_path / "mkfs.log").exists()
    r = _fmt(script, conf, env, *ok)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mkfs.log").read_text().split()[-1] == str(image)
    r = _fmt(script, conf, env, *ok)  # once only
    assert r.returncode == 1 and "formatted before" in r.stderr
    assert len((tmp_path / "mkfs.log").read_text().splitlines()) == 1


def test_format_refuses_a_device_that_holds_a_file_system(files: dict[str, str], tmp_path: Path) -> None:
    image = tmp_path / "used.img"
    with image.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    mkfs = shutil.which("mkfs.ext4", path="/usr/sbin:/sbin:/usr/bin")
    assert mkfs is not None, "e2fsprogs (mkfs.ext4) is needed: .ci/run installs it"
    subprocess.run([mkfs, "-q", "-F", str(image)], check=True, capture_output=True, timeout=120)
    script, conf, env = _format_env(tmp_path, files, image)
    r = _fmt(script, conf, env, "--confirm", "lfs01-OST0000")
    assert r.returncode == 1 and "holds ext4" in r.stderr
    assert not (tmp_path / "mkfs.log").exists()
    r = _fmt(script, conf, env, "--confirm", "lfs01-OST0000", "--dry-run")  # not even in a dry run
    assert r.returncode == 1
