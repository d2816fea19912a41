"""The unicast forwarding tables as the real tools print them (issue #36): ibroute per switch, dump_fts and
OpenSM's opensm-lfts.dump, captured from the lab's fabric under ibsim routed by the real OpenSM
(tests/fixtures/ibroute/lab-<engine>/, each with its .source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.parse import ParseError, ibroute, to_jsonable

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "ibroute"
ENGINES = ("minhop", "ftree", "updn")
FORMS = ("ibroute.txt", "dump_fts.txt", "opensm-lfts.dump")


def _tables(engine: str, form: str) -> dict[str, dict[int, int]]:
    return {t.guid: {r.lid: r.port for r in t.routes}
            for t in ibroute.parse((FIX / f"lab-{engine}" / form).read_text(encoding="utf-8"))}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_three_forms_print_the_same_tables(engine: str) -> None:
    """ibroute, dump_fts and OpenSM's dump of one routed fabric agree, table for table, LID for LID."""
    tables = [_tables(engine, form) for form in FORMS]
    assert tables[0] == tables[1] == tables[2]
    assert len(tables[0]) == 7  # the lab's 7 switches


def test_an_ibroute_block_read_whole() -> None:
    text = (FIX / "lab-minhop" / "ibroute.txt").read_text(encoding="utf-8")
    first = ibroute.parse(text)[0]
    assert (first.guid, first.name, first.lid, len(first.routes)) == ("0x02cf5307273a6ebe", "leaf-su02-r1", 21, 26)
    sm = first.routes[0]
    assert (sm.lid, sm.port, sm.kind, sm.guid, sm.name) == (1, 21, "Channel Adapter", "0x02cf4815a0299951",
                                                            "sm01 mlx5_0")
    assert first.port_of(21) == 0 and first.port_of(999) is None  # itself; a LID it does not route


def test_ftree_routes_no_spine_to_the_other_spine() -> None:
    spines = {t.name: t for t in ibroute.parse((FIX / "lab-ftree" / "ibroute.txt").read_text(encoding="utf-8"))
              if t.name.startswith("spine")}
    assert {n: len(t.routes) for n, t in spines.items()} == {"spine01": 25, "spine02": 25}
    assert spines["spine01"].port_of(spines["spine02"].lid or 0) is None


def test_dump_fts_blocks_have_no_lid() -> None:
    tables = ibroute.parse((FIX / "lab-ftree" / "dump_fts.txt").read_text(encoding="utf-8"))
    assert {t.lid for t in tables} == {None}


def test_to_jsonable() -> None:
    tables = ibroute.parse((FIX / "lab-updn" / "opensm-lfts.dump").read_text(encoding="utf-8"))
    data = to_jsonable("ibroute", tables)
    assert data[0]["routes"][0] == {"lid": 1, "port": tables[0].routes[0].port, "kind": "Channel Adapter",
                                    "guid": "0x02cf4815a0299951", "name": "sm01 mlx5_0"}


def _cut(text: str, keep: int) -> str:
    return "\n".join(text.split("\n")[:keep]) + "\n"


@pytest.mark.parametrize("form", FORMS)
def test_a_table_cut_short_is_an_error_naming_the_line(form: str) -> None:
    text = (FIX / "lab-minhop" / form).read_text(encoding="utf-8")
    lines = text.split("\n")
    with pytest.raises(ParseError, match="cut short"):  # the last block without its footer
        ibroute.parse(_cut(text, len([x for x in lines if x]) - 1))
    # a route line lost from the middle of a block: its footer no longer agrees
    entry = next(i for i, x in enumerate(lines) if x.startswith("0x0005"))
    gone = "\n".join(lines[:entry] + lines[entry + 1:])
    if form == "opensm-lfts.dump":  # OpenSM's footer counts the range: a lost line is not seen by the count
        assert len(ibroute.parse(gone)[0].routes) == len(ibroute.parse(text)[0].routes) - 1
    else:
        with pytest.raises(ParseError) as err:
            ibroute.parse(gone)
        assert "the footer counts" in str(err.value) and err.value.line_no > entry


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "empty input"),
    ("garbage\n", 1, "not a table header"),
    ("Unicast lids [0-2] of switch Lid 2 guid 0x1 ('a'):\n0x0001 001 # Channel Adapter portguid 0x2: 'h'\n"
     "0x0001 002 # Channel Adapter portguid 0x2: 'h'\n2 lids dumped\n", 3, "LID 1 twice"),
    ("Unicast lids [0-2] of switch Lid 2 guid 0x1 ('a'):\n0x0001 001 # something else\n2 lids dumped\n", 2,
     "without its destination"),
    ("Unicast lids [0-2] of switch Lid 2 guid 0x1 ('a'):\n0x0009 001 # Switch portguid 0x2: 'b'\n2 lids dumped\n", 3,
     "above the header's range"),
    ("Unicast lids [0-2] of switch Lid 2 guid 0x1 ('a'):\nUnicast lids [0-2] of switch Lid 3 guid 0x3 ('b'):\n", 2,
     "a new table before the footer"),
])
@pytest.mark.parametrize("reader", ["parse", "read"])
def test_garbage_raises_with_the_line(text: str, line: int, says: str, reader: str) -> None:
    """CONSTRUCTED inputs (each a real line shape, broken one way): the record form and the compact stream say
    the same."""
    with pytest.raises(ParseError) as err:
        ibroute.parse(text) if reader == "parse" else ibroute.read(iter(text.split("\n")))
    assert err.value.line_no == line and says in str(err.value), str(err.value)


