"""The technician's hands in the simulated fabric: the physical day-2 work done for real in ibsim.

Where faults (faults.py) break the fabric and are healed back to the net file, this is the work
that changes what the fabric *is*: a cable unplugged, a cable plugged into another port, a node's
cable moved to another leaf port, a failed switch replaced by a new one with another GUID. Through
ibsim's console:

============ ================================================ ==================================
operation    console                                          afterwards
============ ================================================ ==================================
unplug       ``Unlink "node"[port]``                          both ends Down; the SM drops them
plug         ``Link "a"[p] "b"[q]`` (rates checked first)      LinkUp; the SM makes it Active
move         unplug, then plug into the new peer port         the cable reaches its new port
set_guid     ``Guid "switch" 0x...``                          the switch's node GUID is new
replace      every link unplugged, ``Guid``, re-plugged       a new switch, cabled as the old
============ ================================================ ==================================

Before acting the technician looks at the fabric as ibsim has it (console ``Dump``): a cable is
unplugged only where it is plugged, plugged only into free ports. Every operation is appended to
``<state>/technician.json`` (atomically rewritten), so the lab's cabling (the net file's, changed by
the journal) is known to any later process: the fault injector starts from it. ``ensure_unplugged``
and ``ensure_plugged`` leave a cable that is already as wanted, bringing the journal up to date (a
process killed between ibsim's change and the journal's line), so a resumed apply goes on. ``lab down``
removes the journal with the lab. Drained hosts (``drain``/``resume``, the lab's stand-in for a
scheduler's drain) are kept in ``<state>/drained.json`` with the same journal of events.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.lab.errors import FaultError
from clusterforge.lab.faults import PortRef
from clusterforge.lab.ibsim import Console
from clusterforge.lab.netfile import Endpoint, NetFile, active_rate
from clusterforge.util.fsutil import write_atomic

JOURNAL = "technician.json"
DRAINED = "drained.json"
_GUID = re.compile(r"^0x[0-9a-f]{1,16}$")


def _console_ok(reply: str, command: str) -> None:
    bad = [ln for ln in reply.splitlines() if ln.startswith("#")]
    if bad:
        raise FaultError(f"ibsim refused {command!r}: {' '.join(bad)}")


def _ep(data: object) -> Endpoint:
    if not isinstance(data, list) or len(data) != 2:
        raise FaultError(f"bad endpoint in the technician journal: {data!r}")
    return Endpoint(str(data[0]), int(data[1]))


def read_journal(state_dir: Path) -> list[dict[str, object]]:
    path = state_dir / JOURNAL
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise FaultError(f"{path}: not a list")
    return data


def cabled_peers(net: NetFile, entries: list[dict[str, object]]) -> dict[Endpoint, Endpoint]:
    """The fabric's cabling now: the net file's, with every journaled unplug and plug applied."""
    peers = dict(net.peers)
    for e in entries:
        if e["op"] == "unplug":
            a, b = _ep(e["a"]), _ep(e["b"])
            peers.pop(a, None)
            peers.pop(b, None)
        elif e["op"] == "plug":
            a, b = _ep(e["a"]), _ep(e["b"])
            peers[a], peers[b] = b, a
    return peers


_DUMP_NODE = re.compile(r'^(?:Switch|Ca|Hca|Rt)\s+\d+\s+"([^"]+)"')
_DUMP_PORT = re.compile(r'^\S+\t\[(\d+)\]\t"([^"]+)"\[(\d+)\]')


def parse_dump(text: str) -> dict[Endpoint, Endpoint]:
    """Links from ibsim's console `Dump` (`<guid>\\t[port]\\t"peer"[port] ...` under each node header)."""
    peers: dict[Endpoint, Endpoint] = {}
    node = None
    for line in text.splitlines():
        head = _DUMP_NODE.match(line)
        if head:
            node = head.group(1)
            continue
        m = _DUMP_PORT.match(line)
        if m and node is not None and int(m.group(1)) > 0:
            peers[Endpoint(node, int(m.group(1)))] = Endpoint(m.group(2), int(m.group(3)))
    return peers


