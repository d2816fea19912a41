"""mlxfwmanager --query and flint q: the firmware each card runs, its PSID and slot (real captures only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.parse import ParseError, flint_q, mlxfwmanager

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _text(tool: str, name: str) -> str:
    (path,) = (FIXTURES / tool).glob(f"{name}-*.txt")
    return path.read_text(encoding="utf-8")


def test_two_cards_needing_an_update() -> None:
    devs = mlxfwmanager.parse(_text("mlxfwmanager", "aws-ec2-mlxup-4.30-2xcx7-mcx755106as-ndr200"))
    assert [(d.device_type, d.psid, d.fw, d.fw_available, d.status) for d in devs] == [
        ("ConnectX7", "MT_0000000834", "28.40.1000", "28.43.1014", "Update required")] * 2
    assert devs[0].pci == "/dev/mst/mt4129_pciconf1" and devs[0].base_guid is None  # Ethernet mode: no GUID


def test_a_burned_image_waiting_for_a_reset_runs_the_old_one() -> None:
    (d,) = mlxfwmanager.parse(_text("mlxfwmanager", "csegpu"))
    assert (d.fw, d.fw_running, d.reset_pending, d.status) == ("28.47.1026", "28.46.3048", True, "Up to date")
    assert d.base_guid == "0x9c63c00300abed5a" and d.pci == "0000:8e:00.0"


def test_no_matching_image_is_unknown_not_a_fault() -> None:
    (d,) = mlxfwmanager.parse(_text("mlxfwmanager", "homelab"))
    assert d.fw_available is None and d.status == "No matching image found" and not d.reset_pending


def test_older_layout_and_extra_image_rows() -> None:
    (cx3,) = mlxfwmanager.parse(_text("mlxfwmanager", "notes-mlxup-cx3"))
    assert cx3.fw == "2.40.7000" and "PXE" in cx3.versions and cx3.base_guid is None
    (bf,) = mlxfwmanager.parse(_text("mlxfwmanager", "bluefield1"))
    assert bf.versions["NVMe"] == ("20.1.0003", "20.1.0003")


@pytest.mark.parametrize("text", ["garbage\n", "Device #1:\n----------\n  PSID: MT_1\n",
                                  "Device #1:\n  Device Type: ConnectX7\n  Versions: Current Available\n  PXE  1  2\n"])
def test_mlxfwmanager_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        mlxfwmanager.parse(text)


@pytest.mark.parametrize(("name", "fw", "psid", "guid", "count"), [
    ("schmaustech-flint-cx7", "28.42.1000", "MT_0000001244", "0xe09d730300126474", 16),  # a fence line after it
    ("netdev-mstflint-ibm-oem", "14.26.0226", "IBM0000000034", "0x0894ef030080a89f", 8),
    ("mlxsw-doc-mstflint-spectrum", "13.2010.3146", "MT_2860113033", "0x900a8403004c03c0", 128),
])
def test_flint_query(name: str, fw: str, psid: str, guid: str, count: int) -> None:
    q = flint_q.parse(_text("flint-query", name))
    assert (q.fw_version, q.psid, q.base_guid, q.guids) == (fw, psid, guid, count)


def test_flint_q_full_keeps_the_vendor_description_not_the_uid_header() -> None:
    q = flint_q.parse(_text("flint-query", "tester03"))
    assert q.description == "HPE Ethernet 10/25Gb 2-port 640SFP28 Adapter" and q.part_number == "817753-B21_Ax"
    assert q.roms == ("type=UEFI version=14.25.17 cpu=AMD64", "type=PXE version=3.6.502 cpu=AMD64")


def test_flint_a_burn_not_yet_activated_shows_what_runs() -> None:
    q = flint_q.parse(_text("flint-query", "mlxsw-doc-mstflint-spectrum"))
    assert (q.fw_running, q.activation_pending) == ("13.2010.3146", False)
    # CONSTRUCTED, not a capture: the real Spectrum query with the row mstflint's QuerySubCommand prints under
    # `FW Version` when the running version differs ("FW Version(Running):   %s", flint/subcommands.cpp)
    lines = _text("flint-query", "mlxsw-doc-mstflint-spectrum").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FW Version:"))
    lines.insert(at + 1, "FW Version(Running):   13.2010.1006")
    q = flint_q.parse("\n".join(lines) + "\n")
    assert (q.fw_version, q.fw_running, q.activation_pending) == ("13.2010.3146", "13.2010.1006", True)


@pytest.mark.parametrize("text", ["hello\n", "PSID: MT_1\n", "FW Version 1.2.3\n"])
def test_flint_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        flint_q.parse(text)


def test_a_burn_log_after_the_query_reads_the_versions_before_and_after() -> None:
    """mlxup -u: the query (what the flash held), then each device's log ending in Done (real capture)."""
    devs = mlxfwmanager.parse(_text("mlxfwmanager", "openshift-pod-mlxup-2xcx7"))
    assert [(d.index, d.fw, d.burn, d.fw_flashed, d.fw_running) for d in devs] == [
        (1, "28.42.1000", "done", "28.43.1014", "28.42.1000"), (2, "28.42.1000", "done", "28.43.1014", "28.42.1000")]
    (d,) = mlxfwmanager.parse(_text("mlxfwmanager", "csegpu1-mlxup-d"))
    assert (d.fw, d.fw_available, d.burn, d.fw_flashed) == ("28.46.3048", "28.47.1026", "done", "28.47.1026")


