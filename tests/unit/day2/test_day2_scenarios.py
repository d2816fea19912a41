"""The day-2 scenarios of issue #10 on the lab inventory: each plan is proven by the verifier and is
minimal (exactly the cables and hosts the change needs are touched)."""

from __future__ import annotations

from typing import Any

from _day2_util import add_gpu09, cable, index_of, lab_data, node, plan_for

from clusterforge.day2 import ChangePlan
from clusterforge.day2.verify import verify
from clusterforge.util.hostlist import expand


def proven(new: dict[str, Any], old: dict[str, Any] | None = None) -> ChangePlan:
    old = old or lab_data()
    plan = plan_for(new, old)
    assert verify(plan, index_of(old), index_of(new)) == []
    return plan


def touched(plan: ChangePlan, phase: str) -> list[str]:
    return sorted(s.subject for s in plan.steps if s.phase == phase)


def out(plan: ChangePlan) -> list[str]:
    return sorted(s.subject for s in plan.steps if s.phase in ("drain", "takeout"))


def order(plan: ChangePlan, phase: str, subject: str) -> int:
    return next(s.n for s in plan.steps if (s.phase, s.subject) == (phase, subject))


def dev(end: Any) -> str:
    return str(end["device"] if isinstance(end, dict) else end.split("/")[0])


def _leaf_cables(data: dict[str, Any], leaf: str) -> list[str]:
    return sorted(c["id"] for c in data["cables"] if leaf in (dev(c["a"]), dev(c["b"])))


def test_add_a_rack_at_the_end() -> None:
    data = lab_data()
    data["racks"].append({"name": "lab-su03-r01", "row": "row-a", "position": 4, "cooling": "air"})
    for i, port in ((9, 5), (10, 6)):
        data["nodes"].append({"name": f"gpu{i:02d}", "rack": "lab-su03-r01", "u": 2 + 4 * (i - 9),
                              "profile": "gpu-node"})
        for rail in (0, 1):
            data["cables"].append({"id": f"C-1{i:02d}{rail}", "a": f"gpu{i:02d}/mlx5_{rail}/1",
                                   "b": f"leaf-su02-r{rail}/{port}", "media": "AOC", "length_m": 10})
    plan = proven(data)
    assert out(plan) == []  # nobody is drained
    assert touched(plan, "unplug") == [] and touched(plan, "plug") == ["C-1090", "C-1091", "C-1100", "C-1101"]
    assert touched(plan, "install") == ["gpu09", "gpu10", "lab-su03-r01"]
    assert order(plan, "install", "lab-su03-r01") < order(plan, "install", "gpu09")
    learn = next(s for s in plan.steps if s.phase == "learn")
    assert learn.argv == ("clusterforge", "learn", "inventories/lab", "--require", "gpu09,gpu10")
    fabric = next(s for s in plan.steps if s.phase == "fabric")
    assert max(order(plan, "plug", c) for c in touched(plan, "plug")) < learn.n < fabric.n


def test_add_nodes_in_the_middle_of_the_list_renumbers_no_one() -> None:
    data = lab_data()
    add_gpu09(data, at_end=False)
    plan = proven(data)
    assert plan.warnings == () and out(plan) == []
    assert touched(plan, "plug") == ["C-00040", "C-00041"] and touched(plan, "unplug") == []


def test_replace_a_failed_leaf_same_model_new_guid() -> None:
    old = lab_data()
    old["guid_locks"]["switches"] = {"leaf-su02-r0": "0x0002c90300aa0001"}
    new = lab_data()  # the lock dropped: the replacement's GUID is learned again
    plan = proven(new, old)
    leaf = _leaf_cables(new, "leaf-su02-r0")
    assert touched(plan, "unplug") == leaf and touched(plan, "plug") == leaf  # each cable, by label
    assert out(plan) == ["gpu05", "gpu06", "gpu07", "gpu08"]  # its nodes; one indivisible piece of work
    phases = [s.phase for s in plan.steps]
    assert phases.index("drain") < phases.index("unplug") < phases.index("remove") < phases.index("install") \
        < phases.index("plug") < phases.index("learn") < phases.index("validate") < phases.index("resume")
    assert next(s for s in plan.steps if s.phase == "learn").argv[-1] == "leaf-su02-r0"
    assert "same model, new GUID" in next(s for s in plan.steps if s.phase == "remove").action
    assert any("drained at once" in w for w in plan.warnings)


