"""A firmware bump as a day-2 plan, run on the lab (issue #24; docs/firmware.md).

A copy of the lab inventory (its own network, hooks pointed at the copy) that pins its ConnectX-6 cards at
20.39.2048: `lab up` installs the LAB-ONLY mlxfwmanager/mlxfwreset stand-ins (lab/firmware_standin.py) with
each card at the pin, and `validate` finds no firmware drift. The pin bumped to 20.40.1000 and the (LAB) image
staged on every host, `diff` plans it (the verifier proves it: drains within max_drain, the flash and its
mlxfwreset before each wave's validation) and `apply` runs it for real: the lab's drain hook, `clusterforge
firmware flash` and `activate` over SSH, `validate --limit` of each wave, the resume. After it every card runs
20.40.1000, validate against the new inventory finds no drift, and the lab's record shows each host drained
and resumed. Then a card that runs another version shows as FW-DRIFT naming it.

The copy's spines and first leaf are QM8790s (unmanaged: flashed through the fabric), pinned too: `lab up`
installs the in-band `flint` stand-in on the fabric node (sm01), which finds each switch by its LID through the
simulated fabric (real smpquery over ibsim). validate's second phase reads them (`flint -d lid-<LID> q`); their
pin bumped, `apply` runs each switch's wave (its nodes drained, `firmware flash --switch`, `activate --switch
--how swreset`, validated, resumed) and every one runs the new version; one burned by hand and not reset is
FW-DRIFT told to activate it.

Long (`make test-long`). Run with the lab lock: `flock /tmp/cf-lab.lock .venv/bin/pytest -q
tests/lab/test_firmware_lab.py`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, lab_copy, own_network
from clusterforge.lab import ssh_command
from clusterforge.lab.firmware_standin import lab_image
from clusterforge.lab.proc import run
from clusterforge.parse.mlxfwmanager import parse
from clusterforge.rehearsal import env as labenv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]
OLD, NEW = "20.39.2048", "20.40.1000"
OLD_SW, NEW_SW = "27.2010.6102", "27.2012.1010"
UNMANAGED = ("spine01", "spine02", "leaf-su01-r0")
PIN = """# constructed for the test: the lab's ConnectX-6 and its QM8790 switches pinned (docs/firmware.md)
firmware:
  hcas:
    - {{model: ConnectX-6, version: {version}, image: firmware/fw-ConnectX6-rel-{under}.bin}}
  switches:
    - {{model: QM8790, version: {sw}, image: firmware/fw-QM8790-rel-{sw_under}.bin}}
