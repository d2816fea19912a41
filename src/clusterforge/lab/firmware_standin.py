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
  a PSID the image does not list is refused, as mlxfwmanager refuses a PSID mismatch; it prints the query of
  the card with the image's version available, then the update log as mlxup prints it (`Found 1 device(s)
  requiring firmware update...`, `Device #1: Updating FW ...`, `Done`, `Restart needed ...`); the same
  version is skipped without --force; else the card's flashed version changes and a reset is pending;
* `mlxfwreset -d DEV -y reset`: the flashed version runs.

And, on the fabric node (the master SM node) when switches are pinned (`firmware.switches`), a LAB-ONLY `flint`
for the in-band switch queries and flashes (ibsim answers no vendor MADs): the switch at `-d lid-<LID>[,HCA,PORT]`
is found through the simulated fabric for real (`smpquery nodedesc`/`nodeinfo <LID>`, through that HCA port),
its firmware read from /var/lib/clusterforge-lab/fw/switches.json (`switches`):

* `flint -d DEV q`: flint's query rows (tests/fixtures/flint-query), with `FW Version(Running)` when a burn
  waits for its reset;
* `flint -d DEV -i IMAGE -y burn`: a LAB image (`lab_image`) of the switch's device type and a PSID it lists;
* `flint -d DEV swreset`: the burned version runs.

Anything else exits 2 naming itself. Pure here, and no inventory: which cards and switches a host of an
environment starts with, and the install, are the rehearsal's (rehearsal/standins.py).
"""

from __future__ import annotations

import json

STATE = "/var/lib/clusterforge-lab/fw/cards.json"
SWITCH_STATE = "/var/lib/clusterforge-lab/fw/switches.json"
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


def query(listed, available=None):
    print("Querying Mellanox devices firmware ...\\n")
    for i, c in enumerate(listed, 1):
        print("Device #%d:\\n----------\\n" % i)
        print("  Device Type:      " + c["device_type"])
        print("  Part Number:      LAB-STANDIN")
        print("  Description:      LAB-ONLY stand-in for " + c["name"])
        print("  PSID:             " + c["psid"])
        print("  PCI Device Name:  " + c["pci"])
        print("  Versions:         Current        Available     ")
        print("     FW             %-14s %-14s" % (c["fw"], available or "N/A"))
        if c["fw_running"] != c["fw"]:
            print("     FW (Running)   %-14s N/A           " % c["fw_running"])
        status = "No matching image found" if available is None else (
            "Up to date" if available == c["fw"] else "Update required")
        print("\\n  Status:           %s\\n" % status)


if tool == "mlxfwmanager" and args == ["--query"]:
    query(load())
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
    query([c], image["version"])  # as mlxup -u prints it: the query with the image's version available
    if image["version"] == c["fw"] and "--force" not in args:
        print("---------\\nNo devices require firmware update.")
        sys.exit(0)
    print("---------\\nFound 1 device(s) requiring firmware update...\\n")
    print("Device #1: Updating FW ...\\nFSMST_INITIALIZE -   OK\\nWriting Boot image component -   OK\\nDone\\n")
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


SWITCH_STANDIN = '''#!/usr/bin/python3
# LAB-ONLY STAND-IN for flint's in-band switch access, installed by `clusterforge lab up` on the fabric node. This
# is not NVIDIA software: ibsim answers no vendor MADs. The switch at the LID is found through the simulated fabric
# (smpquery); its firmware is read from @STATE@, which a burn and a swreset change.
import json, os, subprocess, sys
STATE = "@STATE@"
args = sys.argv[1:]


def fail(msg, code=1):
    sys.stderr.write("-E- " + msg + "\\n")
    sys.exit(code)


def opt(name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def smp(attr, lid, via):
    argv = ["smpquery"] + (["-C", via[0]] if via else []) + (["-P", via[1]] if len(via) > 1 else []) + [attr, lid]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        fail("Cannot open %s: no device answers at LID %s (%s)" % (opt("-d"), lid, res.stderr.strip()[-200:]))
    for line in res.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == ("Node Description" if attr == "nodedesc" else "Guid"):  # smpquery's rows
            return value.lstrip(".").strip()
    fail("Cannot open %s: smpquery %s printed no answer" % (opt("-d"), attr))


dev = opt("-d") or ""
if not dev.startswith("lid-"):
    fail("clusterforge lab flint stand-in: only in-band switch access (-d lid-<LID>[,HCA,PORT]): %s" % dev, 2)
lid, *via = dev[4:].split(",")
with open(STATE, encoding="utf-8") as f:
    switches = json.load(f)
name = smp("nodedesc", lid, via)
sw = switches.get(name)
if sw is None:
    fail("Cannot open %s: %s is not a pinned switch of this LAB stand-in" % (dev, name))
guid = smp("nodeinfo", lid, via)


def save():
    with open(STATE + ".tmp", "w", encoding="utf-8") as f:
        json.dump(switches, f, indent=1)
    os.replace(STATE + ".tmp", STATE)


rest = [a for a in args if a not in ("-d", dev, "-y", "-i", opt("-i"))]
if rest in (["q"], ["query"]):
    print("Image type:            FS4")
    print("FW Version:            " + sw["fw"])
    if sw["fw_running"] != sw["fw"]:
        print("FW Version(Running):   " + sw["fw_running"])
    print("Description:           UID                GuidsNumber")
    print("Base GUID:             %016x        128" % int(guid, 16))
    print("Image VSD:             N/A")
    print("Device VSD:            N/A")
    print("PSID:                  " + sw["psid"])
    print("Security Attributes:   N/A")
elif rest in (["b"], ["burn"]) and opt("-i"):
    try:
        with open(opt("-i"), encoding="utf-8") as f:
            image = json.load(f)
        assert image.get("lab_firmware_image") is True
    except (OSError, ValueError, AssertionError):
        fail("%s: not a firmware image this LAB stand-in can burn (clusterforge.lab.firmware_standin.lab_image)"
             % opt("-i"))
    if image["device_type"] != sw["device_type"] or (image["psids"] and sw["psid"] not in image["psids"]):
        fail("PSID mismatch: the image is for %s %s, the device is %s %s"
             % (image["device_type"], ",".join(image["psids"]), sw["device_type"], sw["psid"]))
    print("    Current FW version on flash:  " + sw["fw"])
    print("    New FW version:               " + image["version"])
    print("\\nBurning FW image without signatures - OK\\n-I- To load new FW run swreset (LAB stand-in)")
    sw["fw"] = image["version"]
    save()
elif rest == ["swreset"]:
    print("-I- Sending reset command to device %s ..." % dev)
    print("-I- Reset command accepted by the device.")
    sw["fw_running"] = sw["fw"]
    save()
else:
    fail("clusterforge lab flint stand-in: unsupported arguments: %s" % " ".join(args), 2)
'''.replace("@STATE@", SWITCH_STATE)


def lab_image(device_type: str, version: str, psids: list[str] | tuple[str, ...] = ()) -> str:
    """A LAB firmware image for the stand-in to burn (staged where a real image would be)."""
    return json.dumps({"lab_firmware_image": True, "note": "LAB ONLY: not firmware", "device_type": device_type,
                       "version": version, "psids": list(psids)}, indent=1) + "\n"