def test_a_banner_before_the_query_and_a_warning_in_the_burn() -> None:
    (d,) = mlxfwmanager.parse(_text("mlxfwmanager", "mlnx-en-5.6-installer"))  # Initializing..., -W- DMA burning
    assert (d.device_type, d.fw, d.burn, d.fw_flashed) == ("ConnectX6DX", "22.31.1014", "done", "22.33.1048")


def test_release_notes_and_a_declined_update_burn_nothing() -> None:
    (d,) = mlxfwmanager.parse(_text("mlxfwmanager", "empovit-mlxup-online"))
    assert (d.fw, d.fw_available, d.burn, d.fw_flashed) == ("26.33.1048", "26.43.1014", None, "26.33.1048")


def test_terminal_redraws_do_not_undo_a_done_device() -> None:
    devs = mlxfwmanager.parse(_text("mlxfwmanager", "aws-ec2-mlxup-4.30-2xcx7-mcx755106as-burn-log"))
    assert [d.burn for d in devs] == ["done", "done"]


def test_an_author_edited_log_is_refused_at_the_edit() -> None:
    """The Windows capture's author replaced progress lines with '(省略)' ("omitted"): no tool prints that."""
    with pytest.raises(ParseError) as exc:
        mlxfwmanager.parse(_text("mlxfwmanager", "windows-mlxup-online"))
    assert exc.value.line_no == 90 and "update log" in str(exc.value)


_QUERY = _text("mlxfwmanager", "openshift-pod-mlxup-2xcx7").split("\n---------\nFound")[0] + "\n"  # the query alone


@pytest.mark.parametrize(("log", "burns"), [
    ("Device #1: Updating FW ...\nFSMST_INITIALIZE -   OK\n-E- Failed to burn: bad image\n", ["failed", None]),
    ("Device #1: Updating FW ...\nWriting Boot image component -   FAILED\n", ["failed", None]),
    ("Device #1: Updating FW ...\nWriting Boot image component -  42%\n", ["started", None]),  # cut short
    ("Device #2: Updating FW ...\nDone\nDevice #1: Updating FW ...\nDone\n", ["done", "done"]),
], ids=["error-line", "step-failed", "cut-short", "out-of-order"])
def test_what_each_device_s_log_says_constructed(log: str, burns: list[str | None]) -> None:
    """CONSTRUCTED from the real capture's query and its log's line shapes: outcomes the captures lack."""
    devs = mlxfwmanager.parse(_QUERY + "---------\nFound 2 device(s) requiring firmware update...\n\n" + log)
    assert [d.burn for d in devs] == burns
    assert [d.fw_flashed for d in devs] == [d.fw_available if b == "done" else d.fw
                                            for d, b in zip(devs, burns, strict=True)]


@pytest.mark.parametrize(("tail", "says"), [
    ("Done\n", "'Done' before any"),
    ("Device #7: Updating FW ...\nDone\n", "device #7, which the query has not"),
    ("Device #1: Updating FW ...\nrm -rf /\n", "update log"),
], ids=["done-first", "unknown-device", "garbage"])
def test_a_burn_log_that_is_not_one_is_refused_constructed(tail: str, says: str) -> None:
    with pytest.raises(ParseError, match=says):
        mlxfwmanager.parse(_QUERY + "---------\nFound 1 device(s) requiring firmware update...\n" + tail)