"""


def _pin(env: Path, version: str, sw: str = OLD_SW) -> None:
    (env / "firmware.yaml").write_text(PIN.format(version=version, under=version.replace(".", "_"), sw=sw,
                                                  sw_under=sw.replace(".", "_")))


def _unmanaged(env: Path) -> None:
    fabric = env / "fabric.yaml"
    text = fabric.read_text()
    for name in UNMANAGED:
        text = text.replace(f"{{name: {name}, model: QM8700", f"{{name: {name}, model: QM8790")
    fabric.write_text(text)


@pytest.fixture(scope="module")
def fw_env(tmp_path_factory: pytest.TempPathFactory, container_tools: None) -> Iterator[Path]:
    def edit(env: Path) -> None:
        own_network(env)
        _unmanaged(env)
        _pin(env, OLD)

    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "cffw", edit=edit) as env:
        mp = pytest.MonkeyPatch()
        mp.chdir(env.parent)
        try:
            yield env
        finally:
            mp.undo()


def _query(env: Path, host: str) -> list[tuple[str, str]]:
    state = labenv.running(env)
    assert state is not None
    res = run(ssh_command(state, host, ["mlxfwmanager", "--query"]), timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    return [(d.fw, d.fw_running) for d in parse(res.stdout)]


def _fw_findings(env: Path) -> list[dict[str, object]]:
    code, out = cf("validate", str(env), "--format", "json")
    data = json.loads(out[out.index("{"):])
    assert code in (0, 4), out
    return [f for f in data["findings"] if str(f["rule"]).startswith("FW-")]


def test_a_pin_bump_planned_proven_and_applied_on_the_lab(fw_env: Path) -> None:
    state = labenv.running(fw_env)
    assert state is not None
    hosts = sorted(state.hosts)
    assert {h: set(_query(fw_env, h)) for h in hosts} == {h: {(OLD, OLD)} for h in hosts}
    assert _fw_findings(fw_env) == []

    old = fw_env.parent / "asbuilt"
    shutil.copytree(fw_env, old)
    _pin(fw_env, NEW)
    for host in hosts:  # staged by the operator before the bump, where the flash step looks for it
        labenv.put_file(state, host, "/var/lib/clusterforge/firmware/fw-ConnectX6-rel-20_40_1000.bin",
                        lab_image("ConnectX6", NEW))
    plan = fw_env.parent / "bump.json"
    code, out = cf("diff", str(old), str(fw_env), "--output", str(plan))
    assert code == 0, out
    steps = json.loads(plan.read_text())["steps"]
    phases = [s["phase"] for s in steps]
    assert {"flash", "activate", "validate", "resume"} <= set(phases), phases
    assert phases.index("flash") < phases.index("activate") < phases.index("validate")

    code, out = cf("apply", str(plan), "--confirm-through", str(len(steps)))
    assert code == 0, out
    assert {h: set(_query(fw_env, h)) for h in hosts} == {h: {(NEW, NEW)} for h in hosts}
    assert _fw_findings(fw_env) == []
    drained = json.loads((labenv.paths(fw_env).state_dir / "drained.json").read_text())
    assert drained["drained"] == []
    events = {(e["host"], e["event"]) for e in drained["events"]}
    compute = [h for h in hosts if h.startswith("gpu")]
    assert {(h, ev) for h in compute for ev in ("drain", "resume")} <= events
    assert all(e.get("reason") == "cf-day2: change plan" for e in drained["events"] if e["event"] == "drain")

    # a card flashed by hand to another version and reset: drift, naming the host and the card's slot
    other = "/var/lib/clusterforge/firmware/other.bin"
    labenv.put_file(state, "gpu03", other, lab_image("ConnectX6", "20.41.0100"))
    for argv in (["mlxfwmanager", "-d", "0000:3b:00.0", "-u", "-i", other, "-y"],
                 ["mlxfwreset", "-d", "0000:3b:00.0", "-y", "reset"]):
        assert run(ssh_command(state, "gpu03", argv), timeout=60, check=False).returncode == 0
    (found,) = _fw_findings(fw_env)
    assert found["rule"] == "FW-DRIFT" and "gpu03" in str(found["message"]) and "0000:3b:00.0" in str(found["message"])
    assert found["observed"] == "20.41.0100" and found["expected"] == NEW
    for argv in (["mlxfwmanager", "-d", "0000:3b:00.0", "-u", "-i",  # back to the pin: the next test starts clean
                  "/var/lib/clusterforge/firmware/fw-ConnectX6-rel-20_40_1000.bin", "-y", "--force"],
                 ["mlxfwreset", "-d", "0000:3b:00.0", "-y", "reset"]):
        assert run(ssh_command(state, "gpu03", argv), timeout=60, check=False).returncode == 0
    assert _fw_findings(fw_env) == []


def _switch_fw(env: Path, switch: str) -> tuple[str, str]:
    state = labenv.running(env)
    assert state is not None
    res = run(ssh_command(state, "sm01", ["cat", "/var/lib/clusterforge-lab/fw/switches.json"]), timeout=60)
    sw = json.loads(res.stdout)[switch]
    return sw["fw"], sw["fw_running"]


def test_a_switch_pin_bump_through_the_fabric_on_the_lab(fw_env: Path) -> None:
    state = labenv.running(fw_env)
    assert state is not None
    assert {s: _switch_fw(fw_env, s) for s in UNMANAGED} == {s: (OLD_SW, OLD_SW) for s in UNMANAGED}
    assert _fw_findings(fw_env) == []  # validate's second phase read every pinned switch at its pin

    old = fw_env.parent / "asbuilt-sw"
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(fw_env, old)
    _pin(fw_env, NEW, NEW_SW)
    image = "/var/lib/clusterforge/firmware/fw-QM8790-rel-27_2012_1010.bin"
    labenv.put_file(state, "sm01", image, lab_image("Quantum", NEW_SW))  # staged on the fabric node
    plan = fw_env.parent / "bump-sw.json"
    code, out = cf("diff", str(old), str(fw_env), "--output", str(plan))
    assert code == 0, out
    steps = json.loads(plan.read_text())["steps"]
    flashes = [s for s in steps if s["phase"] == "flash"]
    assert sorted(s["subject"] for s in flashes) == sorted(UNMANAGED), flashes
    code, out = cf("apply", str(plan), "--confirm-through", str(len(steps)))
    assert code == 0, out
    assert {s: _switch_fw(fw_env, s) for s in UNMANAGED} == {s: (NEW_SW, NEW_SW) for s in UNMANAGED}
    assert _fw_findings(fw_env) == []
    events = json.loads((labenv.paths(fw_env).state_dir / "drained.json").read_text())["events"]
    leaf_nodes = {"gpu01", "gpu02"}  # cabled to leaf-su01-r0 (rail 0 of su01)
    assert {(h, ev) for h in leaf_nodes for ev in ("drain", "resume")} <= {(e["host"], e["event"]) for e in events}

    # by hand on the fabric node: another image burned and reset is FW-DRIFT; the pin's burned back and not yet
    # reset is FW-DRIFT told to activate it; `firmware activate --switch` then makes it clean
    def flint(*args: str) -> None:
        lid = "$(ibswitches | awk '/\"spine02\"/ {print $(NF-2)}')"
        res = run(ssh_command(state, "sm01", ["sh", "-c", f"flint -d lid-{lid} {' '.join(args)}"]), timeout=60,
                  check=False)
        assert res.returncode == 0, (res.stdout, res.stderr)

    other = "/var/lib/clusterforge/firmware/other-sw.bin"
    labenv.put_file(state, "sm01", other, lab_image("Quantum", "27.2014.1000"))
    flint("-i", other, "-y", "burn")
    flint("swreset")
    (found,) = _fw_findings(fw_env)
    assert (found["rule"], found["subject"], found["observed"]) == ("FW-DRIFT", "spine02", "27.2014.1000"), found
    flint("-i", image, "-y", "burn")
    (found,) = _fw_findings(fw_env)
    assert "not activated yet" in str(found["message"]) and "--how swreset" in str(found["action"]), found
    code, out = cf("firmware", "activate", str(fw_env), "--switch", "spine02", "--how", "swreset")
    assert code == 0, out
    assert _switch_fw(fw_env, "spine02") == (NEW_SW, NEW_SW) and _fw_findings(fw_env) == []
