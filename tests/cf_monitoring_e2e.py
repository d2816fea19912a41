"""The monitoring end-to-end scenario on the container lab (issue #11), shared by
tests/lab/test_monitoring_e2e.py and `make bench` (bench/run.py, lab part): every step checked, the
seconds of each step returned.

On a systemd lab of inventories/lab, deployed with pyinfra (the `monitoring` component: node_exporter on
the stand-in sysfs tree, the dcgm-exporter stand-in, and on sm01 VictoriaMetrics, vmagent, vmalert,
Alertmanager and the drain hook, all the real Debian programs):

* `lab fault errors C-00010 --rate 100` (gpu05 mlx5_1 port 1 <-> leaf-su02-r1/1): the live series, as
  vmagent scrapes node_exporter, carries the cable's labels and rises; the half hour before it (the rule
  wants errors rising in every 10 minutes of the last 30) is backfilled through VictoriaMetrics' import
  API with exactly the live series' labels, continuing the same rise backwards; the level 2 alert
  reaches an SMTP sink on the lab machine (the inventory's smarthost: the lab network's gateway) by
  e-mail naming the cable and both ends;
* `lab fault hot gpu03 0`: the live HBM temperature is 91 °C; 3 h 20 min before it backfilled at 91;
  the level 3 alert reaches the drain hook on sm01, which runs the lab inventory's drain argv
  (`clusterforge lab drain gpu03`: the lab's stand-in records it, `lab status` shows gpu03 drained);
* `clusterforge alerts` lists both with rack, U and cable.

The faults are injected before the deploy, so that every live sample is already faulted (a 45 °C sample in
the last 3 h would rightly keep the heat alert quiet); the symbol error counter starts at BASE_ERRORS so
the backfilled rise before it stays positive.
"""

from __future__ import annotations

import json
import socketserver
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.lab.monitoring_standins import sysfs_root
from clusterforge.rehearsal import env as labenv
from clusterforge.util.fsutil import write_atomic

CABLE = "C-00010"
CABLE_HOST, CABLE_HCA, CABLE_PORT = "gpu05", "mlx5_1", 1
CABLE_ENDS = ("gpu05/mlx5_1/1", "leaf-su02-r1/1")
HOT_HOST, HOT_GPU = "gpu03", 0
RATE_PER_H = 100.0
"""The slow tier's scenario: over its 10 an hour, under the fast tier's 144 an hour at the lab's HDR (at most 2
errors, one every 36 s, in any minute), so the e-mail is the backfilled slow rule's (IbSymbolErrorsFast, which
needs no history, has its own lab test: tests/lab/test_fast_error_tier_lab.py)."""
BASE_ERRORS = 20000
SMTP_PORT = 2525
"""inventories/lab/monitoring.yaml: smarthost 198.18.10.1:2525, the lab network's gateway."""
VM_PORT, AM_PORT = 8428, 9093
NOTIFY_TIMEOUT_S = 300.0


class ScenarioFailed(AssertionError):
    """A step did not do what it must (the message says which and what was seen)."""


def check(ok: object, message: str) -> None:
    if not ok:
        raise ScenarioFailed(message)


def cf(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), terminal_width=200)
    return result.exit_code, result.output


