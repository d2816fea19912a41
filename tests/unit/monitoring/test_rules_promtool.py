"""The rendered rules under the rule engine's own test tool (`promtool test rules`), on synthetic series.

Each case feeds series and says which alerts fire at which time, and which must not: the
brief's three dynamic thresholds, the operators' alerts, and the false alarms that must stay
quiet (a one-off spike, a counter reset after a reboot, a 2 h heat excursion). Annotations are
left out of these cases (they are Go templates checked once below); labels are compared exactly.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.model.monitoring import Monitoring
from clusterforge.render.env import environment
from clusterforge.render.monitoring_rules import rule_groups

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None,
                                reason="promtool is not installed (apt-get install prometheus)")

HOST = {"host": "gpu01", "rack": "r01", "u": "2", "profile": "gpu-node"}
GPU0 = {**HOST, "gpu": "0"}
PORT = {**HOST, "device": "mlx5_0", "port": "1", "rail": "0", "cable": "C-0001", "leaf": "leaf01",
        "leaf_port": "1", "a_end": "gpu01/mlx5_0/1", "b_end": "leaf01/1", "lanes": "", "speed": "HDR"}
SPEEDS = ["HDR", "NDR"]
"""The link rates the rules are rendered for (one fast tier rule per rate and counter)."""


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items() if v != "")
    return {"series": f"{name}{{{inner}}}", "values": values}


def _rendered_rules(mon: Monitoring, tmp: Path, annotations: bool = False) -> Path:
    groups = rule_groups(mon, ["gpu-node", "h100"], {"gpu-node": 8}, SPEEDS)
    text = environment().get_template("monitoring/rules.yml.j2").render(
        groups=groups, banner=["test"], environment="test", collector=mon.collector)
    data = yaml.safe_load(text)
    if not annotations:
        for g in data["groups"]:
            for r in g["rules"]:
                r.pop("annotations", None)
    path = tmp / "rules.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _promtool(tmp: Path, rules: Path, tests: list[dict[str, Any]], interval: str = "1m") -> None:
    spec = {"rule_files": [rules.name], "evaluation_interval": interval, "tests": tests}
    (tmp / "test.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    done = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=tmp, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _case(series: list[dict[str, str]], checks: list[tuple[str, str, list[dict[str, str]]]],
          interval: str = "1m") -> dict[str, Any]:
    return {"interval": interval, "input_series": series,
            "alert_rule_test": [{"eval_time": at, "alertname": name,
                                 "exp_alerts": [{"exp_labels": labels} for labels in fired]}
                                for at, name, fired in checks]}


def _mon(**kw: Any) -> Monitoring:
    return Monitoring(servers=["mon01"], collector="exporters", **kw)


def test_hbm_heat_three_hours_fires_and_a_two_hour_excursion_does_not(tmp_path: Path) -> None:
    hot = {**GPU0, "gpu": "1"}
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(
        [_series("DCGM_FI_DEV_MEMORY_TEMP", hot, "90x300"),
         # 2 h at 90 °C between hours at 80 °C: never 3 h above 85
         _series("DCGM_FI_DEV_MEMORY_TEMP", GPU0, "80x120 90x120 80x120")],
        [("2h50m", "HbmTemperatureHigh", []),                              # not yet 3 h of data above
         ("3h05m", "HbmTemperatureHigh", [{**hot, "level": "3"}]),
         ("4h", "HbmTemperatureHigh", [{**hot, "level": "3"}]),
         ("5h30m", "HbmTemperatureHigh", [{**hot, "level": "3"}])])])


def test_hbm_threshold_overridden_per_profile(tmp_path: Path) -> None:
    h100 = {**GPU0, "host": "gpu09", "profile": "h100"}
    mon = _mon(profiles={"h100": {"hbm_temp_c": 80}})
    _promtool(tmp_path, _rendered_rules(mon, tmp_path), [_case(
        [_series("DCGM_FI_DEV_MEMORY_TEMP", GPU0, "82x240"), _series("DCGM_FI_DEV_MEMORY_TEMP", h100, "82x240")],
        [("3h30m", "HbmTemperatureHigh", [{**h100, "level": "3", "thresholds": "h100"}])])])


def test_ecc_growth_day_over_day_with_baseline_and_reboot(tmp_path: Path) -> None:
    growing = {**GPU0, "gpu": "2"}         # 144/day for two days, then 288/day
    steady_reboot = {**GPU0, "gpu": "3"}   # 144/day, the counter reset to 0 by a reboot at 36 h: no growth
    small = {**GPU0, "gpu": "4"}           # 10/day -> 30/day: +200 % but below the 50/day baseline
    series = [
        _series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", growing, "0+0.1x2880 288+0.2x1440"),
        _series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", steady_reboot, "0+0.1x2160 0+0.1x2160"),
        _series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", small, "0+0.00694x2880 20+0.0208x1440"),
    ]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("1d12h", "GpuEccGrowth", []),   # no whole day before yet: nothing to compare with
        ("2d12h", "GpuEccGrowth", [{**growing, "level": "2"}]),
        ("2d23h", "GpuEccGrowth", [{**growing, "level": "2"}]),
        ("2d23h", "GpuEccProjected", []),
    ])], interval="5m")


def test_ecc_projection_72h_through_the_recording_rule(tmp_path: Path) -> None:
    accel = {**GPU0, "gpu": "5"}  # 1440/day, 2880/day, then 4320/day: 72 h ahead ~8,600/day
    steady = {**GPU0, "gpu": "6"}
    series = [_series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", accel, "0+1x1440 1440+2x1440 4320+3x1440"),
              _series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", steady, "0+3x4320")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("2d23h", "GpuEccProjected", [{**accel, "level": "3"}]),
    ])], interval="5m")


def test_ber_against_its_own_median(tmp_path: Path) -> None:
    bad = {**PORT, "cable": "C-0002"}
    spike = {**PORT, "cable": "C-0003"}   # one sample 10,000x: a spike
    series = [_series("cf_optic_prefec_ber", bad, "1e-9x2880 5e-6x60"),
              _series("cf_optic_prefec_ber", spike, "1e-9x2000 1e-5 1e-9x939"),
              _series("cf_optic_prefec_ber", PORT, "1e-9x2940")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("1d12h", "OpticBerHigh", []),
        ("1d9h25m", "OpticBerHigh", []),
        ("2d30m", "OpticBerHigh", [{**{k: v for k, v in bad.items() if v}, "level": "2"}]),
    ])])


def test_symbol_errors_sustained_fire_spike_and_reset_do_not(tmp_path: Path) -> None:
    rising = {**PORT, "cable": "C-0010"}
    burst = {**PORT, "cable": "C-0011"}
    reset = {**PORT, "cable": "C-0012"}
    series = [_series("node_infiniband_symbol_error_total", rising, "0x30 0+2x90"),
              _series("node_infiniband_symbol_error_total", burst, "0x30 500x90"),
              _series("node_infiniband_symbol_error_total", reset, "1000000x60 0x60")]
    labels = {k: v for k, v in rising.items() if v}
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("50m", "IbSymbolErrors", []),   # rising for 20 min: not yet every window of the last 30
        ("70m", "IbSymbolErrors", [{**labels, "level": "2"}]),
        ("115m", "IbSymbolErrors", [{**labels, "level": "2"}]),
    ])])


def test_symbol_errors_of_a_series_younger_than_half_an_hour_wait_for_it(tmp_path: Path) -> None:
    """A port first scraped 10 min in (a fresh deploy, a new node) that throws 600 errors an hour from its first
    minute: its subquery has steps only where it has samples, so every step rises; the slow tier still waits
    until the series is half an hour old (the lab's CI run saw it fire 3 minutes into a fault)."""
    young = {**PORT, "cable": "C-0013"}
    labels = {k: v for k, v in young.items() if v}
    series = [_series("node_infiniband_symbol_error_total", young, "_x10 0+10x80")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("15m", "IbSymbolErrors", []),
        ("25m", "IbSymbolErrors", []),
        ("39m", "IbSymbolErrors", []),
        ("45m", "IbSymbolErrors", [{**labels, "level": "2"}]),
    ])])