def test_move_nodes_between_racks_unplugs_and_replugs_every_cable() -> None:
    data = lab_data()
    node(data, "gpu04").update(rack="lab-su02-r01", u=18)  # same leaf ports, same cable lengths
    plan = proven(data)
    assert touched(plan, "unplug") == ["C-00007", "C-00008"] == touched(plan, "plug")
    assert out(plan) == ["gpu04"]
    assert order(plan, "unplug", "C-00008") < order(plan, "remove", "gpu04") < order(plan, "install", "gpu04") \
        < order(plan, "plug", "C-00007")


def test_swap_nodes_between_racks() -> None:
    data = lab_data()
    node(data, "gpu04").update(rack="lab-su02-r01", u=2)
    node(data, "gpu05").update(rack="lab-su01-r01", u=14)
    plan = proven(data)
    cables = ["C-00007", "C-00008", "C-00009", "C-00010"]
    assert touched(plan, "unplug") == cables == touched(plan, "plug")
    assert out(plan) == ["gpu04", "gpu05"]
    # each slot is emptied before it is filled
    assert order(plan, "remove", "gpu05") < order(plan, "install", "gpu04")
    assert order(plan, "remove", "gpu04") < order(plan, "install", "gpu05")


def test_pin_bumps_deploy_every_changed_component_in_waves() -> None:
    data = lab_data()
    data["software"].update(nvidia_driver="550.127.05", doca_ofed="24.10-1.1.4.0", nccl="2.22.3-1",
                            lustre_client="2.15.6")
    plan = proven(data)
    deploys = [s for s in plan.steps if s.phase == "deploy"]
    gpu = [s for s in deploys if "gpu01" in expand(s.argv[s.argv.index("--limit") + 1])]
    assert len(gpu) == 1
    comps = [gpu[0].argv[i + 1] for i, a in enumerate(gpu[0].argv) if a == "--component"]
    # healthcheck: its expectations name the driver pin
    assert sorted(comps) == ["healthcheck", "lustre", "nccl", "nvidia", "ofed", "repo"]
    assert sorted(out(plan)) == sorted([f"gpu0{i}" for i in range(1, 9)] + ["lus01", "lus02", "sm01"])
    assert [s.phase for s in plan.steps].count("validate") == 4  # four waves of two GPU nodes


def test_ofed_alone_redeploys_the_lustre_client() -> None:
    data = lab_data()
    data["software"]["doca_ofed"] = "23.10-2.1.3.1"  # 2.15.5 is built for it too (compat.yaml)
    plan = proven(data)
    gpu = next(s for s in plan.steps
               if s.phase == "deploy" and "gpu01" in expand(s.argv[s.argv.index("--limit") + 1]))
    assert gpu.argv[-2:] == ("--component", "lustre") and "rebuilt against the new OFED" in gpu.action


def test_retire_a_middle_rack() -> None:
    data = lab_data()
    gone = {"gpu05", "gpu06", "gpu07", "gpu08"}
    data["nodes"] = [n for n in data["nodes"] if n["name"] not in gone]
    cut = sorted(c["id"] for c in data["cables"] if dev(c["a"]) in gone)
    data["cables"] = [c for c in data["cables"] if c["id"] not in cut]
    data["racks"] = [r for r in data["racks"] if r["name"] != "lab-su02-r01"]
    plan = proven(data)
    assert touched(plan, "unplug") == cut and touched(plan, "plug") == []
    assert out(plan) == sorted(gone)
    assert touched(plan, "remove") == [*sorted(gone), "lab-su02-r01"]
    assert order(plan, "remove", "lab-su02-r01") > max(order(plan, "remove", n) for n in gone)
    assert not [s for s in plan.steps if s.phase in ("resume", "return")]
    assert plan.warnings == () or all("renumbered" not in w for w in plan.warnings)


