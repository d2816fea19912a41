"""Change plans for the day-2 work people do on the lab inventory: add a node, bump pins, move a cable,
add a spine, retire a server. Each checks what is done, where, in which order, and who is drained."""

from __future__ import annotations

from _day2_util import add_gpu09, cable, index_of, lab_data, node, phases, plan_for

from clusterforge.day2.verify import verify
from clusterforge.util.hostlist import compress as hostlist

DRAIN = ["scontrol", "update", "nodename={host}", "state=drain", "reason=clusterforge"]
RESUME = ["scontrol", "update", "nodename={host}", "state=resume"]


def test_same_inventory_is_no_change() -> None:
    plan = plan_for(lab_data())
    assert plan.empty and plan.steps == () and plan.hosts == ()
    assert plan.lines() == ["inventories/lab: no change"]
    assert plan.to_dict()["changes"] is False


def test_add_a_node_at_the_end_and_bump_nccl() -> None:
    data = lab_data()
    add_gpu09(data)
    data["software"]["nccl"] = "2.22.3-1"
    plan = plan_for(data)
    assert plan.warnings == ()  # appended: nobody is renumbered
    assert plan.drained == ()  # NCCL and /etc/hosts are applied in place
    assert [(d.kind, d.name, d.change) for d in plan.diff.devices] == [("node", "gpu09", "added")]
    assert [(c.change, c.id) for c in plan.diff.cables] == [("added", "C-00040"), ("added", "C-00041")]
    su2 = [s for s in plan.steps if s.rack == "lab-su02-r01"]
    assert [s.phase for s in su2] == ["install", "plug", "plug", "deploy"]
    assert su2[0].action == "install node at lab-su02-r01 U18 (gpu-node)"
    assert "gpu09 mlx5_0/1 [lab-su02-r01 U18] - leaf-su02-r0 port 5 [lab-su02-net U2]: AOC 10 m" in su2[1].action
    assert su2[3].argv[:6] == ("clusterforge", "deploy", "inventories/lab", "--yes", "--limit", "gpu09")
    assert "a new host, every component" in su2[3].action
    # the old GPU nodes of both racks: new NCCL and the new host in /etc/hosts, one command for the wave
    [gpus] = [s for s in plan.steps if s.phase == "deploy" and s.rack is None]
    assert gpus.argv == ("clusterforge", "deploy", "inventories/lab", "--yes", "--limit", "gpu[01-08]",
                         "--component", "repo", "--component", "base", "--component", "nccl")
    assert "libnccl2: 2.21.5-1+cuda12.4 -> 2.22.3-1+cuda12.4" in gpus.action
    # every other host gets the new /etc/hosts; the SM's GUID files are deployed once the racks are cabled
    gpu_hosts = {h.host for h in plan.hosts}
    assert gpu_hosts == {f"gpu0{i}" for i in range(1, 10)} | {"sm01", "lus01", "lus02"}
    fabric = [s for s in plan.steps if s.phase == "fabric"]
    assert len(fabric) == 1 and fabric[0].argv[-2:] == ("--component", "opensm")
    assert "cn-guids.conf" in fabric[0].action and "node-name-map" in fabric[0].action
    assert [s.phase for s in plan.steps][-2:] == ["fabric", "validate"]
    # the rack's physical work (install, plug) before any deploy; steps numbered 1..n
    order = [s.phase for s in plan.steps]
    assert max(i for i, p in enumerate(order) if p == "plug") < order.index("deploy")
    assert [s.n for s in plan.steps] == list(range(1, len(plan.steps) + 1))


def test_inserting_a_node_in_the_middle_renumbers_no_one() -> None:
    data = lab_data()
    add_gpu09(data, at_end=False)
    plan = plan_for(data)
    assert plan.warnings == () and plan.drained == ()  # addresses are frozen: the servers keep theirs
    assert [(d.kind, d.name, d.change) for d in plan.diff.devices] == [("node", "gpu09", "added")]


