"""The one spelling of a GUID: `0x` + 16 lower-case hex digits (what OpenSM and the diags print)."""

from __future__ import annotations


def guid_hex(value: int) -> str:
    """The 16 lower-case hex digits of a 64-bit GUID, zero-padded, without `0x` (ibsim's `S-…`/`H-…`)."""
    return f"{value:016x}"


def format_guid(value: int) -> str:
    """`0x` + 16 lower-case hex digits."""
    return f"0x{value:016x}"


def pad_guid(hexdigits: str) -> str:
    """Hex digits as printed by a tool (`8f10500200b51`, any case, no `0x`) -> the canonical form."""
    return "0x" + hexdigits.lower().rjust(16, "0")
