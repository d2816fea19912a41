"""``mlxfwmanager --query`` / ``mlxup --query``: each Mellanox/NVIDIA device's firmware, PSID and slot, and
what an update run (``-u``) did to each.

One block per ``Device #N:``: ``Device Type``, ``Part Number``, ``Description``, ``PSID``, ``PCI Device
Name`` (a PCI address or an mst device path), ``Base GUID`` (absent on Ethernet-mode cards), ``Base MAC``
or the older ``Port1 MAC`` / ``Port2 MAC``, the ``Versions`` table (``Current`` and ``Available`` per
image: FW, PXE, UEFI, NVMe, ...) and ``Status``. A ``FW (Running)`` row means a new image was burned and
the card not reset yet: ``fw_running`` is then what runs, ``fw`` what is on the flash (a drift check reads
``running``). ``Available`` is None where it reads N/A (``No matching image found`` is not a card fault).

Around the query, as an update run prints it (real captures in tests/fixtures/mlxfwmanager/):

- a banner before it (``Initializing...``, ``Attempting to perform Firmware update...``, ``Querying Mellanox
  devices firmware ...``, ``Please wait while downloading MFA(s) ...``, ``-W-``/``-I-`` lines);
- ``Release notes for the available Firmware:`` and its list, after the devices;
- the burn log: ``Found N device(s) requiring firmware update...``, the ``Perform FW update? [y/N]:`` answer,
  then per device ``Device #N: Updating FW ...`` (repeated when the terminal redraws), its steps
  (``FSMST_INITIALIZE -   OK``, ``Writing Boot image component -  42%``), ``Done`` or an ``-E-`` error, and
  ``Restart needed for updates to take effect.``, ``Log File: ...``.

A device's ``burn`` is None when no update touched it, ``done`` when its log ends in ``Done`` (its flash then
holds ``fw_available``: ``fw_flashed``; it runs ``fw_running`` until reset), ``failed`` on an ``-E-`` line or a
step that is not OK, ``started`` when its log has no outcome (a run cut short). A device block without
``Device Type`` or the FW row, a line that is none of the above, no device at all, and empty input are a
:class:`ParseError`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, norm_guid, split_lines

TOOL = "mlxfwmanager"

__all__ = ["FwDevice", "parse", "parse_xml", "to_json"]

_DEVICE_RE = re.compile(r"^Device #(\d+):$")
_BANNER_RE = re.compile(r"^(?:Querying Mellanox devices firmware \.\.\.|Initializing\.\.\.|"
                        r"Attempting to perform Firmware update\.\.\.|Please wait while downloading MFA\(s\) \.\.\.|"
                        r"-[WI]- .*)$")
_NOTES_RE = re.compile(r"^Release notes for the available Firmware:$")
_NOTE_LINE_RE = re.compile(r"^(?:For more details, please refer to the following FW release notes:|\d+- \S.*)$")
_FOUND_RE = re.compile(r"^Found (\d+) device\(s\) requiring firmware update\.\.\.$")
_ASK_RE = re.compile(r"^Perform FW update\? \[y/N\]:\s*([A-Za-z]*)$")
_UPDATING_RE = re.compile(r"^Device #(\d+): Updating FW \.\.\.$")
_STEP_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_ ]*?) -\s+(OK|FAILED|\d{1,3}%)(?:\s.*)?$")
_AFTER_RE = re.compile(r"^(?:Restart needed for updates to take effect\.|Log File: .*|Real log file: .*|"
                       r"No devices? requir(?:e|es|ing) firmware update\.?)$")
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
    burn: str | None = None
    """What an update run did to the card: None (not touched), done, failed, started (no outcome printed)."""

    @property
    def reset_pending(self) -> bool:
        return self.fw_running != self.fw

    @property
    def fw_flashed(self) -> str:
        """What the flash holds after the run: the image burned (``Available``) when its burn is done."""
        return self.fw_available if self.burn == "done" and self.fw_available is not None else self.fw


def _na(value: str) -> str | None:
    return None if value in ("N/A", "") else value


def parse(text: str) -> tuple[FwDevice, ...]:
    if not text.strip():
        raise empty_error(TOOL)
    devices: list[FwDevice] = []
    cur: dict[str, Any] | None = None
    in_versions = False
    mode = "query"  # query (banner and device blocks), notes (release notes), burn (the update log)
    burns: dict[int, str] = {}
    burning: int | None = None

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
        if not s or set(s) == {"-"}:
            in_versions = in_versions and bool(s) and set(s) != {"-"}
            continue
        if mode != "query" and (s.startswith("CMD: ") or s.startswith("Querying Mellanox devices firmware")):
            close(line_no, raw)  # the tool ran again (mlxup re-runs itself after a download): its query counts
            devices, burns, burning, mode = [], {}, None, "query"
            continue
        if mode == "burn" or _FOUND_RE.match(s) or _ASK_RE.match(s):
            close(line_no, raw)
            mode = "burn"
            if (u := _UPDATING_RE.match(s)) is not None:
                burning = int(u.group(1))
                burns.setdefault(burning, "started")
                if burns[burning] != "started":  # a redraw of a device already done: what it said stands
                    continue
            elif s == "Done":
                if burning is None:
                    raise fail(TOOL, line_no, raw, "'Done' before any 'Device #N: Updating FW ...'")
                if burns[burning] == "started":
                    burns[burning] = "done"
            elif (st := _STEP_RE.match(s)) is not None:
                if st.group(2) == "FAILED" and burning is not None:
                    burns[burning] = "failed"
            elif s.startswith("-E- "):
                if burning is not None:
                    burns[burning] = "failed"
            elif not (_FOUND_RE.match(s) or _ASK_RE.match(s) or _AFTER_RE.match(s) or _BANNER_RE.match(s)):
                raise fail(TOOL, line_no, raw, "expected a line of mlxfwmanager's update log (Device #N: Updating "
                                               "FW ..., a step, Done, -E-, Restart needed ...)")
            continue
        if mode == "notes":
            if _NOTE_LINE_RE.match(s) is None:
                raise fail(TOOL, line_no, raw, "expected a release-notes line ('N- Name (version): URL')")
            continue
        if _NOTES_RE.match(s) is not None:
            close(line_no, raw)
            mode = "notes"
            continue
        if (m := _DEVICE_RE.match(s)) is not None:
            close(line_no, raw)
            cur = {"index": int(m.group(1)), "versions": {}, "line_no": line_no, "line": raw}
            in_versions = False
            continue
        if cur is None:
            if _BANNER_RE.match(s) or s.startswith("CMD: "):
                continue
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
    indices = {d.index for d in devices}
    stray = sorted(set(burns) - indices)
    if stray:
        raise fail(TOOL, len(lines), lines[-1], f"the update log names device #{stray[0]}, which the query has not")
    return tuple(dataclasses.replace(d, burn=burns.get(d.index)) for d in devices)


def to_json(devices: tuple[FwDevice, ...]) -> list[dict[str, Any]]:
    return [{"index": d.index, "device_type": d.device_type, "part_number": d.part_number,
             "description": d.description, "psid": d.psid, "pci": d.pci, "base_guid": d.base_guid, "fw": d.fw,
             "fw_running": d.fw_running, "fw_available": d.fw_available, "reset_pending": d.reset_pending,
             "versions": {k: {"current": c, "available": a} for k, (c, a) in d.versions.items()},
             "status": d.status, "burn": d.burn, "fw_flashed": d.fw_flashed} for d in devices]


XML_TOOL = "mlxfwmanager-xml"
_XML_VERSION_NAME = {"FW_Running": "FW (Running)"}
_DOCTYPE_RE = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)


def _xml_line(text: str, needle: str) -> tuple[int, str]:
    lines = split_lines(text)
    for no, raw in enumerate(lines, start=1):
        if needle in raw:
            return no, raw
    return 1, lines[0] if lines else ""


def parse_xml(text: str) -> tuple[FwDevice, ...]:
    """``mlxfwmanager --query --query-format XML``: the same records as the text query.

    No real capture of this format is in the project (the one published is held out); the format is taken
    from mstflint's source (mlxfwupdate/mlxfwmanager.cpp, ``generateQueryXML``; notes with line numbers in
    tests/fixtures/mlxfwmanager-xml-NOTES.md): a ``<Devices>`` root without an XML declaration, one ``<Device
    pciName= type= psid= partNumber=>`` each, ``<Versions>`` rows named for the image (``FW`` first,
    ``FW_Running`` while a reset is pending, ``PXE``, ``UEFI``, ...) with ``current=`` and ``available=``
    (``N/A`` when none), ``<MACs Base_Mac=>`` / ``<GUIDs Base_Guid=>`` (or ``port1=``/``port2=`` on older
    cards), ``<Status>`` and ``<Description>``. mlxfwmanager prints no banner in this mode. A device it could not
    open (``FW current="--"``), the ``<SVMInventory>`` document it prints when it finds no device, a DTD or
    entity declaration (never in its output), text around the document and malformed XML are a ParseError.
    """
    import xml.etree.ElementTree as ET

    if not text.strip():
        raise empty_error(XML_TOOL)
    body = text.strip()
    if _DOCTYPE_RE.search(body):
        raise fail(XML_TOOL, *_xml_line(text, "<!"), "a DTD or entity declaration: not mlxfwmanager's XML")
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, _col = exc.position
        lines = split_lines(text.lstrip("\n"))
        raise fail(XML_TOOL, line, lines[line - 1] if 0 < line <= len(lines) else "", f"not XML: {exc}") from None
    if root.tag == "SVMInventory":
        message = " ".join((m.text or "").strip() for m in root.iter("Message")) or "no message"
        raise fail(XML_TOOL, *_xml_line(text, "<SVMInventory"), f"mlxfwmanager reports an error: {message}")
    if root.tag != "Devices":
        raise fail(XML_TOOL, *_xml_line(text, "<" + root.tag), f"root <{root.tag}>: expected <Devices>")
    devices: list[FwDevice] = []
    for index, dev in enumerate(root, start=1):
        where = _xml_line(text, f'pciName="{dev.get("pciName", "")}"') if dev.get("pciName") else (1, "")
        if dev.tag != "Device":
            raise fail(XML_TOOL, *where, f"<{dev.tag}> inside <Devices>: expected <Device>")
        dtype = dev.get("type")
        if not dtype or dtype == "N/A":
            raise fail(XML_TOOL, *where,
                       f"device {dev.get('pciName')!r} without a type (mlxfwmanager could not open it)")
        versions: dict[str, tuple[str | None, str | None]] = {}
        for row in dev.findall("Versions/*"):
            current, available = row.get("current"), row.get("available")
            versions[_XML_VERSION_NAME.get(row.tag, row.tag.replace("_", " "))] = (
                _na(current or ""), _na(available or ""))
        fw = versions.get("FW", (None, None))[0]
        if fw is None or fw == "--":
            raise fail(XML_TOOL, *where, f"device {dev.get('pciName')!r}: no FW version (Status: "
                                     f"{(dev.findtext('Status') or '').strip() or 'none'})")
        raw_guid = next((g.get("Base_Guid") for g in dev.findall("GUIDs") if g.get("Base_Guid")), None)
        guid = None if raw_guid in (None, "N/A") else norm_guid(raw_guid or "")
        if raw_guid not in (None, "N/A") and guid is None:
            raise fail(XML_TOOL, *where, f"Base_Guid is not a GUID: {raw_guid!r}")
        running = versions.get("FW (Running)", (None, None))[0] or fw
        devices.append(FwDevice(
            index, dtype, _na(dev.get("partNumber") or "") if dev.get("partNumber") != "--" else None,
            _na((dev.findtext("Description") or "").strip()), _na(dev.get("psid") or ""), _na(dev.get("pciName") or ""),
            guid, fw, running, versions["FW"][1], {k: v for k, v in versions.items() if k != "FW (Running)"},
            _na((dev.findtext("Status") or "").strip()), where[0]))
    return tuple(devices)