def _counter(per_h: float, start_s: int, end_s: int, base: int = 0, step_s: int = 5) -> str:
    """An integer error counter sampled every `step_s` from 0 to `end_s`: `base` until `start_s`, then rising
    `per_h` an hour (whole errors, as the HCA counts them), in promtool's explicit notation."""
    return " ".join(str(base + int(max(0, t - start_s) * per_h / 3600)) for t in range(0, end_s + 1, step_s))


FAULT_S = 600
"""The fast tier cases: the fault starts 10 min in (a store with history of a quiet port before it)."""


def test_fast_tier_fires_within_three_minutes_of_a_bad_link(tmp_path: Path) -> None:
    """600 errors an hour (the lab's `lab fault errors`) on an HDR port: the fast tier (144 an hour at HDR)
    fires once all three windows hold the rise, three minutes after the fault started; the slow tier is still
    quiet then (it wants 30 minutes of rise). Receive errors too, at level 2 (the slow tier's is 1)."""
    bad = {**PORT, "cable": "C-0020"}
    labels = {k: v for k, v in bad.items() if v}
    series = [_series("node_infiniband_symbol_error_total", bad, _counter(600, FAULT_S, 1800)),
              _series("node_infiniband_port_errors_received_total", bad, _counter(600, FAULT_S, 1800))]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("10m30s", "IbSymbolErrorsFast", []),   # half a minute of errors: one window only
        ("11m", "IbSymbolErrorsFast", []),      # the windows before the fault are still clean
        ("12m", "IbSymbolErrorsFast", []),
        ("13m", "IbSymbolErrorsFast", [{**labels, "level": "2"}]),
        ("13m", "IbReceiveErrorsFast", [{**labels, "level": "2"}]),
        ("13m", "IbSymbolErrors", []),          # the slow tier has not seen 30 minutes of it
        ("25m", "IbSymbolErrorsFast", [{**labels, "level": "2"}]),
    ], interval="5s")])