# CONSTRUCTED FROM SOURCE, not a capture: the XML query of the csegpu card (its text capture's values) in the
# layout mstflint's generateQueryXML prints (tests/fixtures/mlxfwmanager-xml-NOTES.md); no real XML capture is here
PENDING_XML = """<Devices>
    <Device pciName="0000:8e:00.0" type="ConnectX7" psid="MT_0000000838" partNumber="MCX75310AAS-NEA_Ax">
      <Versions>
        <FW current="28.47.1026" available="28.47.1026"/>
        <FW_Running current="28.46.3048" available="N/A"/>
        <PXE current="3.8.0100" available="N/A"/>
        <UEFI current="14.39.0014" available="N/A"/>
      </Versions>
      <MACs Base_Mac="9c63c0abed5a" />
      <GUIDs Base_Guid="9c63c00300abed5a" />
      <Status>Up to date</Status>
      <Description>NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP</Description>
    </Device>
</Devices>
"""


def test_the_xml_query_reads_as_the_text_query_constructed() -> None:
    (x,) = mlxfwmanager.parse_xml(PENDING_XML)
    (t,) = mlxfwmanager.parse(_text("mlxfwmanager", "csegpu"))
    for field in ("device_type", "psid", "pci", "base_guid", "fw", "fw_running", "fw_available", "reset_pending",
                  "status", "part_number"):
        assert getattr(x, field) == getattr(t, field), field
    assert x.versions == t.versions  # FW_Running is the text's FW (Running), kept out of versions as there
    from clusterforge.parse import PARSERS, to_jsonable

    assert to_jsonable("mlxfwmanager-xml", PARSERS["mlxfwmanager-xml"](PENDING_XML))[0]["fw_running"] == "28.46.3048"


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty input"),
    ("<Devices>\n\n</Devices>\n", None),  # zero devices: no record, not an error
    ('<?xml version="1.0" encoding="UTF-8"?>\n<SVMInventory lang="en">\n  <SPStatus result="false">\n'
     '    <Message id="20">No devices found or specified</Message>\n  </SPStatus>\n</SVMInventory>\n',
     "reports an error: No devices found or specified"),
    ('<Devices>\n    <Device pciName="/dev/mst/mt4129_pciconf0" type="N/A" psid="" partNumber="--">\n      <Versions>\n'
     '        <FW current="--" available=""/>\n      </Versions>\n      <Status>Failed to open device</Status>\n'
     '      <Description></Description>\n    </Device>\n</Devices>\n', "could not open it"),
    ('<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n<Devices>&lol2;</Devices>',
     "a DTD or entity declaration"),
    ("<Devices>\n<Device pciName='x' type='ConnectX7'>", "not XML"),
    ("<Devices></Devices>\nrm -rf /\n", "not XML"),
    ("<Other/>", "expected <Devices>"),
    ("<Devices>" + "<a>" * 50_000 + "</a>" * 50_000 + "</Devices>", "expected <Device>"),
    (PENDING_XML.replace('Base_Guid="9c63c00300abed5a"', 'Base_Guid="zz"'), "not a GUID"),
], ids=["empty", "zero-devices", "svm-error", "failed-device", "billion-laughs", "cut", "junk-after", "root",
        "deep", "bad-guid"])
def test_xml_that_is_not_a_query_is_refused_constructed(text: str, says: str | None) -> None:
    if says is None:
        assert mlxfwmanager.parse_xml(text) == ()
        return
    with pytest.raises(ParseError, match=says):
        mlxfwmanager.parse_xml(text)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=len(PENDING_XML)), st.integers(min_value=0, max_value=len(PENDING_XML)),
       st.text(alphabet='<>/="&;! \n\x00aéN-', max_size=12))
def test_a_mangled_xml_query_gives_records_or_a_parse_error(cut: int, at: int, junk: str) -> None:
    """Fuzz: the constructed XML cut, and with text spliced in anywhere: records or ParseError, never else."""
    for text in (PENDING_XML[:cut], PENDING_XML[:at] + junk + PENDING_XML[at:]):
        try:
            devs = mlxfwmanager.parse_xml(text)
        except ParseError as err:
            assert err.tool == "mlxfwmanager-xml" and err.line_no >= 1
        else:
            assert all(d.fw for d in devs)
