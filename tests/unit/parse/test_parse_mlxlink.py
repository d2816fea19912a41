"""mlxlink's text output (parse/mlxlink.py) over the real captures, and what it refuses (constructed inputs,
marked so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.parse import ParseError, mlxlink

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "mlxlink"


def _text(name: str) -> str:
    (path,) = FIX.glob(f"{name}*.txt")
    return path.read_text(encoding="utf-8")


def test_counters_and_ber_of_a_clean_link() -> None:
    r = mlxlink.parse(_text("bf3-mft4.30-m-c"))
    assert (r.state, r.speed, r.width, r.raw_ber, r.effective_ber) == ("Active", "100G", "4x", 1.5e-254, 1.5e-254)
    assert (r.raw_errors_per_lane, r.link_down, r.link_recovery, r.time_since_clear_min) == ((0, 0, 0, 0), 0, 0,
                                                                                               25074.8)
    assert r.module is not None and r.module.part_number == "Q28-PC03" and r.module.rx_power_dbm is None  # N/A


def test_a_grep_fragment_is_read_by_its_labels() -> None:
    """Rows without their section's title (the author grepped): known by their labels; IB symbol rows."""
    r = mlxlink.parse(_text("cx6-hdr2x-mft4.24-show-counters"))
    assert (r.raw_ber, r.symbol_errors, r.symbol_ber, r.raw_errors_per_lane) == (1e-8, 0, 1.5e-254, (3183333, 242074))
    assert r.state is None and r.link_down is None  # not in the fragment: None, not 0


def test_trailing_spaces_not_supported_lines_and_missing_sections_are_normal() -> None:
    r = mlxlink.parse(_text("cx4-ib-fdr-mft4.35"))
    assert (r.state, r.fec, r.firmware, r.status_opcode) == ("Active", "No FEC", "12.28.2040", 0)  # spaces cut
    r = mlxlink.parse(_text("cx6-hdr2x-mft4.24-default"))
    assert r.messages == ('-E- "--show_ber_monitor" option is not supported for HCA',) and r.speed == "IB-HDR"
    r = mlxlink.parse(_text("cx5-ib-sdr"))
    assert (r.status_opcode, r.recommendation) == (25, "Cable speed not enabled")
    r = mlxlink.parse(_text("gce-blackwell"))
    assert r.physical_state is None and r.speed == "NVLink-XDR"


def test_the_module_of_a_passive_cable() -> None:
    """The shared sample: a passive DAC prints zeros with a range bracket for readings it has none of."""
    r = mlxlink.parse(_text("csegpu-cx7-ndr-show-module"))
    m = r.module
    assert m is not None
    assert (m.temperature_c, m.rx_power_dbm, m.cable_type, m.vendor) == (0.0, (0.0,) * 4, "Passive copper cable", "FS")


_CLEAN = _text("bf3-mft4.30-m-c")


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty input"),
    ("\n \n", "empty input"),
    (_CLEAN.replace("Raw Physical BER                   : 15E-255", "Raw Physical BER : high"), "Raw Physical BER"),
    (_CLEAN.replace("Temperature [C]                    : N/A", "Temperature [C] : hot"),
     r"Temperature \[C\]: .hot. is not a number"),
    (_CLEAN.replace("Raw Physical Errors Per Lane       : 0,0,0,0", "Raw Physical Errors Per Lane : 0,1.5,0,0"),
     "not a count"),
    (_CLEAN.replace("Link Down Counter                  : 0", "Link Down Counter : 1,2"), "2 values, expected one"),
    (_CLEAN + "rm -rf /\n", "expected 'Label : value'"),
    ("\x00\x01\x02 binary\n", "expected 'Label : value'"),
    ("State : Active\n".encode("utf-16").decode("latin-1"), "expected 'Label : value'"),
    ("Operational Info\n----------------\n", "no 'Label : value' row"),
], ids=["empty", "blank", "ber-word", "temp-word", "lane-float", "two-values", "garbage", "binary", "utf16",
        "no-rows"])
def test_what_is_not_mlxlink_output_is_a_parse_error_constructed(text: str, says: str) -> None:
    with pytest.raises(ParseError, match=says):
        mlxlink.parse(text)


def test_a_decayed_optic_constructed() -> None:
    """CONSTRUCTED (no real optical capture with readings is here): the module rows' shape from the captures,
    with an optic's per-lane readings and a raw BER 10^3 above the clean link's."""
    text = (_CLEAN.replace("Rx Power Current [dBm]             : N/A", "Rx Power Current [dBm]             : "
                                                                        "-1.2,-1.5,-9.8,-1.1")
            .replace("Raw Physical BER                   : 15E-255", "Raw Physical BER                   : 3E-6"))
    r = mlxlink.parse(text)
    assert r.module is not None and r.module.rx_power_dbm == (-1.2, -1.5, -9.8, -1.1)
    assert r.raw_ber == 3e-6
    assert r.line_of["Raw Physical BER"] == text.split("\n").index(
        "Raw Physical BER                   : 3E-6") + 1
