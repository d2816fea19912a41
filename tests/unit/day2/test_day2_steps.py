"""The Step shape `apply` relies on: phase, rack, subject, action, argv, manual; JSON round trip."""

from __future__ import annotations

import pytest

from clusterforge.day2.steps import MANUAL_PHASES, PHASES, Step


def test_each_phase_is_manual_or_machine_and_json_carries_it() -> None:
    assert set(PHASES) > MANUAL_PHASES
    assert {"unplug", "remove", "install", "trunks", "plug", "relabel", "commission", "takeout"} <= MANUAL_PHASES
    assert not {"drain", "learn", "deploy", "fabric", "validate", "resume"} & MANUAL_PHASES
    drain = Step(1, "drain", "r01", "gpu01", "drain: x", ("scontrol", "update", "nodename=gpu01"))
    plug = Step(2, "plug", "r01", "C-1", "plug: y")
    assert drain.to_dict()["manual"] is False and plug.to_dict()["manual"] is True
    for step in (drain, plug):
        assert Step.from_dict(step.to_dict()) == step


@pytest.mark.parametrize("bad", [
    {"n": 1, "phase": "dance", "rack": None, "subject": "x", "action": "y", "argv": []},
    {"n": 1, "phase": "plug", "rack": None, "subject": "x", "action": "y", "argv": [], "manual": False},
    {"n": 1, "phase": "plug", "rack": None, "subject": "x", "action": "y", "argv": ["rm", "-rf"]},
    {"n": 1, "phase": "deploy", "rack": None, "subject": "x", "action": "y", "argv": "clusterforge deploy"},
    {"n": "1", "phase": "deploy", "rack": None, "subject": "x", "action": "y", "argv": []},
])
def test_from_dict_refuses_what_to_dict_never_writes(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Step.from_dict(bad)
