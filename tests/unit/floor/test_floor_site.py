"""The floor page's documents and its read-only site (issue #37, floor/doc.py, floor/live.py, floor/serve.py): every
rack, node and switch of the lab in its slot, a node's cables by the ids the work orders use, the live state by host,
switch and cable from Alertmanager's JSON and a validate report, a source that fails kept as last seen, nothing
served outside the page and its documents, and every inventory text kept as data (a cable label `<script>` stays a
JSON string, the page's script never parses markup)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cf_lab_inventory import LAB, lab_index
from clusterforge.floor.doc import floor_doc, node_doc, switch_doc
from clusterforge.floor.live import Reading, live_doc
from clusterforge.floor.serve import FloorSite, serve, static_file, write_site
from clusterforge.model.index import Index

ALERT = {"labels": {"alertname": "GpuTemperatureHigh", "level": "3", "host": "gpu01", "gpu": "0"},
         "annotations": {"summary": "GPU 0 on gpu01 above 87 C", "repair": "check the airflow"},
         "startsAt": "2026-12-07T10:00:00Z", "status": {"state": "active"}}
PORT_ALERT = {"labels": {"alertname": "IbSymbolErrorsFast", "level": "2", "host": "gpu03", "device": "mlx5_0",
                         "port": "1"}, "annotations": {"summary": "symbol errors"}, "startsAt": "2026-12-07T10:01:00Z",
              "status": {"state": "active"}}
"""CONSTRUCTED in Alertmanager's /api/v2/alerts shape (the real stack's answers are tests/unit/monitoring's)."""


def test_every_rack_node_and_switch_in_its_slot() -> None:
    index = lab_index()
    doc = floor_doc(index, "lab")
    slots = {s["name"]: (r["name"], s["u"], s["kind"]) for row in doc["rows"] for r in row["racks"]
             for s in r["slots"]}
    assert {n.name: (n.rack, n.u, "node") for n in index.inv.nodes}.items() <= slots.items()
    assert {s.name: (s.rack, s.u, "switch") for s in index.inv.switches}.items() <= slots.items()
    assert {r["name"] for row in doc["rows"] for r in row["racks"]} == {r.name for r in index.inv.racks}
    fab = doc["fabric"]
    assert sorted(fab["spines"]) == sorted(s.name for s in index.inv.switches if s.role == "spine")
    assert sum(s["uplinks"] for s in fab["switches"].values() if s["role"] == "leaf") == 20  # the lab's 20 uplinks


def test_a_node_document_names_each_cable_as_the_work_orders_do() -> None:
    index = lab_index()
    doc = node_doc(index, "gpu01")
    assert doc is not None
    ports = {(h["name"], p["port"]): p["cable"] for h in doc["hcas"] for p in h["ports"]}
    for (hca, port), cable in ports.items():
        declared = index.cable_at[("gpu01", hca, port)]
        assert cable["id"] == declared.id and cable["label"] == (declared.label or declared.id)
        far = declared.b if declared.a.key == ("gpu01", hca, port) else declared.a
        assert cable["far"] == f"{far.device}/{far.port}" and cable["far_rack"] == index.places[far.device][0]
    sw = switch_doc(index, "leaf-su01-r0")
    assert sw is not None and {p["cable"]["id"] for p in sw["ports"] if p["cable"]} == {
        c.id for c in index.inv.cables if "leaf-su01-r0" in (c.a.device, c.b.device)}
    assert node_doc(index, "nope") is None and switch_doc(index, "gpu01") is None


def _readings(alerts: list[dict[str, Any]] | None, report: dict[str, Any] | None = None,
              am_error: str | None = None) -> dict[str, Reading]:
    out = {"alertmanager": Reading(json.dumps(alerts) if alerts is not None else None,
                                   "2026-12-07T10:02:00Z" if alerts is not None else None, am_error,
                                   "http://127.0.0.1:9093")}
    if report is not None:
        out["validate"] = Reading(json.dumps(report), "2026-12-07T09:00:00Z", None, "out/lab/validate.json")
    return out


