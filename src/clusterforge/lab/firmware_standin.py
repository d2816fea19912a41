"""LAB-ONLY stand-ins for NVIDIA MFT's `mlxfwmanager` and `mlxfwreset` (docs/firmware.md): there are no cards
in the lab's containers, so a day-2 firmware bump's machine steps (`clusterforge firmware flash|activate`) run
against these.

`lab up` installs them on every host whose HCAs (or DPUs) the environment pins (`firmware.hcas`), with each
card at its pin's version and first PSID (`cards`), in /var/lib/clusterforge-lab/fw/cards.json inside the
container (its own file system: a flash changes it there, as a card keeps its flash). They keep the tools'
protocol as `clusterforge firmware` and `validate` read it:

* `mlxfwmanager --query`: the query report in mlxfwmanager's format (tests/fixtures/mlxfwmanager: `Device #N`,
  `Device Type`, `PSID`, `PCI Device Name`, `Versions` with `FW` and, when a flash waits for a reset,
  `FW (Running)`), parsed by the same parser as a real card's;
* `mlxfwmanager -d DEV -u -i IMAGE -y [--force]`: the image must be a LAB image (`lab_image`: JSON naming the
  device type, version and PSIDs, staged by whoever runs the bump, as a real image is); another device type or
  a PSID the image does not list is refused, as mlxfwmanager refuses a PSID mismatch; the same version is
  skipped without --force; else the card's flashed version changes and a reset is pending;
* `mlxfwreset -d DEV -y reset`: the flashed version runs.

Anything else exits 2 naming itself. Pure here: the install is in lab/rehearsal/env.py.
"""

from __future__ import annotations

import json
from typing import Any

from ..model.index import Index

STATE = "/var/lib/clusterforge-lab/fw/cards.json"
TOOLS = ("mlxfwmanager", "mlxfwreset")
DEFAULT_PSID = "MT_0000000000"  # a LAB board identity for a pin that lists none

STANDIN = '''#!/usr/bin/python3
# LAB-ONLY STAND-IN for NVIDIA MFT's mlxfwmanager / mlxfwreset, installed by `clusterforge lab up`. This is not
# NVIDIA software: there are no cards in the lab. It answers as the tools do (clusterforge.lab.firmware_standin)
# from the cards in @STATE@, which a flash and a reset change.
import json, os, sys
STATE = "@STATE@"
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]


def load():
    with open(STATE, encoding="utf-8") as f:
        return json.load(f)


def save(cards):
    with open(STATE + ".tmp", "w", encoding="utf-8") as f:
        json.dump(cards, f, indent=1)
    os.replace(STATE + ".tmp", STATE)


def card(cards, dev):
    for c in cards:
        if c["pci"] == dev:
            return c
    sys.exit("-E- Device %s not found (LAB stand-in)" % dev)


def opt(name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


if tool == "mlxfwmanager" and args == ["--query"]:
    print("Querying Mellanox devices firmware ...\\n")
    for i, c in enumerate(load(), 1):
        print("Device #%d:\\n----------\\n" % i)
        print("  Device Type:      " + c["device_type"])
        print("  Part Number:      LAB-STANDIN")
        print("  Description:      LAB-ONLY stand-in for " + c["name"])
        print("  PSID:             " + c["psid"])
        print("  PCI Device Name:  " + c["pci"])
        print("  Versions:         Current        Available     ")
        print("     FW             %-14s N/A           " % c["fw"])
        if c["fw_running"] != c["fw"]:
            print("     FW (Running)   %-14s N/A           " % c["fw_running"])
        print("\\n  Status:           No matching image found\\n")
elif tool == "mlxfwmanager" and "-u" in args and opt("-d") and opt("-i"):
    cards = load()
    c = card(cards, opt("-d"))
    try:
        with open(opt("-i"), encoding="utf-8") as f:
            image = json.load(f)
        assert image.get("lab_firmware_image") is True
    except (OSError, ValueError, AssertionError):
        sys.exit("-E- %s: not a firmware image this LAB stand-in can burn (clusterforge.lab.firmware_standin.lab_image)"
                 % opt("-i"))
    if image["device_type"] != c["device_type"] or (image["psids"] and c["psid"] not in image["psids"]):
        sys.exit("-E- PSID mismatch: the image is for %s %s, the device is %s %s"
                 % (image["device_type"], ",".join(image["psids"]), c["device_type"], c["psid"]))
    if image["version"] == c["fw"] and "--force" not in args:
        print("Device %s: FW %s is up to date, skipped (--force to burn it again)" % (c["pci"], c["fw"]))
        sys.exit(0)
    print("Updating FW ...\\n\\nDevice %s: %s -> %s  [OK]" % (c["pci"], c["fw"], image["version"]))
    print("Restart needed for updates to take effect.")
    c["fw"] = image["version"]
    save(cards)
elif tool == "mlxfwreset" and opt("-d") and args[-1] == "reset":
    cards = load()
    c = card(cards, opt("-d"))
    print("-I- Sending Reset Command To Fw             -Done\\n-I- FW was loaded successfully.")
    c["fw_running"] = c["fw"]
    save(cards)
else:
    sys.stderr.write("clusterforge lab %s stand-in: unsupported arguments: %s\\n" % (tool, " ".join(args)))
    sys.exit(2)
'''.replace("@STATE@", STATE)


def cards(index: Index, host: str) -> list[dict[str, Any]]:
    """The host's pinned cards as the stand-in starts them: each at its pin's version and first PSID, one
    PCI address a card (no Base GUID: validate matches them to the declared cards by device type). None when
    nothing on the host is pinned."""
    fw = index.inv.firmware
    pins = {p.model: p for p in fw.hcas} if fw is not None else {}
    hw = index.hardware.get(host)
    out: list[dict[str, Any]] = []
    if hw is None:
        return out
    for i, (name, model) in enumerate([(h.name, h.model) for h in hw.hcas] + [(d.name, d.model) for d in hw.dpus]):
        pin, info = pins.get(model), index.cat.hcas.get(model)
        if pin is None or info is None or not info.fw_device_type:
            continue
        out.append({"name": name, "device_type": info.fw_device_type, "psid": pin.psids[0] if pin.psids
                    else DEFAULT_PSID, "pci": f"0000:{0x3b + i:02x}:00.0", "fw": pin.version,
                    "fw_running": pin.version})
    return out


def lab_image(device_type: str, version: str, psids: list[str] | tuple[str, ...] = ()) -> str:
    """A LAB firmware image for the stand-in to burn (staged where a real image would be)."""
    return json.dumps({"lab_firmware_image": True, "note": "LAB ONLY: not firmware", "device_type": device_type,
                       "version": version, "psids": list(psids)}, indent=1) + "\n"
