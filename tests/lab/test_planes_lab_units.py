"""Rail planes in the lab, without root: which HCA each per-plane OpenSM attaches as (the guest wrapper),
the lab spec's planes from the inventory, and the LAB-ONLY drop-in of the systemd image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.lab.guest import ibwrap
from clusterforge.lab.image import LAB_OPENSM_PLANE_DROPIN
from clusterforge.rehearsal.env import lab_spec
from clusterforge.render import render_environment

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "lab-planes"
CONF = ibwrap.Conf("198.18.30.254", 7070, (ibwrap.Device("mlx5_0", "H-a", 0), ibwrap.Device("mlx5_1", "H-b", 1)), 60)


def test_opensm_guid_from_the_command_line_or_its_config(tmp_path: Path) -> None:
    conf = tmp_path / "opensm.conf"
    conf.write_text("# Port GUID OpenSM binds to (sm01/mlx5_1/1)\nguid 0x02cf48efff690da1\nsm_priority 15\n")
    assert ibwrap.opensm_guid(["-F", str(conf)]) == 0x02CF48EFFF690DA1
    assert ibwrap.opensm_guid(["-g", "0x10", "-F", str(conf)]) == 0x10
    assert ibwrap.opensm_guid(["--guid=0x11"]) == 0x11
    conf.write_text("guid 0x0000000000000000\n")
    assert ibwrap.opensm_guid(["-F", str(conf)]) == 0
    assert ibwrap.opensm_guid(["-F", str(tmp_path / "missing.conf")]) == 0


def test_opensm_attaches_as_the_hca_of_its_plane(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    conf = tmp_path / "opensm.conf"
    conf.write_text("guid 0x0000000000000000\n")  # the lab's rendered configuration: GUID not known yet
    monkeypatch.setenv("CLUSTERFORGE_LAB_OPENSM_PLANE", "1")
    dev = ibwrap.opensm_device(CONF, ["-F", str(conf)])
    assert dev is not None and dev.name == "mlx5_1"
    monkeypatch.setenv("CLUSTERFORGE_LAB_OPENSM_PLANE", "0")
    assert ibwrap.opensm_device(CONF, ["-F", str(conf)]) == CONF.devices[0]
    monkeypatch.delenv("CLUSTERFORGE_LAB_OPENSM_PLANE")
    assert ibwrap.opensm_device(CONF, ["-F", str(conf)]) is None  # the first HCA, as before


def test_ib_json_planes_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ib.json"
    path.write_text(json.dumps({"server": "198.18.30.254", "port": 7070, "devices": [
        {"name": "mlx5_0", "sim_host": "H-a", "plane": 0}, {"name": "mlx5_1", "sim_host": "H-b"}]}))
    monkeypatch.setenv("CLUSTERFORGE_LAB_IB_CONF", str(path))
    conf = ibwrap.load_conf()
    assert [(d.name, d.plane) for d in conf.devices] == [("mlx5_0", 0), ("mlx5_1", None)]


def test_lab_spec_carries_each_hcas_plane(tmp_path: Path) -> None:
    index = load_checked(FIXTURE).index
    net = tmp_path / "ibsim.net"
    net.write_text(render_environment(index, "lab-planes")["fabric/ibsim.net"])
    spec = lab_spec(index, name="cf-lp", cidr="198.18.30.0/24", state_dir=tmp_path / "s", netfile=net)
    hosts = {h.name: h for h in spec.hosts}
    for host in ("gpu01", "sm01", "sm02"):
        assert [(x.device, x.plane) for x in hosts[host].hcas] == [("mlx5_0", 0), ("mlx5_1", 1)]


def test_the_lab_drop_in_runs_the_plane_instance_through_the_wrapper() -> None:
    lines = LAB_OPENSM_PLANE_DROPIN.splitlines()
    assert "ExecStart=" in lines  # the deploy's ExecStart reset, then the wrapper's
    assert "ExecStart=/usr/local/sbin/opensm -F /etc/opensm/plane%i/opensm.conf" in lines
    assert "Environment=CLUSTERFORGE_LAB_OPENSM_PLANE=%i" in lines
    assert "LAB-ONLY" in LAB_OPENSM_PLANE_DROPIN
