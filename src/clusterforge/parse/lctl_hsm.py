"""``lctl get_param mdt.*.hsm_control mdt.*.hsm.*`` (a Lustre MDS with the HSM coordinator): per MDT, the
coordinator's state and settings and the copytool agents registered with it.

Each parameter is ``mdt.<fsname>-MDT<hex4>.<name>=<value>``; ``hsm.agents`` has an empty value on its own line
and one continuation line per registered agent (``mdt_hsm_agent_seq_show``, lustre/mdt/mdt_hsm_cdt_agent.c)::

    mdt.fs00-MDT0000.hsm.agents=
    uuid=d19dc2fe-cec4-43a1-8996-c783b3a70e63 archive_id=1 requests=[current:0 ok:10 errors:0]

``archive_id=ANY`` (an agent serving every archive) and a comma list (``archive_id=1,2``) are both read. An agent
line outside ``hsm.agents``, a parameter that is not an MDT's, or a line that is neither is a ParseError naming
the line. Empty text (no MDT on this server, or lctl failed) parses to no MDTs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse._common import fail, numbered, shorten, split_lines

TOOL = "lctl-hsm"

__all__ = ["HsmAgent", "MdtHsm", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class HsmAgent:
    uuid: str
    archive_ids: tuple[int, ...]
    """The archives it serves; () for ANY (every archive)."""
    current: int
    ok: int
    errors: int

    def serves(self, archive_id: int) -> bool:
        return not self.archive_ids or archive_id in self.archive_ids


@dataclass(frozen=True, slots=True)
class MdtHsm:
    target: str
    """``fs00-MDT0000``."""
    fsname: str
    index: int
    control: str | None
    """``hsm_control``: enabled, disabled, shutdown, purge; None when not asked for."""
    params: dict[str, str] = field(default_factory=dict)
    """``hsm.<name>`` -> value (agents aside)."""
    agents: tuple[HsmAgent, ...] = ()


_PARAM = re.compile(r"mdt\.(([a-z][a-z0-9_]{0,7})-MDT([0-9a-fA-F]{4}))\.(hsm_control|hsm\.[A-Za-z0-9_]+)=(.*)")
_AGENT = re.compile(r"uuid=(\S+) archive_id=(ANY|\d+(?:,\d+)*) requests=\[current:(\d+) ok:(\d+) errors:(\d+)\]")


def parse(text: str) -> tuple[MdtHsm, ...]:
    mdts: dict[str, dict[str, Any]] = {}
    in_agents: str | None = None
    for idx, raw, line in numbered(split_lines(text)):
        if m := _PARAM.fullmatch(line):
            target, fsname, hexidx, name, value = m.groups()
            cur = mdts.setdefault(target, {"fsname": fsname, "index": int(hexidx, 16), "control": None,
                                           "params": {}, "agents": []})
            in_agents = None
            if name == "hsm_control":
                cur["control"] = value.strip()
            elif name == "hsm.agents":
                if value.strip():
                    raise fail(TOOL, idx, raw, "hsm.agents prints its agents on the lines below it, not after '='")
                in_agents = target
            else:
                cur["params"][name.removeprefix("hsm.")] = value.strip()
        elif m := _AGENT.fullmatch(line):
            if in_agents is None:
                raise fail(TOOL, idx, raw, f"an agent line outside hsm.agents: {shorten(raw)}")
            uuid, ids, current, ok, errors = m.groups()
            arch = () if ids == "ANY" else tuple(int(x) for x in ids.split(","))
            mdts[in_agents]["agents"].append(HsmAgent(uuid, arch, int(current), int(ok), int(errors)))
        else:
            raise fail(TOOL, idx, raw, f"expected mdt.<fsname>-MDT<n>.hsm_control=... or .hsm.<param>=... or an "
                                       f"hsm.agents line (uuid=... archive_id=... requests=[...]), got {shorten(raw)}")
    return tuple(MdtHsm(t, d["fsname"], d["index"], d["control"], dict(d["params"]), tuple(d["agents"]))
                 for t, d in mdts.items())


def to_json(mdts: tuple[MdtHsm, ...]) -> list[dict[str, Any]]:
    return [{"target": m.target, "fsname": m.fsname, "index": m.index, "control": m.control, "params": m.params,
             "agents": [{"uuid": a.uuid, "archive_ids": list(a.archive_ids), "current": a.current, "ok": a.ok,
                         "errors": a.errors} for a in m.agents]}
            for m in mdts]
