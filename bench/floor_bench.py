"""The floor page at scale (issue #37 item 3): the page served by `clusterforge floor`'s own server on loopback and
drawn by Debian's Chromium, headless, through selenium: the bytes the browser fetches to show the floor (the page,
its script and style, floor.json, live.json) and the time from navigation to the floor and fabric drawn (the page's
own measure of drawing, and the navigation's), for the lab, prod and the generated 2,048-node inventory, each beside
the others in the same run. No source is read (no Alertmanager): the drawing is what is timed.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from clusterforge.api import load_checked
from clusterforge.floor.serve import STATIC, FloorSite, serve, static_file


class BenchFailed(RuntimeError):
    """The browser could not be driven: no figure."""


def _browser(tmp: Path) -> Any:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        raise BenchFailed("chromium and chromium-driver missing (sh scripts/lab-deps.sh)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000",
                f"--user-data-dir={tmp}"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def bench_floor(tmp: Path, envs: dict[str, Path], runs: int = 3) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    driver = _browser(Path(tempfile.mkdtemp(prefix="chromium-", dir=tmp)))
    try:
        for name, env in envs.items():
            index = load_checked(env).index
            site = FloorSite(index, name, {}, refresh_s=60.0)
            server = serve(site, "127.0.0.1", 0)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            try:
                url = f"http://127.0.0.1:{server.server_address[1]}/"
                page = sum(len(static_file(f)) for f in {v[0] for v in STATIC.values()})
                weight = page + len(site.floor) + len(site.live())
                draws, loads = [], []
                for _ in range(runs):
                    driver.get("about:blank")
                    t0 = time.monotonic()
                    driver.get(url)
                    deadline = time.monotonic() + 60
                    while driver.execute_script("return document.body && document.body.dataset.ready") != "1":
                        if time.monotonic() > deadline:
                            raise BenchFailed(f"floor bench {name}: the page did not draw in 60 s")
                        time.sleep(0.02)
                    loads.append(time.monotonic() - t0)
                    draws.append(int(driver.execute_script("return document.body.dataset.drawMs")) / 1000)
                slots = driver.execute_script("return document.querySelectorAll('g[data-slot]').length")
                largest = max((len(site.get(f"/nodes/{n.name}.json")[2]) for n in index.inv.nodes), default=0)
                rows.append({
                    "bench": "floor", "inventory": name, "nodes": len(index.inv.nodes),
                    "switches": len(index.inv.switches), "racks": len(index.inv.racks), "slots_drawn": slots,
                    "page_kb": round(weight / 1024, 1), "floor_json_kb": round(len(site.floor) / 1024, 1),
                    "largest_node_json_kb": round(largest / 1024, 1),
                    "draw_s": round(min(draws), 3), "load_to_drawn_s": round(min(loads), 3),
                })
            finally:
                server.shutdown()
                server.server_close()
    finally:
        driver.quit()
    return rows
