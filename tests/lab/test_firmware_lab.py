"""A firmware bump as a day-2 plan, run on the lab (issue #24; docs/firmware.md).

A copy of the lab inventory (its own network, hooks pointed at the copy) that pins its ConnectX-6 cards at
20.39.2048: `lab up` installs the LAB-ONLY mlxfwmanager/mlxfwreset stand-ins (lab/firmware_standin.py) with
each card at the pin, and `validate` finds no firmware drift. The pin bumped to 20.40.1000 and the (LAB) image
staged on every host, `diff` plans it (the verifier proves it: drains within max_drain, the flash and its
mlxfwreset before each wave's validation) and `apply` runs it for real: the lab's drain hook, `clusterforge
firmware flash` and `activate` over SSH, `validate --limit` of each wave, the resume. After it every card runs
20.40.1000, validate against the new inventory finds no drift, and the lab's record shows each host drained
and resumed. Then a card that runs another version shows as FW-DRIFT naming it.

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
from clusterforge.lab.rehearsal import env as labenv
from clusterforge.parse.mlxfwmanager import parse

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]
OLD, NEW = "20.39.2048", "20.40.1000"
PIN = """# constructed for the test: the lab's ConnectX-6 pinned (docs/firmware.md)
firmware:
  hcas:
    - {{model: ConnectX-6, version: {version}, image: firmware/fw-ConnectX6-rel-{under}.bin}}
"""


def _pin(env: Path, version: str) -> None:
    (env / "firmware.yaml").write_text(PIN.format(version=version, under=version.replace(".", "_")))


@pytest.fixture(scope="module")
def fw_env(tmp_path_factory: pytest.TempPathFactory, container_tools: None) -> Iterator[Path]:
    def edit(env: Path) -> None:
        own_network(env)
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
