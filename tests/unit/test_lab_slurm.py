"""The lab's real Slurm (lab/slurm.py): its slurm.conf, the files `lab up --slurm` writes, what it asks of
sinfo and scontrol. The daemons themselves run in the lab test (tests/lab/test_slurm_lab.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.lab.errors import LabError
from clusterforge.lab.slurm import START, SlurmLab, node_states, scontrol_argv, slurm_conf, wait_nodes_up, write_files
from clusterforge.render import render_environment
from clusterforge.render.nodecheck import healthcheck_lines

ROOT = Path(__file__).resolve().parents[2]
ADDR = {"sm01": "198.18.0.20", "gpu01": "198.18.0.11", "gpu02": "198.18.0.12"}


def test_the_conf_names_each_node_by_its_lab_address_and_carries_the_health_check() -> None:
    index = load_checked(ROOT / "inventories" / "lab").index
    lines = healthcheck_lines(index.inv.health_check)
    conf = slurm_conf(SlurmLab("sm01", ("gpu01", "gpu02"), tuple(lines)), ADDR)
    assert "SlurmctldHost=sm01(198.18.0.20)\n" in conf
    assert "NodeName=gpu02 NodeAddr=198.18.0.12 CPUs=2 RealMemory=64 State=UNKNOWN\n" in conf
    assert "PartitionName=lab Nodes=gpu01,gpu02 Default=YES" in conf
    # the same HealthCheck* lines a site Includes (the render's slurm/healthcheck.conf)
    rendered = render_environment(index, "lab")["slurm/healthcheck.conf"]
    assert lines and all(f"{line}\n" in rendered and f"{line}\n" in conf for line in lines)
    with pytest.raises(LabError, match="no lab address for gpu03"):
        slurm_conf(SlurmLab("sm01", ("gpu03",)), ADDR)


def test_the_files_each_host_gets(tmp_path: Path) -> None:
    dirs = {h: tmp_path / h for h in ("sm01", "gpu01")}
    for d in dirs.values():
        d.mkdir()
    write_files(SlurmLab("sm01", ("gpu01",)), ADDR, dirs)
    keys = {(d / "munge.key").read_bytes() for d in dirs.values()}
    assert len(keys) == 1 and len(keys.pop()) == 1024  # one key for the lab, on every host
    assert stat.S_IMODE((dirs["gpu01"] / "munge.key").stat().st_mode) == 0o400
    assert (dirs["sm01"] / "slurm.conf").read_text() == (dirs["gpu01"] / "slurm.conf").read_text()
    assert (dirs["gpu01"] / START).stat().st_mode & 0o111
    write_files(SlurmLab("sm01", ("gpu01",)), ADDR, dirs)  # a new lab: a new key
    assert (dirs["sm01"] / "munge.key").read_bytes() not in keys


def test_scontrol_and_sinfo() -> None:
    assert scontrol_argv("gpu01", True, "cf-health: mlx5_0 port 1 Down") == [
        "scontrol", "update", "nodename=gpu01", "state=drain", "reason=cf-health: mlx5_0 port 1 Down"]
    assert scontrol_argv(["gpu01", "gpu02"], False, None) == ["scontrol", "update", "nodename=gpu01,gpu02",
                                                              "state=resume"]
    # CONSTRUCTED: `sinfo -h -N -o '%N %T'` lines in Slurm's state names
    assert node_states("gpu01 idle\ngpu02 drained\ngpu03 down*\n\n") == {
        "gpu01": "idle", "gpu02": "drained", "gpu03": "down*"}
    answers = iter(["gpu01 unknown*\ngpu02 idle\n", "gpu01 idle\ngpu02 idle\n"])
    wait_nodes_up(lambda: next(answers), ["gpu01", "gpu02"], timeout=5)
    with pytest.raises(LabError, match=r"1 node\(s\) not up .* gpu02 down\*"):
        wait_nodes_up(lambda: "gpu01 idle\ngpu02 down*\n", ["gpu01", "gpu02"], timeout=0.5)
