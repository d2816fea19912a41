"""``mstlink -d <ib device> -p <port> -c --json`` (mstflint; MFT's ``mlxlink``): a port's physical BER.

No real capture of this output exists here; the format is taken from the mstflint source
(github.com/Mellanox/mstflint, mlxlink/). ``--json`` (there since mstflint 4.13.3) prints one JSON
document on stdout built by ``MlxlinkCmdPrint::toJsonFormat`` and ``MlxlinkCommander::prepareJsonOut``:

    {
       "result" : {
          "output" : {
             "Physical Counters and BER Info" : {
                "Effective Physical BER" : "15E-255",
                "Raw Physical BER" : "1E-12",
                ...
             },
             ...
          }
       },
       "status" : { "code" : 0, "message" : "success" }
    }

``-c`` (show_counters) fills the section ``Physical Counters and BER Info``; each BER is
``<coef>E-<magnitude>`` (two unsigned decimal integers of the PPCNT register: ``raw_ber_coef``,
``raw_ber_magnitude``, ``effective_ber_coef``, ...), and ``N/A`` while the link is down. The raw
(physical, pre-FEC) BER is what the optics rules watch; the effective BER is the one after FEC. A
section with neither key, an output that is not a JSON object of that shape, or a BER that is neither
``N/A`` nor ``<int>E-<int>`` is a ParseError naming the line. ``status.code`` 1 (mstlink's errors in
``status.message``) with the section still there is parsed: the values that were read are kept.
Self-contained (only ParseError): `ib-health` embeds this module's source.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse.errors import ParseError

TOOL = "mstlink"

__all__ = ["BER_SECTION", "MstlinkBer", "parse", "to_json"]

BER_SECTION = "Physical Counters and BER Info"
RAW_BER = "Raw Physical BER"
EFFECTIVE_BER = "Effective Physical BER"

_BER_RE = re.compile(r"([0-9]+)E-([0-9]+)")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
"""The color codes mlxlink writes to stdout around its messages (ib-health strips them too)."""


@dataclass(frozen=True, slots=True)
class MstlinkBer:
    raw_ber: float | None
    """Raw physical BER (before FEC); None while the link is down (``N/A``)."""
    effective_ber: float | None
    """Effective physical BER (after FEC); None while the link is down or not printed."""
    status_code: int
    """mstlink's ``status.code``: 0 success, 1 when it met errors (``status_message``)."""
    status_message: str


def _line_of(text: str, needle: str) -> tuple[int, str]:
    """The first line holding ``needle`` (1-based) and that line; (1, first line) when none does."""
    lines = text.split("\n")
    for no, raw in enumerate(lines, start=1):
        if needle in raw:
            return no, raw.rstrip("\r")
    return 1, lines[0].rstrip("\r")


def _ber(value: Any, key: str, text: str) -> float | None:
    if value == "N/A":
        return None
    m = _BER_RE.fullmatch(value.strip()) if isinstance(value, str) else None
    if m is None:
        no, raw = _line_of(text, f'"{key}"')
        raise ParseError(TOOL, no, raw, f"{key}: {value!r} is neither N/A nor <coef>E-<magnitude>")
    return float(f"{m.group(1)}e-{m.group(2)}")


def parse(text: str) -> MstlinkBer:
    text = ANSI_RE.sub("", text)
    if not text.strip():
        raise ParseError(TOOL, 1, text.split("\n")[0], "empty output (mstlink prints one JSON document with --json)")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        no = getattr(exc, "lineno", 1)
        raise ParseError(TOOL, no, text.split("\n")[no - 1].rstrip("\r"),
                         f"not JSON (mstlink -c --json): {getattr(exc, 'msg', exc)}") from None
    first = _line_of(text, "{")
    if not isinstance(doc, dict):
        raise ParseError(TOOL, *first, "expected a JSON object with `result` and `status`")
    status = doc.get("status")
    result = doc.get("result")
    if not isinstance(status, dict) or not isinstance(status.get("code"), int) or not isinstance(result, dict):
        raise ParseError(TOOL, *first, "expected {\"result\": {...}, \"status\": {\"code\": N, \"message\": ...}}")
    message = str(status.get("message", ""))
    output = result.get("output")
    section = output.get(BER_SECTION) if isinstance(output, dict) else None
    if not isinstance(section, dict):
        why = f" (mstlink status {status['code']}: {message.strip()})" if status["code"] else ""
        raise ParseError(TOOL, *_line_of(text, '"output"'), f"no `{BER_SECTION}` section{why}")
    if RAW_BER not in section and EFFECTIVE_BER not in section:
        raise ParseError(TOOL, *_line_of(text, f'"{BER_SECTION}"'),
                         f"`{BER_SECTION}` without `{RAW_BER}` or `{EFFECTIVE_BER}`")
    raw = _ber(section[RAW_BER], RAW_BER, text) if RAW_BER in section else None
    eff = _ber(section[EFFECTIVE_BER], EFFECTIVE_BER, text) if EFFECTIVE_BER in section else None
    return MstlinkBer(raw, eff, status["code"], message)


def to_json(record: MstlinkBer) -> dict[str, Any]:
    return {"raw_ber": record.raw_ber, "effective_ber": record.effective_ber,
            "status_code": record.status_code, "status_message": record.status_message}
