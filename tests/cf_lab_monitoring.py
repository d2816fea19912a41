"""What the monitoring lab tests share: a deploy of some nodes read back from its plan file, a query of the lab's
VictoriaMetrics, and `clusterforge alerts ENV --format json` (no `--url`: it finds the lab's Alertmanager)."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from cf_lab_net import cf


def deploy_nodes(env: Path, nodes: list[str], plan: Path, *extra: str) -> dict[str, Any]:
    """`clusterforge deploy ENV --limit NODES`: host -> its result from the plan file (exit 0 asserted)."""
    code, out = cf("deploy", str(env), "--limit", ",".join(nodes), "--no-diffs", "--plan-file", str(plan), *extra)
    assert code == 0, out
    hosts: dict[str, Any] = json.loads(plan.read_text())["hosts"]
    return hosts


def query(address: str, promql: str) -> list[dict[str, Any]]:
    """An instant query of the store on `address` (port 8428): its result vector."""
    url = f"http://{address}:8428/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as r:
        result: list[dict[str, Any]] = json.loads(r.read())["data"]["result"]
    return result


def alerts(env: Path) -> list[dict[str, Any]]:
    """`clusterforge alerts ENV --format json`, no --url: exit 0 (none) or 4 (listed); the alerts."""
    code, out = cf("alerts", str(env), "--format", "json")
    assert code in (0, 4), f"clusterforge alerts: exit {code}: {out[-2000:]}"
    listed: list[dict[str, Any]] = json.loads(out[out.index("{"):])["alerts"]
    return listed


def wait_alertmanager(env: Path, limit_s: float = 180.0) -> float:
    """Seconds until `clusterforge alerts ENV` reaches an Alertmanager (exit 5 while none answers yet: a fresh
    deploy has just started it)."""
    start = time.monotonic()
    while True:
        code, out = cf("alerts", str(env), "--format", "json")
        if code in (0, 4):
            return time.monotonic() - start
        assert code == 5 and time.monotonic() - start < limit_s, f"clusterforge alerts: exit {code}: {out[-2000:]}"
        time.sleep(5)


