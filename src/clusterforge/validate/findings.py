"""Findings: what validation reports, each with a stable rule id and a repair instruction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from ..util.echo import MAX_MESSAGE, cap
from ..util.errors import Path as ErrPath

if TYPE_CHECKING:  # imported by validate.quick's clean report (through report.py): no model at import
    from ..model.cabling import Cable
    from ..model.index import PortKey

Severity = Literal["error", "warning", "info"]

# Stable rule ids and what each one means. Ids never change meaning once released.
RULES: dict[str, str] = {
    "FAB-MISSING": "a declared link is not seen on the fabric",
    "FAB-DEVICE-MISSING": "a declared switch or node is not seen on the fabric at all (its links listed under it)",
    "FAB-PORT-DOWN": "a declared link's port is down or polling",
    "FAB-MISWIRED": "a cable lands on a different port than declared (swaps and rotations are named as such)",
    "FAB-UNEXPECTED": "a link is seen that the inventory does not declare",
    "FAB-DEGRADED": "a link runs at a lower width or speed than declared",
    "FAB-UNKNOWN-DEVICE": "a device on the fabric matches nothing in the inventory",
    "FAB-GUID-MISMATCH": "a device answers with another GUID than the locked one (replaced hardware)",
    "FAB-DUP-DESC": "two devices on the fabric share a node description",
    "FAB-RAIL": "a node's HCA is cabled to a leaf of another rail",
    "FAB-PLANE": "rail planes: a node's HCA is cabled to a leaf of another plane (another subnet)",
    "FAB-UNROUTED": "an uplink is up but no forwarding table of the SM sends any destination over it",
    "FAB-NO-DATA": "no fabric discovery output: the fabric was not checked",
    "FAB-PLANE-NO-DATA": "rail planes: one plane's discovery output is missing: that plane was not checked",
    "HOST-NO-DATA": "a declared host's outputs are missing: it (or that part of it) was not checked",
    "HOST-UNKNOWN": "outputs saved for a host the inventory does not declare (not checked)",
    "HOST-UNREACHABLE": "a host could not be reached to collect its state",
    "HOST-HCA-MISSING": "a declared HCA or port is absent on the host",
    "HOST-PORT-STATE": "an HCA port is not Active/LinkUp",
    "HOST-PORT-RATE": "an HCA port runs at another rate than declared",
    "HOST-LINK-LAYER": "an HCA port runs another link layer than declared",
    "HOST-GUID": "an HCA port GUID differs from the locked one",
    "GPU-COUNT": "the host shows another number of GPUs than declared",
    "GPU-NVLINK": "GPU pairs are not connected with the NVLink class the model has",
    "GPU-NVLINK-DOWN": "NVLink links are inactive",
    "GPU-HCA-AFFINITY": "a GPU's paired HCA is not on its PCIe switch (PIX/PXB)",
    "GPU-DPU-ROOT-COMPLEX": "a DPU shares a PCIe root complex with a GPU",
    "SW-VERSION": "an installed version differs from the pinned one",
    "LNET-NID": "a Lustre client lacks a NID on a declared LNet network",
    "LUSTRE-NOT-MOUNTED": "a Lustre client does not show a declared file system in `lfs df`",
    "LUSTRE-TARGET": "a declared MDT or OST is missing from a client's `lfs df`, or the client cannot use it",
    "LUSTRE-UNDECLARED": "a client's `lfs df` shows a target the inventory does not declare",
    "LUSTRE-HSM": "an MDT's HSM coordinator is not enabled, or no copytool serves the declared archive",
    "LUSTRE-PCC": "a cache client has not the declared PCC back-end attached (or in another mode, id or rule)",
    "LUSTRE-TARGET-STATE": "a server does not serve its declared target, serves another's, or a target is in recovery",
    "PARSE": "a collected output could not be parsed",
    "FW-DRIFT": "a card runs another firmware version than its pin (or a flashed image waits for a reset)",
    "FW-PSID": "a card's PSID (board identity) is not one its firmware pin allows",
    "LINK-BER": "a port's pre-FEC BER past what the FEC corrects (or losing its margin), or errors past the FEC",
    "LINK-FLAP": "a port went down or recovered from errors since its counters were cleared",
    "LINK-MODULE": "an optical module's lane power below its minimum, or the module too hot",
    "FW-NO-DATA": "pinned switches seen on the fabric whose firmware was not read in-band (not checked)",
    "ACC-NO-DATA": "acceptance: a planned test's output is missing (never counted as passed)",
    "ACC-PARSE": "acceptance: a test's output could not be parsed",
    "ACC-DCGM": "acceptance: dcgmi diag failed or warned on a node",
    "ACC-PCIE": "acceptance: a GPU's PCIe link runs below the generation or width of the model",
    "ACC-NVLINK": "acceptance: NVLink links are down on a GPU",
    "ACC-NCCL-NODE": "acceptance: single-node all_reduce below the NVLink bound of the model",
    "ACC-LINK": "acceptance: ib_write_bw below the link bound of the model (the slow port or path named)",
    "ACC-UPLINK": "acceptance: ib_write_bw slow on the routes that cross one uplink and on no other: that cable",
    "ACC-NCCL-FABRIC": "acceptance: multi-node all_reduce below the network bound of the model (bisection plan)",
}


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    subject: str  # the device or port the finding is about, e.g. "gpu01 mlx5_0/1"
    message: str
    expected: str | None = None
    observed: str | None = None
    action: str = ""
    floor: str | None = None  # where on the floor: rack/U, cable label, panel, trunk
    inventory: ErrPath = ()  # model path of the declaration
    where: str | None = field(default=None, compare=False)  # file:line of the declaration
    details: tuple[str, ...] = ()  # one line each: the links of a missing switch, the ports of a rotation
    covers: tuple[str, ...] = field(default=(), compare=False)  # ports (port_text) whose host echoes it explains
    # what it is about, by id (docs/validate.md, "Reading a finding"); None where it names none:
    host: str | None = None  # the node it is about, else the node at an end of its port's link or cable
    switch: str | None = None  # the switch it is about, else the switch at an end of its port's link or cable
    cable: str | None = None  # the declared cable's id (where it names several: the one `inventory` points at)
    port: str | None = None  # the port it names first, as port_text spells it: "gpu01 mlx5_0/1", "leaf01/17"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown rule id {self.rule!r}")
        # text from captures and inventories, bounded in text and JSON (a binary capture is one 30 MB "line")
        for name in ("message", "expected", "observed"):
            value = getattr(self, name)
            if value is not None and len(value) > MAX_MESSAGE:
                object.__setattr__(self, name, cap(value))
        if any(len(d) > MAX_MESSAGE for d in self.details):
            object.__setattr__(self, "details", tuple(cap(d) for d in self.details))


class Ids(TypedDict, total=False):
    """A finding's ids, as keyword arguments: `Finding(..., **ids(port, cable=c))`."""

    host: str | None
    switch: str | None
    cable: str | None
    port: str | None


def ids(*ports: PortKey, cable: Cable | None = None) -> Ids:
    """The ids of a finding about these ports (the first is its `port`) and this declared cable: `host` is the
    first node and `switch` the first switch among the ports, then among the cable's two ends."""
    from ..model.place_text import port_text

    ends = (*ports, *((cable.a.key, cable.b.key) if cable is not None else ()))
    return Ids(
        host=next((k[0] for k in ends if k[1] is not None), None),
        switch=next((k[0] for k in ends if k[1] is None), None),
        cable=cable.id if cable is not None else None,
        port=port_text(ports[0]) if ports else None,
    )


def device_ids(key: tuple[str, str | None]) -> Ids:
    """The ids of a finding about a device as the fabric shows it: an HCA `(node, hca)` or a switch
    `(switch, None)`."""
    return Ids(host=key[0]) if key[1] is not None else Ids(switch=key[0])


def sort_key(f: Finding) -> tuple[int, str, str]:
    order = {"error": 0, "warning": 1, "info": 2}
    return (order[f.severity], f.rule, f.subject)
