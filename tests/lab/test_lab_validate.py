"""End to end on the lab inventory: up -> validate clean -> each fault kind -> validate reports
exactly that fault with its repair -> heal -> clean -> down, nothing left running.

Runs the real commands (`clusterforge lab ...`, `clusterforge validate`) against real podman
containers with sshd, ibsim, OpenSM and infiniband-diags. Uses its own copy of the lab
inventory on its own subnet and lab root, so a developer's running lab is left alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf
from clusterforge.api import load_checked
from clusterforge.parse import ibroute
from clusterforge.validate.routes import uplinks

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("podman") is None or shutil.which("ibsim") is None:
        pytest.fail("the lab needs podman and ibsim: run scripts/lab-deps.sh (CI does)")
    base = tmp_path_factory.mktemp("labe2e")
    env = base / "labe2e"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    # the management /24 moved (and its frozen addresses with it) so a developer's lab is left alone
    for name in ("services.yaml", "addresses.generated.yaml"):
        f = env / name
        f.write_text(f.read_text().replace("198.18.10.", "198.18.20."))
    mp = pytest.MonkeyPatch()
    mp.setenv("CLUSTERFORGE_LAB_ROOT", str(base / "state"))
    code, out = cf("lab", "up", str(env))
    assert code == 0, out
    assert "OpenSM on sm01" in out
    yield env
    code, out = cf("lab", "down", str(env))
    mp.undo()
    assert code == 0, out
    left = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True,
                          timeout=60, check=True).stdout.split()
    assert not [n for n in left if "labe2e" in n], left


def findings(env: Path) -> tuple[int, list[tuple[str, str]], list[dict[str, str]]]:
    code, out = cf("validate", str(env), "--format", "json")
    data = json.loads(out[out.index("{"):])
    return code, [(f["rule"], f["subject"]) for f in data["findings"]], data["findings"]


def test_clean_lab_validates_clean(lab_env: Path, tmp_path: Path) -> None:
    code, out = cf("validate", str(lab_env), "--save", str(tmp_path / "saved"), "--format", "json")
    data = json.loads(out[out.index("{"):])
    assert (code, data["findings"]) == (0, [])
    assert data["fabric_checked"] and len(data["hosts_checked"]) == 11
    # every GPU host answered nvidia-smi (the lab's stand-in), ibstat and dpkg-query; nothing
    # is deployed in this lab, so ofed_info and lctl are absent (not installed: not collected)
    gpu01 = sorted(p.name for p in (tmp_path / "saved" / "hosts" / "gpu01").iterdir())
    assert gpu01 == ["dpkg-query.txt", "ibstat.txt", "nvidia-smi-nvlink.txt", "nvidia-smi-query-gpu.txt",
                     "nvidia-smi-topo.txt"]
    # the SM's forwarding tables, from the SM node (real dump_fts through the lab's umad2sim): every switch's
    fabric = sorted(p.name for p in (tmp_path / "saved" / "fabric").iterdir())
    assert fabric == ["dump_fts.txt", "iblinkinfo.txt", "ibnetdiscover.txt"], fabric
    tables = ibroute.parse((tmp_path / "saved" / "fabric" / "dump_fts.txt").read_text())
    assert sorted(t.name for t in tables) == sorted(s.name for s in load_checked(lab_env).inv.switches)
    # offline re-validation from the saved outputs gives the same verdict
    code, out = cf("validate", str(lab_env), "--from", str(tmp_path / "saved"))
    assert code == 0 and "clean" in out


UPLINKS = uplinks(load_checked(ROOT / "inventories" / "lab").index)
FIRST = ("C-00020", "C-00035")  # leaf-su01-r0/21 - spine01/1 and leaf-su02-r1/24 - spine02/8: in make test


@pytest.mark.parametrize("uplink", [u if u in FIRST else pytest.param(u, marks=pytest.mark.long) for u in UPLINKS])
def test_acceptance_names_a_degraded_uplink_by_the_running_sms_routes(lab_env: Path, tmp_path: Path,
                                                                      uplink: str) -> None:
    """Issue #36 item 4, for every uplink of the lab (two in `make test`, the other 18 marked long, about 3 s
    each): the routes from the lab's running OpenSM (`validate --save`: dump_fts from the SM node), the routed
    plan, that uplink at 1X in ibsim (`lab fault degrade`), the stand-in ib_write_bw rating each test by the
    slowest link on its route (`lab accept --routes`), and `accept --from --routes` names exactly that cable."""
    saved = tmp_path / "saved"
    code, out = cf("validate", str(lab_env), "--save", str(saved), "--fabric-only", "--format", "json")
    assert code == 0, out
    routes = saved / "fabric" / "dump_fts.txt"
    code, out = cf("accept", str(lab_env), "--plan", "--routes", str(routes), "--format", "json")
    assert code == 0, out
    crossing = json.loads(out[out.index("{"):])["uplinks"]["crossing"]
    assert crossing[uplink] and all(crossing.values()), crossing
    code, out = cf("lab", "fault", str(lab_env), "degrade", uplink)
    assert code == 0, out
    try:
        run = tmp_path / "run"
        code, out = cf("lab", "accept", str(lab_env), "--routes", str(routes), "--output", str(run))
        assert code == 0, out
        code, out = cf("accept", str(lab_env), "--from", str(run), "--routes", str(routes), "--format", "json")
        found = json.loads(out[out.index("{"):])["findings"]
        assert code == 4 and [(f["rule"], f["cable"]) for f in found] == [("ACC-UPLINK", uplink)], found
        assert found[0]["observed"].count("Gb/s") == len(crossing[uplink]), found[0]
        code, out = cf("accept", str(lab_env), "--from", str(run), "--routes", str(routes), "--format", "text")
        assert code == 4 and f"cable {uplink}" in out, out
    finally:
        code, out = cf("lab", "heal", str(lab_env))
        assert code == 0, out


@pytest.mark.parametrize(
    ("fault", "rule", "subject", "action"),
    [
        (["remove", "C-00010"], "FAB-PORT-DOWN", "gpu05 mlx5_1/1 - leaf-su02-r1/1", "check cable C-00010"),
        (["down", "C-00005"], "FAB-PORT-DOWN", "gpu03 mlx5_0/1 - leaf-su01-r0/3", "check cable C-00005"),
        (["degrade", "C-00007"], "FAB-DEGRADED", "gpu04 mlx5_0/1 - leaf-su01-r0/4", "reseat or replace cable C-00007"),
        (["swap", "C-00001", "C-00003"], "FAB-MISWIRED", "gpu02 mlx5_0/1 / gpu01 mlx5_0/1",
         "swap cables C-00003 and C-00001 at leaf-su01-r0 ports 1/2"),
    ],
    ids=["remove", "port-down", "degrade", "swap"],
)
def test_fault_is_reported_exactly_then_healed(
    lab_env: Path, fault: list[str], rule: str, subject: str, action: str
) -> None:
    code, out = cf("lab", "fault", *fault, "--env", str(lab_env))
    assert code == 0, out
    try:
        code, found, raw = findings(lab_env)
        assert code == 4
        assert found == [(rule, subject)]
        assert raw[0]["action"].startswith(action)
    finally:
        heal_code, heal_out = cf("lab", "heal", "--env", str(lab_env))
        assert heal_code == 0, heal_out
    code, found, _ = findings(lab_env)
    assert (code, found) == (0, [])


def _accepted(env: Path, run: Path) -> tuple[int, list[dict[str, str]]]:
    code, out = cf("lab", "accept", str(env), "--output", str(run))
    assert code == 0 and "LAB-ONLY stand-in outputs" in out, out
    code, out = cf("accept", str(env), "--from", str(run), "--format", "json")
    return code, json.loads(out[out.index("{"):])["findings"]


def test_acceptance_names_the_degraded_cable_and_the_slow_gpu(lab_env: Path, tmp_path: Path) -> None:
    """`lab accept` writes the acceptance tools' outputs from the lab's fabric as it is (stand-ins: real
    captures, figures from ibnetdiscover); `accept --from` judges them: clean, then one cable at 1X named
    (its unit's and the cluster's all_reduce explained by it), then a GPU at PCIe Gen3 named."""
    code, found = _accepted(lab_env, tmp_path / "clean")
    assert (code, found) == (0, [])
    code, out = cf("lab", "fault", str(lab_env), "degrade", "C-00007")
    assert code == 0, out
    try:
        code, found = _accepted(lab_env, tmp_path / "degraded")
        assert code == 4
        errors = [(f["rule"], f["subject"], f["floor"]) for f in found if f["severity"] == "error"]
        assert errors == [("ACC-LINK", "gpu04/mlx5_0/1", "cable C-00007 to leaf-su01-r0/4")]
        assert {f["rule"] for f in found if f["severity"] != "error"} <= {"ACC-NCCL-FABRIC"}
        code, out = cf("lab", "fault", str(lab_env), "pcie", "gpu03", "1", "--gen", "3")
        assert code == 0, out
    finally:
        code, out = cf("lab", "heal", str(lab_env))
        assert code == 0, out
    code, out = cf("lab", "fault", str(lab_env), "pcie", "gpu03", "1")
    assert code == 0, out
    try:
        code, found = _accepted(lab_env, tmp_path / "pcie")
        assert code == 4 and [(f["rule"], f["subject"].split()[0]) for f in found] == [("ACC-PCIE", "gpu03")]
        assert "Gen3" in found[0]["message"]
    finally:
        code, out = cf("lab", "heal", str(lab_env))
        assert code == 0 and "healed 1 fault" in out, out
    code, found = _accepted(lab_env, tmp_path / "healed")
    assert (code, found) == (0, [])


def _run_over_ssh(env: Path, run: Path) -> tuple[int, list[dict[str, str]], str]:
    code, out = cf("accept", str(env), "--run", str(run), "--format", "json")
    return code, json.loads(out[out.index("{"):])["findings"], out


def test_acceptance_runs_over_ssh_on_the_lab(lab_env: Path, tmp_path: Path) -> None:
    """`accept ENV --run DIR` runs the plan over SSH in the lab's containers, where `lab accept --arm` armed
    LAB-ONLY stand-in tools (ib_write_bw keeps perftest's server/client exchange): every output arrives as the
    stand-ins computed it (byte for byte what `lab accept --output` writes), a cable at 1X is named, and once
    `lab heal` disarmed them every planned output is missing: ACC-NO-DATA, never a pass."""
    code, out = cf("lab", "accept", str(lab_env), "--arm")
    assert code == 0 and "armed the LAB-ONLY acceptance stand-ins" in out, out
    code, found, out = _run_over_ssh(lab_env, tmp_path / "clean")
    assert (code, found) == (0, []), out
    code, out = cf("lab", "accept", str(lab_env), "--output", str(tmp_path / "direct"))
    assert code == 0, out
    direct = {p.relative_to(tmp_path / "direct"): p.read_text() for p in (tmp_path / "direct").rglob("*")
              if p.is_file() and p.name != "STAND-IN.txt"}
    ran = {p.relative_to(tmp_path / "clean"): p.read_text() for p in (tmp_path / "clean").rglob("*") if p.is_file()}
    assert ran == direct
    code, out = cf("lab", "fault", str(lab_env), "degrade", "C-00007")
    assert code == 0, out
    try:
        code, out = cf("lab", "accept", str(lab_env), "--arm")
        assert code == 0, out
        code, found, out = _run_over_ssh(lab_env, tmp_path / "degraded")
        assert code == 4, out
        errors = [(f["rule"], f["subject"], f["floor"]) for f in found if f["severity"] == "error"]
        assert errors == [("ACC-LINK", "gpu04/mlx5_0/1", "cable C-00007 to leaf-su01-r0/4")]
    finally:
        code, out = cf("lab", "heal", str(lab_env))
        assert code == 0, out
    code, found, out = _run_over_ssh(lab_env, tmp_path / "disarmed")
    assert code == 4, out
    # no ib_write_bw, mpirun or dcgmi any more: every link test and group is ACC-NO-DATA; the GPU nodes' nvidia-smi
    # commands reach the lab's own nvidia-smi stand-in (it refuses -q), so each node has a finding too
    assert sum(f["rule"] == "ACC-NO-DATA" and "->" in f["subject"] for f in found) == \
        sum(p.parts[0] == "links" for p in ran)
    assert {f["subject"] for f in found if f["subject"].startswith("nccl ")} == \
        {f"nccl {p.name}" for p in ran if p.parts[0] == "nccl"}
    nodes = {p.parts[1] for p in ran if p.parts[0] == "nodes"}
    assert all(any(f["subject"].split()[0] == n for f in found) for n in nodes)


@pytest.mark.long  # about 35 s: make test-long (CI runs it)
def test_deploy_then_pyinfra_cli_finds_nothing_to_change(lab_env: Path) -> None:
    """`clusterforge deploy` converges the lab (and validate stays clean, now with the pinned
    software versions to check); pyinfra's own CLI entry points then find nothing to change."""
    import os
    import sys

    code, out = cf("deploy", str(lab_env), "--no-diffs")
    assert code == 0, out
    assert "deploying to the lab of" in out
    code, found, _ = findings(lab_env)
    assert (code, found) == (0, [])
    env = {**os.environ, "CLUSTERFORGE_ENV": str(lab_env)}
    pyinfra = Path(sys.executable).parent / "pyinfra"
    proc = subprocess.run([str(pyinfra), "deploy/inventory.py", "deploy/site.py", "-y"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    total = next(line for line in (proc.stdout + proc.stderr).splitlines() if "Grand total" in line).split()
    # pyinfra's totals: host-operations, changed, errors, no change. One operation per component action
    # (at least 11 hosts x 8 components), none changed, none failed.
    _, _, ops, changed, errors, unchanged = total
    assert (changed, errors) == ("-", "-") and ops == unchanged and int(ops) >= 88, total
