"""``mlxfwmanager --query`` / ``mlxup --query``: each Mellanox/NVIDIA device's firmware, PSID and slot.

One block per ``Device #N:``: ``Device Type``, ``Part Number``, ``Description``, ``PSID``, ``PCI Device
Name`` (a PCI address or an mst device path), ``Base GUID`` (absent on Ethernet-mode cards), ``Base MAC``
or the older ``Port1 MAC`` / ``Port2 MAC``, the ``Versions`` table (``Current`` and ``Available`` per
image: FW, PXE, UEFI, NVMe, ...) and ``Status``. A ``FW (Running)`` row means a new image was burned and
the card not reset yet: ``fw_running`` is then what runs, ``fw`` what is on the flash (a drift check reads
``running``). ``Available`` is None where it reads N/A (``No matching image found`` is not a card fault).

A device block without ``Device Type`` or the FW row, a line that is not ``key: value`` inside a block,
no device at all, and empty input are a :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, norm_guid, split_lines

TOOL = "mlxfwmanager"

__all__ = ["FwDevice", "parse", "to_json"]

_DEVICE_RE = re.compile(r"^Device #(\d+):$")
_KV_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 ()/]*?):\s*(.*)$")
_VERSION_RE = re.compile(r"^([A-Za-z][A-Za-z ()]*?)\s{2,}(\S+)\s+(\S+)$")


@dataclass(frozen=True, slots=True)
class FwDevice:
    index: int
    device_type: str
    part_number: str | None
    description: str | None
    psid: str | None
    pci: str | None
    base_guid: str | None
    """``0x`` + 16 hex digits (the node GUID of an HCA), None on Ethernet-mode cards."""
    fw: str
    """The firmware on the flash (``Versions: FW Current``)."""
    fw_running: str
    """What runs: the ``FW (Running)`` row when there is one (a reset pending), else ``fw``."""
    fw_available: str | None
    versions: Mapping[str, tuple[str | None, str | None]]
    """image (``FW``, ``PXE``, ``UEFI``, ...) -> (current, available); N/A is None."""
    status: str | None
    line_no: int

    @property
    def reset_pending(self) -> bool:
        return self.fw_running != self.fw


def _na(value: str) -> str | None:
    return None if value in ("N/A", "") else value


def parse(text: str) -> tuple[FwDevice, ...]:
    if not text.strip():
        raise empty_error(TOOL)
    devices: list[FwDevice] = []
    cur: dict[str, Any] | None = None
    in_versions = False

    def close(end_no: int, end_line: str) -> None:
        nonlocal cur
        if cur is None:
            return
        versions: dict[str, tuple[str | None, str | None]] = cur["versions"]
        if "type" not in cur:
            raise fail(TOOL, cur["line_no"], cur["line"], "a device block without 'Device Type'")
        if "FW" not in versions or versions["FW"][0] is None:
            raise fail(TOOL, end_no, end_line, f"device #{cur['index']}: no 'FW' row in its Versions table")
        fw = versions["FW"][0]
        assert fw is not None
        running = versions.get("FW (Running)", (None, None))[0] or fw
        devices.append(FwDevice(cur["index"], cur["type"], cur.get("Part Number"), cur.get("Description"),
                                cur.get("PSID"), cur.get("PCI Device Name"), cur.get("guid"), fw, running,
                                versions["FW"][1], {k: v for k, v in versions.items() if k != "FW (Running)"},
                                cur.get("Status"), cur["line_no"]))
        cur = None

    lines = split_lines(text)
    for line_no, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or s.startswith("Querying Mellanox devices") or set(s) == {"-"}:
            in_versions = in_versions and bool(s) and set(s) != {"-"}
            continue
        if (m := _DEVICE_RE.match(s)) is not None:
            close(line_no, raw)
            cur = {"index": int(m.group(1)), "versions": {}, "line_no": line_no, "line": raw}
            in_versions = False
            continue
        if cur is None:
            raise fail(TOOL, line_no, raw, "expected 'Device #N:' (mlxfwmanager --query output)")
        if s.startswith("Versions:"):
            in_versions = True
            continue
        if in_versions and (v := _VERSION_RE.match(s)) is not None:
            cur["versions"][v.group(1).strip()] = (_na(v.group(2)), _na(v.group(3)))
            continue
        in_versions = False
        kv = _KV_RE.match(s)
        if kv is None:
            raise fail(TOOL, line_no, raw, "expected 'Key: value' in a device block")
        key, value = kv.group(1).strip(), kv.group(2).strip()
        if key == "Device Type":
            cur["type"] = value
        elif key == "Base GUID":
            guid = norm_guid(value)
            if guid is None:
                raise fail(TOOL, line_no, raw, f"'Base GUID' is not a GUID: {value!r}")
            cur["guid"] = guid
        else:
            cur[key] = _na(value)
    close(len(lines), lines[-1] if lines else "")
    if not devices:
        raise fail(TOOL, 1, lines[0], "no 'Device #N:' block")
    return tuple(devices)


def to_json(devices: tuple[FwDevice, ...]) -> list[dict[str, Any]]:
    return [{"index": d.index, "device_type": d.device_type, "part_number": d.part_number,
             "description": d.description, "psid": d.psid, "pci": d.pci, "base_guid": d.base_guid, "fw": d.fw,
             "fw_running": d.fw_running, "fw_available": d.fw_available, "reset_pending": d.reset_pending,
             "versions": {k: {"current": c, "available": a} for k, (c, a) in d.versions.items()},
             "status": d.status} for d in devices]
