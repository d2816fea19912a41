"""The one GUID spelling, shared by the model, the parsers, the renderers and the simulator."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from clusterforge.model.base import normalize_guid
from clusterforge.parse._common import norm_guid
from clusterforge.render.guids import fmt
from clusterforge.util.guid import format_guid, guid_hex, pad_guid


def test_examples() -> None:
    assert format_guid(0x8F10500200B51) == "0x0008f10500200b51"
    assert guid_hex(0x2C903) == "000000000002c903"
    assert pad_guid("8F10500200B51") == "0x0008f10500200b51"


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_every_writer_agrees(value: int) -> None:
    text = format_guid(value)
    assert len(text) == 18 and text == text.lower()
    assert text == "0x" + guid_hex(value) == pad_guid(f"{value:X}") == fmt(value)
    assert normalize_guid(value) == normalize_guid(text.upper().replace("0X", "0x")) == text
    assert norm_guid(f"{value:x}") == text
    assert int(text, 16) == value