def test_fast_tier_quiet_for_a_burst_a_counter_reset_and_a_slow_rise(tmp_path: Path) -> None:
    """A one-off burst of 500 errors lies in one window only, and one spread over 25 s (five scrapes) never
    covers a whole window, wherever the windows' boundaries fall; a reboot's counter reset (to 0, or to the few
    errors of the link's training) is no rise; 20 an hour is the slow tier's, which fires after half an hour
    while the fast tier stays quiet."""
    burst = {**PORT, "cable": "C-0021"}
    reset = {**PORT, "cable": "C-0022"}
    trained = {**PORT, "cable": "C-0023"}
    spread = {**PORT, "cable": "C-0025"}
    slow = {**PORT, "cable": "C-0024"}
    n = 3600 // 5 + 1
    series = [
        _series("node_infiniband_symbol_error_total", burst, " ".join(["0"] * 120 + ["500"] * (n - 120))),
        _series("node_infiniband_symbol_error_total", reset, " ".join(["1000000"] * 120 + ["0"] * (n - 120))),
        _series("node_infiniband_symbol_error_total", trained,
                " ".join(["1000000"] * 120 + ["0"] * 3 + ["7"] * (n - 123))),
        _series("node_infiniband_symbol_error_total", slow, _counter(20, 0, 3600)),
        _series("node_infiniband_symbol_error_total", spread,
                " ".join(["0"] * 120 + ["100", "200", "300", "400"] + ["500"] * (n - 124))),
    ]
    quiet = [(t, "IbSymbolErrorsFast", []) for t in ("10m5s", "10m30s", "11m", "11m10s", "11m15s", "11m30s", "12m",
                                                      "12m10s", "12m15s", "13m", "15m", "55m")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        *quiet,
        ("55m", "IbSymbolErrors", [{**{k: v for k, v in slow.items() if v}, "level": "2"}]),
    ], interval="5s")])


