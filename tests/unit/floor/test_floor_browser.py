"""The floor page in a real browser (issue #37 item 4): Debian's Chromium, headless, driven through selenium and
Debian's chromedriver, against `clusterforge floor`'s own server on loopback, reading the real Alertmanager (the lab's
rendered configuration, tests/cf_alertmanager.py) into which alerts are posted as vmalert posts them:

- the lab's page: every rack, and every node and switch in its rack at its unit;
- a level 3 alert on gpu01 turns gpu01 and its rack to the level 3 colour within the page's refresh;
- clicking gpu01 shows its cables by the ids the work orders use, with their far ends;
- an Alertmanager that stops answering is a banner with when it was last seen, the alert still shown (not green);
- a cable label `<img src=x onerror=...>` is shown as those characters and runs nothing.

Needs chromium and chromium-driver (scripts/lab-deps.sh installs them; the lab mark: the lab's packages)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cf_alertmanager import ALERTMANAGER, post_alerts, run_alertmanager
from cf_browser import FILL, LEVEL3, chromium, until
from cf_http import free_port
from cf_lab_inventory import lab_index
from clusterforge.cli.alerts import fetch
from clusterforge.floor.serve import FloorSite, serve
from clusterforge.model.index import Index
from clusterforge.model.inventory import Inventory

pytestmark = pytest.mark.lab
HOSTILE = "<img src=x onerror=\"window.__pwned=1\">"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


def _hostile_lab() -> Index:
    """The lab with gpu01's first cable labelled as markup (a label is free text): CONSTRUCTED."""
    index = lab_index()
    data = index.inv.model_dump()
    first = next(i for i, c in enumerate(index.inv.cables) if "gpu01" in (c.a.device, c.b.device))
    data["cables"][first]["label"] = HOSTILE
    return Index(Inventory.model_validate(data))


