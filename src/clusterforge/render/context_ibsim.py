"""The fabric as an ibsim net file (ibnetdiscover's format, as `ibsim -s` reads it).

Verified against ibsim 0.10 (Debian ibsim-utils) and its sim_net.c parser:

* `width=N`, `speed=N`, `extspeed=N` lines at the start of a line set the
  LinkWidthEnabled / LinkSpeedEnabled / LinkSpeedExtEnabled masks of every port
  parsed after them (width 1=1x 2=4x 4=8x 8=12x 16=2x; speed 1=SDR 2=DDR 4=QDR;
  extspeed 1=FDR 2=EDR 4=HDR; ibsim 0.10 rejects extspeed above 7, so no NDR).
* A port line's trailing `lid N <w>x<SPEED>` (what ibnetdiscover prints) sets that
  port's enabled width and speed (`4xHDR`, `2xHDR`); ibsim 0.10 parses SDR..HDR only.
* ibsim ignores the GUID in `"S-..."`/`"H-..."` ids and numbers nodes itself;
  `switchguid=G` / `caguid=G` before a record sets its node GUID, and a CA's port N
  gets G + N. `vendid=` (reset after every record) and `devid=` set NodeInfo.
* Records: `Switch <ports> "S-<guid>" # "<desc>" enhanced port 0 lid 0 lmc 0`,
  `Hca <ports> "H-<guid>" # "<host> <dev>"`, then `[port] "peer-id"[peer-port]` lines.

So every port line carries its link's width and speed, NDR/XDR links are simulated at
HDR lane speed (noted in the file), and CA GUIDs are the rendered port GUIDs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..util.guid import guid_hex
from .fabric import VENDOR_ID, Ca, FabricView
from .guids import fmt
from .spec import FileSpec

# ibsim 0.10 limits (its -N / -S / -P defaults) and the lane speeds it can parse
IBSIM_MAX_NODES = 2048
IBSIM_MAX_SWITCHES = 256
IBSIM_MAX_PORTS = 13312
IBSIM_SPEEDS = ("SDR", "DDR", "QDR", "FDR", "EDR", "HDR")
_LANE_SPEED = {10: "QDR", 14: "FDR", 25: "EDR", 50: "HDR", 100: "NDR", 200: "XDR"}
_EXT_MASK = {"FDR": 1, "EDR": 2, "HDR": 4}
_WIDTH_MASK = {1: 1, 2: 16, 4: 2, 8: 4, 12: 8}


def link_mode(fab: FabricView, rate: str | None) -> tuple[int, str, str]:
    """(lanes, lane speed as declared, lane speed ibsim can simulate) of a rate."""
    info = fab.index.cat.rates.get(rate or "")
    if info is None:
        return 4, "SDR", "SDR"
    speed = _LANE_SPEED.get(info.lane_gbps, "HDR")
    return info.lanes, speed, speed if speed in IBSIM_SPEEDS else "HDR"


def _sim_ca_guid(fab: FabricView, ca: Ca) -> int:
    """The node GUID to give ibsim so that its port GUIDs (node + N) are the rendered ones."""
    first = min(ca.ports)
    return fab.guids.port(ca.node, ca.name, first) - first


def net_context(fab: FabricView) -> tuple[dict[str, Any], list[str], list[str]]:
    ids: dict[str, str] = {}
    for sw in fab.index.inv.switches:
        ids[sw.name] = "S-" + guid_hex(fab.guids.switch(sw.name))
    sim_guid = {ca.label: _sim_ca_guid(fab, ca) for ca in fab.cas}
    for ca in fab.cas:
        ids[ca.label] = "H-" + guid_hex(sim_guid[ca.label])

    # per rate: the trailing `lid 0 4xHDR` that sets a port's enabled width/speed
    rates: Counter[str] = Counter(link.rate for link in fab.links if link.rate)
    modes = {rate: link_mode(fab, rate) for rate in {link.rate for link in fab.links}}
    tail = {rate: f"lid 0 {lanes}x{sim}" for rate, (lanes, _speed, sim) in modes.items()}
    slow = {f"{lanes}x{speed}" for lanes, speed, sim in modes.values() if sim != speed}
    # what a port line says of the device at the far end, by (device, hca): its quoted id and
    # description, and for a CA the GUID that its port numbers are added to
    far_of: dict[tuple[str, str | None], tuple[str, str, int | None]] = {
        (sw.name, None): (f'"{ids[sw.name]}"', f'"{sw.name}"', None) for sw in fab.index.inv.switches}
    far_of.update({(ca.node, ca.name): (f'"{ids[ca.label]}"', f'"{ca.desc}"', sim_guid[ca.label]) for ca in fab.cas})
    peer = fab.peer

    def port_line(key: tuple[str, str | None, int], own_guid: str | None = None) -> str | None:
        """The net-file line of a cabled port (None when nothing is plugged in).

        Switch ports name the peer and, for a CA peer, its port GUID; CA ports carry their own
        port GUID (`own_guid`).
        """
        hit = peer.get(key)
        if hit is None:
            return None
        far, link = hit
        fid, fdesc, fguid = far_of[far[0], far[1]]
        if own_guid is not None:
            return f"[{key[2]}]({own_guid}) \t{fid}[{far[2]}]\t\t# lid 0 lmc 0 {fdesc} {tail[link.rate]}"
        peer_guid = "" if fguid is None else f"({guid_hex(fguid + far[2])}) "
        return f"[{key[2]}]\t{fid}[{far[2]}]{peer_guid}\t\t# {fdesc} {tail[link.rate]}"

    records: list[dict[str, Any]] = []
    labels: list[str] = []
    total_ports = 0
    for sw in fab.index.inv.switches:
        count = fab.index.switch_port_count(sw) or max(
            [k[2] for k in fab.peer if k[0] == sw.name and k[1] is None], default=1)
        total_ports += count + 1
        lines = [pl for p in range(1, count + 1) if (pl := port_line((sw.name, None, p)))]
        model = fab.index.cat.switches.get(sw.model)
        records.append({"type": "Switch", "nports": count, "id": ids[sw.name], "desc": sw.name,
                        "guid_key": "switchguid", "guid": fmt(fab.guids.switch(sw.name)),
                        "vendid": f"0x{VENDOR_ID:04x}",
                        "devid": f"0x{model.device_id:04x}" if model else None,
                        "lines": lines})
        labels.append(sw.name)
    for ca in fab.cas:
        nports = max(ca.ports)
        total_ports += nports
        ca_lines = []
        for p in ca.ports:
            pl = port_line((ca.node, ca.name, p), guid_hex(sim_guid[ca.label] + p))
            if pl is not None:
                ca_lines.append(pl)
            labels.append(f"{ca.label}/{p}")
        devid = fab.ca_device_id(ca)
        records.append({"type": "Hca", "nports": nports, "id": ids[ca.label], "desc": ca.desc,
                        "guid_key": "caguid", "guid": fmt(sim_guid[ca.label]),
                        "vendid": f"0x{VENDOR_ID:04x}",
                        "devid": f"0x{devid:04x}" if devid is not None else None,
                        "lines": ca_lines})

    default: str | None = fab.index.inv.fabric.rate if fab.index.inv.fabric else None
    if default is None and rates:
        default = rates.most_common(1)[0][0]
    lanes, _speed, sim = link_mode(fab, default)
    flags: list[str] = []
    if len(records) > IBSIM_MAX_NODES:
        flags.append(f"-N {len(records)}")
    if len(fab.index.inv.switches) > IBSIM_MAX_SWITCHES:
        flags.append(f"-S {len(fab.index.inv.switches)}")
    if total_ports > IBSIM_MAX_PORTS:
        flags.append(f"-P {total_ports}")
    notes = [f"{mode} links are simulated at HDR lane speed: ibsim 0.10 cannot encode faster lanes"
             for mode in sorted(slow)]
    ctx = {
        "width": _WIDTH_MASK.get(lanes, 2),
        "speed": 7,  # SDR|DDR|QDR enabled, as ibsim sets it for FDR and faster ports
        "extspeed": _EXT_MASK.get(sim, 0),
        "default_mode": f"{lanes}x{sim}",
        "command": " ".join(["ibsim", "-s", *flags, "ibsim.net"]),
        "notes": notes,
        "records": records,
    }
    return ctx, labels, notes


def ibsim_files(fab: FabricView) -> list[FileSpec]:
    ctx, labels, notes = net_context(fab)
    return [FileSpec("fabric/ibsim.net", "ibsim/ibsim.net.j2", ctx, fab.guids.unknown(labels),
                     tuple(f"fabric/ibsim.net: {n}" for n in notes))]