def test_fast_tier_threshold_per_link_rate(tmp_path: Path) -> None:
    """200 an hour is over HDR's 144 but under NDR's 288 (twice the bits, twice the errors for one BER); 400
    fires at NDR; a port without a speed (its link's rate unknown) has no fast tier (the slow one still
    watches it)."""
    hdr = {**PORT, "cable": "C-0030"}
    ndr = {**PORT, "cable": "C-0031", "speed": "NDR"}
    ndr_bad = {**PORT, "cable": "C-0032", "speed": "NDR"}
    unknown = {**PORT, "cable": "C-0033", "speed": ""}
    series = [_series("node_infiniband_symbol_error_total", hdr, _counter(200, FAULT_S, 1200)),
              _series("node_infiniband_symbol_error_total", ndr, _counter(200, FAULT_S, 1200)),
              _series("node_infiniband_symbol_error_total", ndr_bad, _counter(400, FAULT_S, 1200)),
              _series("node_infiniband_symbol_error_total", unknown, _counter(3600, FAULT_S, 1200))]
    fired = [{**{k: v for k, v in x.items() if v}, "level": "2"} for x in (hdr, ndr_bad)]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("14m", "IbSymbolErrorsFast", fired), ("19m", "IbSymbolErrorsFast", fired)], interval="5s")])


def test_fast_tier_never_below_a_profiles_slow_threshold(tmp_path: Path) -> None:
    """A profile whose slow tier is set to 500 an hour gets a fast tier of 500 there (not HDR's 144): 300 an
    hour fires on the default profile's port and stays quiet on that profile's."""
    default = {**PORT, "cable": "C-0040"}
    tolerant = {**PORT, "cable": "C-0041", "host": "gpu09", "profile": "h100"}
    mon = _mon(profiles={"h100": {"symbol_errors_per_h": 500}})
    series = [_series("node_infiniband_symbol_error_total", default, _counter(300, FAULT_S, 1200)),
              _series("node_infiniband_symbol_error_total", tolerant, _counter(300, FAULT_S, 1200))]
    _promtool(tmp_path, _rendered_rules(mon, tmp_path), [_case(series, [
        ("15m", "IbSymbolErrorsFast", [{**{k: v for k, v in default.items() if v}, "level": "2",
                                        "thresholds": "default"}])], interval="5s")])


def test_fast_tier_annotations_name_the_cable_its_ends_and_lanes(tmp_path: Path) -> None:
    labels = {k: v for k, v in PORT.items() if v}
    labels["lanes"] = "trunk T-01 lane group 3, patch panels PP-A (rack r01 U42) / PP-B (rack core U42)"
    test = _case([_series("node_infiniband_symbol_error_total", labels, _counter(600, FAULT_S, 1200))], [],
                 interval="5s")
    test["alert_rule_test"] = [{"eval_time": "15m", "alertname": "IbSymbolErrorsFast", "exp_alerts": [{
        "exp_labels": {**labels, "level": "2"},
        "exp_annotations": {
            "summary": "symbol errors at 600 an hour at gpu01 mlx5_0 port 1 (rack r01 U2), cable C-0001 to leaf01 "
                       "port 1: above 144 an hour (a BER of 2e-13 at HDR) in each of 3 consecutive 60 s windows",
            "repair": "clean or reseat the optic at leaf01 port 1: cable C-0001 (gpu01/mlx5_0/1 to leaf01/1), "
                      "trunk T-01 lane group 3, patch panels PP-A (rack r01 U42) / PP-B (rack core U42); "
                      "replace the cable if errors continue"}}]}]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path, annotations=True), [test])


def test_port_down_flapping_and_receive_errors(tmp_path: Path) -> None:
    cabled = {k: v for k, v in PORT.items() if v}
    uncabled = {**HOST, "device": "mlx5_1", "port": "1"}
    series = [_series("node_infiniband_physical_state_id", cabled, "5x10 3x20"),
              _series("node_infiniband_physical_state_id", uncabled, "2x30"),
              _series("node_infiniband_link_downed_total", cabled, "0+1x60"),  # wait: 1 per minute
              _series("node_infiniband_port_errors_received_total", cabled, "0+1x60")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("11m", "IbPortDown", []),
        ("14m", "IbPortDown", [{**cabled, "level": "2"}]),
        ("40m", "IbPortFlapping", [{**cabled, "level": "2"}]),
        ("45m", "IbReceiveErrors", [{**cabled, "level": "1"}]),
    ])])


