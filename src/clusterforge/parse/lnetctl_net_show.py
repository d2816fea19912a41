"""``lnetctl net show`` (optionally ``-v``): LNet networks and their local NIs (YAML).

Read with PyYAML's ``BaseLoader`` (every scalar stays a string; no implicit
dates/booleans), then validated.  The error document lnetctl prints when LNet is
down (``show: - net: errno: -100 descr: "cannot get networks: Network is down"``)
is returned as ``LnetNetShow(nets=(), error=LnetError(...))`` - "no NIs" - rather
than raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from clusterforge.parse._common import empty_error, fail, split_lines, to_int

TOOL = "lnetctl-net-show"

__all__ = ["LnetError", "LnetNet", "LnetNetShow", "LnetNi", "parse", "to_json"]

Stat = int | str


@dataclass(frozen=True, slots=True)
class LnetNi:
    nid: str
    status: str | None
    interfaces: tuple[str, ...]
    """``interfaces:`` values in key order (``0: ib0``)."""
    statistics: Mapping[str, Stat]
    tunables: Mapping[str, Stat]
    lnd_tunables: Mapping[str, Stat]
    health: Mapping[str, Stat]
    """``health stats`` (verbose only)."""
    extra: Mapping[str, Any]
    """Every other key (``sent_stats``, ``dev cpt``, ``CPT``, ``tcp bonding``...),
    scalars converted to int where integral, nested maps kept as dicts."""


@dataclass(frozen=True, slots=True)
class LnetNet:
    net_type: str
    nis: tuple[LnetNi, ...]


@dataclass(frozen=True, slots=True)
class LnetError:
    errno: int | None
    descr: str | None


@dataclass(frozen=True, slots=True)
class LnetNetShow:
    nets: tuple[LnetNet, ...]
    error: LnetError | None
    """Set (and ``nets`` empty) when lnetctl printed its error document."""


def _scalar(v: Any) -> Any:
    if isinstance(v, str):
        num = to_int(v)
        return num if num is not None else v
    if isinstance(v, dict):
        return {str(k): _scalar(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_scalar(x) for x in v]
    return v


def _stats(v: Any, where: str, line_no: int, line: str) -> dict[str, Stat]:
    if v in (None, ""):
        return {}
    if not isinstance(v, dict):
        raise fail(TOOL, line_no, line, f"{where} is not a mapping")
    out: dict[str, Stat] = {}
    for k, x in v.items():
        if not isinstance(x, str):
            raise fail(TOOL, line_no, line, f"{where}.{k} is not a scalar")
        num = to_int(x)
        out[str(k)] = num if num is not None else x
    return out


_NI_KNOWN = ("nid", "status", "interfaces", "statistics", "tunables", "lnd tunables",
             "health stats")


def _ni(doc: Any, line_no: int, line: str) -> LnetNi:
    if not isinstance(doc, dict) or not isinstance(doc.get("nid"), str):
        raise fail(TOOL, line_no, line, "local NI entry without a 'nid'")
    ifaces = doc.get("interfaces")
    if ifaces in (None, ""):
        ifaces = {}
    if not isinstance(ifaces, dict) or not all(isinstance(x, str) for x in ifaces.values()):
        raise fail(TOOL, line_no, line, "'interfaces' is not a mapping of names")
    status = doc.get("status")
    return LnetNi(
        nid=doc["nid"],
        status=status if isinstance(status, str) else None,
        interfaces=tuple(ifaces.values()),
        statistics=_stats(doc.get("statistics"), "statistics", line_no, line),
        tunables=_stats(doc.get("tunables"), "tunables", line_no, line),
        lnd_tunables=_stats(doc.get("lnd tunables"), "lnd tunables", line_no, line),
        health=_stats(doc.get("health stats"), "health stats", line_no, line),
        extra={str(k): _scalar(v) for k, v in doc.items() if k not in _NI_KNOWN},
    )


def parse(text: str) -> LnetNetShow:
    lines = split_lines(text)
    if not any(ln.strip() for ln in lines):
        raise empty_error(TOOL)
    loader = yaml.CBaseLoader if hasattr(yaml, "CBaseLoader") else yaml.BaseLoader
    try:
        # lnetctl never emits aliases; refusing them rules out alias bombs/cycles
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                ln = min(max(mark.line + 1 if mark is not None else 1, 1), len(lines))
                raise fail(TOOL, ln, lines[ln - 1], "YAML aliases are not lnetctl output")
        doc = yaml.load(text, Loader=loader)  # BaseLoader: safe, builds plain str/list/dict only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        ln = (mark.line + 1) if mark is not None else 1
        ln = min(max(ln, 1), len(lines))
        detail = " ".join(str(exc).split())
        raise fail(TOOL, ln, lines[ln - 1], f"not valid YAML: {detail}") from None
    except RecursionError:
        raise fail(TOOL, 1, lines[0], "YAML nested too deeply") from None
    first = next(ln for ln in lines if ln.strip())
    if not isinstance(doc, dict):
        raise fail(TOOL, 1, first, "expected a YAML mapping with a 'net:' key")
    if "show" in doc and "net" not in doc:
        return LnetNetShow(nets=(), error=_error(doc["show"], lines))
    if set(doc) != {"net"}:
        raise fail(TOOL, 1, first, f"expected a single 'net:' key, got {sorted(map(str, doc))}")
    nets_doc = doc["net"]
    if nets_doc in (None, ""):
        return LnetNetShow(nets=(), error=None)
    if not isinstance(nets_doc, list):
        raise fail(TOOL, 1, first, "'net:' is not a list")
    nets: list[LnetNet] = []
    for entry in nets_doc:
        ln, line = _locate(lines, "net type:", len(nets))
        if not isinstance(entry, dict) or not isinstance(entry.get("net type"), str):
            raise fail(TOOL, ln, line, "net entry without 'net type'")
        nis_doc = entry.get("local NI(s)")
        if nis_doc in (None, ""):
            nis_doc = []
        if not isinstance(nis_doc, list):
            raise fail(TOOL, ln, line, "'local NI(s)' is not a list")
        nets.append(LnetNet(net_type=entry["net type"],
                            nis=tuple(_ni(ni, ln, line) for ni in nis_doc)))
    return LnetNetShow(nets=tuple(nets), error=None)


def _locate(lines: list[str], marker: str, nth: int) -> tuple[int, str]:
    """Line of the nth occurrence of ``marker`` (for error messages)."""
    count = 0
    for i, ln in enumerate(lines, start=1):
        if marker in ln:
            if count == nth:
                return i, ln
            count += 1
    return 1, lines[0]


def _error(show: Any, lines: list[str]) -> LnetError:
    ln, line = _locate(lines, "errno", 0)
    items = show if isinstance(show, list) else [show]
    for item in items:
        if not isinstance(item, dict):
            continue
        for body in item.values():
            entries = body if isinstance(body, list) else [body]
            for e in entries:
                if isinstance(e, dict) and "errno" in e:
                    descr = e.get("descr")
                    return LnetError(errno=to_int(str(e["errno"])),
                                     descr=descr if isinstance(descr, str) else None)
    raise fail(TOOL, ln, line, "'show:' document without an errno entry")


def to_json(records: LnetNetShow) -> dict[str, Any]:
    return {
        "nets": [
            {
                "net_type": n.net_type,
                "nis": [
                    {
                        "nid": ni.nid,
                        "status": ni.status,
                        "interfaces": list(ni.interfaces),
                        "statistics": dict(ni.statistics),
                        "tunables": dict(ni.tunables),
                        "lnd_tunables": dict(ni.lnd_tunables),
                        "health": dict(ni.health),
                        "extra": dict(ni.extra),
                    }
                    for ni in n.nis
                ],
            }
            for n in records.nets
        ],
        "error": None if records.error is None else {
            "errno": records.error.errno, "descr": records.error.descr,
        },
    }
