"""NetBox interchange: prod exported as NetBox bulk-import CSVs and imported back is the same cluster."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.api import Checked, load_checked
from clusterforge.catalog import catalog
from clusterforge.cli.main import app
from clusterforge.interchange.netbox import FILES, NetboxImportError, csv_files, export_tables
from clusterforge.interchange.netbox_import import import_tables, read_tables

ROOT = Path(__file__).resolve().parents[3]
PROD = ROOT / "inventories" / "prod"

# The columns of NetBox 4.2's CSV import forms (netbox/dcim/forms/bulk_import.py, Meta.fields), for the
# object types the export writes: every column it writes must be one NetBox reads.
NETBOX_COLUMNS = {
    "manufacturers.csv": ("name", "slug", "description", "tags"),
    "sites.csv": ("name", "slug", "status", "region", "group", "tenant", "facility", "time_zone", "description",
                  "physical_address", "shipping_address", "latitude", "longitude", "comments", "tags"),
    "locations.csv": ("site", "parent", "name", "slug", "status", "tenant", "facility", "description", "tags"),
    "racks.csv": ("site", "location", "name", "facility_id", "tenant", "status", "role", "form_factor", "serial",
                  "asset_tag", "width", "u_height", "desc_units", "outer_width", "outer_depth", "outer_unit",
                  "mounting_depth", "airflow", "weight", "max_weight", "weight_unit", "description", "comments",
                  "tags"),
    "device-roles.csv": ("name", "slug", "color", "vm_role", "config_template", "description", "tags"),
    "device-types.csv": ("manufacturer", "default_platform", "model", "slug", "part_number", "u_height",
                         "exclude_from_utilization", "is_full_depth", "subdevice_role", "airflow", "description",
                         "weight", "weight_unit", "comments", "tags"),
    "devices.csv": ("name", "role", "tenant", "manufacturer", "device_type", "platform", "serial", "asset_tag",
                    "status", "site", "location", "rack", "position", "face", "latitude", "longitude", "parent",
                    "device_bay", "airflow", "virtual_chassis", "vc_position", "vc_priority", "cluster",
                    "description", "config_template", "comments", "tags"),
    "interfaces.csv": ("device", "name", "label", "parent", "bridge", "lag", "type", "speed", "duplex", "enabled",
                       "mark_connected", "wwn", "vdcs", "mtu", "mgmt_only", "description", "poe_mode", "poe_type",
                       "mode", "vrf", "rf_role", "rf_channel", "rf_channel_frequency", "rf_channel_width",
                       "tx_power", "tags"),
    "power-ports.csv": ("device", "name", "label", "type", "mark_connected", "maximum_draw", "allocated_draw",
                        "description", "tags"),
    "inventory-item-roles.csv": ("name", "slug", "color", "description"),
    "inventory-items.csv": ("device", "name", "label", "status", "role", "manufacturer", "parent", "part_id",
                            "serial", "asset_tag", "discovered", "description", "tags", "component_type",
                            "component_name"),
    "rear-ports.csv": ("device", "name", "label", "type", "color", "mark_connected", "positions", "description",
                       "tags"),
    "front-ports.csv": ("device", "name", "label", "type", "color", "mark_connected", "rear_port",
                        "rear_port_position", "description", "tags"),
    "cables.csv": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                   "type", "status", "tenant", "label", "color", "length", "length_unit", "description", "comments",
                   "tags"),
}


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(PROD)


@pytest.fixture(scope="module")
def round_trip(prod: Checked, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Checked]:
    base = tmp_path_factory.mktemp("netbox")
    runner = CliRunner()
    result = runner.invoke(app, ["export", "netbox", str(PROD), "--output", str(base / "csv")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["import", "netbox", str(base / "csv"), "--output", str(base / "env")])
    assert result.exit_code == 0, result.output
    check = runner.invoke(app, ["check", str(base / "env")])
    assert check.exit_code == 0, check.output
    return base, load_checked(base / "env")


def test_columns_are_netbox_import_columns(round_trip: tuple[Path, Checked]) -> None:
    base, _ = round_trip
    files = sorted((base / "csv").iterdir())
    assert [f.name for f in files] == [f"{i:02d}-{name}" for i, name in enumerate(FILES, start=1)]
    for path in files:
        name = path.name[3:]
        header = next(csv.reader(io.StringIO(path.read_text())))
        assert header == list(FILES[name])
        assert set(header) <= set(NETBOX_COLUMNS[name]), sorted(set(header) - set(NETBOX_COLUMNS[name]))


def test_same_devices(prod: Checked, round_trip: tuple[Path, Checked]) -> None:
    _, back = round_trip
    a, b = prod.inv, back.inv
    assert [(n.name, n.rack, n.u, n.role) for n in a.nodes] == [(n.name, n.rack, n.u, n.role) for n in b.nodes]
    assert [s.model_dump() for s in a.switches] == [s.model_dump() for s in b.switches]
    assert [p.model_dump() for p in a.patch_panels] == [p.model_dump() for p in b.patch_panels]
    assert [r.model_dump() for r in a.racks] == [r.model_dump() for r in b.racks]
    assert a.site.model_dump() == b.site.model_dump()
    for name, hw in prod.index.hardware.items():  # the hardware, not the name of the profile it came from
        assert hw.model_dump(exclude={"name"}) == back.index.hardware[name].model_dump(exclude={"name"}), name
    assert any(hw.storage for hw in back.index.hardware.values())


def test_same_ports(prod: Checked, round_trip: tuple[Path, Checked]) -> None:
    _, back = round_trip
    assert prod.index.host_ports == back.index.host_ports
    assert prod.index.switch_ports == back.index.switch_ports


def test_same_cables_and_trunks(prod: Checked, round_trip: tuple[Path, Checked]) -> None:
    _, back = round_trip

    def cables(inv: Any) -> dict[str, Any]:
        return {c.id: c.model_dump(exclude={"generated"}) for c in inv.cables}

    assert cables(prod.inv) == cables(back.inv)
    assert [t.model_dump() for t in prod.inv.trunks] == [t.model_dump() for t in back.inv.trunks]
    assert sum(1 for c in prod.inv.cables if c.trunk) > 500  # the trunked links went through NetBox's ports


def test_a_trunk_is_a_rear_port_cable_and_its_links_are_cords_at_their_lane_group(prod: Checked) -> None:
    tables = export_tables(prod.index)
    link = next(c for c in prod.inv.cables if c.trunk and c.lane_group == 2)
    cords = [r for r in tables["cables.csv"] if r["label"] == link.id]
    assert [(r["side_a_type"], r["side_b_type"]) for r in cords] == [("dcim.interface", "dcim.frontport")] * 2
    assert {str(r["side_b_name"]).rsplit("-", 1)[1] for r in cords} == {"3"}  # position = lane group + 1
    trunk = next(r for r in tables["cables.csv"] if r["label"] == link.trunk)
    assert (trunk["side_a_type"], trunk["side_b_type"]) == ("dcim.rearport", "dcim.rearport")
    fronts = {(r["device"], r["name"]): (r["rear_port"], r["rear_port_position"]) for r in tables["front-ports.csv"]}
    for cord in cords:
        rear, pos = fronts[(cord["side_b_device"], cord["side_b_name"])]
        assert pos == 3
        ends = {(trunk["side_a_device"], trunk["side_a_name"]), (trunk["side_b_device"], trunk["side_b_name"])}
        assert (cord["side_b_device"], rear) in ends


def _texts(prod: Checked) -> dict[str, str]:
    return csv_files(export_tables(prod.index))


def test_a_missing_cord_is_named_with_its_line(prod: Checked) -> None:
    texts = _texts(prod)
    lines = texts["cables.csv"].splitlines(keepends=True)
    link = next(c for c in prod.inv.cables if c.trunk)
    drop = next(i for i, line in enumerate(lines) if f",{link.id},10," in line or f",{link.id},," in line)
    texts["cables.csv"] = "".join(lines[:drop] + lines[drop + 1 :])
    with pytest.raises(NetboxImportError) as err:
        import_tables(read_tables(texts), catalog())
    assert err.value.file == "cables.csv" and err.value.line is not None and err.value.line > 1
    assert f"link {link.id} rides a trunk: expected two patch cords" in str(err.value)


def test_cli_refuses_bad_csv_without_a_traceback(prod: Checked, tmp_path: Path) -> None:
    texts = _texts(prod)
    direct = next(c for c in prod.inv.cables if not c.trunk)
    kind = {"DAC": "dac-passive", "ACC": "dac-active", "AOC": "aoc"}.get(direct.media, "mmf-om4")
    lines = texts["cables.csv"].splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if f",{direct.id}," in line)
    lines[at] = lines[at].replace(f",{kind},", ",cat6,", 1)
    texts["cables.csv"] = "".join(lines)
    src = tmp_path / "csv"
    src.mkdir()
    for name, text in texts.items():
        (src / name).write_text(text)
    result = CliRunner().invoke(app, ["import", "netbox", str(src), "--output", str(tmp_path / "env")])
    assert result.exit_code == 2
    assert "cables.csv:" in result.output and "cable type 'cat6'" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "env").exists()


def test_error_lines_are_where_the_record_starts_in_an_editor(prod: Checked) -> None:
    """Line numbers count the file's lines from 1 (the header is line 1); a record whose quoted cell spans
    lines is named by its first line, and blank lines count."""
    texts = _texts(prod)
    lines = texts["devices.csv"].splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))

    def edited(at: int, **cells: str) -> str:
        row = next(csv.reader([lines[at]]))
        for col, value in cells.items():
            row[header.index(col)] = value
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(row)
        return out.getvalue()

    lines[1] = edited(1, description="two\nlines")  # editor lines 2-3
    lines[3] = edited(3, description="three\nline\nnote", position="top")
    lines.insert(2, "\n")  # editor line 4; lines[2] (gpu02) is line 5, lines[3] lines 6-8
    texts["devices.csv"] = "".join(lines)
    with pytest.raises(NetboxImportError) as err:
        import_tables(read_tables(texts), catalog())
    assert (err.value.file, err.value.line) == ("devices.csv", 6)
    assert "position: 'top' is not a number" in str(err.value)
    texts["devices.csv"] = "".join([*lines[:5], '"unterminated,cell\n', *lines[5:]])  # starts on line 9
    with pytest.raises(NetboxImportError) as err:
        read_tables(texts)
    assert err.value.line == 9 and "not CSV" in str(err.value)


GARBAGE: dict[str, dict[str, bytes]] = {
    "empty-dir": {},
    "empty-files": {"sites.csv": b"", "devices.csv": b""},
    "binary": {"sites.csv": b"\x00\xff\xfe" * 100, "devices.csv": b"\x89PNG\r\n\x1a\n"},
    "header-only": {"sites.csv": b"name,slug\n", "devices.csv": b"name,role,device_type,rack,position\n"},
    "no-columns": {"sites.csv": b"name\nx\n", "devices.csv": b"a,b\n1,2\n"},
    "bad-position": {"sites.csv": b"name\nx\n", "device-types.csv": b"model,u_height\nm,1\n",
                     "devices.csv": b"name,role,device_type,rack,position\nn1,compute,m,r1,top\n"},
    "two-sites": {"sites.csv": b"name\nx\ny\n", "devices.csv": b"name,role,device_type,rack,position\n"},
    "stray-quote": {"sites.csv": b'name\n"x\n', "devices.csv": b"name,role,device_type,rack,position\n"},
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_import_of_garbage_is_refused_cleanly(kind: str, tmp_path: Path) -> None:
    src = tmp_path / "csv"
    src.mkdir()
    for name, data in GARBAGE[kind].items():
        (src / name).write_bytes(data)
    result = CliRunner().invoke(app, ["import", "netbox", str(src), "--output", str(tmp_path / "env")])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    assert result.output.strip() and not (tmp_path / "env").exists()


@pytest.mark.parametrize("env", ["lab", "staging"])
def test_other_environments_round_trip(env: str, tmp_path: Path) -> None:
    source = ROOT / "inventories" / env
    runner = CliRunner()
    assert runner.invoke(app, ["export", "netbox", str(source), "--output", str(tmp_path / "csv")]).exit_code == 0
    back = runner.invoke(app, ["import", "netbox", str(tmp_path / "csv"), "--output", str(tmp_path / "env")])
    assert back.exit_code == 0, back.output
    a, b = load_checked(source), load_checked(tmp_path / "env")
    assert [s.model_dump() for s in a.inv.switches] == [s.model_dump() for s in b.inv.switches]
    assert {n: hw.model_dump() for n, hw in a.index.hardware.items()} == {
        n: hw.model_dump() for n, hw in b.index.hardware.items()}
    assert a.index.host_ports == b.index.host_ports and a.index.switch_ports == b.index.switch_ports
    assert {c.id: c.model_dump(exclude={"generated"}) for c in a.inv.cables} == {
        c.id: c.model_dump(exclude={"generated"}) for c in b.inv.cables}
    assert [t.model_dump() for t in a.inv.trunks] == [t.model_dump() for t in b.inv.trunks]
