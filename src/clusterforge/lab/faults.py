"""Fault injection on the simulated fabric, and healing back to the net file.

Faults are named by (device, port): ``device`` is an ibsim node id
(``leaf01``, ``gpu01-mlx5_0``) or a node description (``gpu01 mlx5_0``).  The
lead maps inventory cable ids to those pairs.

======== ======================================== ===============================
fault    mechanism                                what the diag tools then show
======== ======================================== ===============================
remove   console ``Unlink "node"[port]``          cable gone on both ends (Down/Polling)
swap     console Unlink x2 + ``Link`` x2          the two ports reach each other's peers
degrade  ``ibportstate <lid> <port> width|espeed`` new active width/speed on BOTH ends
         on both ends of the cable
down     ``ibportstate <lid> <port> disable``     phys state Disabled, peer unreachable
heal     undo the journal, newest first           the net file's cabling and rates
======== ======================================== ===============================

Every applied fault is appended to a JSON journal (atomically rewritten), so
``heal`` works from another process than the one that injected the faults.
The journal also feeds a model of the expected fabric (``expected_links``)
that tests compare with what ibnetdiscover finds.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import CommandError, FaultError
from clusterforge.lab.fabric_tools import (
    FabricClient,
    ibnetdiscover,
    ibportstate,
    smpquery_portinfo,
)
from clusterforge.lab.ibsim import Console
from clusterforge.lab.netfile import (
    EXT_SPEED_BITS,
    SPEED_BITS,
    WIDTH_BITS,
    Endpoint,
    NetFile,
    PortSettings,
    active_rate,
)
from clusterforge.lab.observe import GBPS_TO_SPEED, Discovery, ParseError, PortKey, parse_ibnetdiscover
from clusterforge.util.fsutil import write_atomic
from clusterforge.util.poll import wait_until

# ibsim's console prints enabled speeds as lane rates ("53.125 Gbps"); the bits are netfile's
_WIDTH_TEXT = WIDTH_BITS
_SPEED_TEXT = {f"{g} Gbps": SPEED_BITS[s] for g, s in GBPS_TO_SPEED.items() if s in SPEED_BITS}
_EXT_TEXT = {f"{g} Gbps": EXT_SPEED_BITS[s] for g, s in GBPS_TO_SPEED.items() if s in EXT_SPEED_BITS}


@dataclass(frozen=True)
class PortRef:
    device: str
    port: int


def _ep_json(ep: Endpoint) -> list[object]:
    return [ep.node, ep.port]


def _entry_ends(e: dict[str, object]) -> list[Endpoint]:
    """Every port a journal entry touched."""
    if e.get("kind") == "degrade":
        ends = e.get("ends")
        return [_ep_from(end["at"]) for end in ends] if isinstance(ends, list) else []
    return [_ep_from(e[k]) for k in ("a", "a_peer", "b", "b_peer") if k in e]


def _ep_from(data: object) -> Endpoint:
    if not isinstance(data, list) or len(data) != 2:
        raise FaultError(f"bad endpoint in journal: {data!r}")
    node, port = data
    return Endpoint(str(node), int(port))


def _console_ok(reply: str, command: str) -> None:
    bad = [ln for ln in reply.splitlines() if ln.startswith("#")]
    if bad:
        raise FaultError(f"ibsim refused {command!r}: {' '.join(bad)}")


def _mask_from_text(value: str, table: dict[str, int]) -> int:
    mask = 0
    for part in value.split(" or "):
        mask |= table.get(part.strip(), 0)
    return mask


class FaultInjector:
    def __init__(
        self, console: Console, netfile: NetFile, client: FabricClient, journal: Path,
        cabling: dict[Endpoint, Endpoint] | None = None,
    ) -> None:
        self.console = console
        self.net = netfile
        self.client = client
        self.journal_path = journal
        # the fabric as cabled now, faults aside: the net file's, or as the technician changed it
        self.cabling = dict(netfile.peers) if cabling is None else cabling
        self.healed: list[Endpoint] = []
        """The ports the last heal() touched."""

    # -- journal --------------------------------------------------------------
    def journal(self) -> list[dict[str, object]]:
        if not self.journal_path.exists():
            return []
        data = json.loads(self.journal_path.read_text())
        if not isinstance(data, list):
            raise FaultError(f"{self.journal_path}: not a list")
        return data

    def _save(self, entries: list[dict[str, object]]) -> None:
        write_atomic(self.journal_path, json.dumps(entries, indent=1))

    def _append(self, entry: dict[str, object]) -> None:
        entries = self.journal()
        entries.append(entry)
        self._save(entries)

    # -- model of the current fabric -------------------------------------------
    def _model(
        self,
    ) -> tuple[dict[Endpoint, Endpoint], dict[Endpoint, PortSettings], set[Endpoint]]:
        peers = dict(self.cabling)
        settings = dict(self.net.settings)
        disabled: set[Endpoint] = set()
        for e in self.journal():
            kind = e["kind"]
            if kind == "remove":
                a, b = _ep_from(e["a"]), _ep_from(e["b"])
                peers.pop(a, None)
                peers.pop(b, None)
            elif kind == "swap":
                a, ap = _ep_from(e["a"]), _ep_from(e["a_peer"])
                b, bp = _ep_from(e["b"]), _ep_from(e["b_peer"])
                peers[a], peers[bp] = bp, a
                peers[b], peers[ap] = ap, b
            elif kind == "down":
                disabled.add(_ep_from(e["a"]))
            elif kind == "degrade":
                new = e["new"]
                if not isinstance(new, dict):
                    raise FaultError("bad degrade entry")
                for end in e["ends"] if isinstance(e["ends"], list) else []:
                    ep = _ep_from(end["at"])
                    settings[ep] = PortSettings(
                        int(new["width"]), int(new["speed"]), int(new["ext"])
                    )
        return peers, settings, disabled

    def _linked(self, ref: PortRef) -> tuple[Endpoint, Endpoint]:
        try:
            ep = self.net.endpoint(ref.device, ref.port)
        except Exception as exc:
            raise FaultError(str(exc)) from exc
        peers, _, disabled = self._model()
        peer = peers.get(ep)
        if peer is None:
            raise FaultError(f"{ep} is not cabled right now")
        if ep in disabled or peer in disabled:
            raise FaultError(f"{ep} is administratively down right now; heal first")
        return ep, peer

    def expected_links(self, from_node: str | None = None) -> dict[frozenset[PortKey], str]:
        """Links (by node description) and rates ibnetdiscover should find now.

        Only the part of the fabric reachable from ``from_node`` (default: the
        client's HCA) through enabled ports is visible to ibnetdiscover.
        """
        peers, settings, disabled = self._model()
        start_name = from_node or self.client.sim_host
        if start_name is None:
            raise FaultError("expected_links needs a starting node")
        start = self.net.resolve(start_name)
        seen = {start}
        todo = deque([start])
        while todo:
            node = todo.popleft()
            for a, b in peers.items():
                if a.node == node and a not in disabled and b not in disabled and b.node not in seen:
                    seen.add(b.node)
                    todo.append(b.node)
        out: dict[frozenset[PortKey], str] = {}
        for a, b in peers.items():
            if a.node not in seen or a in disabled or b in disabled:
                continue
            width, speed = active_rate(settings[a], settings[b])
            key = frozenset(
                ((self.net.nodes[a.node].desc, a.port), (self.net.nodes[b.node].desc, b.port))
            )
            out[key] = f"{width[:-1]}x{speed}"
        return out

    def discover(self) -> Discovery:
        return parse_ibnetdiscover(ibnetdiscover(self.client))

    def wait_converged(self, timeout: float = 60.0) -> Discovery:
        """Poll ibnetdiscover until it shows exactly ``expected_links``."""
        expected = self.expected_links()
        deadline = time.monotonic() + timeout
        last: dict[frozenset[PortKey], str] = {}
        while True:
            try:
                disc = self.discover()
                last = {k: v.rate for k, v in disc.links.items()}
                if last == expected:
                    return disc
            except (CommandError, ParseError):  # a discovery of a fabric changing under it may be one-sided
                pass
            if time.monotonic() >= deadline:
                missing = {tuple(sorted(k)): v for k, v in expected.items() if last.get(k) != v}
                extra = {tuple(sorted(k)): v for k, v in last.items() if expected.get(k) != v}
                raise FaultError(
                    f"fabric did not converge in {timeout:g}s; expected but not seen: "
                    f"{missing}; seen but not expected: {extra}"
                )
            time.sleep(0.5)

    # -- addressing: directed routes from the client's HCA -----------------------
    def _route(self, ep: Endpoint, disc: Discovery | None = None) -> str:
        disc = disc or self.discover()
        if self.client.sim_host is None:
            raise FaultError("the fault injector's client needs a sim_host")
        src = self.net.nodes[self.net.resolve(self.client.sim_host)].desc
        try:
            return disc.directed_route(src, self.net.nodes[ep.node].desc)
        except KeyError as exc:
            raise FaultError(f"{ep} is not reachable from {src!r}: {exc}") from exc

    def _console(self, command: str) -> None:
        _console_ok(self.console.command(command), command)

    def _portinfo(self, ep: Endpoint, disc: Discovery) -> dict[str, str]:
        """smpquery's PortInfo of the port at `ep` (field -> value, the dots stripped)."""
        text = smpquery_portinfo(self.client, self._route(ep, disc), ep.port, directed=True)
        return {k.strip(): re.sub(r"^\.+", "", v.strip().rstrip("."))
                for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)}

    def wait_active(self, endpoints: list[Endpoint], timeout: float = 60.0) -> None:
        """With a subnet manager running: poll each port's PortInfo (both ends of every healed link, the host's
        HCA port included) until its LinkState is Active. A healed link shows in ibnetdiscover before the SM
        has swept it, and a validate in that window saw the host's port Initializing (a lab test, now and
        then; a switch port Active says nothing of its peer's state: the SM activates each port itself)."""
        def waiting() -> list[str]:
            try:
                disc = self.discover()
                return [f"{ep} is {state or '?'}" for ep in endpoints
                        if (state := self._portinfo(ep, disc).get("LinkState")) != "Active"]
            except (CommandError, ParseError, FaultError) as exc:
                return [f"(PortInfo did not answer: {exc})"]

        wait_until(waiting, timeout, 0.5, lambda left: FaultError(
            f"{len(left)} port(s) not Active {timeout:g}s after healing (first: {left[0]}): is the subnet manager "
            "running?"))

    def _enabled_now(self, ep: Endpoint, disc: Discovery) -> PortSettings:
        fields = self._portinfo(ep, disc)

        def val(name: str) -> str:
            return fields.get(name, "")

        return PortSettings(
            _mask_from_text(val("LinkWidthEnabled"), _WIDTH_TEXT),
            _mask_from_text(val("LinkSpeedEnabled"), _SPEED_TEXT),
            _mask_from_text(val("LinkSpeedExtEnabled"), _EXT_TEXT),
        )

    def _set_enabled(self, ep: Endpoint, st: PortSettings, disc: Discovery) -> None:
        route = self._route(ep, disc)
        ibportstate(self.client, route, ep.port, "width", str(st.width_enabled), directed=True)
        ibportstate(self.client, route, ep.port, "speed", str(st.speed_enabled), directed=True)
        if st.ext_enabled:  # 0 would mean "no change" to ibsim: nothing to set
            ibportstate(self.client, route, ep.port, "espeed", str(st.ext_enabled),
                        directed=True)

    # -- faults -----------------------------------------------------------------
    def remove(self, ref: PortRef) -> None:
        """Pull the cable at ``ref`` (both ends lose link)."""
        a, b = self._linked(ref)
        self._console(f"Unlink {a}")
        self._append({"kind": "remove", "a": _ep_json(a), "b": _ep_json(b)})

    def swap(self, a_ref: PortRef, b_ref: PortRef) -> None:
        """Exchange the peers of two cabled ports (a miscabling)."""
        a, ap = self._linked(a_ref)
        b, bp = self._linked(b_ref)
        if a == b or ap == b:
            raise FaultError(f"swap needs two different cables, got {a} and {b}")
        _, settings, _ = self._model()
        for x, y in ((a, bp), (b, ap)):
            try:
                active_rate(settings[x], settings[y])
            except Exception as exc:
                raise FaultError(f"{x} and {y} share no width/speed; ibsim would abort") from exc
        self._console(f"Unlink {a}")
        self._console(f"Unlink {b}")
        self._console(f"Link {a} {bp}")
        self._console(f"Link {b} {ap}")
        self._append({
            "kind": "swap",
            "a": _ep_json(a), "a_peer": _ep_json(ap),
            "b": _ep_json(b), "b_peer": _ep_json(bp),
        })

    def degrade(self, ref: PortRef, *, width: str = "1X", speed: str | None = None) -> None:
        """Set the enabled (hence active) width and/or speed on both ends of a cable.

        ``width``: 1X, 2X, 4X, 8X, 12X.  ``speed``: FDR, EDR or HDR (NDR needs a
        newer ibsim); None keeps the current speed.  ibsim 0.10 ignores
        LinkSpeedExtEnabled values that disable extended speeds, so SDR/DDR/QDR
        links can only come from the net file (``e=0`` on both ends).
        """
        a, b = self._linked(ref)
        w = width.upper()
        if w not in WIDTH_BITS:
            raise FaultError(f"width {width!r}: one of {sorted(WIDTH_BITS)}")
        disc = self.discover()
        before = {ep: self._enabled_now(ep, disc) for ep in (a, b)}
        cur = before[a]
        new_speed, new_ext = cur.speed_enabled, cur.ext_enabled
        if speed is not None:
            s = speed.upper()
            if s in SPEED_BITS:
                raise FaultError(
                    f"speed {s}: ibsim cannot turn extended speeds off at runtime; "
                    "declare the link with e=0 on both ends in the net file instead"
                )
            if s not in EXT_SPEED_BITS:
                raise FaultError(f"speed {speed!r}: one of FDR EDR HDR")
            if not all(st.ext_enabled for st in before.values()):
                raise FaultError(f"{a} - {b} has no extended speed enabled; cannot set {s}")
            new_ext = EXT_SPEED_BITS[s]
        new = PortSettings(WIDTH_BITS[w], new_speed, new_ext)
        for ep in (a, b):
            self._set_enabled(ep, new, disc)
        self._append({
            "kind": "degrade",
            "ends": [
                {"at": _ep_json(ep), "width": st.width_enabled, "speed": st.speed_enabled,
                 "ext": st.ext_enabled}
                for ep, st in before.items()
            ],
            "new": {"width": new.width_enabled, "speed": new.speed_enabled, "ext": new.ext_enabled},
        })

    def down(self, ref: PortRef) -> None:
        """Administratively disable the port at ``ref`` (PhysLinkState Disabled)."""
        a, b = self._linked(ref)
        try:
            ibportstate(self.client, self._route(a), a.port, "disable", directed=True)
        except CommandError:
            # Disabling the port the directed route enters through (an HCA's only
            # port, say) loses the reply; the port is down if its link vanished.
            key = frozenset(
                ((self.net.nodes[a.node].desc, a.port), (self.net.nodes[b.node].desc, b.port))
            )
            if key in self.discover().links:
                raise
        self._append({"kind": "down", "a": _ep_json(a), "b": _ep_json(b)})

    def heal(self) -> int:
        """Undo every journaled fault, newest first; return how many were undone. The ports they touched are
        left in `healed` (for wait_active)."""
        entries = self.journal()
        undone = 0
        self.healed = []
        while entries:
            e = entries[-1]
            self._undo(e)
            self.healed += _entry_ends(e)
            entries.pop()
            self._save(entries)
            undone += 1
        return undone

    def _undo(self, e: dict[str, object]) -> None:
        kind = e["kind"]
        if kind == "remove":
            self._console(f"Link {_ep_from(e['a'])} {_ep_from(e['b'])}")
        elif kind == "swap":
            a, ap = _ep_from(e["a"]), _ep_from(e["a_peer"])
            b, bp = _ep_from(e["b"]), _ep_from(e["b_peer"])
            self._console(f"Unlink {a}")
            self._console(f"Unlink {b}")
            self._console(f"Link {a} {ap}")
            self._console(f"Link {b} {bp}")
        elif kind == "down":
            # ibportstate "enable" only gets the port to Polling in ibsim;
            # re-cabling it brings it back to LinkUp (keeps enabled rates).
            a, b = _ep_from(e["a"]), _ep_from(e["b"])
            self._console(f"Unlink {a}")
            self._console(f"Link {a} {b}")
        elif kind == "degrade":
            disc = self.discover()
            ends = e["ends"]
            if not isinstance(ends, list):
                raise FaultError("bad degrade entry")
            for end in ends:
                st = PortSettings(int(end["width"]), int(end["speed"]), int(end["ext"]))
                self._set_enabled(_ep_from(end["at"]), st, disc)
        else:
            raise FaultError(f"unknown fault kind {kind!r} in journal")
