"""The alert and recording rules, built from the monitoring section (vmalert / Prometheus rule groups).

Every expression is written so that a restart of the rule engine does not reset it: long holds
are `min_over_time` over stored samples (never `for: 3h`, whose pending state lives in memory),
growth is `increase` (which counts through a counter reset after a reboot), and the heavy parts
(the day's ECC increase, the BER median over days) are recording rules whose results are stored.
A one-off spike does not alert: rates must hold in every window of the last half hour. A link that suddenly
throws errors far faster than that has a fast tier (IbSymbolErrorsFast, IbReceiveErrorsFast): its link rate's
figure from the catalog (link_health.yaml `fast_errors`), exceeded in each of three consecutive short windows.

Metric names are the collectors' own: dcgm-exporter's `DCGM_FI_*` on both paths (Telegraf scrapes
dcgm-exporter with inputs.prometheus; VictoriaMetrics stores single-field lines under the
measurement name with `-influxSkipSingleField`), node_exporter's `node_infiniband_*` on the
exporters path, Telegraf's `infiniband_<field>` on the telegraf path, and `cf_*` for what the
clusterforge ib-health script writes (optics, the master SM, the Lustre client's imports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog import catalog
from ..model.monitoring import AlertName, Monitoring, Thresholds
from ..util.numtext import num_text

GPU = {
    "gpu_temp": "DCGM_FI_DEV_GPU_TEMP",
    "hbm_temp": "DCGM_FI_DEV_MEMORY_TEMP",
    "ecc_sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "xid": "DCGM_FI_DEV_XID_ERRORS",
    "row_remap_failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "nvlink": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL|DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
              "|DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL|DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}
"""dcgm-exporter field names (its counters file must enable each: render writes one that does)."""

IB: dict[str, dict[str, str | None]] = {
    "exporters": {
        "symbol": "node_infiniband_symbol_error_total",
        "rcv": "node_infiniband_port_errors_received_total",
        "downed": "node_infiniband_link_downed_total",
        "phys_state": "node_infiniband_physical_state_id",
    },
    "telegraf": {
        "symbol": "infiniband_symbol_error",
        "rcv": "infiniband_port_rcv_errors",
        "downed": "infiniband_link_downed",
        "phys_state": None,  # inputs.infiniband reads the counters directory only
    },
}
OPTIC_BER = "cf_optic_prefec_ber"
OPTIC_TEMP = "cf_optic_temperature_celsius"
SM_MASTER = "cf_ib_sm_master"
LUSTRE_FULL = "cf_lustre_import_full"
LUSTRE_EVICTED = "cf_lustre_import_last_evicted_seconds"
LUSTRE_EVICTED_S = 3600
"""LustreClientEvicted fires this long after the newest eviction in an import's state history."""
LUSTRE_DOWN_M = 10
"""LustreImportDown: minutes of samples of an import (IDLE gives none) all short of FULL."""
LINK_UP = 5
"""PortPhysicalState LinkUp (IBTA): below it the port is asleep, polling, disabled or training."""

XID_CLASSES: tuple[tuple[str, tuple[int, ...], str], ...] = (
    ("memory", (48, 63, 64, 92, 94, 95), "drain {{ $labels.host }} and run the GPU memory diagnostics "
     "(dcgmi diag -r 3); replace the GPU if row remapping is exhausted"),
    ("nvlink", (74,), "check the NVLink/NVSwitch of {{ $labels.host }}: dcgmi diag and nvidia-smi nvlink -e; "
     "reseat the baseboard if errors persist"),
    ("firmware", (119, 120), "reset the GPU of {{ $labels.host }} (GSP firmware error); update the driver if it "
     "recurs"),
    ("application", (13, 31, 43, 45), "no hardware action: an application fault (recorded)"),
)
"""XID classes (NVIDIA's XID catalog); 79 (fallen off the bus) has its own alert."""

WHERE = "{{ $labels.host }} (rack {{ $labels.rack }} U{{ $labels.u }})"
PORT = ("{{ $labels.host }} {{ $labels.device }} port {{ $labels.port }} (rack {{ $labels.rack }} U{{ $labels.u }})"
        "{{ if $labels.cable }}, cable {{ $labels.cable }} to {{ $labels.leaf }} port {{ $labels.leaf_port }}"
        "{{ end }}")