def test_a_lid_the_scan_no_longer_finds_is_an_unknown_route() -> None:
    """tests/fixtures/ibroute/lab-port-down: real dump_fts after gpu03 mlx5_0's switch port was disabled; every
    switch still routes its old LID 0x000e, which dump_fts cannot name any more."""
    tables = ibroute.parse((FIX / "lab-port-down" / "dump_fts.txt").read_text(encoding="utf-8"))
    assert len(tables) == 7
    stale = [(t.name, r) for t in tables for r in t.routes if r.lid == 0x0E]
    assert len(stale) == 7 and all((r.kind, r.guid, r.name) == ("unknown", "", "") for _, r in stale)
    assert dict((n, r.port) for n, r in stale)["leaf-su01-r0"] == 3  # still out of the disabled port
    assert all(r.kind in ("Channel Adapter", "Switch") for t in tables for r in t.routes if r.lid != 0x0E)


@pytest.mark.parametrize(("info", "kind"), [("unknown node and type", "unknown"), ("illegal port", "illegal")])
def test_the_other_unnamed_destinations(info: str, kind: str) -> None:
    """CONSTRUCTED: one route of the real capture in ibroute's words for an unknown node, and for an out port
    the switch does not have (the strings infiniband-diags 44's ibroute prints)."""
    text = (FIX / "lab-minhop" / "ibroute.txt").read_text(encoding="utf-8")
    first = text.split("\n")[3]
    edited = text.replace(first, first.split(" : ")[0] + f" : ({info})", 1)
    (r, *_), *_ = [t.routes for t in ibroute.parse(edited)]
    assert (r.kind, r.guid, r.name) == (kind, "", "")


def test_an_lmc_path_is_refused_by_name() -> None:
    """CONSTRUCTED: the form ibroute prints for LMC > 0 (`(path #1 out of 2: portguid ...)`) is not read."""
    text = (FIX / "lab-minhop" / "ibroute.txt").read_text(encoding="utf-8")
    first = text.split("\n")[3]
    edited = text.replace(first, first.split(" : ")[0] + " : (path #1 out of 2: portguid 0x0002c90300000001)", 1)
    with pytest.raises(ParseError) as exc:
        ibroute.parse(edited)
    assert exc.value.line_no == 4 and "LMC" in exc.value.message


@pytest.mark.parametrize("engine", [*ENGINES, "port-down", "uplink-down"])
def test_the_compact_stream_reads_what_the_records_say(engine: str) -> None:
    """`read` (a line at a time, a byte a LID: what a 2,048-node fabric's 2 GB fits in) holds every table's every
    route as `parse` does, in each form captured; every destination named once, where first listed."""
    from clusterforge.validate.routes import LidTable

    for form in FORMS:
        path = FIX / f"lab-{engine}" / form
        if not path.exists():
            continue
        records = ibroute.parse(path.read_text(encoding="utf-8"))
        with path.open(encoding="utf-8") as fh:
            tables = ibroute.read(line.rstrip("\n") for line in fh)
        assert [(t.guid, t.name, t.lid) for t in tables.switches] == [(t.guid, t.name, t.lid) for t in records]
        for rec, lft in zip(records, tables.switches, strict=True):
            assert dict(LidTable(lft.ports)) == {r.lid: r.port for r in rec.routes} and lft.count == len(rec.routes)
            for r in rec.routes:
                assert lft.other.get(r.lid, tables.dests[r.lid]) == ibroute.Dest(r.kind, r.guid, r.name)
        assert tables == ibroute.compact(records)


def test_a_table_lists_a_lid_at_most_0xbfff_and_a_port_below_255() -> None:
    """CONSTRUCTED: a header past the unicast LIDs, and an out port that is the compact form's "no route"."""
    with pytest.raises(ParseError, match="at most 0xbfff"):
        ibroute.read(["Unicast lids [0x0-0x10000] of switch Lid 2 guid 0x1 ('a'):"])
    with pytest.raises(ParseError, match="out port 255"):
        ibroute.read(["Unicast lids [0-2] of switch Lid 2 guid 0x1 ('a'):",
                      "0x0001 255 # Channel Adapter portguid 0x2: 'h'", "2 lids dumped"])


def test_names_beyond_what_a_subnet_has_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """CONSTRUCTED: every line another destination's name; the reader keeps no unbounded set of them."""
    monkeypatch.setattr(ibroute, "MAX_DESTS", 3)
    lines = ["Unicast lids [0-9] of switch Lid 2 guid 0x1 ('a'):",
             *(f"0x000{i} 001 # Channel Adapter portguid 0x{i + 2}: 'h{i}'" for i in range(1, 6)), "5 lids dumped"]
    with pytest.raises(ParseError) as err:
        ibroute.read(lines)
    assert err.value.line_no == 5 and "more than 3 distinct destinations" in err.value.message
