"""Shared building blocks: the strict base model, GUIDs, names, port references."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from ..util.echo import echo
from ..util.guid import format_guid, pad_guid

_HEX16 = re.compile(r"^(?:0x)?([0-9a-fA-F]{16})$")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
_HCA_NAME = r"^[a-z][a-z0-9_]*[0-9]+$"
_CABLE_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$"


class Model(BaseModel):
    """Every inventory model: immutable, unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def normalize_guid(value: object) -> str:
    """Return a GUID as `0x` + 16 lower-case hex digits or raise ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < 2**64:
            return format_guid(value)
        raise ValueError(f"{value!r} does not fit in 64 bits")
    if isinstance(value, str):
        m = _HEX16.match(value.strip())
        if m:
            return pad_guid(m.group(1))
    raise ValueError(f"{value!r} is not a 16-hex-digit GUID")


Guid = Annotated[str, BeforeValidator(normalize_guid), WithJsonSchema(
    {"anyOf": [{"type": "string", "pattern": r"^\s*(?:0x)?[0-9a-fA-F]{16}\s*$"}, {"type": "integer", "minimum": 0}]})]
"""Stored as `0x` + 16 lower-case hex digits whatever the spelling."""
FiniteFloat = Annotated[float, AllowInfNan(False)]
"""A float that is neither inf nor NaN (YAML `.inf` / `.nan` are rejected wherever a number is read)."""
Name = Annotated[str, Field(pattern=_NAME)]
HcaName = Annotated[str, Field(pattern=_HCA_NAME)]
Rate = Literal["EDR", "HDR100", "HDR", "NDR200", "NDR", "XDR"]
CableId = Annotated[str, Field(pattern=_CABLE_ID)]

# --- Constrained strings: every `str` of the model is one of these (or a Literal, Name, ...). ---
# Inventory text is data: it reaches generated files, CSVs and the Ansible controller, so each
# field admits only what its syntax needs, and control characters (line breaks, tabs, C1, Unicode
# line/paragraph separators) nowhere. Patterns are in the subset shared by pydantic's Rust regex,
# Python's `re` and JSON Schema (no look-around); PATTERN_HELP words the error for each.

_SEG = r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)"
"""One path component: letters, digits, `._-`; never `.` or `..`."""
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

_CONTROL_CHARS = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
"""C0, DEL, C1 and the Unicode line/paragraph separators: a regex character-class body."""
TEXT_PATTERN = rf"^[^{_CONTROL_CHARS}]*$"
ABS_PATH_PATTERN = rf"^(?:/{_SEG})+$"
FILE_PATH_PATTERN = rf"^/?{_SEG}(?:/{_SEG})*$"
DNS_DOMAIN_PATTERN = rf"^{_LABEL}(?:\.{_LABEL})*$"
MOUNT_OPTIONS_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_=.:/+-]*(?:,[A-Za-z0-9_][A-Za-z0-9_=.:/+-]*)*$"
IFNAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$"
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,47}$"
ITEM_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+/-]{0,95}$"
SUFFIX_PATTERN = r"^[A-Za-z0-9._-]{1,32}$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"
USER_PATTERN = r"^[a-z_][a-z0-9_-]{0,31}$"
PCIE_PATTERN = r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$"
MIRROR_PATTERN = (r"^(?:https?://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?|file://)"
                  r"(?:/[A-Za-z0-9._~%+,=:-]*)*(?: [A-Za-z0-9][A-Za-z0-9._/-]*)*$")
_MIRROR_URL = (r"(?:https?://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?|file://)"
               r"(?:/[A-Za-z0-9._~%+,=:-]*)*")
RPM_MIRROR_PATTERN = rf"^{_MIRROR_URL}(?: gpgkey={_MIRROR_URL})?(?: gpgcheck=[01])?$"
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?"
URL_PATTERN = (rf"^https?://{_HOST}(?::[0-9]{{1,5}})?(?:/[A-Za-z0-9._~%+,=:@!$*-]*)*"
               r"(?:\?[A-Za-z0-9._~%+,=:@/!$*&-]*)?$")
EMAIL_PATTERN = rf"^[A-Za-z0-9._%+-]{{1,64}}@{_HOST}$"
HOST_PORT_PATTERN = rf"^{_HOST}:[0-9]{{1,5}}$"

PATTERN_HELP: dict[str, str] = {
    _NAME: "not a name: a letter or digit, then up to 62 letters, digits or ._-",
    _HCA_NAME: "not an RDMA device name: lower-case letters, digits and _, ending in a digit (mlx5_0)",
    _CABLE_ID: "not a cable id: a letter or digit, then up to 40 letters, digits or ._-",
    TEXT_PATTERN: "control characters (line breaks, tabs, ...) are not allowed",
    ABS_PATH_PATTERN: "not a normalized absolute path: write /dir/sub with letters, digits and ._- "
                      "(no '.', '..', '//', trailing '/' or spaces)",
    FILE_PATH_PATTERN: "not a normalized path: letters, digits and ._- between single '/' "
                       "(no '.', '..', '//', trailing '/' or spaces)",
    DNS_DOMAIN_PATTERN: "not a DNS domain: dot-separated labels of letters, digits and inner '-'",
    MOUNT_OPTIONS_PATTERN: "not a mount option list: comma-separated options of letters, digits and _=.:/+- "
                           "(no spaces)",
    IFNAME_PATTERN: "not an interface name: a letter, then up to 14 letters, digits or ._-",
    MODEL_NAME_PATTERN: "not a model name: letters, digits and ._+- (catalog names such as QM8700)",
    ITEM_KEY_PATTERN: "not a price item key: letters, digits and ._+/- (e.g. cable/DAC/HDR)",
    SUFFIX_PATTERN: "not a name suffix: 1 to 32 letters, digits or ._-",
    CURRENCY_PATTERN: "not a currency code: three capital letters (ISO 4217, e.g. USD)",
    USER_PATTERN: "not a user name: a lower-case letter or _, then up to 31 of a-z 0-9 _ -",
    PCIE_PATTERN: "not a PCIe address: dddd:bb:dd.f in hex",
    MIRROR_PATTERN: "not a package mirror: `URL [SUITE [COMPONENT...]]` with an http://, https:// or file:// URL "
                    "(no spaces, brackets or options in the URL)",
    RPM_MIRROR_PATTERN: "not a dnf package mirror: `URL [gpgkey=URL] [gpgcheck=0|1]` with http://, https:// or "
                        "file:// URLs (the repository's baseurl; no spaces, brackets or other options)",
    URL_PATTERN: "not an http:// or https:// URL: a host name or IPv4 address, an optional :PORT, then a path and "
                 "query of letters, digits and ._~%+,=:@!$*&/?- (no spaces, quotes, brackets or user:password@)",
    EMAIL_PATTERN: "not an e-mail address: LOCAL@DOMAIN with letters, digits and ._%+- (no names or brackets)",
    HOST_PORT_PATTERN: "not HOST:PORT: a host name or IPv4 address, a colon and a port number",
}
"""Pattern -> what the error says (the loader turns pydantic's pattern mismatches into these)."""
_CONTROL = re.compile(rf"[{_CONTROL_CHARS}]")


def pattern_error(pattern: str, value: object) -> str | None:
    """The message for `value` not matching `pattern` (one of PATTERN_HELP), or None for other patterns."""
    if pattern not in PATTERN_HELP:
        return None
    if isinstance(value, str) and _CONTROL.search(value):
        return f"{echo(value)}: {PATTERN_HELP[TEXT_PATTERN]}"
    return f"{echo(value)}: {PATTERN_HELP[pattern]}"


Text = Annotated[str, Field(pattern=TEXT_PATTERN, max_length=256)]
"""Free text (descriptions, argv words): anything printable, no control characters."""
AbsPath = Annotated[str, Field(pattern=ABS_PATH_PATTERN, max_length=1024)]
"""An absolute, normalized path (`/lustre/lfs01`)."""
FilePath = Annotated[str, Field(pattern=FILE_PATH_PATTERN, max_length=1024)]
"""A normalized path, absolute or relative (relative ones cannot climb with `..`)."""
DnsDomain = Annotated[str, Field(pattern=DNS_DOMAIN_PATTERN, max_length=253)]
MountOptions = Annotated[str, Field(pattern=MOUNT_OPTIONS_PATTERN, max_length=512)]
IfName = Annotated[str, Field(pattern=IFNAME_PATTERN)]
ModelName = Annotated[str, Field(pattern=MODEL_NAME_PATTERN)]
"""A catalog model (switch, HCA, GPU): checked against the catalog by `check`."""
ItemKey = Annotated[str, Field(pattern=ITEM_KEY_PATTERN)]
Suffix = Annotated[str, Field(pattern=SUFFIX_PATTERN)]
Currency = Annotated[str, Field(pattern=CURRENCY_PATTERN)]
UserName = Annotated[str, Field(pattern=USER_PATTERN)]
PcieAddress = Annotated[str, Field(pattern=PCIE_PATTERN)]
PackageMirror = Annotated[str, Field(pattern=MIRROR_PATTERN, max_length=512)]
RpmMirror = Annotated[str, Field(pattern=RPM_MIRROR_PATTERN, max_length=1024)]
Url = Annotated[str, Field(pattern=URL_PATTERN, max_length=1024)]
"""An http:// or https:// URL (no credentials, no spaces): webhooks, remote-write endpoints."""
Email = Annotated[str, Field(pattern=EMAIL_PATTERN, max_length=254)]
HostPort = Annotated[str, Field(pattern=HOST_PORT_PATTERN, max_length=260)]
"""`host:port`, e.g. an SMTP smarthost."""


class PortRef(Model):
    """One end of a link: a switch port (`leaf01/17`) or an HCA port (`gpu01/mlx5_0/1`).

    Written in YAML as that string or as a mapping {device, hca, port}.
    """

    device: Name = Field(description="switch or node name")
    port: int = Field(ge=1, le=512, description="port number: on the switch, or on the HCA")
    hca: HcaName | None = Field(default=None, description="HCA name on a node (absent for a switch port)")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = value.split("/")
            if len(parts) == 2:
                device, port = parts
                return {"device": device, "port": _port_number(port, value)}
            if len(parts) == 3:
                device, hca, port = parts
                return {"device": device, "hca": hca, "port": _port_number(port, value)}
            raise ValueError(f"{value!r} is not a port reference: write 'switch/PORT' or 'node/HCA/PORT'")
        return value

    def __str__(self) -> str:
        if self.hca is None:
            return f"{self.device}/{self.port}"
        return f"{self.device}/{self.hca}/{self.port}"

    @property
    def key(self) -> tuple[str, str | None, int]:
        return (self.device, self.hca, self.port)


def _port_number(text: str, whole: str) -> int:
    if not text.isdigit():
        raise ValueError(f"{whole!r}: port {text!r} is not a number")
    return int(text)
