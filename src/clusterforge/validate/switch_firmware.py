"""Switch firmware against the pins (docs/firmware.md), read in-band from the fabric node.

Collection is two-phase: the fabric node's discovery (phase one) gives each switch's LID; every switch whose
model is pinned is then queried through the fabric with `flint -d lid-<LID> q` (phase two, `query_commands`),
through that plane's HCA port where the fabric has rail planes (`lid-<LID>,<HCA>,<PORT>`, mstflint's in-band
device name). Each answer is saved as fabric/flint-q@<switch>.txt (`validate --from` reads the same) and
checked for the running version (FW-DRIFT) and the board (FW-PSID). A pinned switch that was seen on the
fabric but whose firmware was not read is one FW-NO-DATA warning for them all (flint not installed on the
fabric node, or the switch did not answer the vendor MADs).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..collect.store import Observations
from ..model.firmware import FirmwarePin
from ..model.index import Index
from ..model.place_text import device_floor
from ..parse import ParseError, ibnetdiscover
from ..parse.flint_q import FlintQuery
from .findings import Finding
from .identify import bind

STEM = "flint-q@"
"""A saved switch query: fabric/flint-q@<switch>.txt."""


def pinned_switches(index: Index) -> dict[str, tuple[int, FirmwarePin]]:
    """Every inventory switch whose model has a pin: name -> (the pin's index in firmware.switches, the pin)."""
    fw = index.inv.firmware
    if fw is None or not fw.switches:
        return {}
    pins = {p.model: (i, p) for i, p in enumerate(fw.switches)}
    return {sw.name: pins[sw.model] for sw in index.inv.switches if sw.model in pins}


def _discoveries(obs: Observations) -> dict[int | None, str]:
    """Phase one's discovery text(s): plane -> text (None: one fabric)."""
    if "ibnetdiscover" in obs.fabric:
        return {None: obs.fabric["ibnetdiscover"]}
    out: dict[int | None, str] = {}
    for stem, text in obs.fabric.items():
        tail = stem.removeprefix("ibnetdiscover-plane")
        if tail != stem and tail.isdigit():
            out[int(tail)] = text
    return out


def query_commands(index: Index, obs: Observations, via: Mapping[int, tuple[str, int]]
                   ) -> dict[str, tuple[str, ...]]:
    """Phase two: the in-band query of each pinned switch that phase one's discovery saw with a LID, run on
    the fabric node (`via`: plane -> that node's HCA and port in the plane; empty without planes). A discovery
    that does not parse queries nothing (validate reports it)."""
    pinned = pinned_switches(index)
    if not pinned:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for plane, text in sorted(_discoveries(obs).items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        try:
            topo = ibnetdiscover.parse(text)
        except ParseError:
            continue
        binding = bind(index, topo)
        for sw in topo.switches:
            name = binding.by_guid.get(sw.guid, (None, None))[0]
            if name not in pinned or sw.lid is None or f"{STEM}{name}" in out:
                continue
            device = f"lid-{sw.lid}"
            if plane is not None and plane in via:
                hca, port = via[plane]
                device += f",{hca},{port}"
            out[f"{STEM}{name}"] = ("flint", "-d", device, "q")
    return out


def check_switch_firmware(index: Index, obs: Observations, queries: Mapping[str, FlintQuery],
                          unseen: set[str], only: str | None = None) -> list[Finding]:
    """FW-DRIFT / FW-PSID for each read switch (`queries`: switch -> its parsed query), and one FW-NO-DATA for
    the pinned switches that were seen on the fabric (not in `unseen`) but not read. `only`: that switch alone
    (a day-2 wave's: the others are bumped in their own waves)."""
    pinned = {n: p for n, p in pinned_switches(index).items() if only is None or n == only}
    out: list[Finding] = []
    for name, q in sorted(queries.items()):
        if name not in pinned:
            continue
        at, pin = pinned[name]
        sw = index.switches[name]
        tool = index.cat.switches[sw.model].fw_tool if sw.model in index.cat.switches else None
        floor = device_floor(index, name)
        which = f"{name} ({sw.model}, {floor})"
        if q.fw_running != pin.version:
            how = ("a managed switch: a person runs the update from its own OS, the plan names it"
                   if tool == "switch-os" else "flashed in-band from the fabric node, then reset")
            pending = q.activation_pending and q.fw_version == pin.version
            out.append(Finding(
                "FW-DRIFT", "error", name, f"{which} runs firmware {q.fw_running}, pinned {pin.version}"
                + (f" (flashed {q.fw_version}: not activated yet)" if q.activation_pending else ""),
                expected=pin.version, observed=q.fw_running, floor=floor,
                action=(f"activate the flashed image: drain the nodes cabled to {name}, then `clusterforge firmware "
                        f"activate ENV --switch {name} --how swreset` (flint swreset, in-band; the switch restarts)"
                        if pending else
                        f"bump it through a day-2 plan (`clusterforge diff` with the new pin): the nodes cabled to "
                        f"it are drained first, the switch is updated ({how}), validated, and they resume"),
                inventory=("firmware", "switches", at), switch=name))
        elif q.fw_version != pin.version:  # runs the pin, but its next reset would not
            out.append(Finding(
                "FW-DRIFT", "error", name, f"{which} runs its pin {pin.version} but its flash holds {q.fw_version}: "
                "its next reset (or power cycle) runs that", expected=pin.version, observed=q.fw_version,
                floor=floor, action=f"burn the pin's image back before anything resets it (`clusterforge firmware "
                                    f"flash ENV --switch {name} ... --reflash`), or bump the pin through a plan",
                inventory=("firmware", "switches", at), switch=name))
        if pin.psids and q.psid not in pin.psids:
            out.append(Finding(
                "FW-PSID", "error", name,
                f"{which} is board {q.psid or 'none'}, not one of the pinned PSIDs ({', '.join(pin.psids)}): "
                "another vendor's (OEM) switch or another model",
                expected=", ".join(pin.psids), observed=q.psid or "none", floor=floor,
                action="do not cross-flash another PSID's image; qualify the board and add its PSID (with its "
                       "own image) to the pin, or replace the switch",
                inventory=("firmware", "switches", at), switch=name))
    unread = sorted(n for n in pinned if n not in queries and n not in unseen)
    if unread and _discoveries(obs):
        shown = ", ".join(unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
        out.append(Finding(
            "FW-NO-DATA", "warning", "fabric",
            f"the firmware of {len(unread)} pinned switch(es) was not read: {shown}",
            action="install mstflint (in-band) on the fabric node: validate runs `flint -d lid-<LID> q` there for "
                   "each pinned switch; a switch that does not answer vendor MADs is read from its own OS",
            details=tuple(unread[5:])))
    return out


def saved_queries(obs: Observations) -> dict[str, tuple[str, str]]:
    """The saved switch queries that hold output: switch -> (file stem, text). An empty one is a switch that did
    not answer (flint prints its error on stderr): not read, like a missing one."""
    return {stem.removeprefix(STEM): (stem, text) for stem, text in obs.fabric.items()
            if stem.startswith(STEM) and text.strip()}
