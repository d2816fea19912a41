"""The opensm component with rail planes: one opensm-plane@<P> instance per plane on each SM node, its
unit and per-plane configuration deployed; a fabric without planes keeps the distribution's opensm."""

from __future__ import annotations

from pathlib import Path

from cf_lab_inventory import lab_index
from clusterforge.api import load_checked
from clusterforge.deploy.changes import component_changes, handler_change
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.facts import HostFacts
from clusterforge.deploy.options import DeployOptions

PLANES = Path(__file__).resolve().parents[2] / "fixtures" / "inventories" / "lab-planes"


def _opensm(index, node: str):  # type: ignore[no-untyped-def]
    plans = host_plans(index, DeployOptions("x"))
    return next((c for c in plans[node].components if c.name == "opensm"), None)


def test_rail_planes_one_instance_per_plane_on_each_sm_node() -> None:
    index = load_checked(PLANES).index
    for sm in ("sm01", "sm02"):
        comp = _opensm(index, sm)
        assert comp is not None
        assert comp.services == ("opensm-plane@0", "opensm-plane@1")
        dests = {f.dest for f in comp.files}
        assert {"/etc/systemd/system/opensm-plane@.service", "/etc/default/opensm",
                "/etc/opensm/plane0/opensm.conf", "/etc/opensm/plane1/opensm.conf",
                "/etc/opensm/plane1/root-guids.conf", "/etc/opensm/plane1/partitions.conf"} <= dests
        assert not any(d.startswith("/etc/opensm/") and d.count("/") == 3 for d in dests)  # no shared opensm.conf
        conf = {f.dest: f.content for f in comp.files}
        assert "sm_priority " + ("15" if sm == "sm01" else "14") in conf["/etc/opensm/plane1/opensm.conf"]
    assert _opensm(index, "gpu01") is None
    # a fresh systemd host: the files, the package, both instances enabled and started
    changes = component_changes(_opensm(index, "sm01"), HostFacts(systemd=True))
    services = [c for c in changes if c.kind == "service"]
    assert {c.target for c in services} == {"opensm-plane@0", "opensm-plane@1"}
    # re-sweep: every running instance gets SIGHUP; none running: restart exactly the plane units
    comp = _opensm(index, "sm01")
    hup = handler_change(comp, HostFacts(systemd=True, processes={"opensm": [41, 42]}))
    assert hup is not None and hup.commands == ("kill -HUP 41 42",)
    start = handler_change(comp, HostFacts(systemd=True))
    assert start is not None and start.commands == ("systemctl restart opensm-plane@0 opensm-plane@1",)


def test_one_fabric_keeps_the_distribution_opensm() -> None:
    comp = _opensm(lab_index(), "sm01")
    assert comp is not None and comp.services == ("opensm",)
    assert sorted(f.dest for f in comp.files) == [
        "/etc/opensm/cn-guids.conf", "/etc/opensm/io-guids.conf", "/etc/opensm/node-name-map",
        "/etc/opensm/opensm.conf", "/etc/opensm/partitions.conf", "/etc/opensm/root-guids.conf"]
    start = handler_change(comp, HostFacts(systemd=True))
    assert start is not None and start.commands == ("systemctl restart opensm",)
