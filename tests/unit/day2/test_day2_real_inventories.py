"""Day-2 scenarios of issue #10 on copies of the prod and staging inventories, the way a user works: edit
the inventory, `clusterforge plan ENV --write` (frozen addresses and cabling as constraints), `diff`.
Every plan is proven by the verifier and touches exactly what the change needs."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan, change_plan
from clusterforge.day2.verify import verify
from clusterforge.util.hostlist import expand

ROOT = Path(__file__).resolve().parents[3]


def _edit(path: Path, fn: Callable[[str], str]) -> None:
    path.write_text(fn(path.read_text(encoding="utf-8")), encoding="utf-8")


def _drop_lines(pattern: str) -> Callable[[str], str]:
    return lambda text: "".join(line for line in text.splitlines(keepends=True) if not re.search(pattern, line))


def _planned(tmp: Path, env: str, edits: dict[str, Callable[[str], str]], write: bool = True) -> ChangePlan:
    old = ROOT / "inventories" / env
    new = tmp / env
    shutil.copytree(old, new)
    for name, fn in edits.items():
        _edit(new / name, fn)
    if write:
        result = CliRunner().invoke(app, ["plan", "show", str(new), "--write"])
        assert result.exit_code == 0, result.output
    a, b = load_checked(old).index, load_checked(new).index
    plan = change_plan(a, b, str(new), env)
    assert verify(plan, a, b) == []
    return plan


def _subjects(plan: ChangePlan, *phases: str) -> list[str]:
    return sorted(s.subject for s in plan.steps if s.phase in phases)


def _out(plan: ChangePlan) -> list[str]:
    """The hosts taken out (prod and staging drain through Slurm's `{hosts}` hook: a step may name a hostlist)."""
    return sorted(h for s in _subjects(plan, "drain", "takeout") for h in expand(s))


def test_prod_retire_a_middle_rack(tmp_path: Path) -> None:
    plan = _planned(tmp_path, "prod", {"nodes.yaml": _drop_lines(r"rack: prod-su02-r03,"),
                                       "site.yaml": _drop_lines(r"name: prod-su02-r03,")})
    gone = ["gpu0029", "gpu0030", "gpu0031", "gpu0032"]
    assert _out(plan) == gone  # nobody else: no address moves, no cable of another node moves
    assert len(_subjects(plan, "unplug")) == 8 and _subjects(plan, "plug") == []
    assert not [w for w in plan.warnings if "renumbered" in w]
    removes = [s for s in plan.steps if s.phase == "remove"]
    assert [s.subject for s in removes] == [*gone, "prod-su02-r03"]  # the rack once it is empty


def test_prod_retire_the_last_compute_rack(tmp_path: Path) -> None:
    text = (ROOT / "inventories" / "prod" / "nodes.yaml").read_text()
    last = re.findall(r"rack: (prod-su\d+-r\d+),", text)[-1]
    plan = _planned(tmp_path, "prod", {"nodes.yaml": _drop_lines(rf"rack: {last},"),
                                       "site.yaml": _drop_lines(rf"name: {last},")})
    assert len(_out(plan)) == 4 and len(_subjects(plan, "unplug")) == 8 and _subjects(plan, "plug") == []
    assert plan.steps[[s.subject for s in plan.steps].index(last)].phase == "remove"


def test_prod_pin_bumps_one_subnet_manager_and_one_lustre_server_per_pair_at_a_time(tmp_path: Path) -> None:
    def bump(text: str) -> str:
        for a, b in (("nvidia_driver: 550.90.07", "nvidia_driver: 550.127.05"),
                     ("doca_ofed: 24.04-0.7.0.0", "doca_ofed: 24.10-1.1.4.0"),
                     ("nccl: 2.21.5-1", "nccl: 2.22.3-1"), ("lustre_client: 2.15.5", "lustre_client: 2.15.6")):
            assert a in text
            text = text.replace(a, b)
        return text

    plan = _planned(tmp_path, "prod", {"services.yaml": bump}, write=False)
    steps = plan.steps
    handover = [s for s in steps if s.phase == "handover"]
    sm01_out = next(s.n for s in steps if s.phase == "takeout" and s.subject == "sm01")
    assert handover and handover[0].subject == "sm02" and handover[0].n < sm01_out
    sm02_out = next(s.n for s in steps if s.phase == "takeout" and s.subject == "sm02")
    sm01_back = next(s.n for s in steps if s.phase == "return" and s.subject == "sm01")
    assert sm01_out < sm01_back < sm02_out or sm02_out < sm01_out  # never both out
    comps = {a for s in steps if s.phase == "deploy" for a in s.argv[s.argv.index("--limit") + 3::2]}
    assert {"nvidia", "ofed", "nccl", "lustre"} <= comps
    assert {h for h in plan.drained} == {h.host for h in plan.hosts if h.disruptive}


@pytest.mark.parametrize("env", ["staging"])
def test_swap_two_nodes_of_one_rack_with_two_of_the_next(tmp_path: Path, env: str) -> None:
    prefix = "stag"

    def swap(text: str) -> str:
        for a, b in (("gpu0001", "gpu0005"), ("gpu0002", "gpu0006")):
            la = re.search(rf"- \{{name: {a}, rack: ([^,]+), u: (\d+),", text)
            lb = re.search(rf"- \{{name: {b}, rack: ([^,]+), u: (\d+),", text)
            assert la and lb
            text = text.replace(la.group(0), f"- {{name: {a}, rack: {lb.group(1)}, u: {lb.group(2)},")
            text = text.replace(lb.group(0), f"- {{name: {b}, rack: {la.group(1)}, u: {la.group(2)},")
        return text

    plan = _planned(tmp_path, env, {"nodes.yaml": swap})
    moved = ["gpu0001", "gpu0002", "gpu0005", "gpu0006"]
    assert _out(plan) == moved
    assert len(_subjects(plan, "unplug")) == 8 and len(_subjects(plan, "plug")) == 8
    order = {(s.phase, s.subject): s.n for s in plan.steps}
    for a, b in (("gpu0001", "gpu0005"), ("gpu0002", "gpu0006")):
        assert order[("remove", b)] < order[("install", a)] and order[("remove", a)] < order[("install", b)]
    assert f"{prefix}-su01-r01" in {s.rack for s in plan.steps}


def test_prod_move_four_nodes_to_the_next_rack(tmp_path: Path) -> None:
    def move(text: str) -> str:
        for i, name in enumerate(("gpu0001", "gpu0002", "gpu0003", "gpu0004")):
            text = re.sub(rf"- \{{name: {name}, rack: prod-su01-r01, u: \d+,",
                          f"- {{name: {name}, rack: prod-su01-r02, u: {18 + 4 * i},", text)
        return text

    def room(text: str) -> str:  # the next rack takes the power of eight nodes
        return text.replace("{name: prod-su01-r02, row: row-a, position: 2, cooling: air}",
                            "{name: prod-su01-r02, row: row-a, position: 2, cooling: air, max_density_kw: 60}")

    plan = _planned(tmp_path, "prod", {"nodes.yaml": move, "site.yaml": room})
    assert _out(plan) == ["gpu0001", "gpu0002", "gpu0003", "gpu0004"]
    assert len(_subjects(plan, "unplug")) == 8 == len(_subjects(plan, "plug"))  # each cable, length or not


def test_prod_oversubscription_one_to_one_to_two_to_one(tmp_path: Path) -> None:
    plan = _planned(tmp_path, "prod", {"fabric.yaml": lambda t: t.replace('oversubscription: "1:1"',
                                                                         'oversubscription: "2:1"')})
    assert _out(plan) == []  # uplinks and spines only: no host interrupted
    assert _subjects(plan, "plug") == [] or all(not s.subject.startswith("gpu") for s in plan.steps)
    moved = [d for d in plan.diff.devices if d.change == "moved"]
    assert moved == []  # no live leaf moves
    assert not [c for c in plan.diff.cables if c.change in ("moved", "rerouted", "replaced")]


def test_what_a_node_stops_being_is_left_behind_and_said(tmp_path: Path) -> None:
    """What a node stops being, its deploy retires from the deploy record (deploy/retire.py): lhsmd and the LNet
    it needed on an HSM agent no more, OpenSM on a subnet manager no more. The plan says what, by host (a host
    the record does not cover keeps them: then by hand); a plan that takes nothing away says nothing."""
    plan = _planned(tmp_path / "a", "prod", {"services.yaml": lambda t: t.replace("agents: [sm01, sm02]",
                                                                                  "agents: [sm01]")}, write=False)
    (left,) = [w for w in plan.warnings if "takes away what its deploy retires" in w]
    assert left.startswith("sm02: ") and "it stops and disables lnet, lhsmd;" in left
    assert "removes 6 file(s) (/etc/modprobe.d/lustre.conf, /etc/lnet.conf, /etc/lhsmd/agent, ...)" in left
    assert "releases the hold of lustre-client-utils, lustre-client-modules-dkms, lemur-hsm-agent, lemur-data-movers" \
        in left
    plan = _planned(tmp_path / "b", "prod", {"services.yaml": _drop_lines(r"- \{node: sm02, priority: 14\}")},
                    write=False)
    (left,) = [w for w in plan.warnings if "takes away what its deploy retires" in w]
    assert left.startswith("sm02: ") and "it stops and disables opensm;" in left and "/etc/opensm/opensm.conf" in left
    plan = _planned(tmp_path / "c", "prod", {"services.yaml": lambda t: t.replace("lemur: 0.6.0", "lemur: 0.6.1")},
                    write=False)
    assert not [w for w in plan.warnings if "takes away what its deploy retires" in w]


def test_left_behind_counts_what_no_component_keeps() -> None:
    from clusterforge.day2.host_diff import ComponentChange, HostChange, left_behind

    moved = HostChange("sm01", "r", "changed", (
        ComponentChange("lustre", files=("-/etc/lhsmd/agent", "~/etc/lnet.conf"), pins=("-lemur-hsm-agent 0.6.0-1",),
                        other=("-service lhsmd",)),
        ComponentChange("hsm", files=("+/etc/lhsmd/agent",), pins=("+lemur-hsm-agent 0.6.0-1",),
                        other=("+service lhsmd",))), (), False)
    assert left_behind(moved) == ((), (), ())  # moved between components: nothing left behind
    dropped = HostChange("sm01", "r", "changed", (
        ComponentChange("opensm", files=("-/etc/opensm/opensm.conf",), other=("-package opensm", "-service opensm")),
        ComponentChange("nvidia", pins=("nvidia-driver-550: 550.54.15-1 -> 550.90.07-1",))), (), False)
    assert left_behind(dropped) == (("opensm",), ("/etc/opensm/opensm.conf",), ())
    assert left_behind(HostChange("gone", "r", "removed", (), ("leaves",), False)) == ((), (), ())


def test_the_master_hands_over_before_its_opensm_is_retired(tmp_path: Path) -> None:
    """prod's master (sm01, priority 15) stops being a subnet manager: its fabric deploy retires its OpenSM
    (deploy/retire.py), so sm02 takes over first (a manual handover); the verifier refuses the plan without it."""
    import dataclasses

    plan = _planned(tmp_path, "prod", {"services.yaml": _drop_lines(r"- \{node: sm01, priority: 15\}")}, write=False)
    assert [(s.phase, s.subject) for s in plan.steps][:2] == [("handover", "sm02"), ("fabric", "sm01")]
    a, b = load_checked(ROOT / "inventories" / "prod").index, load_checked(tmp_path / "prod").index
    steps = [dataclasses.replace(s, n=i) for i, s in enumerate(plan.steps[1:], start=1)]
    (v,) = verify(dataclasses.replace(plan, steps=tuple(steps)), a, b)
    assert (v.step, v.rule) == (1, "HA") and "sm01's OpenSM is retired" in v.message