@pytest.fixture
def floor(tmp_path: Path) -> Iterator[tuple[str, str, Index]]:
    if ALERTMANAGER is None:
        pytest.fail("prometheus-alertmanager missing: run scripts/lab-deps.sh (CI does)")
    for am in run_alertmanager(tmp_path, "127.0.0.1", free_port()):
        index = _hostile_lab()
        site = FloorSite(index, "lab", {"alertmanager": (am, _reader(am))}, refresh_s=1.0)
        server = serve(site, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/", am, index
        finally:
            server.shutdown()
            server.server_close()


def _reader(am: str, stopped: dict[str, bool] | None = None) -> Callable[[], str]:
    """Alertmanager's alerts, or `connection refused` once `stopped["now"]` is set."""
    def read() -> str:
        if stopped is not None and stopped.get("now"):
            raise OSError("connection refused")
        return fetch(am, timeout_s=2.0)

    return read


def _ready(browser: Any, url: str) -> None:
    browser.get(url)
    until(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 20, "the page drew")


def test_every_rack_and_device_is_in_its_slot(browser: Any, floor: tuple[str, str, Index]) -> None:
    url, _am, index = floor
    _ready(browser, url)
    racks = browser.execute_script("return [...document.querySelectorAll('svg.rack')].map(s => s.dataset.rack)")
    assert sorted(racks) == sorted(r.name for r in index.inv.racks)
    seen = browser.execute_script(
        "return [...document.querySelectorAll('g[data-slot]')].map(g => [g.dataset.slot, g.dataset.rack, "
        "+g.dataset.u, g.querySelector('rect').getBoundingClientRect().top, "
        "g.closest('svg').getBoundingClientRect().top])")
    where = {name: (rack, u) for name, rack, u, _top, _rack_top in seen}
    for n in index.inv.nodes:
        assert where[n.name] == (n.rack, n.u), n.name
    for s in index.inv.switches:
        assert where[s.name] == (s.rack, s.u), s.name
    # drawn where the unit is: within a rack, a higher unit is higher on the page, and U1 sits at the bottom
    by_rack: dict[str, list[tuple[int, float]]] = {}
    for _name, rack, u, top, _rt in seen:
        by_rack.setdefault(rack, []).append((u, top))
    for rack, slots in by_rack.items():
        ordered = [top for _u, top in sorted(slots)]
        assert ordered == sorted(ordered, reverse=True), rack


def test_a_level_3_alert_turns_the_node_and_its_rack_red(browser: Any, floor: tuple[str, str, Index]) -> None:
    url, am, index = floor
    _ready(browser, url)
    fill = FILL.format("gpu01")
    assert browser.execute_script(fill) != LEVEL3
    post_alerts(am, [{"labels": {"alertname": "GpuTemperatureHigh", "level": "3", "host": "gpu01", "gpu": "0"},
                      "annotations": {"summary": "GPU 0 above 87 C", "repair": "check the airflow"}}])
    t0 = time.monotonic()
    until(lambda: browser.execute_script(fill) == LEVEL3, 15, "gpu01 turned to the level 3 colour")
    seconds = time.monotonic() - t0
    rack = index.nodes["gpu01"].rack
    assert "level3" in browser.execute_script(
        f"return document.querySelector('svg[data-rack=\"{rack}\"]').getAttribute('class')")
    others = browser.execute_script(
        "return [...document.querySelectorAll('rect.slot.level3')].map(r => r.dataset.name)")
    assert others == ["gpu01"]
    print(f"the floor page showed gpu01 at level 3 {seconds:.1f} s after the alert reached Alertmanager "
          "(the page polls every 1 s here, every --refresh s, 5 by default)")


def test_clicking_a_node_shows_its_cables(browser: Any, floor: tuple[str, str, Index]) -> None:
    url, _am, index = floor
    _ready(browser, url)
    browser.execute_script("document.querySelector('g[data-slot=\"gpu01\"]').dispatchEvent(new MouseEvent('click', "
                           "{bubbles: true}))")
    rows = until(lambda: browser.execute_script(
        "return [...document.querySelectorAll('table[data-cables=\"gpu01\"] tr[data-cable]')]"
        ".map(r => [r.dataset.cable, [...r.children].map(c => c.textContent)])"), 10, "gpu01's cables shown")
    declared = {c.id: c for c in index.inv.cables if "gpu01" in (c.a.device, c.b.device)}
    assert {cid for cid, _cells in rows} == set(declared)
    for cid, cells in rows:
        cable = declared[cid]
        far = cable.b if cable.a.device == "gpu01" else cable.a
        assert cid in cells and any(c.startswith(f"{far.device}/{far.port}") for c in cells), cells
    labelled = next(cells for _cid, cells in rows if HOSTILE in cells)
    assert labelled  # the label is there as the characters it holds
    assert browser.execute_script("return window.__pwned === undefined && !document.querySelector('#view-node img')")
    assert browser.current_url.endswith("#node=gpu01")


def test_an_unreachable_alertmanager_is_a_banner_not_a_green_floor(tmp_path: Path, browser: Any) -> None:
    if ALERTMANAGER is None:
        pytest.fail("prometheus-alertmanager missing: run scripts/lab-deps.sh (CI does)")
    stopped = {"now": False}
    for am in run_alertmanager(tmp_path, "127.0.0.1", free_port()):
        post_alerts(am, [{"labels": {"alertname": "GpuTemperatureHigh", "level": "3", "host": "gpu02", "gpu": "1"},
                          "annotations": {"summary": "hot"}}])
        site = FloorSite(lab_index(), "lab", {"alertmanager": (am, _reader(am, stopped))}, refresh_s=1.0)
        server = serve(site, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            _ready(browser, f"http://127.0.0.1:{server.server_address[1]}/")
            until(lambda: browser.execute_script(FILL.format("gpu02")) == LEVEL3, 15, "gpu02 at level 3 first")
            stopped["now"] = True
            text = until(lambda: browser.execute_script(
                "const b = document.querySelector('#banners [data-source=\"alertmanager\"]'); "
                "return b ? b.textContent : ''"), 15, "the Alertmanager banner")
            assert "unreachable" in text and "connection refused" in text and "last seen at" in text, text
            assert browser.execute_script(FILL.format("gpu02")) == LEVEL3  # what it said last stays, marked stale
        finally:
            server.shutdown()
            server.server_close()


def test_a_node_the_scheduler_drains_is_shown_out_of_service(browser: Any) -> None:
    """The scheduler source (`deploy.reboot.reasons`' text; here the lab's stand-in's form, as `lab reasons`
    prints it) drains gpu04 while the page is open: its slot is marked within the refresh, and its panel says
    why, by whom and since when; resumed, the mark goes."""
    from clusterforge.lab.technician import sinfo_reasons

    said = {"text": sinfo_reasons({"drained": [], "events": []}, "root")}
    site = FloorSite(lab_index(), "lab", {"scheduler": ("clusterforge lab reasons", lambda: said["text"])},
                     refresh_s=1.0)
    server = serve(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cls = "return document.querySelector('rect.slot[data-name=\"gpu04\"]').getAttribute('class')"
    try:
        _ready(browser, f"http://127.0.0.1:{server.server_address[1]}/")
        assert "drained" not in browser.execute_script(cls)
        said["text"] = sinfo_reasons({"drained": ["gpu04"], "reasons": {"gpu04": "cf-health: hca mlx5_1 Down"},
                                      "events": [{"host": "gpu04", "event": "drain", "when": time.time()}]}, "root")
        until(lambda: "drained" in browser.execute_script(cls), 10, "gpu04 marked out of service")
        assert browser.execute_script("return [...document.querySelectorAll('rect.slot.drained')]"
                                      ".map(r => r.dataset.name)") == ["gpu04"]
        browser.execute_script("document.querySelector('g[data-slot=\"gpu04\"]').dispatchEvent(new MouseEvent("
                               "'click', {bubbles: true}))")
        text = until(lambda: browser.execute_script(
            "const li = document.querySelector('#view-node li[data-drained]'); return li ? li.textContent : ''"),
            10, "gpu04's panel says why")
        assert text.startswith("out of service (drain): cf-health: hca mlx5_1 Down (by root, since "), text
        said["text"] = sinfo_reasons({"drained": [], "events": []}, "root")
        until(lambda: "drained" not in browser.execute_script(cls), 10, "gpu04 back in service")
    finally:
        server.shutdown()
        server.server_close()