def test_live_state_by_host_switch_and_cable() -> None:
    index = lab_index()
    report = {"findings": [{"rule": "FAB-DEGRADED", "severity": "error", "subject": "x", "message": "1x",
                            "host": None, "switch": "leaf-su01-r0", "cable": "C-00020"}]}
    live = live_doc(index, _readings([ALERT, PORT_ALERT], report), "2026-12-07T10:02:05Z")
    assert live["hosts"]["gpu01"]["level"] == 3 and live["hosts"]["gpu01"]["alerts"][0]["alertname"] == \
        "GpuTemperatureHigh"
    assert live["hosts"]["gpu03"]["level"] == 2 and live["cables"][index.cable_at[("gpu03", "mlx5_0", 1)].id]
    assert live["switches"]["leaf-su01-r0"]["findings"][0]["rule"] == "FAB-DEGRADED"
    assert live["cables"]["C-00020"]["findings"] and live["sources"]["validate"]["state"] == "ok"
    assert live["sources"]["alertmanager"] == {"state": "ok", "where": "http://127.0.0.1:9093",
                                               "read_at": "2026-12-07T10:02:00Z", "error": None}


def test_a_failing_source_is_stale_or_missing_never_green() -> None:
    index = lab_index()
    stale = live_doc(index, _readings([ALERT], am_error="connection refused"), "2026-12-07T10:05:00Z")
    assert stale["sources"]["alertmanager"]["state"] == "stale"
    assert stale["hosts"]["gpu01"]["level"] == 3  # what it said last, marked stale: not a green floor
    never = live_doc(index, _readings(None, am_error="connection refused"), "2026-12-07T10:05:00Z")
    assert never["sources"]["alertmanager"]["state"] == "missing" and never["hosts"] == {}
    bad = live_doc(index, {"validate": Reading("{not json", "t", None, "v.json")}, "t")
    assert bad["sources"]["validate"]["state"] == "bad" and "not JSON" in bad["sources"]["validate"]["error"]