def test_gpu_xid_classes_fallen_off_bus_row_remap(tmp_path: Path) -> None:
    g = [{**GPU0, "gpu": str(i)} for i in range(8)]
    series = [_series("DCGM_FI_DEV_XID_ERRORS", g[0], "48x10"),
              _series("DCGM_FI_DEV_XID_ERRORS", g[1], "13x10"),
              _series("DCGM_FI_DEV_XID_ERRORS", g[2], "79x10"),
              _series("DCGM_FI_DEV_XID_ERRORS", g[3], "0x10"),
              _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", g[4], "0 0 1x8"),
              # gpu02 shows 7 of its profile's 8 GPUs
              *[_series("DCGM_FI_DEV_GPU_TEMP", {**x, "host": "gpu02"}, "40x10") for x in g[:7]]]
    gpu02 = {"host": "gpu02", "rack": "r01", "u": "2", "profile": "gpu-node"}
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("5m", "GpuXidError", [{**g[0], "level": "2", "xid_class": "memory"},
                               {**g[1], "level": "1", "xid_class": "application"}]),
        ("5m", "GpuFallenOffBus", [{**g[2], "level": "3"}, {**gpu02, "level": "3"}]),
        ("1m", "GpuRowRemapFailure", []),
        ("5m", "GpuRowRemapFailure", [{**g[4], "level": "3"}]),
    ])])


def test_nvlink_errors_summed_over_the_four_counters(tmp_path: Path) -> None:
    g0, g1 = GPU0, {**GPU0, "gpu": "1"}
    series = [_series(f"DCGM_FI_DEV_NVLINK_{c}_COUNT_TOTAL", g0, "0x30 0+2x90")
              for c in ("CRC_FLIT_ERROR", "CRC_DATA_ERROR", "REPLAY_ERROR", "RECOVERY_ERROR")]
    series.append(_series("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", g1, "0x30 500x90"))  # a one-off burst
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("50m", "GpuNvlinkErrors", []),
        ("75m", "GpuNvlinkErrors", [{**g0, "level": "2"}]),
    ])])


def test_host_down_and_no_master_sm(tmp_path: Path) -> None:
    series = [_series("up", {**HOST, "exporter": "node"}, "1x5 0x10"),
              _series("up", {**HOST, "host": "gpu02", "exporter": "node"}, "1x15"),
              _series("cf_ib_sm_master", {"host": "sm01", "rack": "core", "u": "20"}, "1x5 0x10")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("5m", "HostDown", []),
        ("9m", "HostDown", []),  # down 3 min, but the store is not 10 min old: it may be a fresh deploy's
        ("12m", "HostDown", [{**HOST, "exporter": "node", "level": "2"}]),
        ("4m", "NoMasterSubnetManager", []),
        ("9m", "NoMasterSubnetManager", [{"level": "3"}]),
    ])])


def test_no_false_page_for_a_fresh_store_and_a_missing_sm_still_pages(tmp_path: Path) -> None:
    """A fresh deploy: the collectors are scraped from the start, ib-health's first cf_ib_sm_master lands 2 min
    later: nothing fires (it did: absent_over_time is true on a store that never held the series). An SM series
    that never comes, or that vanishes, pages once the collectors have been up 10 min."""
    node = {**HOST, "exporter": "node"}
    sm = {"host": "sm01", "rack": "core", "u": "20"}
    rules = _rendered_rules(_mon(), tmp_path)
    fresh = [_series("up", node, "1x40"), _series("cf_ib_sm_master", sm, "_x2 1x38")]
    never = [_series("up", node, "1x40")]
    vanished = [_series("up", node, "1x40"), _series("cf_ib_sm_master", sm, "1x10 _x30")]
    _promtool(tmp_path, rules, [
        _case(fresh, [(t, "NoMasterSubnetManager", []) for t in ("30s", "1m", "2m", "5m", "11m", "30m")]),
        _case(never, [("5m", "NoMasterSubnetManager", []), ("9m", "NoMasterSubnetManager", []),
                      ("11m", "NoMasterSubnetManager", [{"level": "3"}])]),
        _case(vanished, [("12m", "NoMasterSubnetManager", []),
                         ("17m", "NoMasterSubnetManager", [{"level": "3"}])]),
    ])