class _Smtp(socketserver.StreamRequestHandler):
    """Just enough SMTP for Alertmanager's e-mail receiver: every message lands in `server.messages`."""

    def handle(self) -> None:
        def say(text: str) -> None:
            self.wfile.write(text.encode() + b"\r\n")

        say("220 cf-lab-sink ESMTP")
        while line := self.rfile.readline():
            cmd = line.decode(errors="replace").strip().upper()
            if cmd.startswith(("EHLO", "HELO")):
                say("250 cf-lab-sink")
            elif cmd == "DATA":
                say("354 go ahead")
                body = []
                while (row := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
                    body.append(row.decode(errors="replace"))
                self.server.messages.append((time.time(), "".join(body)))  # type: ignore[attr-defined]
                say("250 queued")
            elif cmd == "QUIT":
                say("221 bye")
                return
            else:
                say("250 ok")


class SmtpSink(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, address: str, port: int) -> None:
        super().__init__((address, port), _Smtp)
        self.messages: list[tuple[float, str]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def mails(self, *needles: str) -> list[tuple[float, str]]:
        # Alertmanager's mail is quoted-printable: soft line breaks (=\r\n) removed before searching
        return [(t, m) for t, m in self.messages
                if all(n in m.replace("=\r\n", "").replace("=\n", "") for n in needles)]


def _get(url: str, timeout: float = 30) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        data: bytes = r.read()
        return data


def export(vm: str, match: str, start: float | None = None) -> list[dict[str, Any]]:
    """VictoriaMetrics /api/v1/export: every series matching, with its values and timestamps (ms)."""
    query = {"match[]": match, **({"start": str(int(start))} if start is not None else {})}
    text = _get(f"{vm}/api/v1/export?{urllib.parse.urlencode(query)}").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def backfill(vm: str, metric: dict[str, str], values: list[float], stamps_ms: list[int]) -> None:
    """History through the import API, labelled exactly as the live series (`metric`, with __name__)."""
    body = json.dumps({"metric": metric, "values": values, "timestamps": stamps_ms}) + "\n"
    req = urllib.request.Request(f"{vm}/api/v1/import", data=body.encode(), method="POST")
    urllib.request.urlopen(req, timeout=30).close()
    _get(f"{vm}/internal/force_flush")
    _get(f"{vm}/internal/resetRollupResultCache")  # vmalert's next queries see the history


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float, every_s: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:  # not listening yet
            last = exc
        else:
            if last:
                return last
        time.sleep(every_s)
    raise ScenarioFailed(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {str(last)[:300]})")


@dataclass
class Result:
    seconds: dict[str, float] = field(default_factory=dict)
    mail: str = ""
    alerts: list[dict[str, Any]] = field(default_factory=list)
    live_errors: list[float] = field(default_factory=list)


def _first_live(vm: str, match: str, since: float) -> dict[str, Any]:
    series = export(vm, match, since)
    return series[0] if len(series) == 1 and series[0]["values"] else {}


def run_scenario(env: Path, *, lab_up: bool = True, on_ready: Callable[[], None] | None = None) -> Result:
    """The whole scenario on `env` (inventories/lab or a copy that keeps its network). The caller brings the
    lab down (`lab down`) afterwards, also when this raises. `on_ready`: called once the history is stored (the
    moment the alerts' latency counts from), before waiting for them."""
    res = Result()
    t0 = time.monotonic()
    if lab_up:
        code, out = cf("lab", "up", str(env), "--systemd", "--no-start-sm")
        check(code == 0, f"lab up: {out}")
        res.seconds["lab up (systemd, 11 containers)"] = time.monotonic() - t0
    state = labenv.running(env)
    check(state is not None, "no lab state after lab up")
    assert state is not None
    sink = SmtpSink(state.gateway, SMTP_PORT)  # the lab machine's side of the lab network: sm01's smarthost
    try:
        # the port has counted BASE_ERRORS before (the stand-in's start), then the faults, then the deploy
        counters = sysfs_root(state.state_dir, CABLE_HOST) / "class/infiniband" / CABLE_HCA / "ports" / str(
            CABLE_PORT) / "counters"
        for name in ("symbol_error", "port_rcv_errors"):
            check((counters / name).is_file(), f"no stand-in counter {counters / name}: lab up wrote none")
            write_atomic(counters / name, f"{BASE_ERRORS}\n")
        t_fault = time.time()
        code, out = cf("lab", "fault", str(env), "errors", CABLE, "--rate", f"{RATE_PER_H:g}")
        check(code == 0 and f"fault errors {CABLE}" in out and "leaf-su02-r1/1: a switch port, not simulated" in out,
              f"lab fault errors: {out}")
        code, out = cf("lab", "fault", str(env), "hot", HOT_HOST, str(HOT_GPU))
        check(code == 0, f"lab fault hot: {out}")
        code, out = cf("lab", "status", str(env), "--format", "json")
        faults = json.loads(out[out.index("{"):])["monitoring_faults"]
        check([(f["kind"], f["target"], f["driver_running"]) for f in faults]
              == [("errors", CABLE, True), ("hot", f"{HOT_HOST} {HOT_GPU}", True)], f"lab status: {faults}")

        t = time.monotonic()
        code, out = cf("deploy", str(env), "--no-diffs")
        check(code == 0, f"deploy: {out[-3000:]}")
        res.seconds["deploy (pyinfra, 11 hosts)"] = time.monotonic() - t

        vm = f"http://{state.hosts['sm01'].address}:{VM_PORT}"
        am = f"http://{state.hosts['sm01'].address}:{AM_PORT}"
        t = time.monotonic()
        sym_match = (f'node_infiniband_symbol_error_total{{host="{CABLE_HOST}",device="{CABLE_HCA}",'
                     f'port="{CABLE_PORT}"}}')
        hbm_match = f'DCGM_FI_DEV_MEMORY_TEMP{{host="{HOT_HOST}",gpu="{HOT_GPU}"}}'
        sym = wait_for("the live symbol error series in VictoriaMetrics", lambda: _first_live(vm, sym_match, t_fault),
                       120)
        hbm = wait_for("the live HBM temperature series", lambda: _first_live(vm, hbm_match, t_fault), 120)
        res.seconds["deploy -> first live samples stored"] = time.monotonic() - t
        labels = sym["metric"]
        check((labels.get("cable"), labels.get("a_end"), labels.get("b_end"), labels.get("leaf"))
              == (CABLE, *CABLE_ENDS, "leaf-su02-r1"), f"live series labels: {labels}")
        check(sym["values"][0] >= BASE_ERRORS, f"live counter below its start: {sym['values'][:5]}")
        check(all(v == 91 for v in hbm["values"]), f"live HBM temperature not the fault's: {hbm['values'][:5]}")

        # history: the same rise backwards for 40 min; 3 h 20 min of 91 °C, both up to 30 s before the first
        # live sample
        t1 = int(sym["timestamps"][0])
        stamps = [t1 - 30_000 - k * 60_000 for k in range(40, 0, -1)]
        rate_ms = RATE_PER_H / 3_600_000
        backfill(vm, labels, [sym["values"][0] - rate_ms * (t1 - s) for s in stamps], stamps)
        h1 = int(hbm["timestamps"][0])
        hstamps = [h1 - 30_000 - k * 60_000 for k in range(200, 0, -1)]
        backfill(vm, hbm["metric"], [91.0] * len(hstamps), hstamps)
        t_ready = time.monotonic()
        if on_ready is not None:
            on_ready()

        def mailed() -> list[tuple[float, str]]:
            return sink.mails("IbSymbolErrors", CABLE)

        def drained() -> bool:
            _, out = cf("lab", "status", str(env), "--format", "json")
            return HOT_HOST in json.loads(out[out.index("{"):]).get("drained", [])

        first: dict[str, float] = {}
        deadline = time.monotonic() + NOTIFY_TIMEOUT_S
        while time.monotonic() < deadline and len(first) < 2:
            if "mail" not in first and mailed():
                first["mail"] = time.monotonic()
            if "drain" not in first and drained():
                first["drain"] = time.monotonic()
            time.sleep(2)
        got = [m for _, m in sink.messages]
        check("mail" in first, f"no level 2 e-mail naming {CABLE} in {NOTIFY_TIMEOUT_S:.0f} s; the sink got "
              f"{len(got)} message(s): {[m[:200] for m in got]}")
        check("drain" in first, f"{HOT_HOST} not drained in {NOTIFY_TIMEOUT_S:.0f} s (the drain hook on sm01)")
        res.seconds["history stored -> level 2 e-mail"] = first["mail"] - t_ready
        res.seconds["history stored -> level 3 drain"] = first["drain"] - t_ready
        res.mail = mailed()[0][1].replace("=\r\n", "").replace("=\n", "")
        check(all(end in res.mail for end in CABLE_ENDS), f"the e-mail does not name both ends: {res.mail[:2000]}")

        # the live path: the counter kept rising after the fault, scraped through node_exporter and vmagent
        live = export(vm, sym_match, t_fault)
        res.live_errors = [v for v, ts in zip(live[0]["values"], live[0]["timestamps"], strict=True) if ts >= t1]
        check(len(res.live_errors) >= 3 and res.live_errors[-1] > res.live_errors[0]
              and all(b >= a for a, b in zip(res.live_errors, res.live_errors[1:], strict=False)),
              f"the live counter did not rise: {res.live_errors[:10]}")

        code, out = cf("alerts", str(env), "--url", am, "--format", "json")
        check(code == 4, f"clusterforge alerts: exit {code}: {out[-2000:]}")
        res.alerts = json.loads(out[out.index("{"):])["alerts"]
        by = {(a["alertname"], a["host"]): a for a in res.alerts}
        sym_alert, hbm_alert = by.get(("IbSymbolErrors", CABLE_HOST)), by.get(("HbmTemperatureHigh", HOT_HOST))
        check(sym_alert is not None and hbm_alert is not None, f"alerts listed: {sorted(by)}")
        assert sym_alert is not None and hbm_alert is not None
        check((sym_alert["level"], sym_alert["cable"], sym_alert["a_end"], sym_alert["b_end"], sym_alert["rack"],
               sym_alert["u"]) == (2, CABLE, *CABLE_ENDS, "lab-su02-r01", 2), f"IbSymbolErrors: {sym_alert}")
        check((hbm_alert["level"], hbm_alert["rack"], hbm_alert["u"]) == (3, "lab-su01-r01", 10),
              f"HbmTemperatureHigh: {hbm_alert}")
        code, text = cf("alerts", str(env), "--url", am)
        check(f"cable {CABLE}" in text and "rack lab-su02-r01 U2" in text, f"clusterforge alerts (text): {text}")

        code, out = cf("lab", "heal", str(env))
        check(code == 0 and "healed" in out, f"lab heal: {out}")
        check((counters / "symbol_error").read_text() == f"{BASE_ERRORS}\n", "heal did not restore the counter")
    finally:
        sink.shutdown()
        sink.server_close()
    res.seconds["total"] = time.monotonic() - t0
    return res