@pytest.fixture
def site_url() -> Iterator[tuple[str, FloorSite]]:
    import threading

    calls = {"n": 0}

    def am() -> str:
        calls["n"] += 1
        return json.dumps([ALERT])

    site = FloorSite(lab_index(), "lab", {"alertmanager": ("http://127.0.0.1:9093", am)}, refresh_s=1.0)
    server = serve(site, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", site
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_the_server_serves_the_page_its_documents_and_nothing_else(site_url: tuple[str, FloorSite]) -> None:
    url, _site = site_url
    for path, kind in (("/", "text/html"), ("/floor.js", "text/javascript"), ("/floor.css", "text/css"),
                       ("/floor.json", "application/json"), ("/live.json", "application/json"),
                       ("/nodes/gpu01.json", "application/json"), ("/switches/spine01.json", "application/json")):
        code, headers, _body = _get(url + path)
        assert code == 200 and headers["Content-Type"].startswith(kind), path
        assert headers["X-Content-Type-Options"] == "nosniff" and "default-src 'self'" in \
            headers["Content-Security-Policy"]
    for path in ("/nodes/../../etc/passwd.json", "/nodes/nope.json", "/etc/passwd", "/floor.py", "/static/floor.js",
                 "/switches/gpu01.json", "/nodes/gpu01.json/x"):
        assert _get(url + path)[0] == 404, path
    for method in ("POST", "PUT", "DELETE"):
        assert _get(url + "/live.json", method)[0] == 405
    live = json.loads(_get(url + "/live.json")[2])
    assert live["hosts"]["gpu01"]["level"] == 3


def test_inventory_text_stays_data(tmp_path: Path) -> None:
    """A cable's label is free text: `<script>` in it stays a string of the JSON (with `<` escaped), and the page's
    script builds every element with textContent / setAttribute: no innerHTML, no eval, no markup parsed."""
    index = lab_index()
    data = index.inv.model_dump()
    data["cables"][0]["label"] = "<script>alert(1)</script>"
    data["site"]["location"] = "<img src=x onerror=alert(2)>"
    from clusterforge.model.inventory import Inventory

    hostile = Index(Inventory.model_validate(data))
    site = FloorSite(hostile, "lab", {})
    first = hostile.inv.cables[0]
    device = first.a.device if first.a.hca else first.b.device
    code, _kind, body = site.get(f"/nodes/{device}.json")
    assert code == 200 and b"<script>" not in body and b"\\u003cscript>" in body
    assert json.loads(body)["hcas"]  # still JSON, the label intact once read
    assert b"<img" not in site.floor and json.loads(site.floor)["site"]["location"].startswith("<img")
    script = static_file("floor.js").decode()
    for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert banned not in script, banned
    page = static_file("index.html").decode()
    assert "script-src 'self'" in page and not re.search(r"<script>[^<]", page)  # no inline script


def test_out_writes_the_same_site(tmp_path: Path) -> None:
    site = FloorSite(lab_index(), "lab", {})
    n = write_site(site, tmp_path / "site")
    files = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert n == len(files) and {"index.html", "floor.js", "floor.css", "floor.json", "live.json",
                                "nodes/gpu01.json", "switches/spine01.json"} <= files
    assert (tmp_path / "site" / "floor.json").read_bytes() == site.floor


def test_the_command_refuses_a_network_address_without_its_flag(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    res = CliRunner().invoke(app, ["floor", str(LAB), "--listen", "0.0.0.0:8750"])
    assert res.exit_code == 2 and "no authentication" in res.output
    res = CliRunner().invoke(app, ["floor", str(LAB), "--out", str(tmp_path / "site"), "--url", "http://10.0.0.1:9093"])
    assert res.exit_code == 2 and "neither loopback nor in the lab range" in res.output
    res = CliRunner().invoke(app, ["floor", str(LAB), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0 and (tmp_path / "site" / "index.html").is_file(), res.output
    live = json.loads((tmp_path / "site" / "live.json").read_text())
    assert live["sources"]["alertmanager"]["state"] == "missing"  # no lab up: the banner, not a green floor
    res = CliRunner().invoke(app, ["floor", str(LAB), "--out", str(tmp_path / "again"), "--format", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["files"] == len(list((tmp_path / "again").rglob("*.*")))



def test_a_labs_page_in_the_background_until_lab_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`floor ENV --background` (what `make deploy` runs for a lab): the page served by its own process, its pid in
    the lab's state directory; again, it says where the one running is; `lab down`'s stop ends it, and a pid file
    naming another process never gets that process signalled."""
    import subprocess

    from typer.testing import CliRunner

    from cf_http import free_port
    from clusterforge.cli.floor import PIDFILE, stop_background
    from clusterforge.cli.main import app
    from clusterforge.lab.state import LabState
    from clusterforge.rehearsal import env as labenv

    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "root"))
    state_dir = labenv.paths(LAB).state_dir
    state_dir.mkdir(parents=True)
    lab = LabState(lab="cf-lab", mode="podman", state_dir=state_dir, spec_digest="", network_cidr="", gateway="",
                   ibsim_address="", netfile=tmp_path / "net", hosts={}, complete=True)
    monkeypatch.setattr(labenv, "running", lambda env: lab)
    port = free_port()
    res = CliRunner().invoke(app, ["floor", str(LAB), "--background", "--listen", f"127.0.0.1:{port}"])
    try:
        assert res.exit_code == 0 and f"http://127.0.0.1:{port}/" in res.output, res.output
        assert _get(f"http://127.0.0.1:{port}/floor.json")[0] == 200
        again = CliRunner().invoke(app, ["floor", str(LAB), "--background", "--listen", f"127.0.0.1:{port}"])
        assert again.exit_code == 0 and "already served" in again.output, again.output
    finally:
        assert stop_background(state_dir)
    with pytest.raises(OSError):  # refused, or reset by the server as it went
        urllib.request.urlopen(f"http://127.0.0.1:{port}/floor.json", timeout=2)
    assert not (state_dir / PIDFILE).exists() and not stop_background(state_dir)
    other = subprocess.Popen(["sleep", "30"])
    try:
        (state_dir / PIDFILE).write_text(json.dumps({"pid": other.pid, "url": "x"}))
        assert not stop_background(state_dir) and other.poll() is None  # not ours: left alone
    finally:
        other.kill()
        other.wait()
