"""`lctl get_param osc.*.state mdc.*.state` (clusterforge.parse.lustre_state).

No real capture of this output exists in the repository: every input here is CONSTRUCTED, written from
the format strings of lprocfs_state_seq_show (lustre/obdclass/lprocfs_status.c: "current_state: %s\\n",
"state_history:\\n", " - [ %lld, %s ]\\n"; releases before 2.x: " - [%ld, %s]\\n") and lctl's
`<param>=` line for a value that spans lines. None of it is a sample of a real client.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.parse import PARSERS, ParseError, to_jsonable
from clusterforge.parse.lustre_state import STATES, LustreImport, parse

# CONSTRUCTED (see the module docstring): a client with one MDT and two OSTs, OST0001 evicted twice
CONSTRUCTED = """\
mdc.lustre-MDT0000-mdc-ffff8a1c2e3f4000.state=
current_state: FULL
state_history:
 - [ 1764590400, CONNECTING ]
 - [ 1764590400, FULL ]
osc.lustre-OST0000-osc-ffff8a1c2e3f4000.state=
current_state: IDLE
state_history:
 - [ 1764590401, CONNECTING ]
 - [ 1764590401, FULL ]
 - [ 1764590421, IDLE ]
osc.lustre-OST0001-osc-ffff8a1c2e3f4000.state=
current_state: FULL
state_history:
 - [ 1764590401, CONNECTING ]
 - [ 1764590401, FULL ]
 - [ 1764594000, DISCONN ]
 - [ 1764594000, EVICTED ]
 - [ 1764594001, RECOVER ]
 - [ 1764594001, FULL ]
 - [ 1764597600, EVICTED ]
 - [ 1764597601, CONNECTING ]
 - [ 1764597601, FULL ]
"""
# CONSTRUCTED: the older format (no spaces inside the brackets), an MDS's osc named after its MDT
OLD_FORMAT = """\
osc.work-OST0002-osc-MDT0000.state=
current_state: DISCONN
state_history:
 - [1300000000, CONNECTING]
 - [1300000050, DISCONN]
