"""What the link findings share (accept/judge.py, accept/judge_routes.py): a port by its ids, a rate as text, the
bound of a test, and the finding that names a slow port's cable."""

from __future__ import annotations

from ..model.place_text import port_text
from ..validate.findings import Finding, Ids
from .expect import Expect
from .plan import HostPort, LinkTest

NEVER = Finding("ACC-NO-DATA", "error", "-", "-")
"""The missing-output finding of a test that is there (an extra test is read only when its file is)."""


def port_ids(p: HostPort) -> Ids:
    """A link test's port by id: its node, the leaf and the cable it is plugged into, the port as
    `place_text.port_text` spells it (`gpu01 mlx5_0/1`; the subject keeps the plan's `gpu01/mlx5_0/1`)."""
    return Ids(host=p.node, switch=p.leaf, cable=p.cable, port=port_text((p.node, p.hca, p.port)))


def gbps_text(value: float | None) -> str:
    return "failed (no result)" if value is None else f"{value:g} Gb/s"


def least(exp: Expect, t: LinkTest) -> float:
    """A test's bound: the slower of its two ports' (the model's link efficiency x the link's rate)."""
    return min(exp.link_gbps.get(t.client.label, 0.0), exp.link_gbps.get(t.server.label, 0.0))


def port_finding(exp: Expect, port: HostPort, message: str, observed: str) -> Finding:
    """ACC-LINK naming a slow port: its cable, leaf and leaf port, and what to do about it."""
    return Finding(
        "ACC-LINK", "error", port.label, message,
        expected=f">= {exp.link_gbps.get(port.label, 0):g} Gb/s ({exp.link_rate.get(port.label, '?')})",
        observed=observed, floor=f"cable {port.cable} to {port.leaf}/{port.leaf_port}",
        action=f"check cable {port.cable} ({port.label} <-> {port.leaf}/{port.leaf_port}): validate for its "
               "width and speed, ib-health for symbol errors and BER; reseat or replace it, then re-run its tests",
        **port_ids(port))