def test_new_gpu_driver_goes_in_waves_within_the_drain_cap() -> None:
    data = lab_data()
    data["software"]["nvidia_driver"] = "550.127.05"
    data["deploy"]["reboot"] = {"mode": "rolling-by-rack", "drain": DRAIN, "resume": RESUME}
    plan = plan_for(data)
    gpus = [f"gpu0{i}" for i in range(1, 9)]
    assert list(plan.drained) == gpus
    assert all(h.reboot and h.disruptive == ("new GPU driver (reboot)",) for h in plan.hosts if h.host != "sm01")
    # the new drain hook argv reaches the monitoring server's drain hook targets (issue #11): not disruptive
    [sm01] = [h for h in plan.hosts if h.host == "sm01"]
    assert not sm01.reboot and not sm01.disruptive
    assert [(c.component, c.files) for c in sm01.components] == [
        ("monitoring", ("~/etc/clusterforge/monitoring/drain-targets.json",))]
    # 4 GPU nodes a rack, 8 in all: caps 50 % of a rack (2), 25 % of the cluster (2): four waves of two
    waves = [gpus[i:i + 2] for i in range(0, 8, 2)]
    # sm01's drain hook targets go out once, in the first wave, beside its GPU nodes' deploy
    [sm01_step] = [s for s in plan.steps if s.subject == "sm01"]
    assert (sm01_step.n, sm01_step.phase) == (4, "deploy")
    assert sm01_step.argv == ("clusterforge", "deploy", "inventories/lab", "--yes", "--limit", "sm01",
                              "--component", "monitoring")
    gpu_steps = [s for s in plan.steps if s is not sm01_step]
    assert len(gpu_steps) == 4 * 6
    for w, members in enumerate(waves):
        steps = gpu_steps[6 * w:6 * w + 6]
        assert [s.phase for s in steps] == ["drain", "drain", "deploy", "validate", "resume", "resume"]
        assert [s.subject for s in steps if s.phase in ("drain", "resume")] == members * 2
        assert steps[0].argv == ("scontrol", "update", f"nodename={members[0]}", "state=drain",
                                 "reason=clusterforge")
        assert steps[2].argv == ("clusterforge", "deploy", "inventories/lab", "--yes", "--limit", hostlist(members),
                                 "--component", "repo", "--component", "nvidia", "--component", "healthcheck")
        assert "(reboots)" in steps[2].action and "nvidia-driver-550: 550.90.07-1 -> 550.127.05-1" in steps[2].action
        limit = () if w == 3 else ("--limit", hostlist(members))  # the last wave validates everything
        assert steps[3].argv == ("clusterforge", "validate", "inventories/lab", *limit)
    assert plan.summary()["reboots"] == 8


def test_drain_cap_is_configurable() -> None:
    data = lab_data()
    data["software"]["nvidia_driver"] = "550.127.05"
    data["deploy"]["max_drain"] = {"rack_percent": 100, "cluster_percent": 100}
    plan = plan_for(data)
    assert [s.phase for s in plan.steps].count("validate") == 1  # one wave: every GPU node at once


def test_moved_cable_is_unplugged_and_plugged_with_its_host_drained() -> None:
    data = lab_data()
    cable(data, "C-00015")["b"] = "leaf-su02-r0/6"
    plan = plan_for(data)
    [change] = plan.diff.cables
    assert (change.change, change.id, change.fields) == ("moved", "C-00015", ("b",))
    assert plan.drained == ("gpu08",)
    assert phases(plan, "lab-su02-r01") == ["drain", "unplug", "plug", "resume"]
    unplug, plug = (s for s in plan.steps if s.phase in ("unplug", "plug"))
    assert "leaf-su02-r0 port 4" in unplug.action and "leaf-su02-r0 port 6" in plug.action
    # nothing rendered for gpu08 depends on its leaf port; the monitoring server's scrape labels (leaf, leaf
    # port, far end) follow the cable (issue #11)
    assert [(h.host, [(c.component, c.files) for c in h.components], h.disruptive) for h in plan.hosts] == [
        ("sm01", [("monitoring", ("~/etc/clusterforge/monitoring/scrape.yml",))], ())]


def test_new_spine_is_installed_cabled_and_the_subnet_manager_reconfigured() -> None:
    data = lab_data()
    data["switches"].append({"name": "spine03", "model": "QM8700", "role": "spine", "rack": "lab-core01", "u": 5})
    data["cables"] += [{"id": "C-00042", "a": "leaf-infra01/25", "b": "spine03/1", "media": "AOC", "length_m": 3}]
    plan = plan_for(data)
    core = [s for s in plan.steps if s.rack == "lab-core01"]
    assert [s.phase for s in core] == ["install", "plug"]
    assert core[0].subject == "spine03" and "(QM8700)" in core[0].action
    assert plan.drained == ()
    fabric = [s for s in plan.steps if s.phase == "fabric"]
    assert [s.subject for s in fabric] == ["sm01"]
    assert "root-guids.conf" in fabric[0].action


def test_retired_server_is_drained_unplugged_removed_and_not_resumed() -> None:
    data = lab_data()
    data["nodes"] = [n for n in data["nodes"] if n["name"] != "lus02"]
    data["cables"] = [c for c in data["cables"] if c["id"] != "C-00019"]
    data["lustre"][0]["servers"] = ["lus01"]
    plan = plan_for(data)
    core = [s for s in plan.steps if s.rack == "lab-core01"]
    assert [s.phase for s in core][:3] == ["takeout", "unplug", "remove"]
    assert core[0].subject == "lus02" and "it leaves" in core[0].action
    assert core[2].action == "take out node at lab-core01 U24"
    assert not [s for s in plan.steps if s.phase == "resume" and s.subject == "lus02"]
    assert [h.change for h in plan.hosts if h.host == "lus02"] == ["removed"]