def test_no_host_down_for_the_first_failed_scrapes_of_a_fresh_store(tmp_path: Path) -> None:
    """A fresh deploy: vmagent scrapes a GPU node before its node_exporter has started (the lab's first run in CI
    paged HostDown for all eight at once): no HostDown, even 5 min late; a node that never comes up is down once
    it has been scraped for 10 min; one that was up and stops, host_down_m (2 min here) after."""
    late = {**HOST, "exporter": "node"}
    never = {**HOST, "host": "gpu02", "exporter": "node"}
    stops = {**HOST, "host": "gpu03", "exporter": "node"}
    series = [_series("up", late, "0x5 1x35"), _series("up", never, "0x40"), _series("up", stops, "1x12 0x28")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        *[(t, "HostDown", []) for t in ("0m", "1m", "2m", "5m", "9m")],
        ("10m", "HostDown", [{**never, "level": "2"}]),
        ("14m", "HostDown", [{**never, "level": "2"}]),
        ("15m", "HostDown", [{**never, "level": "2"}, {**stops, "level": "2"}]),
        ("30m", "HostDown", [{**never, "level": "2"}, {**stops, "level": "2"}]),
    ])])


def _ost(host: str, target: str = "lustre-OST0003") -> dict[str, str]:
    return {**HOST, "host": host, "target": target, "kind": "osc"}


def test_lustre_eviction_fires_for_an_hour_after_the_newest(tmp_path: Path) -> None:
    once, twice, never = _ost("gpu01"), _ost("gpu03"), _ost("gpu02")
    # ib-health prints the newest EVICTED time of the import's history once there is one (promtool's clock
    # starts at unix time 0): gpu01 evicted at 600 s, gpu03 at 600 s and again at 3000 s, gpu02 never
    series = [_series("cf_lustre_import_last_evicted_seconds", once, "_x10 600x110"),
              _series("cf_lustre_import_last_evicted_seconds", twice, "_x10 600x40 3000x70"),
              _series("cf_lustre_import_full", never, "1x120"),
              _series("cf_lustre_import_full", once, "1x120")]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("5m", "LustreClientEvicted", []),
        ("20m", "LustreClientEvicted", [{**once, "level": "2"}, {**twice, "level": "2"}]),
        ("69m", "LustreClientEvicted", [{**once, "level": "2"}, {**twice, "level": "2"}]),
        ("71m", "LustreClientEvicted", [{**twice, "level": "2"}]),    # gpu01's eviction is over an hour old
        ("110m", "LustreClientEvicted", []),                          # and gpu03's (3000 s) too
        ("60m", "LustreImportDown", []),
    ])])


def test_lustre_import_down_ten_minutes_idle_and_new_mounts_quiet(tmp_path: Path) -> None:
    lost, idle, mounting, woke = _ost("gpu01"), _ost("gpu02"), _ost("gpu03"), _ost("gpu04")
    series = [_series("cf_lustre_import_full", lost, "1x10 0x40"),        # FULL, then DISCONN/CONNECTING
              _series("cf_lustre_import_full", idle, "1x5 _x40"),          # IDLE: ib-health prints no sample
              _series("cf_lustre_import_full", mounting, "_x30 0x5 1x15"),  # mounted at 31 min, FULL at 36
              _series("cf_lustre_import_full", woke, "1x5 _x20 0x25")]     # IDLE, then cannot reconnect
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path), [_case(series, [
        ("20m", "LustreImportDown", []),
        ("22m", "LustreImportDown", [{**lost, "level": "2"}]),
        ("34m", "LustreImportDown", [{**lost, "level": "2"}]),
        ("36m", "LustreImportDown", [{**lost, "level": "2"}, {**woke, "level": "2"}]),
        ("45m", "LustreImportDown", [{**lost, "level": "2"}, {**woke, "level": "2"}]),
    ])])


