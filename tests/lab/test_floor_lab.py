"""The floor page on the whole monitoring lab (issue #37 item 4): the monitoring end-to-end scenario
(tests/cf_monitoring_e2e.py: `lab fault hot gpu03 0` with its history, the real vmagent, VictoriaMetrics,
vmalert, Alertmanager and drain hook deployed on a systemd lab) with the lab's page served as `make deploy` serves
it (`floor ENV --background`, here `--refresh 1`), watched in Debian's Chromium from the moment the history is
stored:

- gpu03 and its rack turn to the level 3 colour, with nothing else at level 3, within the documented latency
  (docs/monitoring.md: the level 3 drain about a minute after the history; the page's refresh after it);
- gpu03 is then marked out of service, read through the lab's `deploy.reboot.reasons` (`lab reasons`): the drain
  hook on sm01 drained it with `cf-alert: level 3 HbmTemperatureHigh`;
- its panel says so, with the alert.

inventories/lab itself, on its own lab root. Run under `flock /tmp/cf-lab.lock`; about 3 minutes (long)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cf_browser import FILL, LEVEL3, chromium, until
from cf_monitoring_e2e import HOT_HOST, cf, run_scenario

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "inventories" / "lab"
HOST = HOT_HOST
PAGE_LEVEL3_S = 300.0
"""From the history stored to the page's level 3 colour: the scenario's own bound for the drain (its alert is
active in Alertmanager by then) plus the page's 1 s refresh."""
pytestmark = [pytest.mark.lab, pytest.mark.long]


def test_a_hot_gpu_reaches_the_floor_page_and_its_drain_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for tool in ("podman", "ibsim", "vmalert"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: run scripts/lab-deps.sh (CI does)")
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "state"))
    monkeypatch.chdir(ROOT)  # the lab inventory's hooks name inventories/lab from the repository root
    seen: dict[str, Any] = {}
    with chromium(tmp_path / "chromium") as browser:
        def watch() -> None:
            try:
                rect = FILL.format(HOST)
                t0 = time.monotonic()
                until(lambda: browser.execute_script(rect) == LEVEL3, PAGE_LEVEL3_S, f"{HOST} at level 3 on the page")
                seen["level3_s"] = time.monotonic() - t0
                seen["red"] = browser.execute_script(
                    "return [...document.querySelectorAll('rect.slot.level3')].map(r => r.dataset.name)")
                seen["racks"] = browser.execute_script(
                    "return [...document.querySelectorAll('svg.rack.level3')].map(s => s.dataset.rack)")
            except BaseException as exc:  # reported by the test's thread below
                seen["error"] = exc

        watcher = threading.Thread(target=watch, daemon=True)

        def ready() -> None:
            code, out = cf("floor", str(ENV), "--background", "--refresh", "1", "--format", "json")
            assert code == 0, out
            url = json.loads(out[out.index("{"):])["url"]
            seen["url"] = url
            browser.get(url)
            until(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 30, "the page drew")
            assert browser.execute_script(FILL.format(HOST)) != LEVEL3
            watcher.start()

        try:
            result = run_scenario(ENV, on_ready=ready)
            watcher.join(timeout=PAGE_LEVEL3_S)
            if "error" in seen:
                raise seen["error"]
            assert seen["red"] == [HOST], seen
            assert seen["racks"] == ["lab-su01-r01"], seen  # gpu03's rack (the scenario holds it to rack and U)
            drained = f"return document.querySelector('rect.slot[data-name=\"{HOST}\"]').getAttribute('class')"
            until(lambda: "drained" in browser.execute_script(drained), 60, f"{HOST} marked out of service")
            browser.execute_script(f"document.querySelector('g[data-slot=\"{HOST}\"]').dispatchEvent(new MouseEvent("
                                   "'click', {bubbles: true}))")
            panel = until(lambda: browser.execute_script(
                "return [...document.querySelectorAll('#view-node ul.marks li')].map(l => l.textContent)"), 15,
                f"{HOST}'s panel")
            assert any(t.startswith("level 3 HbmTemperatureHigh") for t in panel), panel
            assert any(t.startswith("out of service (drain): cf-alert: level 3 HbmTemperatureHigh") for t in panel), \
                panel
        finally:
            code, out = cf("lab", "down", str(ENV))
            assert code == 0, out
    print({k: round(v, 1) for k, v in result.seconds.items()},
          f"history stored -> the page at level 3: {seen['level3_s']:.1f} s")
