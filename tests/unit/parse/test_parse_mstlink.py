"""parse/mstlink: `mstlink -d <dev> -p <port> -c --json` into the raw (pre-FEC) and effective BER.

No real capture exists here. Every input below is CONSTRUCTED from the mstflint source (github.com/Mellanox/
mstflint, mlxlink/): the section and key names are the strings MlxlinkCommander::showBer / prepareBerInfo
pass to setPrintVal, each BER is `<coef>E-<magnitude>` (to_string of the PPCNT fields), `N/A` when the link
is down (NA_FIELD_VALUE), array values are {"values": [...]} (MlxlinkCmdPrint::toJsonFormat), the document
is {"result": {"output": {<section>: {...}}}, "status": {"code", "message"}} (prepareJsonOut) written by
jsoncpp's toStyledString (3-space indent, keys sorted). The numbers are made up."""

from __future__ import annotations

import json

import pytest

from clusterforge.parse import PARSERS, to_jsonable
from clusterforge.parse.errors import ParseError
from clusterforge.parse.mstlink import MstlinkBer, parse

# CONSTRUCTED (see the module docstring): an NDR HCA port, link up, two sections of the ones -c prints
UP = """\
{
   "result" : {
      "output" : {
         "Operational Info" : {
            "FEC" : "Standard LL RS-FEC - RS(271,257)",
            "Physical state" : "LinkUp",
            "Speed" : "IB-NDR",
            "State" : "Active",
            "Width" : "4x"
         },
         "Physical Counters and BER Info" : {
            "Effective Physical BER" : "15E-255",
            "Effective Physical Errors" : "0",
            "Link Down Counter" : "1",
            "Link Error Recovery Counter" : "0",
            "Raw Physical BER" : "3E-9",
            "Raw Physical BER Per Lane" : {
               "values" : [ "2E-9", "4E-9", "3E-9", "3E-9" ]
            },
            "Raw Physical Errors Per Lane" : {
               "values" : [ "1520", "3310", "2475", "2490" ]
            },
            "Symbol BER" : "15E-255",
            "Symbol Errors" : "0",
            "Time Since Last Clear [Min]" : "8210.5"
         }
      }
   },
   "status" : {
      "code" : 0,
      "message" : "success"
   }
}

"""


def test_link_up() -> None:
    ber = parse(UP)
    assert ber == MstlinkBer(raw_ber=3e-9, effective_ber=1.5e-254, status_code=0, status_message="success")
    assert to_jsonable("mstlink", PARSERS["mstlink"](UP)) == {
        "raw_ber": 3e-9, "effective_ber": 1.5e-254, "status_code": 0, "status_message": "success"}
    json.dumps(to_jsonable("mstlink", ber))


def test_link_down_is_no_value() -> None:
    down = UP.replace('"15E-255"', '"N/A"').replace('"3E-9"', '"N/A"')
    assert (parse(down).raw_ber, parse(down).effective_ber) == (None, None)


def test_edr_values_and_errors_kept() -> None:
    # prepareBerInfoEDR: no per-lane BER, errors per lane as one string; status 1 with the section kept
    edr = UP.replace('"Raw Physical BER" : "3E-9"', '"Raw Physical BER" : "12E-13"').replace(
        '"code" : 0', '"code" : 1').replace('"success"', '"Showing FEC info raised an exception\\n"')
    ber = parse(edr)
    assert (ber.raw_ber, ber.status_code, ber.status_message) == (1.2e-12, 1, "Showing FEC info raised an exception\n")


def test_ansi_codes_around_the_document_are_ignored() -> None:
    assert parse("\x1b[0m" + UP + "\x1b[0m \n").raw_ber == 3e-9


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "empty output"),
    ("\x1b[31m \n\x1b[0m \n", 1, "empty output"),  # what a fatal mstlink error leaves on stdout
    ("Physical Counters and BER Info\n------------------------------\n", 1, "not JSON"),
    (UP[:400], 13, "not JSON"),  # cut
    ("[]\n", 1, "a JSON object"),
    ('{\n   "result" : {}\n}\n', 1, '{"result"'),
    (UP.replace('"Raw Physical BER" : "3E-9"', '"Raw Physical BER" : "3.1E-9"'), 16, "Raw Physical BER: '3.1E-9'"),
    (UP.replace('"Effective Physical BER" : "15E-255"', '"Effective Physical BER" : "0"'), 12,
     "Effective Physical BER: '0' is neither"),
    (UP.replace("Physical Counters and BER Info", "Physical Counters"), 3, "no `Physical Counters and BER Info`"),
    ('{\n   "result" : {\n      "output" : "N/A"\n   },\n   "status" : {\n      "code" : 1,\n'
     '      "message" : "Showing BER via PPCNT raised the following exception: x\\n"\n   }\n}\n', 3,
     "(mstlink status 1: Showing BER via PPCNT raised"),
])
def test_refuses(text: str, line: int, says: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse(text)
    assert exc.value.tool == "mstlink" and exc.value.line_no == line and says in str(exc.value), str(exc.value)


def test_section_without_either_ber() -> None:
    text = UP.replace('"Raw Physical BER" :', '"Raw BER" :').replace('"Effective Physical BER" :', '"Eff BER" :')
    with pytest.raises(ParseError, match="without `Raw Physical BER` or `Effective Physical BER`") as exc:
        parse(text)
    assert exc.value.line_no == 11
