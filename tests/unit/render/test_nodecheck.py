"""cf-nodecheck, Slurm's HealthCheckProgram (render/nodecheck.py, templates/slurm/cf-nodecheck.py.j2).

The rendered script runs for real here, as slurmd would run it, with the tools it calls on PATH as shims
that print real captures (tests/fixtures: nvidia-smi --query-gpu and nvlink --status of one H100, ibstat of
an 8 x HDR A100 node and of an H100 node with ports down, `scontrol show node` of a drained node). The
scontrol shim also records the `scontrol update` calls the check makes (Slurm itself runs in the lab, not
here). The node's config is written to match the captured hardware (1 GPU, driver 590.48.01, mlx5_0..8 at
HDR); the config the render writes from the lab inventory is checked separately."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.model.hooks import hook_argv
from clusterforge.render import render_environment

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"
QUERY = FIX / "nvidia-smi-query-gpu" / "nvutil-1xh100-80gb-590.48.01-allfields-idle.txt"
NVLINK = FIX / "nvidia-smi-nvlink-status" / "nvutil-1xh100-80gb-590.48.01-18links.txt"
IBSTAT = FIX / "ibstat" / "gpud-a100-hdr-200g.txt"
IBSTAT_DOWN = FIX / "ibstat" / "gpud-h100-some-down-disabled.txt"
SHOW = FIX / "scontrol-show-node" / \
    "jp-blog-slurm22.05-6xh100pcie-idle-drain-kill-task-failed.txt"


PROD_HOOKS = load_checked(ROOT / "inventories" / "prod").index.inv.deploy.reboot  # Slurm's scontrol, {hosts}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render")
    for rel, text in render_environment(load_checked(ROOT / "inventories" / "lab").index, "lab").items():
        if rel.startswith(("slurm/", "hosts/")):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text(text)
    return out


def test_the_render_writes_each_compute_nodes_expectations(rendered: Path) -> None:
    cfg = json.loads((rendered / "hosts/gpu01/etc/clusterforge/nodecheck.json").read_text())
    assert cfg["gpus"] == 8 and cfg["nvlink"] and cfg["nvidia_driver"] == "550.90.07"
    assert [(p["hca"], p["port"], p["gbps"]) for p in cfg["hca_ports"]] == [("mlx5_0", 1, 200), ("mlx5_1", 1, 200)]
    assert cfg["mounts"] == ["/lustre/lfs01"] and cfg["reason_prefix"] == "cf-health"
    # it drains and resumes through the inventory's hooks (the lab's: its stand-in scheduler), this node filled
    # in and the reason left to the check
    assert cfg["drain"] == ["clusterforge", "lab", "drain", "gpu01", "--reason", "{reason}", "--env", "inventories/lab"]
    assert cfg["resume"] == ["clusterforge", "lab", "resume", "gpu01", "--env", "inventories/lab"]
    assert not (rendered / "hosts/sm01/etc/clusterforge/nodecheck.json").exists()  # compute nodes only
    conf = (rendered / "slurm/healthcheck.conf").read_text()
    assert "HealthCheckProgram=/usr/local/lib/clusterforge/cf-nodecheck\nHealthCheckInterval=30\n" in conf
    assert "HealthCheckNodeState=ANY,CYCLE" in conf


def _shims(tmp: Path, ibstat: Path, show: str, nvidia: bool = True) -> tuple[dict[str, str], Path]:
    bin_ = tmp / "bin"
    bin_.mkdir()
    log = tmp / "scontrol.log"
    (tmp / "show.txt").write_text(show)
    tools = {"ibstat": f"cat {ibstat}\n",
             "scontrol": f'if [ "$1" = show ]; then cat {tmp / "show.txt"}; else echo "$@" >> {log}; fi\n'}
    if nvidia:
        tools["nvidia-smi"] = f'if [ "$1" = nvlink ]; then cat {NVLINK}; else cat {QUERY}; fi\n'
    for name, body in tools.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}:/usr/bin:/bin"}, log


def _config(tmp: Path, **over: object) -> Path:
    cfg = {"node": "gpu07", "reason_prefix": "cf-health", "tool_timeout_s": 10,
           "checks": ["gpus", "driver", "nvlink", "hca", "mounts"], "gpus": 1, "nvidia_driver": "590.48.01",
           "nvlink": True, "mounts": ["/"],
           "hca_ports": [{"hca": f"mlx5_{i}", "port": 1, "rate": "HDR", "gbps": 200} for i in range(9)],
           "drain": hook_argv(PROD_HOOKS.drain, "gpu07"), "resume": hook_argv(PROD_HOOKS.resume, "gpu07"), **over}
    path = tmp / "nodecheck.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(rendered: Path, tmp: Path, *, show: str, ibstat: Path = IBSTAT, nvidia: bool = True,
         **over: object) -> tuple[int, str, list[str]]:
    env, log = _shims(tmp, ibstat, show, nvidia)
    proc = subprocess.run([sys.executable, str(rendered / "slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"),
                           "--config", str(_config(tmp, **over)), "--node", "gpu07"],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    return proc.returncode, proc.stdout + proc.stderr, log.read_text().splitlines() if log.exists() else []


def _show(state: str, reason: str | None) -> str:
    """CONSTRUCTED from the real `scontrol show node` capture: its State (and Reason) replaced."""
    text = SHOW.read_text().replace("State=IDLE+DRAIN ", f"State={state} ")
    lines = [line for line in text.splitlines() if not line.strip().startswith("Reason=")]
    return "\n".join(lines + ([f"   Reason={reason}"] if reason else [])) + "\n"


def test_a_healthy_idle_node_is_left_alone(rendered: Path, tmp_path: Path) -> None:
    code, out, calls = _run(rendered, tmp_path, show=_show("IDLE", None))
    assert (code, calls) == (0, []) and "gpu07: healthy" in out


def test_a_person_s_drain_survives_a_healthy_check(rendered: Path, tmp_path: Path) -> None:
    code, out, calls = _run(rendered, tmp_path, show=SHOW.read_text())  # real: IDLE+DRAIN, Kill task failed
    assert (code, calls) == (0, [])
    assert "drained by someone else, left drained: Kill task failed" in out


def test_its_own_drain_is_resumed_after_a_clean_run(rendered: Path, tmp_path: Path) -> None:
    code, _, calls = _run(rendered, tmp_path, show=_show("IDLE+DRAIN", "cf-health: 7 of 8 GPUs visible"))
    assert (code, calls) == (0, ["update nodename=gpu07 state=resume"])


def test_a_level_3_drain_is_never_resumed_by_a_healthy_check(rendered: Path, tmp_path: Path) -> None:
    """The monitoring drain hook's reason (cf-alert: ...): a node an alert drained stays drained, however healthy
    the check finds it (a hot HBM is not among its checks)."""
    code, out, calls = _run(rendered, tmp_path, show=_show("IDLE+DRAIN", "cf-alert: level 3 HbmTemperatureHigh"))
    assert (code, calls) == (0, []) and "left drained: cf-alert: level 3 HbmTemperatureHigh" in out


@pytest.mark.parametrize("flags", ["IDLE+DRAIN+REBOOT_REQUESTED", "DOWN+DRAIN+REBOOT_ISSUED"])
def test_a_rebooting_node_is_not_put_back_before_its_reboot(rendered: Path, tmp_path: Path, flags: str) -> None:
    """The reboot-ASAP pitfall of NHC setups: level 3's `after: reboot` gives the health check's own prefix, so a
    check that passes before the reboot has happened must not resume the node (that would open it to jobs on the
    failing part and cancel the reboot); after the reboot, the first clean check resumes it."""
    reason = "cf-health: reboot after level 3 GpuFallenOffBus: back when the health check passes"
    code, out, calls = _run(rendered, tmp_path, show=_show(flags, reason))
    assert (code, calls) == (0, []) and "a reboot is pending" in out
    (tmp_path / "after").mkdir()
    code, _, calls = _run(rendered, tmp_path / "after", show=_show("IDLE+DRAIN", reason))
    assert (code, calls) == (0, ["update nodename=gpu07 state=resume"])


def test_a_rebooted_node_that_fails_stays_drained(rendered: Path, tmp_path: Path) -> None:
    reason = "cf-health: reboot after level 3 GpuFallenOffBus: back when the health check passes"
    code, out, calls = _run(rendered, tmp_path, show=_show("IDLE+DRAIN", reason), gpus=8)
    assert code == 1 and calls == [] and "1 of 8 GPUs visible" in out


def test_a_missing_gpu_drains_with_the_part_named(rendered: Path, tmp_path: Path) -> None:
    code, _, calls = _run(rendered, tmp_path, show=_show("IDLE", None), gpus=8)
    assert code == 1
    assert calls == ["update nodename=gpu07 state=drain reason=cf-health: 1 of 8 GPUs visible"]


def test_ports_down_and_slow_drain_once_naming_the_first(rendered: Path, tmp_path: Path) -> None:
    ports = [{"hca": f"mlx5_{i}", "port": 1, "rate": "NDR", "gbps": 400} for i in range(12)]
    code, out, calls = _run(rendered, tmp_path, show=_show("MIXED", None), ibstat=IBSTAT_DOWN, hca_ports=ports)
    assert code == 1
    assert "mlx5_1 port 1 at 100 Gb/s, declared NDR (400 Gb/s)" in out and "mlx5_2 port 1 Down/Disabled" in out
    assert calls == ["update nodename=gpu07 state=drain reason=cf-health: mlx5_1 port 1 at 100 Gb/s, declared "
                     "NDR (400 Gb/s); and 3 more"]


def test_an_unhealthy_node_a_person_drained_keeps_their_reason(rendered: Path, tmp_path: Path) -> None:
    code, out, calls = _run(rendered, tmp_path, show=SHOW.read_text(), mounts=["/", "/lustre/nothere"],
                            nvidia_driver="550.90.07")
    assert (code, calls) == (1, [])
    assert "NVIDIA driver 590.48.01, pinned 550.90.07" in out and "/lustre/nothere not mounted" in out


def test_a_node_that_cannot_be_checked_is_not_healthy(rendered: Path, tmp_path: Path) -> None:
    code, _, calls = _run(rendered, tmp_path, show=_show("IDLE", None), nvidia=False)
    assert code == 1 and calls == ["update nodename=gpu07 state=drain reason=cf-health: nvidia-smi is not installed"]


def test_without_a_hook_to_drain_through_it_is_a_config_error(rendered: Path, tmp_path: Path) -> None:
    code, out, calls = _run(rendered, tmp_path, show=_show("IDLE", None), gpus=8, drain=[])
    assert (code, calls) == (2, []) and "no drain or resume hook" in out


@pytest.mark.parametrize(("body", "says"), [
    (b"not json", "Expecting value"), (b"[]", "not a JSON object"), (b"{}", "no field 'reason_prefix'"),
    (b"\xff\xfe\x00", "not JSON text"), (b"[" * 100_000, "not JSON text"),
    (json.dumps({"reason_prefix": "x", "drain": ["a"], "resume": ["b"], "checks": ["gpus"], "gpus": "many",
                 "hca_ports": [], "mounts": []}).encode(), "field 'gpus' is not a int"),
    (json.dumps({"reason_prefix": "x", "drain": ["a", 1], "resume": ["b"], "checks": [], "gpus": 1,
                 "hca_ports": [], "mounts": []}).encode(), "field 'drain': every item must be a string"),
    (json.dumps({"reason_prefix": "x", "drain": ["a"], "resume": ["b"], "checks": [], "gpus": 1,
                 "hca_ports": [{"hca": "mlx5_0"}], "mounts": []}).encode(), "'hca_ports'[0]"),
    (json.dumps({"reason_prefix": "x", "drain": ["a"], "resume": ["b"], "checks": [], "gpus": 1, "hca_ports": [],
                 "mounts": [], "tool_timeout_s": 1e300}).encode(), "'tool_timeout_s'"),
    (b"x" * (1024 * 1024 + 1), "larger than 1 MB"),
], ids=["text", "list", "empty", "binary", "deep", "gpus-word", "argv-int", "port-shape", "timeout", "huge"])
def test_a_config_that_is_not_one_is_a_config_error_never_a_traceback(rendered: Path, tmp_path: Path, body: bytes,
                                                                      says: str) -> None:
    cfg = tmp_path / "nodecheck.json"
    cfg.write_bytes(body)
    proc = subprocess.run([sys.executable, str(rendered / "slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"),
                           "--config", str(cfg), "--node", "gpu07"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"cf-nodecheck: config {cfg}: ") and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing"])
def test_a_config_that_is_no_file_is_refused_at_once(rendered: Path, tmp_path: Path, kind: str) -> None:
    cfg = tmp_path / "nodecheck.json"
    if kind == "fifo":
        os.mkfifo(cfg)  # a read would block slurmd's health check forever
    elif kind == "directory":
        cfg.mkdir()
    proc = subprocess.run([sys.executable, str(rendered / "slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"),
                           "--config", str(cfg)], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
