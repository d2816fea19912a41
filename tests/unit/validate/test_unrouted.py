"""An uplink no route uses is a validate finding by its cable id (issue #36 item 5, validate/unrouted.py): the lab's
real forwarding tables (tests/fixtures/ibroute/: OpenSM over ibsim, minhop/ftree/updn, `dump_fts`) route over
every uplink, so none is named; the same tables with every route out of one uplink's two ends moved to a sibling
port or dropped (CONSTRUCTED: what the SM programs when it routes around a link) name that cable, unless another
finding already names it; through `validate --from DIR`, fabric/dump_fts.txt beside ibnetdiscover.txt."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB, lab_index
from cf_routes import ENGINES, FIX, around, dump, tables
from clusterforge.cli.main import app
from clusterforge.collect.plan import fabric_commands
from clusterforge.parse import ibroute
from clusterforge.render import FabricView
from clusterforge.sim.ibnetdiscover import from_index, render
from clusterforge.validate.routes import idle_uplinks, resolve, uplinks
from clusterforge.validate.unrouted import unrouted


@pytest.mark.parametrize("engine", ENGINES)
def test_the_real_tables_route_over_every_uplink(engine: str) -> None:
    assert unrouted(lab_index(), tables(engine), set()) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_an_uplink_routed_around_is_named_by_its_cable(engine: str) -> None:
    index = lab_index()
    for cid in uplinks(index):
        found = unrouted(index, around(index, tables(engine), cid), set())
        assert [(f.rule, f.cable, f.severity) for f in found] == [("FAB-UNROUTED", cid, "error")], cid
        (f,) = found
        assert f.switch in (index.cables[cid].a.device, index.cables[cid].b.device) and f.host is None
        assert unrouted(index, around(index, tables(engine), cid), {cid}) == []  # named already: left to it


def test_a_switch_without_a_table_is_not_judged() -> None:
    index = lab_index()
    cid = uplinks(index)[0]
    cable = index.cables[cid]
    kept = tuple(t for t in around(index, tables("minhop"), cid) if t.name not in (cable.a.device,
                                                                                     cable.b.device))
    assert unrouted(index, kept, set()) == []


def _saved(tmp: Path, routes: str | None) -> Path:
    index = lab_index()
    d = tmp / "saved" / "fabric"
    d.mkdir(parents=True)
    (d / "ibnetdiscover.txt").write_text(render(index, from_index(index)))
    if routes is not None:
        (d / "dump_fts.txt").write_text(routes)
    return tmp / "saved"


def _validate(saved: Path) -> tuple[int, list[dict[str, str]]]:
    res = CliRunner().invoke(app, ["validate", str(LAB), "--from", str(saved), "--fabric-only", "--format", "json"])
    return res.exit_code, json.loads(res.stdout)["findings"]


def test_validate_reads_the_savedtables(tmp_path: Path) -> None:
    index = lab_index()
    assert "dump_fts" in fabric_commands(index, "sm01")  # collect saves them from the SM node
    clean = (FIX / "lab-minhop" / "dump_fts.txt").read_text(encoding="utf-8")
    assert _validate(_saved(tmp_path / "clean", clean)) == (0, [])
    assert _validate(_saved(tmp_path / "none", None)) == (0, [])  # optional: not collected, not judged
    cid = uplinks(index)[3]
    text = "".join(dump(t) for t in around(index, tables("minhop"), cid))
    code, found = _validate(_saved(tmp_path / "around", text))
    assert code == 4 and [(f["rule"], f["cable"]) for f in found] == [("FAB-UNROUTED", cid)], found
    code, found = _validate(_saved(tmp_path / "garbage", clean.replace("Unicast lids", "Unicorn lids", 1)))
    assert code != 0 and [f["rule"] for f in found] == ["PARSE"] and "dump_fts" in found[0]["message"], found
    # read as a stream (not capped at 64 MB: 2.1 GB at 2,048 nodes), and still never a FIFO: a PARSE finding
    fifo = _saved(tmp_path / "fifo", None)
    os.mkfifo(fifo / "fabric" / "dump_fts.txt")
    code, found = _validate(fifo)
    assert code != 0 and [f["rule"] for f in found] == ["PARSE"] and "not a regular file" in found[0]["message"]


def test_saved_tables_are_left_on_disk_and_read_as_they_are_used(tmp_path: Path) -> None:
    from clusterforge.collect.store import load_dir

    clean = (FIX / "lab-minhop" / "dump_fts.txt").read_text(encoding="utf-8")
    saved = _saved(tmp_path, clean)
    obs = load_dir(saved)
    assert "dump_fts" not in obs.fabric and obs.streams["dump_fts"] == (saved / "fabric" / "dump_fts.txt").resolve()
    assert "ibnetdiscover" in obs.fabric


def test_the_real_tables_after_a_port_went_down(tmp_path: Path) -> None:
    """tests/fixtures/ibroute/lab-port-down: the real dump_fts and ibnetdiscover once gpu03 mlx5_0's switch port
    was disabled: the switches still route its old LID (dump_fts cannot name it), the link is missing, and that
    is the one finding: no PARSE, no FAB-UNROUTED."""
    saved = tmp_path / "saved" / "fabric"
    saved.mkdir(parents=True)
    for name in ("dump_fts.txt", "ibnetdiscover.txt"):
        shutil.copy(FIX / "lab-port-down" / name, saved / name)
    code, found = _validate(tmp_path / "saved")
    assert code == 4 and [(f["rule"], f["cable"]) for f in found] == [("FAB-MISSING", "C-00005")], found


def test_the_real_tables_after_an_uplink_went_down() -> None:
    """tests/fixtures/ibroute/lab-uplink-down: the real tables once C-00020 (leaf-su01-r0/21 - spine01/1) left the
    fabric: OpenSM routes around it (the leaf's other up-ports, spine01's second link to that leaf), so it is the
    one idle uplink, and FAB-UNROUTED by itself; validate names it FAB-PORT-DOWN from iblinkinfo, and says no
    more (a cable another finding names is left to it)."""
    index = lab_index()
    real = ibroute.parse((FIX / "lab-uplink-down" / "dump_fts.txt").read_text(encoding="utf-8"))
    assert idle_uplinks(index, resolve(index, FabricView(index).guids, real)) == ["C-00020"]
    assert [(f.rule, f.cable) for f in unrouted(index, real, set())] == [("FAB-UNROUTED", "C-00020")]
    assert unrouted(index, real, {"C-00020"}) == []


def test_the_rail_planes_lab_leaves_healthy_uplinks_unused_and_they_are_not_findings() -> None:
    """CONSTRUCTED from the capture: a leaf that reaches fewer destinations than it has uplinks (the rail-planes
    lab's leaves of few hosts) leaves some uplinks without a route, healthily: not judged."""
    index = lab_index()
    cid = uplinks(index)[0]
    cable = index.cables[cid]
    leaf = cable.a.device if index.switches[cable.a.device].role == "leaf" else cable.b.device
    keep = 2  # the leaf routes two destinations up: fewer than its four up-ports
    out = []
    for t in around(index, tables("minhop"), cid):
        if t.name == leaf:
            ups = {c.a.port if c.a.device == leaf else c.b.port for c in index.inv.cables
                   if c.a.hca is None and c.b.hca is None and leaf in (c.a.device, c.b.device)}
            upward = [r for r in t.routes if r.port in ups]
            t = dataclasses.replace(t, routes=tuple(r for r in t.routes if r.port not in ups or r in upward[:keep]))
        out.append(t)
    assert unrouted(index, tuple(out), set()) == []