FAST_WINDOW_MIN_S = 60
FAST_WINDOW_SAMPLES = 6
FAST_WINDOWS = 3
"""The fast error tier's window: a minute, or six collection intervals where those are longer (a rate over
fewer samples is noise); the rate must exceed its figure in FAST_WINDOWS consecutive such windows. With three, a
burst must last longer than a whole window to fire: with two, one spread over a few scrapes that straddled the
windows' boundary lay in both."""
FAST_GROUP_INTERVAL = "30s"
"""clusterforge-fabric-fast is evaluated twice a minute (vmalert's default is once): half a minute less to
the first alert, at the cost of the few fast rules run twice as often."""
OPTIC_REPAIR = ("clean or reseat the optic at {{ $labels.leaf }} port {{ $labels.leaf_port }}: cable "
                "{{ $labels.cable }} ({{ $labels.a_end }} to {{ $labels.b_end }})"
                "{{ if $labels.lanes }}, {{ $labels.lanes }}{{ end }}; replace the cable if errors continue")


@dataclass(frozen=True)
class Variant:
    """Series of some hardware profiles and the thresholds that apply to them."""

    matcher: str  # '' (every series), 'profile=~"a|b"' or 'profile!~"a|b"'
    t: Thresholds
    name: str = ""  # '' when there is one variant; else 'default' or the profiles, `thresholds` label of its rules


def variants(mon: Monitoring, profiles: list[str]) -> list[Variant]:
    """The section's thresholds for every profile without overrides, one variant per distinct override."""
    groups: dict[Thresholds, list[str]] = {}
    for name in sorted(mon.profiles):
        if name in profiles:
            groups.setdefault(mon.thresholds_for(name), []).append(name)
    overridden = [p for names in groups.values() for p in names]
    if not overridden:
        return [Variant("", mon.thresholds)]
    out = [Variant(f'profile!~"{"|".join(overridden)}"', mon.thresholds, "default")]
    out += [Variant(f'profile=~"{"|".join(names)}"', t, "+".join(names)) for t, names in groups.items()]
    return out


def sel(metric: str, *matchers: str) -> str:
    """`metric{m1,m2}`, or a `{__name__=~"a|b",...}` selector when `metric` is an alternation."""
    ms = [m for m in matchers if m]
    if "|" in metric:
        ms.insert(0, f'__name__=~"{metric}"')
        return "{" + ",".join(ms) + "}"
    return f"{metric}{{{','.join(ms)}}}" if ms else metric


def _sustained(series: str, per_h: float) -> str:
    """More than `per_h` in the last hour, rising in every 10-minute window of the last half hour, of a series
    that was stored half an hour ago: a subquery has no steps where the series had no samples, so without the
    last term a series younger than half an hour (a fresh deploy, a new node, a new port) held as soon as its
    few windows rose, and the slow tier fired minutes into a fault (the lab's CI run of 2026-12-07)."""
    return (f"increase({series}[1h]) > {num_text(per_h)} and min_over_time(increase({series}[10m])[30m:5m]) > 0"
            f" and {series} offset 30m")


def _duration(seconds: int) -> str:
    """PromQL's spelling of a duration: `1m`, `2m`, `90s`."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def fast_window_s(mon: Monitoring) -> int:
    return max(FAST_WINDOW_MIN_S, FAST_WINDOW_SAMPLES * mon.interval_s)


def fast_errors_per_h(speed: str) -> float:
    """The catalog's fast tier figure for a link rate; a rate without one is a catalog error, named."""
    entry = catalog().link_health.fast_errors.per_rate.get(speed)
    if entry is None:
        raise ValueError(f"link rate {speed!r} has no fast error figure in the catalog (link_health.yaml "
                         "fast_errors.per_rate)")
    return entry.errors_per_h


def _alert(name: str, expr: str, level: int, summary: str, repair: str, **labels: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, "labels": {"level": str(level), **labels},
            "annotations": {"summary": summary, "repair": repair}}


def _record(name: str, expr: str, **labels: str) -> dict[str, Any]:
    return {"record": name, "expr": expr, "labels": labels}


