"""The `monitoring` component: which hosts get what (exporters vs Telegraf, GPU nodes, monitoring servers),
its pins, the rendered files deployed byte for byte, and a changed file restarting exactly its own unit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cf_http import free_port
from clusterforge.api import Checked, load_checked
from clusterforge.deploy.ansible import inventory, plain
from clusterforge.deploy.changes import component_changes
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.facts import FileFact, HostFacts, PackageFact
from clusterforge.deploy.options import DeployOptions
from clusterforge.deploy.runner import SshSettings
from clusterforge.model.index import Index
from clusterforge.render import render
from clusterforge.render.env import environment

ROOT = Path(__file__).resolve().parents[3]
SERVER_UNITS = ("victoria-metrics", "prometheus-alertmanager", "clusterforge-drain-hook", "clusterforge-vmagent",
                "clusterforge-vmalert")


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


@pytest.fixture(scope="module")
def prod_plans(prod: Checked) -> dict[str, HostPlan]:
    return host_plans(prod.index, DeployOptions("prod"))


def _mon(plan: HostPlan) -> Any:
    comp = plan.component("monitoring")
    assert comp is not None
    return comp


def test_exporters_path_on_the_lab(plans: dict[str, HostPlan]) -> None:
    gpu, sm, lus = _mon(plans["gpu01"]), _mon(plans["sm01"]), _mon(plans["lus01"])
    # every node: Debian's node_exporter with the rendered ARGS
    for comp in (gpu, sm, lus):
        assert "prometheus-node-exporter" in comp.packages and "prometheus-node-exporter" in comp.services
        assert "/etc/default/prometheus-node-exporter" in {f.dest for f in comp.files}
        assert "telegraf" not in comp.services and not [p for p in comp.pins if p.package == "telegraf"]
    # GPU nodes only: dcgm-exporter pinned like the other NVIDIA parts, its counters file and unit
    assert [(p.package, p.version, p.hold) for p in gpu.pins] == [("dcgm-exporter", "3.3.9-1", True)]
    assert {"/etc/dcgm-exporter/clusterforge-counters.csv", "/etc/systemd/system/dcgm-exporter.service"} <= \
        {f.dest for f in gpu.files}
    assert "dcgm-exporter" in gpu.services
    assert not sm.pins and "dcgm-exporter" not in sm.services and "dcgm-exporter" not in lus.services
    # the monitoring server (sm01) only: the store, vmagent, vmalert, Alertmanager and the drain hook
    assert sm.packages == ("prometheus-node-exporter", "victoria-metrics", "prometheus-alertmanager")
    assert set(SERVER_UNITS) <= set(sm.services)
    assert not set(SERVER_UNITS) & set(gpu.services) and not set(SERVER_UNITS) & set(lus.services)
    assert {"/etc/clusterforge/monitoring/rules.yml", "/etc/clusterforge/monitoring/scrape.yml",
            "/etc/prometheus/alertmanager.yml", "/etc/default/victoria-metrics",
            "/etc/default/prometheus-alertmanager", "/usr/local/lib/clusterforge/drain-hook",
            "/etc/clusterforge/monitoring/drain-targets.json"} <= {f.dest for f in sm.files}
    assert gpu.handler == sm.handler == "units" and not gpu.problems and not sm.problems
    # the repository's pin file lists the dcgm-exporter pin with the others
    pref = next(f for f in plans["gpu01"].files if f.dest == "/etc/apt/preferences.d/clusterforge.pref")
    assert "Package: dcgm-exporter\nPin: version 3.3.9-1" in pref.content


def test_telegraf_path_in_prod(prod: Checked, prod_plans: dict[str, HostPlan]) -> None:
    mon = prod.index.inv.monitoring
    assert mon is not None and mon.collector == "telegraf"
    gpu = next(n.name for n in prod.index.inv.nodes if (hw := prod.index.hardware[n.name]).gpus and hw.gpus.count)
    servers = set(mon.servers) or {n.name for n in prod.index.inv.nodes if n.role == mon.server_role}
    other = next(n.name for n in prod.index.inv.nodes
                 if n.name not in servers and not prod.index.hardware[n.name].gpus)
    for name in (gpu, other):
        comp = _mon(prod_plans[name])
        assert ("telegraf", "1.30.3-1") in [(p.package, p.version) for p in comp.pins]
        assert "telegraf" in comp.services and "prometheus-node-exporter" not in comp.packages
        conf = next(f for f in comp.files if f.dest == "/etc/telegraf/telegraf.conf")
        assert f'hostname = "{name}"' in conf.content
    assert "dcgm-exporter" in _mon(prod_plans[gpu]).services  # Telegraf scrapes the local dcgm-exporter
    assert "dcgm-exporter" not in _mon(prod_plans[other]).services
    srv = _mon(prod_plans[sorted(servers)[0]])
    assert {"victoria-metrics", "prometheus-alertmanager", "clusterforge-vmalert"} <= set(srv.services)
    assert "clusterforge-vmagent" not in srv.services  # Telegraf writes to the store: no scraping


def test_missing_pins_are_preflight_problems(prod: Checked) -> None:
    sw = prod.index.inv.software.model_copy(update={"telegraf": None, "dcgm_exporter": None})
    inv = prod.index.inv.model_copy(update={"software": sw})
    plans = host_plans(Index(inv, prod.index.cat), DeployOptions("prod"))
    gpu = next(p for p in plans.values() if p.component("nvidia"))
    problems = " ".join(_mon(gpu).problems)
    assert "software.telegraf" in problems and "software.dcgm_exporter" in problems


def test_rendered_files_deployed_byte_for_byte(checked: Checked, plans: dict[str, HostPlan]) -> None:
    files = render(checked.index, "lab").files
    sm = {f.dest: f for f in _mon(plans["sm01"]).files}
    gpu = {f.dest: f for f in _mon(plans["gpu01"]).files}
    assert sm["/etc/clusterforge/monitoring/rules.yml"].content == \
        files["monitoring/sm01/etc/clusterforge/monitoring/rules.yml"]
    assert sm["/etc/prometheus/alertmanager.yml"].content == files["monitoring/sm01/etc/prometheus/alertmanager.yml"]
    assert gpu["/etc/systemd/system/dcgm-exporter.service"].content == files["monitoring/nodes/dcgm-exporter.service"]
    assert gpu["/etc/default/prometheus-node-exporter"].content == files["monitoring/nodes/prometheus-node-exporter"]
    assert sm["/usr/local/lib/clusterforge/drain-hook"].mode == 0o755
    targets = json.loads(sm["/etc/clusterforge/monitoring/drain-targets.json"].content)
    assert targets["hosts"]["gpu01"] == {"drain": ["clusterforge", "lab", "drain", "gpu01", "--reason", "{reason}",
                                                   "--env", "inventories/lab"], "migrate": True}
    assert targets["hosts"]["sm01"]["migrate"] is False  # jobs move off compute nodes only
    assert set(targets["hosts"]) == {n.name for n in checked.index.inv.nodes}
    assert (targets["reason"], targets["health_reason"]) == ("cf-alert:", "cf-health:")
    args = gpu["/etc/default/prometheus-node-exporter"].content
    assert "--collector.infiniband" in args and "--collector.textfile.directory=" in args
    assert "--path.sysfs" not in args  # the lab's stand-in tree comes from a LAB-ONLY drop-in, not prod's file


def _converged(comp: Any) -> HostFacts:
    import hashlib

    files = {f.dest: FileFact(f.mode, hashlib.sha256(f.content.encode()).hexdigest(), f.content.encode())
             for f in comp.files}
    packages = {p.package: PackageFact(p.version, "hi ") for p in comp.pins}
    packages |= {p: PackageFact("1", "ii ") for p in comp.packages}
    services = {u: ("enabled", "active") for u in comp.services}
    return HostFacts(systemd=True, files=dict(files), packages=packages, services=services)


def test_a_changed_file_restarts_or_reloads_exactly_its_unit(plans: dict[str, HostPlan]) -> None:
    comp = _mon(plans["sm01"])
    facts = _converged(comp)
    assert component_changes(comp, facts) == []

    def handler_after(*changed: str) -> tuple[str, ...]:
        f = HostFacts(**{**facts.__dict__, "files": {**facts.files, **{d: None for d in changed}}})
        out = [c for c in component_changes(comp, f) if c.kind == "handler"]
        assert len(out) == 1
        return out[0].commands

    assert handler_after("/etc/default/victoria-metrics") == ("systemctl restart victoria-metrics",)
    assert handler_after("/etc/clusterforge/monitoring/rules.yml") == ("systemctl reload clusterforge-vmalert",)
    assert handler_after("/etc/prometheus/alertmanager.yml") == ("systemctl reload prometheus-alertmanager",)
    assert handler_after("/etc/systemd/system/clusterforge-vmagent.service",
                         "/etc/clusterforge/monitoring/scrape.yml") == (
        "systemctl daemon-reload", "systemctl restart clusterforge-vmagent")
    assert handler_after("/etc/clusterforge/monitoring/drain-targets.json", "/etc/default/prometheus-alertmanager",
                         "/etc/prometheus/alertmanager.yml") == (
        "systemctl restart clusterforge-drain-hook prometheus-alertmanager",)
    # no systemd (a container without it): files are written, nothing restarted
    nosd = HostFacts(**{**facts.__dict__, "systemd": False, "files": {**facts.files, "/etc/default/victoria-metrics":
                                                                        None}})
    assert [c.kind for c in component_changes(comp, nosd)] == ["file"]


def test_ansible_hostvars_carry_each_files_unit(plans: dict[str, HostPlan]) -> None:
    hv = plain(inventory(list(plans.values()), SshSettings())["_meta"]["hostvars"]["sm01"])
    files = {f["dest"]: f for f in hv["cf_monitoring_files"]}
    assert files["/etc/clusterforge/monitoring/rules.yml"]["unit"] == "clusterforge-vmalert"
    assert files["/etc/clusterforge/monitoring/rules.yml"]["reload"] is True
    assert files["/etc/default/victoria-metrics"]["reload"] is False
    assert "victoria-metrics" in hv["cf_monitoring_packages"]
    assert hv["cf_monitoring_services"][-1] == "clusterforge-vmalert"
    gpu = plain(inventory(list(plans.values()), SshSettings())["_meta"]["hostvars"]["gpu01"])
    assert gpu["cf_monitoring_pins"] == [{"package": "dcgm-exporter", "version": "3.3.9-1", "hold": True}]


def _post(url: str, payload: object) -> int:
    req = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(r.status)


def test_standalone_drain_hook_runs_the_argv_of_a_level3_host(tmp_path: Path) -> None:
    """The rendered script, run for real by python3 as its unit does: no clusterforge import, argv not shell."""
    from clusterforge.render.context_monitoring import level3_source

    script = tmp_path / "drain-hook"
    script.write_text(environment().get_template("monitoring/drain-hook.py.j2").render(
        {"port": 9095, "banner": ["test"], "environment": "lab", "source": level3_source()}))
    ran = tmp_path / "ran"
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"hosts": {
        "gpu01": {"drain": ["touch", str(ran / "gpu01; echo not-a-shell {reason}")], "migrate": True},
        "gpu02": {"drain": ["false"], "migrate": True}}, "migrate": None, "alertmanagers": []}))
    ran.mkdir()
    log = tmp_path / "drained.jsonl"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen([sys.executable, "-I", str(script), "--listen", f"127.0.0.1:{port}", "--targets",
                             str(targets), "--log", str(log)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/drain"
        deadline = time.monotonic() + 20
        while True:
            try:
                _post(url, {"alerts": []})
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        alerts = {"alerts": [
            {"status": "firing", "labels": {"level": "3", "host": "gpu01", "alertname": "HbmTemperatureHigh"},
             "startsAt": "2026-12-07T10:00:00Z"},
            {"status": "firing", "labels": {"level": "2", "host": "gpu02"}},       # level 2: no drain
            {"status": "resolved", "labels": {"level": "3", "host": "gpu02"}},     # resolved: no drain
            {"status": "firing", "labels": {"level": "3", "host": "sw-leaf-1"}},  # not a node: ignored
        ]}
        assert _post(url, alerts) == 200
        assert _post(url, alerts) == 200  # a repeat of the same firings does nothing more
        deadline = time.monotonic() + 20
        while len(log.read_text().splitlines() if log.exists() else []) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a second response (there must be none) would be journalled by now
        assert [p.name for p in ran.iterdir()] == ["gpu01; echo not-a-shell cf-alert: level 3 HbmTemperatureHigh"]
        records = sorted((json.loads(line) for line in log.read_text().splitlines()), key=lambda r: r["host"])
        assert [(r["host"], r["event"], r.get("exit"), r.get("why", "")[:3]) for r in records] == [
            ("gpu01", "drain", 0, ""), ("sw-leaf-1", "ignored", None, "not")]
        with pytest.raises(urllib.error.HTTPError) as bad:
            _post(url, ["not", "a", "payload"])
        assert bad.value.code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=10)
