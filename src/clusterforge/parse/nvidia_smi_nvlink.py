"""``nvidia-smi nvlink --status`` (``nvlink -s``): per-GPU NVLink link speeds.

Empty output is meaningful: nvidia-smi prints nothing at all on a system whose GPUs
have no NVLink (e.g. a single A10) -> ``NvlinkStatus(gpus=())``.

A GPU header followed by one of nvidia-smi's messages instead of link lines gives a
GPU with ``status`` ``"mig"`` (MIG mode), ``"not_supported"`` or ``"inactive"`` (all
links inactive) and the message kept.  ``Link N: <inactive>`` lines are links with
``active=False``.  An elided copy (``[...]`` lines) or any other text is a
:class:`ParseError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import fail, numbered, shorten, split_lines

TOOL = "nvidia-smi-nvlink"

__all__ = ["NvlinkGpu", "NvlinkLink", "NvlinkStatus", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class NvlinkLink:
    link: int
    active: bool
    speed_gbs: float | None
    """GB/s per link as printed (``26.562``); None when inactive."""


@dataclass(frozen=True, slots=True)
class NvlinkGpu:
    index: int
    name: str
    uuid: str
    status: str
    """``ok`` (links listed), ``mig``, ``not_supported`` or ``inactive``."""
    message: str | None
    links: tuple[NvlinkLink, ...]


@dataclass(frozen=True, slots=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]


_GPU_RE = re.compile(r"GPU (\d+): (.+) \(UUID: (\S+)\)")
_LINK_RE = re.compile(r"Link (\d+): (?:(\d+(?:\.\d+)?) GB/s|<inactive>)")
_MESSAGES = (
    (re.compile(r".*not supported for Devices in MIG mode.*", re.I), "mig"),
    (re.compile(r".*does not (?:have or )?support Nvlink.*", re.I), "not_supported"),
    (re.compile(r".*all links are inActive.*", re.I), "inactive"),
)


def parse(text: str) -> NvlinkStatus:
    lines = split_lines(text)
    gpus: list[NvlinkGpu] = []
    cur: tuple[int, str, str] | None = None
    links: list[NvlinkLink] = []
    status: str | None = None
    message: str | None = None

    def close() -> None:
        if cur is None:
            return
        if status is None and not links:
            raise fail(TOOL, idx, raw, f"GPU {cur[0]} has neither link lines nor a message")
        gpus.append(NvlinkGpu(index=cur[0], name=cur[1], uuid=cur[2], status=status or "ok",
                              message=message, links=tuple(links)))

    idx, raw = 1, ""
    for idx, raw, s in numbered(lines):
        gm = _GPU_RE.fullmatch(s)
        if gm is not None:
            close()
            cur = (int(gm.group(1)), gm.group(2), gm.group(3))
            links, status, message = [], None, None
            continue
        if s == "[...]":
            raise fail(TOOL, idx, raw, "elided output ('[...]'): the link list is incomplete")
        if cur is None:
            raise fail(TOOL, idx, raw, f"expected 'GPU N: <name> (UUID: ...)', got {shorten(raw)}")
        lm = _LINK_RE.fullmatch(s)
        if lm is not None:
            if status is not None:
                raise fail(TOOL, idx, raw, "link line after a status message")
            n = int(lm.group(1))
            if any(lk.link == n for lk in links):
                raise fail(TOOL, idx, raw, f"duplicate Link {n}")
            if links and n != links[-1].link + 1:
                raise fail(TOOL, idx, raw, f"Link {n} does not follow Link {links[-1].link}")
            speed = lm.group(2)
            links.append(NvlinkLink(link=n, active=speed is not None,
                                    speed_gbs=float(speed) if speed is not None else None))
            continue
        for pattern, code in _MESSAGES:
            if pattern.fullmatch(s) and not links and status is None:
                status, message = code, s
                break
        else:
            raise fail(TOOL, idx, raw, f"unexpected line {shorten(raw)}")
    close()
    return NvlinkStatus(gpus=tuple(gpus))


def to_json(records: NvlinkStatus) -> dict[str, Any]:
    return {
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "uuid": g.uuid,
                "status": g.status,
                "message": g.message,
                "links": [
                    {"link": lk.link, "active": lk.active, "speed_gbs": lk.speed_gbs}
                    for lk in g.links
                ],
            }
            for g in records.gpus
        ]
    }