def rule_groups(mon: Monitoring, profiles: list[str], gpu_counts: dict[str, int],
                speeds: list[str] | tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rule groups: gpu-nvlink (1 m), gpu, gpu-ecc (5 m), fabric, fabric-fast (30 s), optics-baseline (1 h),
    optics, cluster, lustre.

    `gpu_counts`: GPUs per hardware profile with GPUs (a node showing fewer has lost one). `speeds`: the link
    rates of the cabled HCA ports (their `speed` label): one fast tier rule per rate and error counter.
    """
    vs = variants(mon, profiles)
    ib = IB[mon.collector]
    lv = mon.level
    gpu: list[dict[str, Any]] = []
    ecc: list[dict[str, Any]] = []
    fabric: list[dict[str, Any]] = []
    fast: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    optics: list[dict[str, Any]] = []
    window_s = fast_window_s(mon)
    window = _duration(window_s)
    fast_ber = num_text(catalog().link_health.fast_errors.ber)
    for v in vs:
        t, m = v.t, v.matcher
        first = [len(x) for x in (gpu, ecc, fabric, fast, baseline, optics)]
        hold = t.hbm_hold_h * 60
        hbm = sel(GPU["hbm_temp"], m)
        gpu.append(_alert(
            "HbmTemperatureHigh",
            f"min_over_time({hbm}[{t.hbm_hold_h}h]) > {num_text(t.hbm_temp_c)} and {hbm} offset {hold - 5}m",
            lv("HbmTemperatureHigh"),
            f"HBM of GPU {{{{ $labels.gpu }}}} on {WHERE} above {num_text(t.hbm_temp_c)} °C for "
            f"{t.hbm_hold_h} h (now {{{{ $value }}}} °C)",
            "drain {{ $labels.host }} and check the cooling of rack {{ $labels.rack }} at U{{ $labels.u }}"
            " (fans, cold-plate flow, inlet temperature); replace the GPU if its neighbours run cooler"))
        gtemp = sel(GPU["gpu_temp"], m)
        gpu.append(_alert(
            "GpuTemperatureHigh", f"min_over_time({gtemp}[{t.gpu_hold_m}m]) > {num_text(t.gpu_temp_c)}",
            lv("GpuTemperatureHigh"),
            f"GPU {{{{ $labels.gpu }}}} on {WHERE} above {num_text(t.gpu_temp_c)} °C for {t.gpu_hold_m} min",
            "check the airflow or coolant of rack {{ $labels.rack }} at U{{ $labels.u }}"))
        nv = sel("cf:gpu_nvlink_errors:total", m)
        gpu.append(_alert(
            "GpuNvlinkErrors",
            _sustained(nv, t.nvlink_errors_per_h),
            lv("GpuNvlinkErrors"),
            f"NVLink CRC/replay/recovery errors rising on GPU {{{{ $labels.gpu }}}} of {WHERE}",
            "run dcgmi diag -r 2 and nvidia-smi nvlink -e; reseat the GPU baseboard or NVSwitch tray if they persist"))
        # ECC: the day's increase (reset-safe), recorded; growth day over day and a linear projection
        ecc.append(_record("cf:gpu_ecc_sbe:increase1d", f"increase({sel(GPU['ecc_sbe'], m)}[1d])"))
        day, before = sel("cf:gpu_ecc_sbe:increase1d", m), sel("cf:gpu_ecc_sbe:increase1d", m) + " offset 1d"
        # the day before counts only when it was a whole day: the counter existed two days ago
        whole = f"{sel(GPU['ecc_sbe'], m)} offset 47h55m"
        ecc.append(_alert(
            "GpuEccGrowth",
            f"{day} > {num_text(1 + t.ecc_growth_percent / 100)} * {before} and {before} >= {t.ecc_min_per_day}"
            f" and on (host, gpu) {whole}",
            lv("GpuEccGrowth"),
            f"corrected ECC errors of GPU {{{{ $labels.gpu }}}} on {WHERE} grew more than "
            f"{num_text(t.ecc_growth_percent)} % day over day ({{{{ $value }}}} in 24 h)",
            "plan a GPU swap: schedule dcgmi diag -r 3 at the next drain window and watch the 72 h projection"))
        ecc.append(_record(f"cf:gpu_ecc_sbe:projected{t.ecc_projection_h}h",
                           f"predict_linear({day}[1d], {t.ecc_projection_h * 3600})"))
        ecc.append(_alert(
            "GpuEccProjected",
            f"{sel(f'cf:gpu_ecc_sbe:projected{t.ecc_projection_h}h', m)} > {t.ecc_projected_max}"
            f" and {before} >= {t.ecc_min_per_day} and on (host, gpu) {whole}",
            lv("GpuEccProjected"),
            f"GPU {{{{ $labels.gpu }}}} on {WHERE}: corrected ECC errors projected to reach {{{{ $value }}}} a day "
            f"within {t.ecc_projection_h} h",
            "drain {{ $labels.host }} and replace GPU {{ $labels.gpu }} before it fails "
            "(the brief's 72-hour warning)"))
        errors: tuple[tuple[str, AlertName, AlertName, float, str], ...] = (
            ("symbol", "IbSymbolErrors", "IbSymbolErrorsFast", t.symbol_errors_per_h, "symbol"),
            ("rcv", "IbReceiveErrors", "IbReceiveErrorsFast", t.rcv_errors_per_h, "receive"))
        for key, name, fast_name, per_h, what in errors:
            metric = ib[key]
            assert metric is not None
            s = sel(metric, m)
            fabric.append(_alert(
                name, _sustained(s, per_h),
                lv(name), f"{what} errors rising at {PORT} ({{{{ $value }}}} in 1 h)", OPTIC_REPAIR))
            # the fast tier: the rate over each of the last FAST_WINDOWS windows above the link rate's figure (never
            # below the slow tier's own): a one-off burst, shorter than a window, cannot cover the middle one and
            # touch both around it; a counter reset is no rise (rate counts through it)
            for speed in speeds:
                limit = num_text(max(fast_errors_per_h(speed), per_h))
                s = sel(metric, f'speed="{speed}"', m)
                fast.append(_alert(
                    fast_name,
                    " and ".join(f"rate({s}[{window}]{f' offset {_duration(k * window_s)}' if k else ''}) * 3600 > "
                                 f"{limit}" for k in range(FAST_WINDOWS)),
                    lv(fast_name),
                    f"{what} errors at {{{{ printf \"%.0f\" $value }}}} an hour at {PORT}: above {limit} an hour "
                    f"(a BER of {fast_ber} at {speed}) in each of {FAST_WINDOWS} consecutive {window_s} s windows",
                    OPTIC_REPAIR))
        downed = ib["downed"]
        assert downed is not None
        fabric.append(_alert(
            "IbPortFlapping", f"increase({sel(downed, m)}[1h]) >= {t.link_flaps_per_h}", lv("IbPortFlapping"),
            f"link flapping at {PORT} ({{{{ $value }}}} link-down events in 1 h)", OPTIC_REPAIR))
        ber = sel(OPTIC_BER, m)
        baseline.append(_record("cf:optic_ber:median", f"quantile_over_time(0.5, {ber}[{t.ber_baseline_days}d])"))
        optics.append(_alert(
            "OpticBerHigh",
            f"min_over_time({ber}[10m]) > {num_text(t.ber_factor)} * last_over_time("
            f"{sel('cf:optic_ber:median', m)}[2h]) and min_over_time({ber}[10m]) > {num_text(t.ber_floor)}",
            lv("OpticBerHigh"),
            f"pre-FEC BER at {PORT} is {num_text(t.ber_factor)} times its {t.ber_baseline_days}-day median "
            "(now {{ $value }})", OPTIC_REPAIR))
        optics.append(_alert(
            "OpticTemperatureHigh", f"min_over_time({sel(OPTIC_TEMP, m)}[10m]) > {num_text(t.optic_temp_c)}",
            lv("OpticTemperatureHigh"), f"optical module at {PORT} above {num_text(t.optic_temp_c)} °C",
            "check the airflow at both ends; " + OPTIC_REPAIR))
        if v.name:
            for rules, start in zip((gpu, ecc, fabric, fast, baseline, optics), first, strict=True):
                for rule in rules[start:]:
                    rule["labels"]["thresholds"] = v.name
    xid = GPU["xid"]
    for cls, codes, repair in XID_CLASSES:
        expr = " or ".join(f"{xid} == {c}" for c in codes)
        level = 1 if cls == "application" else lv("GpuXidError")
        gpu.append(_alert("GpuXidError", expr, level,
                          f"XID {{{{ $value }}}} ({cls}) on GPU {{{{ $labels.gpu }}}} of {WHERE}", repair,
                          xid_class=cls))
    lost = [f'count by (host, rack, u, profile) ({GPU["gpu_temp"]}{{profile="{p}"}}) < {n}'
            for p, n in sorted(gpu_counts.items())]
    gpu.append(_alert("GpuFallenOffBus", " or ".join([f"{xid} == 79", *lost]), lv("GpuFallenOffBus"),
                      f"a GPU of {WHERE} has fallen off the bus (XID 79 or fewer GPUs than its profile)",
                      "drain {{ $labels.host }}, power-cycle it (a warm reboot does not bring the GPU back) and "
                      "reseat or replace the GPU if it stays missing"))
    gpu.append(_alert("GpuRowRemapFailure", f"{GPU['row_remap_failure']} > 0", lv("GpuRowRemapFailure"),
                      f"row remapping failed on GPU {{{{ $labels.gpu }}}} of {WHERE}: no spare rows left",
                      "drain {{ $labels.host }} and replace GPU {{ $labels.gpu }} (RMA)"))
    state = ib["phys_state"]
    if state is not None:
        fabric.append(_alert(
            "IbPortDown", f'max_over_time({state}{{cable!=""}}[2m]) < {LINK_UP}', lv("IbPortDown"),
            f"cabled port down at {PORT}",
            "check both ends are seated and lit; " + OPTIC_REPAIR))
    down_m = mon.thresholds.host_down_m
    # every scrape of the last minutes failed, and the target was scraped 10 min ago already: a store that has
    # just started (a fresh deploy: vmagent scrapes a node before its node_exporter is installed) holds no sample
    # that old, so the first failed scrapes page nobody (all eight GPU nodes did once); a node that never comes
    # up is down once it has been scraped 10 min, one that stops host_down_m after
    host_down = (f'max_over_time(up{{exporter="node"}}[{down_m}m]) == 0 and up{{exporter="node"}} offset 10m'
                 if mon.collector == "exporters" else
                 f"last_over_time(system_n_cpus[1d]) unless last_over_time(system_n_cpus[{down_m}m])")
    # a node's collector that reported 10 min ago (the store has been up and scraping that long)
    collector_10m_ago = ('up{exporter="node"} offset 10m == 1' if mon.collector == "exporters" else
                         "system_n_cpus offset 10m")
    cluster = [
        _alert("HostDown", host_down, lv("HostDown"), f"{WHERE} has not reported for "
               f"{mon.thresholds.host_down_m} min",
               "check power and the management network of {{ $labels.host }} (BMC console)"),
        # no master: reported so (within 2 min), or the series gone or never there while the nodes' collectors
        # have been up for 10 min; a store that has just started (a fresh deploy: ib-health's first run not yet
        # scraped) holds no collector 10 min old, so it pages nobody for the minute before the first sample
        _alert("NoMasterSubnetManager",
               f"(max(max_over_time({SM_MASTER}[2m])) < 1) or (absent_over_time({SM_MASTER}[5m]) and on() "
               f"(count({collector_10m_ago}) > 0))",
               lv("NoMasterSubnetManager"), "no master subnet manager on the fabric",
               "start OpenSM on the SM nodes (systemctl start opensm) and check sminfo from any node"),
    ]
    lustre_import = "{{ $labels.target }} ({{ $labels.kind }})"
    lustre = [
        _alert("LustreClientEvicted", f"time() - {LUSTRE_EVICTED} < {LUSTRE_EVICTED_S}", lv("LustreClientEvicted"),
               f"lustre client {WHERE} was evicted by {lustre_import} {{{{ $value | humanizeDuration }}}} ago",
               "check the LNet/IB link of {{ $labels.host }} (its HCA port's errors, lctl ping to the server's "
               "NID) and the log of the server of {{ $labels.target }} for why it evicted the client; jobs on "
               "{{ $labels.host }} may have lost I/O"),
        # every sample of the last minutes short of FULL, and the series there that long ago (a client that
        # has just mounted is still connecting); an import IDLE then has no samples and stays quiet
        _alert("LustreImportDown",
               f"max_over_time({LUSTRE_FULL}[{LUSTRE_DOWN_M}m]) == 0 and {LUSTRE_FULL} offset {LUSTRE_DOWN_M - 1}m",
               lv("LustreImportDown"),
               f"lustre import of {lustre_import} on {WHERE} not FULL for {LUSTRE_DOWN_M} min",
               "check the LNet/IB path from {{ $labels.host }} to the server of {{ $labels.target }} "
               "(lctl ping, lnetctl net show) and whether that server is up or in recovery; many clients at "
               "once point at the server"),
    ]
    # the four NVLink error counters of a GPU summed once a minute (a regex over 4 x GPUs series is the
    # heaviest selection of the rules: measured in bench/monitoring_bench.py)
    nvlink = [_record("cf:gpu_nvlink_errors:total", f"sum by (host, rack, u, gpu, profile) ({sel(GPU['nvlink'])})")]
    groups: list[dict[str, Any]] = [
        {"name": "clusterforge-gpu-nvlink", "interval": "1m", "rules": nvlink},
        {"name": "clusterforge-gpu", "interval": None, "rules": gpu},
        {"name": "clusterforge-gpu-ecc", "interval": "5m", "rules": ecc},
        {"name": "clusterforge-fabric", "interval": None, "rules": fabric},
        {"name": "clusterforge-fabric-fast", "interval": FAST_GROUP_INTERVAL, "rules": fast},
        {"name": "clusterforge-optics-baseline", "interval": "1h", "rules": baseline},
        {"name": "clusterforge-optics", "interval": None, "rules": optics},
        {"name": "clusterforge-cluster", "interval": None, "rules": cluster},
        {"name": "clusterforge-lustre", "interval": None, "rules": lustre},
    ]
    # no cabled port with a known rate: no fast tier, and no empty group
    return [g for g in groups if g["rules"] or g["name"] != "clusterforge-fabric-fast"]