"""


def test_constructed_client() -> None:
    mdt, ost0, ost1 = parse(CONSTRUCTED)
    assert (mdt.device, mdt.kind, mdt.target, mdt.current_state, mdt.full, mdt.last_evicted) == (
        "lustre-MDT0000-mdc-ffff8a1c2e3f4000", "mdc", "lustre-MDT0000", "FULL", True, None)
    assert (ost0.target, ost0.kind, ost0.current_state, ost0.full) == ("lustre-OST0000", "osc", "IDLE", False)
    assert ost1.history[3] == (1764594000, "EVICTED") and len(ost1.history) == 9
    assert ost1.last_evicted == 1764597600 and ost1.full


def test_old_format_and_server_side_names() -> None:
    (imp,) = parse(OLD_FORMAT)
    assert (imp.device, imp.target, imp.current_state, imp.history) == (
        "work-OST0002-osc-MDT0000", "work-OST0002", "DISCONN", ((1300000000, "CONNECTING"), (1300000050, "DISCONN")))


def test_hyphenated_fsname_and_crlf() -> None:
    (imp,) = parse(OLD_FORMAT.replace("work-", "my-fs-").replace("\n", "\r\n"))
    assert imp.target == "my-fs-OST0002" and imp.device == "my-fs-OST0002-osc-MDT0000"


@pytest.mark.parametrize("text", ["", "\n", "  \n\n"])
def test_nothing_mounted_is_no_imports(text: str) -> None:
    # lctl prints nothing on stdout when no device matches (an error on stderr and a non-zero exit)
    assert parse(text) == ()
    assert to_jsonable("lustre-state", parse(text)) == []


def test_an_empty_history_parses() -> None:
    (imp,) = parse("mdc.fs-MDT0000-mdc-ffff1.state=\ncurrent_state: NEW\nstate_history:\n")
    assert imp.history == () and imp.last_evicted is None


def test_registered_and_json() -> None:
    records = PARSERS["lustre-state"](CONSTRUCTED)
    out = to_jsonable("lustre-state", records)
    assert json.loads(json.dumps(out)) == out
    assert out[2]["history"][3] == {"time": 1764594000, "state": "EVICTED"}
    assert {k for k in out[0]} == {"device", "kind", "target", "current_state", "history"}
    with pytest.raises(TypeError):
        to_jsonable("lustre-state", ("not an import",))


BLOCK = "osc.fs-OST0000-osc-ffff1.state=\ncurrent_state: FULL\nstate_history:\n - [ 10, FULL ]\n"


@pytest.mark.parametrize(("text", "line", "says"), [
    (" - [ 10, FULL ]\n" + BLOCK, 1, "expected an `osc.<device>.state=`"),
    ("current_state: FULL\n", 1, "expected an `osc.<device>.state=`"),
    ("garbage\n", 1, "expected an `osc.<device>.state=`"),
    ("error: get_param: param_path 'osc/*/state': No such file or directory\n", 1, "expected an"),
    ("osc.fs-OST0000-osc-ffff1.state=FULL\n", 1, "expected an"),
    ("osc.fs-OST0000-mdc-ffff1.state=\n", 1, "a osc parameter of a mdc device"),
    ("ost.fs-OST0000-ost-ffff1.state=\n", 1, "expected an"),
    (BLOCK.replace("current_state: FULL", "current_state: CONFUSED"), 2, "unknown import state 'CONFUSED'"),
    (BLOCK.replace("[ 10, FULL ]", "[ 10, full ]"), 4, "unknown import state 'full'"),
    (BLOCK.replace("[ 10, FULL ]", "[ 10, <UNKNOWN> ]"), 4, "unknown import state '<UNKNOWN>'"),
    (BLOCK.replace("[ 10, FULL ]", "[ -10, FULL ]"), 4, "not a line of an import's state"),
    (BLOCK.replace("[ 10, FULL ]", "[ 10 FULL ]"), 4, "not a line of an import's state"),
    (BLOCK.replace("[ 10, FULL ]", "[ 10, FULL"), 4, "not a line of an import's state"),
    (BLOCK.replace("state_history:\n", ""), 3, "a history entry before `state_history:`"),
    ("osc.fs-OST0000-osc-ffff1.state=\ncurrent_state: FULL\n", 1, "without `state_history:`"),
    (BLOCK.replace("current_state: FULL\n", ""), 2, "`state_history:` not right after `current_state:`"),
    ("osc.fs-OST0000-osc-ffff1.state=\n" + BLOCK.replace("osc.fs-OST0000", "osc.fs-OST0001"), 1,
     "without `current_state:`"),
    (BLOCK + " current_state: FULL\n", 5, "a second `current_state:`"),
    (BLOCK + "state_history:\n", 5, "`state_history:` not right after"),
    (BLOCK + BLOCK, 5, "osc.fs-OST0000-osc-ffff1.state again (first on line 1)"),
    (BLOCK + "\n", 5, None),  # a trailing blank line is fine
])
def test_refuses(text: str, line: int, says: str | None) -> None:
    if says is None:
        assert len(parse(text)) == 1
        return
    with pytest.raises(ParseError) as exc:
        parse(text)
    assert exc.value.line_no == line and says in str(exc.value) and exc.value.tool == "lustre-state", exc.value


def test_a_cut_block_names_its_parameter_line() -> None:
    cut = CONSTRUCTED.split("state_history:\n")[0]  # the first block, cut after current_state
    with pytest.raises(ParseError) as exc:
        parse(cut)
    assert exc.value.line_no == 1 and "without `state_history:`" in str(exc.value)


SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,10}", fullmatch=True)


@st.composite
def imports(draw: st.DrawFn) -> list[LustreImport]:
    out: list[LustreImport] = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["osc", "mdc"]))
        target = f"{draw(NAMES)}-{'OST' if kind == 'osc' else 'MDT'}{i:04x}"
        device = f"{target}-{kind}-{draw(st.from_regex(r'[0-9a-f]{1,16}', fullmatch=True))}"
        history = draw(st.lists(st.tuples(st.integers(0, 2**40), st.sampled_from(sorted(STATES))), max_size=16))
        out.append(LustreImport(device, kind, target, draw(st.sampled_from(sorted(STATES))), tuple(history)))
    return out


def _print(records: list[LustreImport], old: bool) -> str:
    """What lctl get_param prints for these imports (the format strings of lprocfs_status.c)."""
    entry = " - [%d, %s]\n" if old else " - [ %d, %s ]\n"
    return "".join(f"{r.kind}.{r.device}.state=\ncurrent_state: {r.current_state}\nstate_history:\n"
                   + "".join(entry % h for h in r.history) for r in records)


@SETTINGS
@given(imports(), st.booleans())
def test_round_trip(records: list[LustreImport], old: bool) -> None:
    assert list(parse(_print(records, old))) == records
    for r in records:
        evicted = [t for t, s in r.history if s == "EVICTED"]
        assert r.last_evicted == (max(evicted) if evicted else None)


@SETTINGS
@given(imports(), st.data())
def test_mutations_raise_parse_error_only(records: list[LustreImport], data: st.DataObject) -> None:
    lines = _print(records, False).split("\n")
    if lines:
        at = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "cut", "flip"]))
        if op == "drop":
            del lines[at]
        elif op == "dup":
            lines.insert(at, lines[at])
        elif op == "cut":
            lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])))]
        elif lines[at]:
            i = data.draw(st.integers(0, len(lines[at]) - 1))
            lines[at] = lines[at][:i] + data.draw(st.sampled_from(list("[]-,: x9\t"))) + lines[at][i + 1:]
    text = "\n".join(lines)
    try:
        records_out = parse(text)
    except ParseError as err:
        assert err.tool == "lustre-state" and 1 <= err.line_no <= len(lines) + 1
        return
    assert json.loads(json.dumps(to_jsonable("lustre-state", records_out))) is not None


@SETTINGS
@given(st.text(max_size=400))
def test_random_text_raises_parse_error_only(text: str) -> None:
    try:
        parse(text)
    except ParseError as err:
        assert err.tool == "lustre-state" and err.line_no >= 1
