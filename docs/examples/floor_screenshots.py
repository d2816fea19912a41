"""The screenshots in docs/floor.md: the lab's floor page in headless Chromium (Debian's chromium and
chromium-driver, through selenium), served by `clusterforge floor`'s own server on loopback, reading a real
Alertmanager on loopback into which one level 3 alert on gpu01 and one level 2 port alert on gpu03 are posted.

    .venv/bin/python docs/examples/floor_screenshots.py docs/images

Writes floor-floor.png, floor-fabric.png and floor-node.png into the directory given."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from clusterforge.api import load_checked
from clusterforge.cli.alerts import fetch
from clusterforge.floor.serve import FloorSite, serve
from clusterforge.render import render_environment

LAB = Path(__file__).resolve().parents[2] / "inventories" / "lab"
ALERTS = [
    {"labels": {"alertname": "GpuTemperatureHigh", "level": "3", "host": "gpu01", "gpu": "0"},
     "annotations": {"summary": "GPU 0 on gpu01 above 87 C for 10 min", "repair": "check the airflow of the rack"}},
    {"labels": {"alertname": "IbSymbolErrorsFast", "level": "2", "host": "gpu03", "device": "mlx5_0", "port": "1"},
     "annotations": {"summary": "symbol errors at 600 an hour"}},
]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index = load_checked(LAB).index
    am_bin = shutil.which("prometheus-alertmanager")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if am_bin is None or chromium is None or driver_bin is None:
        sys.exit("needs prometheus-alertmanager, chromium and chromium-driver (scripts/lab-deps.sh)")
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "alertmanager.yml"
        conf.write_text(render_environment(index, "lab")["monitoring/sm01/etc/prometheus/alertmanager.yml"])
        am = "http://127.0.0.1:19093"
        proc = subprocess.Popen([am_bin, f"--config.file={conf}", f"--storage.path={tmp}/data",
                                 "--web.listen-address=127.0.0.1:19093", "--cluster.listen-address="],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = None
        driver = None
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{am}/-/ready", timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.2)
            request = urllib.request.Request(f"{am}/api/v2/alerts", data=json.dumps(ALERTS).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            urllib.request.urlopen(request, timeout=10).close()
            site = FloorSite(index, "lab", {"alertmanager": (am, lambda: fetch(am, timeout_s=2.0))}, refresh_s=1.0)
            server = serve(site, "127.0.0.1", 0)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            opts = webdriver.ChromeOptions()
            opts.binary_location = chromium
            for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        f"--user-data-dir={tmp}/chromium"):
                opts.add_argument(arg)
            driver = webdriver.Chrome(service=Service(executable_path=driver_bin), options=opts)
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/")
            time.sleep(3)
            driver.save_screenshot(str(out / "floor-floor.png"))
            driver.find_element("id", "tab-fabric").click()
            time.sleep(0.5)
            driver.save_screenshot(str(out / "floor-fabric.png"))
            driver.execute_script("document.querySelector('g[data-slot=\"gpu01\"]').dispatchEvent("
                                  "new MouseEvent('click', {bubbles: true}))")
            time.sleep(1.5)
            driver.save_screenshot(str(out / "floor-node.png"))
        finally:
            if driver is not None:
                driver.quit()
            if server is not None:
                server.shutdown()
                server.server_close()
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