def test_profile_edit_changes_the_hardware_of_every_node_using_it() -> None:
    data = lab_data()
    profile = next(p for p in data["profiles"] if p["name"] == "gpu-node")
    profile["hcas"][0]["model"] = "ConnectX-7"
    plan = plan_for(data)
    changed = [d for d in plan.diff.devices if d.kind == "node"]
    assert [d.name for d in changed] == [f"gpu0{i}" for i in range(1, 9)]
    assert all(d.fields == ("hardware.hcas",) for d in changed)
    assert len(plan.drained) == 8
    assert all(s.action == "change hardware: hardware.hcas" for s in plan.steps if s.phase == "install")


def test_rack_phases_always_in_order_and_deterministic() -> None:
    data = lab_data()
    add_gpu09(data)
    cable(data, "C-00001")["label"] = "L-0001"
    node(data, "gpu02")["u"] = 30
    data["software"]["doca_ofed"] = "24.10-1.1.4.0"
    a, b = plan_for(data), plan_for(data)
    assert a.to_dict() == b.to_dict()
    assert verify(a, index_of(lab_data()), index_of(data)) == []
    first = [s.phase for s in a.steps if s.rack == "lab-su01-r01"][:6]  # wave 1 in that rack: out, then work
    assert first[:2] == ["drain", "drain"] and first.index("remove") < first.index("install")
    moved = next(d for d in a.diff.devices if d.name == "gpu02")
    assert (moved.change, moved.old_place, moved.new_place) == ("moved", ("lab-su01-r01", 6), ("lab-su01-r01", 30))
    assert "new DOCA/MLNX OFED (InfiniBand stack restart)" in dict(
        (h.host, h.disruptive) for h in a.hosts)["gpu01"]


def test_plan_serializes_to_json_with_argv_lists() -> None:
    data = lab_data()
    add_gpu09(data)
    plan = plan_for(data)
    d = plan.to_dict()
    assert d["changes"] is True
    assert d["summary"]["devices"] == {"node": {"added": 1}}
    assert d["summary"]["cables"] == {"added": 2}
    assert all(isinstance(s["argv"], list) for s in d["steps"])
    assert d["cables"][0]["new"]["a"] == "gpu09/mlx5_0/1"


def test_new_trunk_is_laid_between_the_two_rack_passes() -> None:
    # an AOC uplink replaced by fiber over a new MPO-24 trunk between two new patch panels
    data = lab_data()
    data["patch_panels"] = [{"name": "pp-su01", "rack": "lab-su01-net", "u": 40},
                            {"name": "pp-core", "rack": "lab-core01", "u": 40}]
    data["trunks"] = [{"id": "T-1", "a_panel": "pp-su01", "b_panel": "pp-core", "length_m": 20}]
    cable(data, "C-00020").update(media="fiber", length_m=20, fiber_type="OM4", trunk="T-1", lane_group=0)
    plan = plan_for(data)
    [change] = plan.diff.cables
    assert change.change == "replaced"
    order = [(s.phase, s.subject) for s in plan.steps]
    lay = order.index(("trunks", "T-1"))
    assert order.index(("unplug", "C-00020")) < lay < order.index(("plug", "C-00020"))
    assert order.index(("install", "pp-su01")) < lay and order.index(("install", "pp-core")) < lay
    step = plan.steps[lay]
    assert step.rack is None
    assert step.action == ("lay the MPO-24 trunk pp-su01 [lab-su01-net U40] - pp-core [lab-core01 U40] "
                           "(OM4, 20 m)")
    assert "trunk T-1 lanes 0" in plan.steps[order.index(("plug", "C-00020"))].action
    devices = {d["name"]: d for d in plan.to_dict()["devices"]}
    assert devices["T-1"]["new_place"] == {"panels": "pp-su01 - pp-core"}
    assert devices["pp-core"]["new_place"] == {"rack": "lab-core01", "u": 40}


def test_unrendered_host_files_differ_only_when_their_text_would() -> None:
    from clusterforge.day2.host_diff import _differs
    from clusterforge.deploy.component import ManagedFile

    def f(pins: list[tuple[str, str]], unused: int, mode: int = 0o644) -> ManagedFile:
        ctx = {"pins": [{"package": p, "version": v} for p, v in pins], "banner": ["b"], "environment": "lab",
               "unused": unused}
        return ManagedFile("/etc/apt/preferences.d/x.pref", "apt/preferences.j2", ctx, "", mode)

    a = f([("libnccl2", "2.21.5-1")], 1)
    assert not _differs(a, f([("libnccl2", "2.21.5-1")], 1))
    assert not _differs(a, f([("libnccl2", "2.21.5-1")], 2))  # another context, the same text: no change
    assert _differs(a, f([("libnccl2", "2.22.3-1")], 1))
    assert _differs(a, f([("libnccl2", "2.21.5-1")], 1, mode=0o600))