@dataclass
class Technician:
    console: Console
    net: NetFile
    state_dir: Path
    plugged: list[Endpoint] = field(default_factory=list)  # both ends of each cable plugged (to wait on)

    def journal(self) -> list[dict[str, object]]:
        return read_journal(self.state_dir)

    def _append(self, entry: dict[str, object]) -> None:
        entries = self.journal()
        entries.append({**entry, "when": time.time()})
        write_atomic(self.state_dir / JOURNAL, json.dumps(entries, indent=1))

    def peers(self) -> dict[Endpoint, Endpoint]:
        """The fabric as it is cabled right now: ibsim's own view (console `Dump`)."""
        return parse_dump(self.console.command("Dump"))

    def ensure_unplugged(self, a_ref: PortRef, b_ref: PortRef) -> bool:
        """The cable between `a_ref` and `b_ref` out; False when it was already (the journal is brought
        up to date: an earlier run may have been killed between ibsim's change and its journal line)."""
        a, b = self.endpoint(a_ref), self.endpoint(b_ref)
        live = self.peers()
        if a in live or b in live:
            self.unplug(a_ref, expect=b_ref)
            return True
        if cabled_peers(self.net, self.journal()).get(a) == b:
            self._append({"op": "unplug", "a": [a.node, a.port], "b": [b.node, b.port]})
        return False

    def ensure_plugged(self, a_ref: PortRef, b_ref: PortRef) -> bool:
        """The cable between `a_ref` and `b_ref` in; False when it was already (journal brought up to date)."""
        a, b = self.endpoint(a_ref), self.endpoint(b_ref)
        if self.peers().get(a) != b:
            self.plug(a_ref, b_ref)
            return True
        if cabled_peers(self.net, self.journal()).get(a) != b:
            self._append({"op": "plug", "a": [a.node, a.port], "b": [b.node, b.port]})
        return False

    def guids(self) -> dict[str, str]:
        """Switches whose GUID the technician changed (node id -> GUID)."""
        return {str(e["node"]): str(e["guid"]) for e in self.journal() if e["op"] == "guid"}

    def endpoint(self, ref: PortRef) -> Endpoint:
        try:
            return self.net.endpoint(ref.device, ref.port)
        except Exception as exc:
            raise FaultError(str(exc)) from exc

    def _console(self, command: str) -> None:
        _console_ok(self.console.command(command), command)

    # -- operations ----------------------------------------------------------------
    def unplug(self, ref: PortRef, expect: PortRef | None = None) -> Endpoint:
        """Pull the cable at `ref` out of both ports; `expect`: the far end it must be plugged into now."""
        a = self.endpoint(ref)
        peer = self.peers().get(a)
        if peer is None:
            raise FaultError(f"{ref.device} port {ref.port} has no cable plugged in")
        if expect is not None and peer != self.endpoint(expect):
            raise FaultError(f"the cable at {ref.device} port {ref.port} goes to {self._name(peer)}, "
                             f"not {expect.device} port {expect.port}")
        self._console(f"Unlink {a}")
        self._append({"op": "unplug", "a": [a.node, a.port], "b": [peer.node, peer.port]})
        return peer

    def plug(self, a_ref: PortRef, b_ref: PortRef) -> None:
        """Plug a cable between two free ports."""
        a, b = self.endpoint(a_ref), self.endpoint(b_ref)
        peers = self.peers()
        for ref, ep in ((a_ref, a), (b_ref, b)):
            if ep in peers:
                raise FaultError(f"{ref.device} port {ref.port} is in use (cabled to {self._name(peers[ep])})")
        try:
            active_rate(self.net.settings[a], self.net.settings[b])
        except Exception as exc:
            raise FaultError(f"{a} and {b} share no width/speed; ibsim would abort") from exc
        self._console(f"Link {a} {b}")
        self._append({"op": "plug", "a": [a.node, a.port], "b": [b.node, b.port]})
        self.plugged += [a, b]

    def move(self, ref: PortRef, to: PortRef) -> Endpoint:
        """Move the cable at `ref` from whatever it reaches now to `to`; returns the old far end."""
        old = self.unplug(ref)
        self.plug(ref, to)
        return old

    def set_guid(self, device: str, guid: str) -> None:
        """The switch `device` is now another box with node GUID `guid` (0x + hex)."""
        node = self._switch(device)
        guid = guid.lower()
        if not _GUID.match(guid):
            raise FaultError(f"GUID {guid!r}: 0x and up to 16 hex digits")
        self._console(f'Guid "{node}" {guid}')
        self._append({"op": "guid", "node": node, "guid": guid})

    def replace(self, device: str, guid: str) -> int:
        """Swap the switch for a new one (GUID `guid`) cabled exactly as the old: returns the cables moved."""
        node = self._switch(device)
        links = sorted(((a, b) for a, b in self.peers().items() if a.node == node), key=lambda ab: ab[0].port)
        for a, _b in links:
            self.unplug(PortRef(a.node, a.port))
        self.set_guid(node, guid)
        for a, b in links:
            self.plug(PortRef(a.node, a.port), PortRef(b.node, b.port))
        return len(links)

    def _switch(self, device: str) -> str:
        try:
            node = self.net.resolve(device)
        except Exception as exc:
            raise FaultError(str(exc)) from exc
        if self.net.nodes[node].kind != "Switch":
            raise FaultError(f"{device} is not a switch")
        return node

    def _name(self, ep: Endpoint) -> str:
        return f"{self.net.nodes[ep.node].desc} port {ep.port}"


