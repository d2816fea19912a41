"""Error types shared across the layers, and the command exit codes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from .echo import MAX_ECHO, MAX_MESSAGE, cap, echo

Path = tuple[str | int, ...]


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE_OR_PARSE = 2
    INVALID_INVENTORY = 3
    FINDINGS = 4
    UNREACHABLE = 5
    INTERNAL = 70  # a bug in clusterforge caught by its own checks (a change plan the verifier refused)


def format_path(path: Path) -> str:
    """`("nodes", 3, "hcas", 1, "guid")` -> `nodes[3].hcas[1].guid`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif len(part) <= MAX_ECHO and part.replace("_", "").replace("-", "").isalnum() and not part[:1].isdigit():
            out += f".{part}" if out else part
        else:
            out += f"[{echo(part)}]"
    return out


RULES: dict[str, str] = {
    "INV-ENV": "the environment is missing, unreadable or holds no YAML file",
    "INV-READ": "a file cannot be read, or is too large to be an inventory file",
    "INV-ENCODING": "a file is not UTF-8 text",
    "INV-YAML": "YAML syntax: a parse error, recursive or exploding aliases, nesting too deep",
    "INV-SCHEMA": "structure: a missing field, an unknown key, a value of the wrong type or form, a section "
    "defined twice",
    "INV-DUP": "a name, GUID, cable id or label, interface name or P_Key declared twice",
    "INV-REF": "a reference to something not declared: row, rack, profile, node, device, port, trunk, "
    "interface",
    "INV-HW": "hardware against the catalog: unknown model, ports or rates a model does not have",
    "INV-PCIE": "HCA/DPU and GPU pairing: GPU index, NUMA node, PCIe root complex",
    "INV-RACK": "rack units: a device beyond the rack's height, or two in the same U",
    "INV-POWER": "a rack's draw over its power budget or its cooling type's density limit",
    "INV-COOLING": "a liquid-cooled rack with too few leak sensors",
    "INV-CABLE": "a cable's ends: a port used twice, a loop, both ends on one node, rates that cannot link",
    "INV-REACH": "a cable's media and length against the rate it runs (DAC, AOC, fiber reach)",
    "INV-TRUNK": "MPO trunks: fiber type, lane groups, cables that cannot ride a trunk",
    "INV-ADDR": "addresses: overlapping subnets, gateways and addresses outside their subnet, one address "
    "twice, a pool too small",
    "INV-LNET": "Lustre MGS NIDs: on the file system's LNet network, naming or addressing its servers",
    "INV-SM": "OpenSM: an SM node without a cabled HCA, SM priorities that leave the master undecided",
    "INV-LUSTRE": "Lustre failover pairs",
    "INV-STORAGE": "Lustre storage tiers: targets on storage servers within their failover pairs, devices and "
    "sizes that fit, one MGS, NIDs on the rails; the cache (PCC) on local NVMe; the HSM archive's agents",
    "INV-HA": "a redundant group (SM pair, Lustre pair, a node's rails) cabled to one switch only",
    "INV-COMPAT": "the OFED and Lustre client versions cannot work together",
    "INV-MONITORING": "the monitoring section: collector, store, alert routes",
    "INV-HEALTH": "the node health check: the scheduler hooks it drains and re-admits through",
    "INV-PLAN": "the fabric spec cannot be planned",
    "INV-OS": "an operating system the catalog does not know, or a pin its family cannot install",
}
"""Rule ids of inventory issues (`clusterforge check`), one per family of rules, and what each covers."""


ACCESS_KEY_ID = re.compile(r"(?:AKIA|ASIA|AIDA|AROA|ANPA|AGPA)[A-Z0-9]{16}")
"""An AWS-style access key id (Ceph RGW hands out 20-character upper-case ids of the same shape)."""


@dataclass(frozen=True, slots=True)
class InventoryIssue:
    """One problem in an inventory, located in its files."""

    path: Path
    message: str
    file: str | None = None
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based
    rule: str = "INV-SCHEMA"  # one of RULES

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE:  # a value echoed whole (a 50 MB string): bounded in text and JSON
            object.__setattr__(self, "message", cap(self.message))
        if ACCESS_KEY_ID.search(self.message):  # a key pasted into any field: never quoted back (a log, CI)
            object.__setattr__(self, "message", ACCESS_KEY_ID.sub("<an access key id, not echoed>", self.message))

    def located(self, file: str | None, line: int | None, col: int | None) -> InventoryIssue:
        return InventoryIssue(self.path, self.message, file, line, col, self.rule)

    def __str__(self) -> str:
        where = self.file or "<inventory>"
        if self.line is not None:
            where += f":{self.line}:{self.col or 1}"
        dotted = format_path(self.path)
        text = f"{where}: {dotted}: {self.message}" if dotted else f"{where}: {self.message}"
        return f"{text} [{self.rule}]"


class InventoryInvalid(Exception):
    """The inventory has errors: `issues`, and `more` beyond those that were only counted."""

    def __init__(self, issues: list[InventoryIssue], more: int = 0) -> None:
        super().__init__(f"{len(issues) + more} inventory error(s)")
        self.issues = issues
        self.more = more
