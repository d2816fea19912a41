"""Health monitoring: collectors, the time-series store, alert thresholds and the three alert levels.

Level 1 is recorded only (it stays in the store and in Alertmanager's API), level 2 sends e-mail,
level 3 pages on-call and drains the node through the inventory's `deploy.reboot.drain` hook so
that the scheduler moves the jobs. Thresholds default to the design brief's; a hardware profile
may override any of them for its nodes.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from .base import Email, FiniteFloat, HostPort, Model, Name, Text, Url
from .nodes import NodeRole

Level = Literal[1, 2, 3]
AlertName = Literal[
    "HbmTemperatureHigh", "GpuTemperatureHigh", "GpuEccGrowth", "GpuEccProjected", "GpuXidError",
    "GpuFallenOffBus", "GpuRowRemapFailure", "GpuNvlinkErrors", "IbPortDown", "IbPortFlapping",
    "IbSymbolErrors", "IbReceiveErrors", "IbSymbolErrorsFast", "IbReceiveErrorsFast", "OpticBerHigh",
    "OpticTemperatureHigh", "NoMasterSubnetManager", "HostDown", "LustreClientEvicted", "LustreImportDown",
]
"""Every alert the rendered rules define (render/monitoring_rules.py)."""

ALERT_NAMES: tuple[AlertName, ...] = get_args(AlertName)

DEFAULT_LEVELS: dict[AlertName, Level] = {
    "HbmTemperatureHigh": 3, "GpuTemperatureHigh": 2, "GpuEccGrowth": 2, "GpuEccProjected": 3,
    "GpuXidError": 2, "GpuFallenOffBus": 3, "GpuRowRemapFailure": 3, "GpuNvlinkErrors": 2,
    "IbPortDown": 2, "IbPortFlapping": 2, "IbSymbolErrors": 2, "IbReceiveErrors": 1, "IbSymbolErrorsFast": 2,
    "IbReceiveErrorsFast": 2, "OpticBerHigh": 2, "OpticTemperatureHigh": 1, "NoMasterSubnetManager": 3,
    "HostDown": 2, "LustreClientEvicted": 2, "LustreImportDown": 2,
}
"""The level of each alert unless `monitoring.alerts.levels` says otherwise: a key for every AlertName."""

PORT_ALERTS: frozenset[AlertName] = frozenset({
    "IbSymbolErrors", "IbReceiveErrors", "IbSymbolErrorsFast", "IbReceiveErrorsFast", "IbPortFlapping",
    "IbPortDown", "OpticBerHigh", "OpticTemperatureHigh"})
"""Alerts about one port (labelled `device` and `port`): located by the cable in that port."""


class Thresholds(Model):
    """When an alert fires. Defaults: the design brief (HBM 85 °C for 3 h, ECC +15 %/day, BER x1,000)."""

    hbm_temp_c: FiniteFloat = Field(default=85, gt=0, le=150, description="HBM temperature limit, °C")
    hbm_hold_h: int = Field(default=3, ge=1, le=48,
                            description="hours every HBM sample must stay above hbm_temp_c (a shorter excursion "
                                        "does not alert)")
    gpu_temp_c: FiniteFloat = Field(default=90, gt=0, le=150, description="GPU core temperature limit, °C")
    gpu_hold_m: int = Field(default=15, ge=1, le=1440, description="minutes above gpu_temp_c")
    ecc_growth_percent: FiniteFloat = Field(
        default=15, gt=0, le=10000,
        description="single-bit ECC errors corrected in the last 24 h exceed the 24 h before by this much")
    ecc_min_per_day: int = Field(
        default=50, ge=1,
        description="minimum baseline: growth counts only once the day before saw at least this many errors")
    ecc_projection_h: int = Field(default=72, ge=1, le=720, description="hours predict_linear projects ahead")
    ecc_projected_max: int = Field(
        default=5000, ge=1, description="new single-bit errors projected over ecc_projection_h that alert")
    ber_factor: FiniteFloat = Field(default=1000, gt=1, description="pre-FEC BER above its own median times this")
    ber_baseline_days: int = Field(default=7, ge=1, le=60, description="days the BER median is taken over")
    ber_floor: FiniteFloat = Field(default=1e-12, gt=0, lt=1,
                                   description="a BER below this never alerts (a clean optic's median is ~0)")
    optic_temp_c: FiniteFloat = Field(default=75, gt=0, le=150, description="optical module temperature, °C")
    symbol_errors_per_h: int = Field(default=10, ge=1,
                                     description="symbol errors in an hour, rising in every 10-minute window "
                                                 "of the last 30 minutes (a one-off burst does not alert); the "
                                                 "fast tier (IbSymbolErrorsFast: the catalog's figure for the "
                                                 "link's rate, two minutes) never alerts below it")
    rcv_errors_per_h: int = Field(default=10, ge=1, description="receive errors in an hour, sustained likewise "
                                                                "(and IbReceiveErrorsFast never below it)")
    link_flaps_per_h: int = Field(default=3, ge=1, description="link_downed increments in an hour")
    nvlink_errors_per_h: int = Field(default=100, ge=1, description="NVLink CRC/replay/recovery errors in an hour")
    host_down_m: int = Field(default=2, ge=1, le=60, description="minutes without a successful scrape")


class ThresholdOverrides(Model):
    """Per hardware profile: only the thresholds that differ from the section's."""

    hbm_temp_c: FiniteFloat | None = Field(default=None, gt=0, le=150,
        description="this profile's thresholds.hbm_temp_c (default: the section's)")
    hbm_hold_h: int | None = Field(default=None, ge=1, le=48,
        description="this profile's thresholds.hbm_hold_h (default: the section's)")
    gpu_temp_c: FiniteFloat | None = Field(default=None, gt=0, le=150,
        description="this profile's thresholds.gpu_temp_c (default: the section's)")
    gpu_hold_m: int | None = Field(default=None, ge=1, le=1440,
        description="this profile's thresholds.gpu_hold_m (default: the section's)")
    ecc_growth_percent: FiniteFloat | None = Field(default=None, gt=0, le=10000,
        description="this profile's thresholds.ecc_growth_percent (default: the section's)")
    ecc_min_per_day: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.ecc_min_per_day (default: the section's)")
    ecc_projection_h: int | None = Field(default=None, ge=1, le=720,
        description="this profile's thresholds.ecc_projection_h (default: the section's)")
    ecc_projected_max: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.ecc_projected_max (default: the section's)")
    ber_factor: FiniteFloat | None = Field(default=None, gt=1,
        description="this profile's thresholds.ber_factor (default: the section's)")
    ber_baseline_days: int | None = Field(default=None, ge=1, le=60,
        description="this profile's thresholds.ber_baseline_days (default: the section's)")
    ber_floor: FiniteFloat | None = Field(default=None, gt=0, lt=1,
        description="this profile's thresholds.ber_floor (default: the section's)")
    optic_temp_c: FiniteFloat | None = Field(default=None, gt=0, le=150,
        description="this profile's thresholds.optic_temp_c (default: the section's)")
    symbol_errors_per_h: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.symbol_errors_per_h (default: the section's)")
    rcv_errors_per_h: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.rcv_errors_per_h (default: the section's)")
    link_flaps_per_h: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.link_flaps_per_h (default: the section's)")
    nvlink_errors_per_h: int | None = Field(default=None, ge=1,
        description="this profile's thresholds.nvlink_errors_per_h (default: the section's)")
    host_down_m: int | None = Field(default=None, ge=1, le=60,
        description="this profile's thresholds.host_down_m (default: the section's)")

    def applied_to(self, base: Thresholds) -> Thresholds:
        return base.model_copy(update={k: v for k, v in self.model_dump().items() if v is not None})


class EmailRoute(Model):
    """Level 2 (and the e-mail copy of level 3): Alertmanager's email receiver."""

    to: list[Email] = Field(min_length=1, description="recipients")
    sender: Email = Field(description="the From: address")
    smarthost: HostPort = Field(description="SMTP relay, host:port")
    require_tls: bool = Field(default=True, description="STARTTLS required by the smarthost")


class Migration(Model):
    """Level 3 moves the jobs off the alert's node, after its drain (docs/monitoring.md, "Level 3"): each job of
    the node is signalled (with a grace), then requeued, one call a job; a job the scheduler refuses to requeue is
    reported by id and left running. The scheduler commands are argv templates, never a shell: `{host}`, `{job}`,
    `{jobs}` (job ids joined by commas), `{signal}`, `{reason}`."""

    how: Literal["requeue", "requeuehold", "none"] = Field(
        default="requeue", description="requeue the node's jobs (they start again elsewhere), requeue them held "
                                       "(a person releases them), or none (drain only)")
    alerts: list[AlertName] = Field(
        default_factory=list, description="the level 3 alerts that move jobs (empty: every level 3 alert whose host "
                                          "is a compute node)")
    grace_s: int = Field(default=0, ge=0, le=3600,
                         description="seconds between signalling a job (`signal`, to its batch step: the "
                                     "`--signal=B:USR1@N` convention, for its checkpoint) and requeueing it; 0: no "
                                     "signal")
    signal: Literal["USR1", "USR2", "TERM", "INT", "HUP", "URG"] = Field(
        default="USR1", description="the signal a job is sent before the grace")
    after: Literal["drain", "reboot"] = Field(
        default="drain", description="the node afterwards: stays drained (a person resumes it), or is rebooted "
                                     "and put back only by a passing health check (needs deploy.reboot.resume "
                                     "and health_check.enabled)")
    jobs: list[Text] = Field(default_factory=lambda: ["squeue", "-h", "-w", "{host}", "-o", "%i"],
                             description="argv that prints the node's job ids, one a line (`{host}`)")
    signal_job: list[Text] = Field(default_factory=lambda: ["scancel", "--batch", "--signal={signal}", "{job}"],
                                   description="argv that signals one job's batch step (`{job}`, `{signal}`)")
    requeue: list[Text] = Field(default_factory=lambda: ["scontrol", "requeue", "{job}"],
                                description="argv that requeues one job (`{job}`)")
    requeuehold: list[Text] = Field(default_factory=lambda: ["scontrol", "requeuehold", "{job}"],
                                    description="argv that requeues one job held (`{job}`)")
    reboot: list[Text] = Field(default_factory=lambda: ["scontrol", "reboot", "ASAP", "reason={reason}", "{host}"],
                               description="argv that reboots the node once its jobs are gone (`{host}`, "
                                           "`{reason}`: the health check's prefix, so only its pass resumes the "
                                           "node)")
    where: list[Text] = Field(default_factory=lambda: ["squeue", "-h", "-j", "{jobs}", "-o", "%i|%T|%N"],
                              description="argv that prints `id|state|nodes` for the moved jobs (`{jobs}`): where "
                                          "they run now, in the JobsMoved report")


class PageRoute(Model):
    """Level 3: a pager webhook (Alertmanager's webhook JSON), the drain of the node and the move of its jobs."""

    webhook: Url | None = Field(default=None, description="the paging service's webhook endpoint")
    drain: bool = Field(default=True, description="run deploy.reboot.drain for the alert's host")
    drain_hook_port: int = Field(default=9095, ge=1, le=65535,
                                 description="loopback port of the drain hook on the monitoring node")
    migrate: Migration | None = Field(
        default=None, description="move the jobs off the alert's node after its drain (absent: the drain only)")


class AlertRoutes(Model):
    email: EmailRoute | None = Field(default=None, description="e-mail route of level 2 alerts")
    page: PageRoute | None = Field(default=None, description="paging (and draining) route of level 3 alerts")
    levels: dict[AlertName, Level] = Field(
        default_factory=dict, description="level of an alert, where it differs from the default")
    repeat_h: int = Field(default=4, ge=1, le=168, description="hours before a firing alert is notified again")
    group_wait_s: int = Field(default=30, ge=0, le=3600,
                              description="seconds Alertmanager waits to group a new alert with others of its host")


class Monitoring(Model):
    """The `monitoring` section."""

    collector: Literal["telegraf", "exporters"] = Field(
        default="telegraf",
        description="telegraf (the brief's: inputs.nvidia_smi, infiniband, prometheus for dcgm-exporter, exec for "
                    "optics) or exporters (node_exporter + dcgm-exporter + optics textfile, scraped by vmagent)")
    interval_s: int = Field(default=5, ge=1, le=300, description="collection interval, seconds")
    servers: list[Name] = Field(default_factory=list, description="monitoring nodes, by name")
    server_role: NodeRole | None = Field(default=None, description="or: every node of this role")
    store: Literal["victoriametrics", "influxdb"] = Field(
        default="victoriametrics",
        description="where series are kept; influxdb: Telegraf also writes to the site's InfluxDB 1.x "
                    "(the rules still run in vmalert over VictoriaMetrics)")
    influxdb_url: Url | None = Field(default=None, description="store influxdb: the InfluxDB 1.x /write base URL")
    retention_days: int = Field(default=90, ge=1, le=3650, description="days the store keeps samples")
    remote_write: list[Url] = Field(
        default_factory=list,
        description="past one machine: vminsert endpoints of a VictoriaMetrics cluster "
                    "(http://vminsert:8480/insert/0/prometheus/api/v1/write)")
    thresholds: Thresholds = Field(default_factory=Thresholds, description="alert thresholds (the brief's defaults)")
    profiles: dict[Name, ThresholdOverrides] = Field(
        default_factory=dict, description="per hardware profile: thresholds that differ")
    alerts: AlertRoutes = Field(default_factory=AlertRoutes, description="alert levels and where each goes")

    @model_validator(mode="after")
    def _one_way_to_name_servers(self) -> Monitoring:
        if bool(self.servers) == (self.server_role is not None):
            raise ValueError("name the monitoring nodes either by `servers` (node names) or by `server_role`")
        return self

    def level(self, alert: AlertName) -> int:
        for name, level in self.alerts.levels.items():
            if name == alert:
                return level
        return DEFAULT_LEVELS[alert]

    def thresholds_for(self, profile: str | None) -> Thresholds:
        over = self.profiles.get(profile or "")
        return self.thresholds if over is None else over.applied_to(self.thresholds)
