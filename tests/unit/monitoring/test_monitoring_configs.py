"""The rendered monitoring configs: labels from the model, Alertmanager's levels (amtool), vmagent's
scrape config (vmagent's own dry run), Telegraf's TOML with the real plugin and field names."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from cf_lab_inventory import index_of, lab_data, lab_index
from clusterforge.model.index import Index
from clusterforge.render import render_environment
from clusterforge.render.monitoring_rules import IB

LAB_AM = "monitoring/sm01/etc/prometheus/alertmanager.yml"
LAB_SCRAPE = "monitoring/sm01/etc/clusterforge/monitoring/scrape.yml"

TELEGRAF_PLUGINS = {"inputs.system", "inputs.nvidia_smi", "inputs.prometheus", "inputs.infiniband", "inputs.exec",
                    "outputs.influxdb", "processors.override"}
"""Telegraf plugins the config uses (each is a plugin of Telegraf's own tree: plugins/<kind>/<name>)."""
TELEGRAF_INFINIBAND_FIELDS = {
    "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_rcv_remote_physical_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_discards", "port_xmit_wait",
    "VL15_dropped", "port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets"}
"""inputs.infiniband's fields (its README): one per file of /sys/class/infiniband/<dev>/ports/<n>/counters."""


def _telegraf_lab() -> tuple[Index, dict[str, str]]:
    data = lab_data()
    data["monitoring"] = {**data["monitoring"], "collector": "telegraf"}
    index = index_of(data)
    return index, render_environment(index, "lab")


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool is not installed (apt-get install "
                    "prometheus-alertmanager)")
def test_alertmanager_levels_route_and_inhibit(tmp_path: Path) -> None:
    path = tmp_path / "alertmanager.yml"
    path.write_text(render_environment(lab_index(), "lab")[LAB_AM])
    done = _run(["amtool", "check-config", str(path)])
    assert done.returncode == 0, done.stdout + done.stderr
    for level, receiver in (("1", "level1-record"), ("2", "level2-email"), ("3", "level3-page")):
        done = _run(["amtool", "config", "routes", "test", f"--config.file={path}", f"level={level}", "host=gpu01"])
        assert done.stdout.strip() == receiver, done.stdout + done.stderr
    conf = yaml.safe_load(path.read_text())
    receivers = {r["name"]: r for r in conf["receivers"]}
    assert set(receivers["level1-record"]) == {"name"}  # recorded only: no notifier
    assert receivers["level2-email"]["email_configs"][0]["to"] == "oncall@lab.invalid"
    assert conf["global"]["smtp_smarthost"] == "198.18.10.1:2525"  # the lab machine, seen from sm01
    assert [h["url"] for h in receivers["level3-page"]["webhook_configs"]] == ["http://127.0.0.1:9095/drain"]
    inhibit = {(r["source_matchers"][0], r["target_matchers"][0]): r["equal"] for r in conf["inhibit_rules"]}
    assert inhibit == {('level="3"', 'level=~"1|2"'): ["host"], ('level="2"', 'level="1"'): ["host"]}


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool is not installed")
def test_alertmanager_pager_webhook_and_no_drain(tmp_path: Path) -> None:
    data = lab_data()
    data["monitoring"]["alerts"]["page"] = {"webhook": "https://pager.example.org/x?k=1", "drain": False}
    path = tmp_path / "am.yml"
    path.write_text(render_environment(index_of(data), "lab")[LAB_AM])
    assert _run(["amtool", "check-config", str(path)]).returncode == 0
    hooks = yaml.safe_load(path.read_text())["receivers"][2]["webhook_configs"]
    assert [h["url"] for h in hooks] == ["https://pager.example.org/x?k=1"]


def _scrape(files: dict[str, str]) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(files[LAB_SCRAPE])
    return loaded


def test_every_series_labelled_host_rack_u_and_ports_from_the_model() -> None:
    index = lab_index()
    conf = _scrape(render_environment(index, "lab"))
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    assert conf["global"]["scrape_interval"] == "5s"
    for node in index.inv.nodes:
        labels = jobs[f"node/{node.name}"]["static_configs"][0]["labels"]
        assert (labels["host"], labels["rack"], labels["u"], labels["exporter"]) == (node.name, node.rack,
                                                                                    str(node.u), "node")
        gpus = index.hardware[node.name].gpus
        assert (f"dcgm/{node.name}" in jobs) == (gpus is not None and gpus.count > 0)
    relabel = jobs["node/gpu01"]["metric_relabel_configs"]
    mine = {r["target_label"]: r["replacement"] for r in relabel if r["regex"] == "mlx5_0;1"}
    cable = index.cable_at[("gpu01", "mlx5_0", 1)]
    rate = index.cat.slower(index.port_rate(*cable.a.key), index.port_rate(*cable.b.key))
    assert rate == "HDR"  # the lab's ConnectX-6 ports on HDR leaves
    assert mine == {"rail": "0", "leaf": cable.b.device, "leaf_port": str(cable.b.port), "cable": cable.id,
                    "a_end": str(cable.a), "b_end": str(cable.b), "speed": rate}
    assert all(r["source_labels"] == ["device", "port"] for r in relabel)


def test_a_trunked_port_carries_its_lanes() -> None:
    data = lab_data()
    data["patch_panels"] = [{"name": "PP-A", "rack": "lab-su01-r01", "u": 40},
                            {"name": "PP-B", "rack": "lab-su01-net", "u": 40}]
    data["trunks"] = [{"id": "T-01", "a_panel": "PP-A", "b_panel": "PP-B", "length_m": 20}]
    for cable in data["cables"]:
        if cable["id"] == "C-00001":
            cable.update(media="fiber", fiber_type="OM4", trunk="T-01", lane_group=3)
    conf = _scrape(render_environment(index_of(data), "lab"))
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    lanes = [r["replacement"] for r in jobs["node/gpu01"]["metric_relabel_configs"] if r["target_label"] == "lanes"]
    assert lanes == ["trunk T-01 lane group 3, patch panels PP-A (rack lab-su01-r01 U40) / "
                     "PP-B (rack lab-su01-net U40)"]


@pytest.mark.skipif(shutil.which("vmagent") is None, reason="vmagent is not installed (apt-get install "
                    "victoria-metrics)")
def test_vmagent_accepts_the_scrape_config(tmp_path: Path) -> None:
    path = tmp_path / "scrape.yml"
    path.write_text(render_environment(lab_index(), "lab")[LAB_SCRAPE])
    done = _run(["vmagent", f"-promscrape.config={path}", "-promscrape.config.dryRun",
                 "-promscrape.config.strictParse"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_telegraf_config_is_toml_with_real_plugins_and_tags() -> None:
    index, files = _telegraf_lab()
    confs = {p.split("/")[1]: tomllib.loads(t) for p, t in files.items() if p.endswith("telegraf/telegraf.conf")}
    assert set(confs) == set(index.nodes)
    gpu01 = confs["gpu01"]
    used = {f"{kind}.{name}" for kind in ("inputs", "outputs", "processors") for name in gpu01.get(kind, {})}
    assert used == TELEGRAF_PLUGINS
    assert gpu01["agent"]["interval"] == "5s" and gpu01["agent"]["hostname"] == "gpu01"
    assert gpu01["global_tags"] == {"rack": "lab-su01-r01", "u": "2", "role": "compute", "profile": "gpu-node"}
    assert gpu01["inputs"]["prometheus"][0] == {"urls": ["http://127.0.0.1:9400/metrics"], "metric_version": 1,
                                                 "timeout": "4s"}
    assert gpu01["inputs"]["exec"][0]["data_format"] == "prometheus"
    assert gpu01["outputs"]["influxdb"][0]["urls"] == ["http://sm01:8428"]
    overrides = gpu01["processors"]["override"]
    assert [(o["tagpass"]["device"], o["tagpass"]["port"]) for o in overrides] == [(["mlx5_0"], ["1"]),
                                                                                  (["mlx5_1"], ["1"])]
    assert overrides[0]["tags"]["cable"] == index.cable_at[("gpu01", "mlx5_0", 1)].id
    assert overrides[0]["tags"]["speed"] == "HDR"  # the fast error tier's key, on the telegraf path too
    assert "nvidia_smi" not in confs["lus01"].get("inputs", {})  # no GPUs there
    # the telegraf-path rules read inputs.infiniband's real fields (stored as infiniband_<field>)
    for metric in IB["telegraf"].values():
        if metric is not None:
            assert metric.removeprefix("infiniband_") in TELEGRAF_INFINIBAND_FIELDS
    assert "-influxSkipSingleField" in files["monitoring/sm01/etc/default/victoria-metrics"]


def test_dcgm_counters_enable_what_the_rules_read() -> None:
    files = render_environment(lab_index(), "lab")
    rules = files["monitoring/sm01/etc/clusterforge/monitoring/rules.yml"]
    counters = [line.split(",")[0] for line in files["monitoring/nodes/dcgm-counters.csv"].splitlines()
                if line and not line.startswith("#")]
    read = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", rules))
    assert read and read <= set(counters), read - set(counters)
    assert "-c 5000" in files["monitoring/nodes/dcgm-exporter.service"]


def test_no_monitoring_section_renders_nothing() -> None:
    data = lab_data()
    del data["monitoring"]
    assert not [p for p in render_environment(index_of(data), "lab") if "monitoring" in p or "telegraf" in p]


def test_several_monitoring_nodes_form_one_alertmanager_cluster() -> None:
    data = lab_data()
    data["monitoring"]["servers"] = ["sm01", "lus01"]
    files = render_environment(index_of(data), "lab")
    sm01 = files["monitoring/sm01/etc/default/prometheus-alertmanager"]
    assert "--cluster.peer=lus01:9094" in sm01 and "--cluster.peer=sm01" not in sm01
    unit = files["monitoring/lus01/etc/systemd/system/clusterforge-vmalert.service"]
    assert "-notifier.url=http://sm01:9093 -notifier.url=http://lus01:9093 -httpListenAddr" in unit
    alone = render_environment(lab_index(), "lab")
    assert 'ARGS="--web.listen-address=:9093 --cluster.listen-address="' in \
        alone["monitoring/sm01/etc/default/prometheus-alertmanager"]
    assert "-notifier.url=http://127.0.0.1:9093 -httpListenAddr" in \
        alone["monitoring/sm01/etc/systemd/system/clusterforge-vmalert.service"]
