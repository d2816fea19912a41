"""The fast error tier's figures (catalog link_health.yaml `fast_errors`): one for every link rate the model
knows, each the arithmetic its reason states, and the rules rendered for the rates an inventory's links run at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.catalog import catalog
from clusterforge.model.index import Index
from clusterforge.model.monitoring import Monitoring, Thresholds
from clusterforge.render.context_monitoring import link_speeds, port_labels
from clusterforge.render.fabric import FabricView
from clusterforge.render.monitoring_rules import fast_errors_per_h, fast_window_s, rule_groups

ROOT = Path(__file__).resolve().parents[3]
LAB_FAULT_PER_H = 600
"""`lab fault errors CABLE` without --rate (cli/lab: 'symbol and receive errors an hour (600)')."""


def _known_rates() -> set[str]:
    """Every rate a port can be declared at or run at: the rate table, the HCAs' and the switches' (split too)."""
    cat = catalog()
    out = set(cat.rates)
    for hca in cat.hcas.values():
        out |= {hca.max_rate, *hca.rates}
    for sw in cat.switches.values():
        out.add(sw.rate)
        if sw.split is not None:
            out.add(sw.split.rate)
    return out


def test_every_link_rate_has_a_fast_figure_with_its_reason_and_source() -> None:
    fast = catalog().link_health.fast_errors
    assert set(fast.per_rate) == _known_rates(), "a rate without a figure, or a figure for no rate"
    assert fast.ber_source.strip() and "1E-12" in fast.ber_source and "1E-15" in fast.ber_source
    for rate, entry in fast.per_rate.items():
        info = catalog().rates[rate]
        bits_per_h = info.gbps * 1e9 * 3600
        assert entry.errors_per_h == pytest.approx(bits_per_h * fast.ber, rel=1e-9), rate
        # the reason states that arithmetic: the rate's Gb/s, its bits an hour and the result
        assert entry.reason.startswith(f"{info.gbps} Gb/s"), (rate, entry.reason)
        assert f"{bits_per_h:.3G} bits an hour" in entry.reason, (rate, entry.reason)
        assert re.search(rf"= {entry.errors_per_h:g} an hour", entry.reason), (rate, entry.reason)


def test_fast_figures_sit_between_a_healthy_link_and_the_specification() -> None:
    """Far above the slow tier and a healthy cable, below the specification's limit (the operator hears of the
    link before it is out of spec), and more than one error in every window (a healthy link's rare single
    error cannot meet every window)."""
    fast = catalog().link_health.fast_errors
    assert 1e-15 * 100 <= fast.ber < catalog().link_health.ber.effective_max
    window_s = fast_window_s(Monitoring(servers=["m"]))
    slow = Thresholds()
    for rate, entry in fast.per_rate.items():
        assert entry.errors_per_h >= 5 * max(slow.symbol_errors_per_h, slow.rcv_errors_per_h), rate
        # one error in a window measured over at most window + one 5 s interval is under the figure
        assert 3600 / (window_s - 5) < entry.errors_per_h, rate
    assert fast_errors_per_h("HDR") < LAB_FAULT_PER_H, "the lab's `lab fault errors` must reach the fast tier"


def test_an_unknown_rate_is_named() -> None:
    with pytest.raises(ValueError, match="'QDR' has no fast error figure"):
        fast_errors_per_h("QDR")


@pytest.mark.parametrize("env", ["lab", "prod", "staging"])
def test_each_inventory_gets_a_fast_rule_per_link_rate_of_its_ports(env: str) -> None:
    index = Index(load_checked(ROOT / "inventories" / env).inv)
    fab = FabricView(index)
    speeds = link_speeds(fab)
    labelled = {p["labels"]["speed"] for n in index.inv.nodes for p in port_labels(fab, n.name)
                if "speed" in p["labels"]}
    assert speeds and set(speeds) == labelled
    mon = index.inv.monitoring or Monitoring(servers=[index.inv.nodes[0].name])
    groups = {g["name"]: g for g in rule_groups(mon, sorted(index.profiles), {}, speeds)}
    fast = groups["clusterforge-fabric-fast"]["rules"]
    for speed in speeds:
        for name in ("IbSymbolErrorsFast", "IbReceiveErrorsFast"):
            assert [r for r in fast if r["alert"] == name and f'speed="{speed}"' in r["expr"]], (speed, name)


def test_no_cabled_rate_no_fast_group() -> None:
    groups = rule_groups(Monitoring(servers=["m"]), ["gpu-node"], {"gpu-node": 8})
    assert "clusterforge-fabric-fast" not in {g["name"] for g in groups}