# -- drained hosts (the lab's stand-in for a scheduler's drain state) ----------------------------


def drained(state_dir: Path) -> dict[str, object]:
    path = state_dir / DRAINED
    if not path.exists():
        return {"drained": [], "events": []}
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise FaultError(f"{path}: not an object")
    return data


def set_drained(state_dir: Path, host: str, drain: bool, known: set[str], reason: str | None = None) -> bool:
    """Drain (or resume) `host`; returns whether its state changed. Unknown hosts are refused. `reason`: why
    (the drain hook's `{reason}`), kept with the event and, for a drained host, in `reasons`."""
    if host not in known:
        raise FaultError(f"no host {host!r} in this lab")
    with _drained_lock(state_dir):  # a wave's drain hooks run at once: each read-change-write is whole
        data = drained(state_dir)
        was, past = data.get("drained"), data.get("events")
        now = {str(h) for h in was} if isinstance(was, list) else set()
        changed = (host not in now) if drain else (host in now)
        now = now | {host} if drain else now - {host}
        events = list(past) if isinstance(past, list) else []
        events.append({"host": host, "event": "drain" if drain else "resume", "when": time.time()}
                      | ({"reason": reason} if reason is not None else {}))
        old = data.get("reasons")
        reasons = {str(k): str(v) for k, v in old.items() if k in now} if isinstance(old, dict) else {}
        if drain and changed and reason is not None:  # a drained host keeps the reason it was drained with
            reasons[host] = reason
        write_atomic(state_dir / DRAINED, json.dumps({"drained": sorted(now), "reasons": reasons,
                                                      "events": events}, indent=1))
    return changed


SINFO_FORMAT = "%60E %9u %19H %6t %N"
"""The wide `sinfo -R -o` the lab inventory's reasons hook prints (a reason kept whole, the node state)."""


def sinfo_reasons(data: dict[str, object], user: str) -> str:
    """The drained hosts of `drained(state_dir)` as `sinfo -R -o SINFO_FORMAT` prints them (LAB-ONLY: the lab's
    stand-in scheduler, one row a host): the reason each was drained with, `user`, when (local time, as sinfo),
    state `drain`. Pure."""
    hosts = data.get("drained")
    reasons = data.get("reasons")
    events = data.get("events")
    when: dict[str, float] = {}
    for e in events if isinstance(events, list) else []:
        if isinstance(e, dict) and e.get("event") == "drain" and isinstance(e.get("when"), (int, float)):
            when[str(e.get("host"))] = float(e["when"])
    lines = [f"{'REASON':<60} {'USER':<9} {'TIMESTAMP':<19} {'STATE':<6} NODELIST"]
    for host in sorted(str(h) for h in hosts) if isinstance(hosts, list) else []:
        why = reasons.get(host) if isinstance(reasons, dict) else None
        text = " ".join(str(why or "cf-lab: drained").split())[:60]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when[host])) if host in when else "Unknown"
        lines.append(f"{text:<60} {user[:9]:<9} {stamp:<19} {'drain':<6} {host}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _drained_lock(state_dir: Path) -> Iterator[None]:
    """Hold `<state>/drained.json.lock` (flock): without it two hooks that resume at once each wrote
    what they read, and one host's resume was lost (CI: gpu04 left drained after a resumed apply)."""
    fd = os.open(state_dir / f"{DRAINED}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