def test_lustre_annotations_name_the_client_and_the_target(tmp_path: Path) -> None:
    evicted = _ost("gpu01")
    test = _case([_series("cf_lustre_import_last_evicted_seconds", evicted, "600x60")], [])
    test["alert_rule_test"] = [{"eval_time": "30m", "alertname": "LustreClientEvicted", "exp_alerts": [{
        "exp_labels": {**evicted, "level": "3"},
        "exp_annotations": {
            "summary": "lustre client gpu01 (rack r01 U2) was evicted by lustre-OST0003 (osc) 20m 0s ago",
            "repair": "check the LNet/IB link of gpu01 (its HCA port's errors, lctl ping to the server's NID) "
                      "and the log of the server of lustre-OST0003 for why it evicted the client; jobs on "
                      "gpu01 may have lost I/O"}}]}]
    mon = _mon(alerts={"levels": {"LustreClientEvicted": 3}})
    _promtool(tmp_path, _rendered_rules(mon, tmp_path, annotations=True), [test])


def test_levels_come_from_the_model(tmp_path: Path) -> None:
    mon = _mon(alerts={"levels": {"HostDown": 3}})
    series = [_series("up", {**HOST, "exporter": "node"}, "0x12")]
    _promtool(tmp_path, _rendered_rules(mon, tmp_path), [_case(series, [
        ("11m", "HostDown", [{**HOST, "exporter": "node", "level": "3"}])])])


def test_annotations_name_the_place_and_the_repair(tmp_path: Path) -> None:
    labels = {k: v for k, v in PORT.items() if v}
    labels["lanes"] = "trunk T-01 lane group 3, patch panels PP-A (rack r01 U42) / PP-B (rack core U42)"
    series = [_series("node_infiniband_symbol_error_total", labels, "0+2x60")]
    test = _case(series, [])
    test["alert_rule_test"] = [{"eval_time": "45m", "alertname": "IbSymbolErrors", "exp_alerts": [{
        "exp_labels": {**labels, "level": "2"},
        "exp_annotations": {
            "summary": "symbol errors rising at gpu01 mlx5_0 port 1 (rack r01 U2), cable C-0001 to leaf01 port 1 "
                       "(90 in 1 h)",
            "repair": "clean or reseat the optic at leaf01 port 1: cable C-0001 (gpu01/mlx5_0/1 to leaf01/1), "
                      "trunk T-01 lane group 3, patch panels PP-A (rack r01 U42) / PP-B (rack core U42); "
                      "replace the cable if errors continue"}}]}]
    _promtool(tmp_path, _rendered_rules(_mon(), tmp_path, annotations=True), [test])


def test_no_alert_holds_state_in_memory() -> None:
    """Long holds are queries over stored samples: no rule carries `for:` (lost when the engine restarts)."""
    for collector in ("exporters", "telegraf"):
        for g in rule_groups(Monitoring(servers=["m"], collector=collector), ["gpu-node"], {"gpu-node": 8},
                             SPEEDS):
            for rule in g["rules"]:
                assert "for" not in rule, rule


@pytest.mark.parametrize("collector", ["exporters", "telegraf"])
def test_rules_pass_promtool_check_with_overrides(tmp_path: Path, collector: str) -> None:
    mon = Monitoring(servers=["m"], collector=collector,
                     profiles={"h100": {"hbm_temp_c": 80}, "gpu-node": {"ber_factor": 500}})
    rules = _rendered_rules(mon, tmp_path, annotations=True)
    done = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    text = rules.read_text()
    assert 'profile=~"h100"' in text and 'profile!~"gpu-node|h100"' in text
    ib = "infiniband_symbol_error" if collector == "telegraf" else "node_infiniband_symbol_error_total"
    assert f"increase({ib}{{" in text
    assert ("IbPortDown" in text) == (collector == "exporters")