def test_retire_the_last_rack() -> None:
    old = lab_data()
    old["racks"].append({"name": "lab-su03-r01", "row": "row-a", "position": 4, "cooling": "air"})
    old["nodes"].append({"name": "gpu09", "rack": "lab-su03-r01", "u": 2, "profile": "gpu-node"})
    old["cables"].append({"id": "C-10900", "a": "gpu09/mlx5_0/1", "b": "leaf-su02-r0/5", "media": "AOC",
                          "length_m": 10})
    plan = proven(lab_data(), old)
    assert touched(plan, "unplug") == ["C-10900"] and out(plan) == ["gpu09"]
    assert [s.phase for s in plan.steps if s.rack == "lab-su03-r01"] == ["drain", "unplug", "remove", "remove"]
    assert plan.steps[-1].phase != "resume"


def test_convert_a_rack_from_air_to_cold_plate() -> None:
    data = lab_data()
    rack = next(r for r in data["racks"] if r["name"] == "lab-su01-r01")
    rack.update(cooling="cold-plate", leak_sensors=2)
    plan = proven(data)
    assert out(plan) == ["gpu01", "gpu02", "gpu03", "gpu04"] and touched(plan, "unplug") == []
    settings = next(s for s in plan.steps if s.phase == "install")
    assert settings.action == "rack settings: cooling air -> cold-plate, leak_sensors 0 -> 2"
    checks = [s.action for s in plan.steps if s.phase == "commission"]
    assert checks[0].startswith("leak test of the cold-plate loop") and "2 leak sensor(s)" in checks[1]
    assert max(order(plan, "commission", "lab-su01-r01") for _ in checks) < order(plan, "resume", "gpu01")


def test_add_a_spine_and_drop_an_uplink() -> None:
    data = lab_data()
    data["switches"].append({"name": "spine03", "model": "QM8700", "role": "spine", "rack": "lab-core01", "u": 5})
    data["cables"].append({"id": "C-00042", "a": "leaf-infra01/25", "b": "spine03/1", "media": "AOC",
                           "length_m": 3})
    uplink = next(c for c in data["cables"] if dev(c["a"]) == "leaf-su01-r0" and "spine" in dev(c["b"]))
    data["cables"].remove(uplink)  # oversubscription retuned: one uplink less
    plan = proven(data)
    assert out(plan) == []  # switch-to-switch links: no host is interrupted
    assert touched(plan, "plug") == ["C-00042"] and touched(plan, "unplug") == [uplink["id"]]
    assert touched(plan, "install") == ["spine03"]


def test_a_cable_moved_to_another_port_drains_only_its_host() -> None:
    data = lab_data()
    cable(data, "C-00015")["b"] = "leaf-su02-r0/6"
    plan = proven(data)
    assert out(plan) == ["gpu08"] and touched(plan, "unplug") == ["C-00015"] == touched(plan, "plug")


def test_ofed_lustre_incompatibility_surfaces_in_check_and_diff(tmp_path: Any) -> None:
    import shutil

    from _day2_util import LAB
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("doca_ofed: 24.04-0.7.0.0", "doca_ofed: 24.10-1.1.4.0"))
    check = CliRunner().invoke(app, ["check", str(env)])
    assert check.exit_code == 3
    assert "software.lustre_client" in check.output and "not known to work with OFED 24.10-1.1.4.0" in check.output
    diff = CliRunner().invoke(app, ["diff", str(LAB), str(env)])
    assert diff.exit_code == 3 and "the new inventory is invalid" in diff.output
    assert "lustre deploy preflight refuses it" in diff.output
