"""The monitoring section: the brief's defaults, per-profile overrides, levels, strict text fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from clusterforge.inventory.load import load_inventory
from clusterforge.model.monitoring import (
    ALERT_NAMES,
    DEFAULT_LEVELS,
    PORT_ALERTS,
    Monitoring,
    ThresholdOverrides,
)
from clusterforge.render.monitoring_rules import rule_groups

ROOT = Path(__file__).resolve().parents[3]


def test_defaults_are_the_briefs() -> None:
    mon = Monitoring(servers=["mon01"])
    t = mon.thresholds
    assert (t.hbm_temp_c, t.hbm_hold_h, t.ecc_growth_percent, t.ecc_projection_h, t.ber_factor,
            t.ber_baseline_days) == (85, 3, 15, 72, 1000, 7)
    assert (mon.interval_s, mon.store, mon.collector) == (5, "victoriametrics", "telegraf")


def test_profile_overrides_only_what_they_name() -> None:
    mon = Monitoring(servers=["mon01"], thresholds={"hbm_temp_c": 88},
                     profiles={"h100": ThresholdOverrides(hbm_temp_c=80, ber_factor=500)})
    h100, other = mon.thresholds_for("h100"), mon.thresholds_for("a100")
    assert (h100.hbm_temp_c, h100.ber_factor, h100.hbm_hold_h) == (80, 500, 3)
    assert (other.hbm_temp_c, other.ber_factor) == (88, 1000)
    assert mon.thresholds_for(None) == mon.thresholds


def test_levels_default_and_override() -> None:
    mon = Monitoring(servers=["m"], alerts={"levels": {"IbSymbolErrors": 3}})
    assert mon.level("IbSymbolErrors") == 3
    assert mon.level("HbmTemperatureHigh") == DEFAULT_LEVELS["HbmTemperatureHigh"] == 3
    with pytest.raises(ValidationError):
        Monitoring(servers=["m"], alerts={"levels": {"NoSuchAlert": 2}})
    with pytest.raises(ValidationError):
        Monitoring(servers=["m"], alerts={"levels": {"HostDown": 4}})


@pytest.mark.parametrize("webhook", [
    "ftp://pager/x", "https://pager.example.org/a b", "https://u:p@pager/x", "https://pager/x\r\nHost: y",
    "https://pager/{{ 7*7 }}", "https://pager/\"x",
])
def test_webhook_must_be_a_plain_url(webhook: str) -> None:
    with pytest.raises(ValidationError):
        Monitoring(servers=["m"], alerts={"page": {"webhook": webhook}})


def test_either_servers_or_role() -> None:
    with pytest.raises(ValidationError, match="either"):
        Monitoring()
    with pytest.raises(ValidationError, match="either"):
        Monitoring(servers=["a"], server_role="management")
    assert Monitoring(server_role="management").servers == []


def test_lab_and_prod_inventories_declare_monitoring() -> None:
    lab, _ = load_inventory(ROOT / "inventories" / "lab")
    prod, _ = load_inventory(ROOT / "inventories" / "prod")
    assert lab.monitoring is not None and lab.monitoring.collector == "exporters"
    assert lab.monitoring.alerts.page is not None and lab.monitoring.alerts.page.drain
    assert prod.monitoring is not None and prod.monitoring.collector == "telegraf"


def test_alert_names_levels_and_rules_agree() -> None:
    """AlertName, DEFAULT_LEVELS and PORT_ALERTS name exactly the alerts the rendered rules define
    (over both collectors; telegraf has no port-state series, hence no IbPortDown)."""
    assert len(ALERT_NAMES) == len(set(ALERT_NAMES))
    assert list(DEFAULT_LEVELS) == list(ALERT_NAMES)
    rendered: set[str] = set()
    per_port: set[str] = set()
    for collector in ("exporters", "telegraf"):
        for group in rule_groups(Monitoring(servers=["m"], collector=collector), ["gpu-node"], {"gpu-node": 8},
                                 ["HDR"]):
            for rule in group["rules"]:
                if "alert" in rule:
                    rendered.add(rule["alert"])
                    if "$labels.port" in rule["annotations"]["summary"]:
                        per_port.add(rule["alert"])
    assert rendered == set(ALERT_NAMES)
    assert per_port == PORT_ALERTS
