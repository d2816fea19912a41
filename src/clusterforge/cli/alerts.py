"""`clusterforge alerts ENV`: the active alerts, each placed on the floor from the model."""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import NoReturn

import typer
from rich.markup import escape

from ..alerts.drain import responder, serve
from ..alerts.view import LocatedAlert, located_alerts
from ..check.checked import Checked
from ..model.index import Index
from ..rehearsal.env import LAB_RANGE
from ..util.errors import ExitCode
from .console import Format, err, out, print_json
from .loading import load_or_fail

DEFAULT_URL = "http://127.0.0.1:9093"
MAX_BYTES = 64 * 1024 * 1024


def allowed_url(url: str) -> str | None:
    """None when `url` is an http(s) URL on loopback or the lab range (198.18.0.0/15); else why not."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http:// or https:// URL"
    if parts.username or parts.password or parts.query or parts.fragment:
        return f"{url!r}: give the Alertmanager base URL only (no credentials, query or fragment)"
    host = parts.hostname
    if host == "localhost":
        return None
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return (f"{host!r} is a name: give an address (loopback, or a lab address in {LAB_RANGE}); run "
                "`clusterforge alerts` on the monitoring node itself for a real environment")
    if addr.is_loopback or (addr.version == 4 and addr in LAB_RANGE):
        return None
    return (f"{host} is neither loopback nor in the lab range {LAB_RANGE}: clusterforge reads alerts from a "
            "local Alertmanager only (run it on the monitoring node, where the default URL is right)")


def alertmanagers(env: Path, index: Index) -> tuple[list[tuple[str, str]], list[str]]:
    """Where ENV's Alertmanagers listen, from the inventory: each monitoring server's (server, URL), at its lab
    address when a lab is up for ENV, else at its management address; and why a server was left out (an address
    this command does not read: neither loopback nor the lab range). None in the inventory: no server."""
    from ..rehearsal.env import running
    from ..render import ALERTMANAGER_PORT, monitoring_servers

    mon = index.inv.monitoring
    if mon is None:
        return [], []
    state = running(env)
    lab = {name: rec.address for name, rec in state.hosts.items()} if state is not None else {}
    mgmt = index.addresses.mgmt
    found: list[tuple[str, str]] = []
    skipped: list[str] = []
    for name in monitoring_servers(index, mon):
        address = lab.get(name) or (index.addresses.text(mgmt[name]) if name in mgmt else None)
        if address is None:
            skipped.append(f"{name}: no management address (and no lab container)")
            continue
        url = f"http://{address}:{ALERTMANAGER_PORT}"
        why = allowed_url(url)
        if why is None:
            found.append((name, url))
        else:
            skipped.append(f"{name} ({url}): {why}")
    return found, skipped


def _where(env: Path, index: Index) -> None:
    """Each monitoring server's Alertmanager and store URLs, and the command that lists the alerts."""
    from ..rehearsal.env import running
    from ..render import ALERTMANAGER_PORT, STORE_PORT, monitoring_servers

    mon = index.inv.monitoring
    if mon is None:
        out.print(f"{env}: no monitoring section: nothing to look at", markup=False)
        return
    state = running(env)
    lab = {name: rec.address for name, rec in state.hosts.items()} if state is not None else {}
    mgmt = index.addresses.mgmt
    readable = False
    for name in monitoring_servers(index, mon):
        address = lab.get(name) or (index.addresses.text(mgmt[name]) if name in mgmt else "")
        if not address:
            continue
        am = f"http://{address}:{ALERTMANAGER_PORT}"
        readable = readable or allowed_url(am) is None
        out.print(f"monitoring server {name}{' (lab)' if name in lab else ''}: Alertmanager {am}, "
                  f"store http://{address}:{STORE_PORT}", markup=False)
    if readable:
        out.print(f"the active alerts, placed on the floor: clusterforge alerts {env}", markup=False)
        out.print(f"the floor page, live: `clusterforge floor {env}` serves it at http://127.0.0.1:8750/ "
                  "(docs/floor.md)", markup=False)
    else:
        out.print(f"the active alerts: `clusterforge alerts {env}` on a monitoring server (this command reads "
                  "loopback and lab addresses only)", markup=False)


def fetch(url: str, timeout_s: float = 10.0) -> str:
    query = urllib.parse.urlencode({"active": "true", "silenced": "true", "inhibited": "true"})
    request = urllib.request.Request(f"{url.rstrip('/')}/api/v2/alerts?{query}", headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        data: bytes = response.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"the answer is larger than {MAX_BYTES // 2**20} MiB")
    return data.decode("utf-8", errors="replace")


def _print(alerts: list[LocatedAlert], url: str) -> None:
    by_level = {lv: sum(1 for a in alerts if a.level == lv) for lv in (3, 2, 1)}
    counts = ", ".join(f"level {lv}: {n}" for lv, n in by_level.items() if n)
    out.print(f"{len(alerts)} alert(s) at {url}" + (f" ({counts})" if counts else ""), markup=False)
    for a in alerts:
        style = {3: "bold red", 2: "red", 1: "yellow"}.get(a.level or 0, "")
        subject = a.host or "cluster"
        if a.device is not None:
            subject += f" {a.device}/{a.port}"
        state = "" if a.state == "active" else f" ({a.state})"
        head = f"level {a.level if a.level is not None else '?'}  {a.alertname:<22}"
        out.print(f"[{style}]{escape(head)}[/] {escape(subject)}{escape(state)}: {escape(a.summary)}",
                  markup=True, highlight=False)
        if a.repair:
            out.print(f"    → {a.repair}", markup=False)
        if a.where:
            out.print(f"    where: {a.where}", markup=False)
        if a.cable:
            out.print(f"    cable {a.cable}: {a.a_end} to {a.b_end}" + (f", {a.lanes}" if a.lanes else ""),
                      markup=False)
        if a.jobs_moved:
            out.print("    jobs moved: " + ", ".join(f"{j} (now {a.jobs_now[j]})" if j in a.jobs_now else j
                                                 for j in a.jobs_moved), markup=False)
        if a.jobs_refused:
            out.print("    jobs the scheduler would not requeue, left running: " + ", ".join(a.jobs_refused),
                      markup=False)
        if a.since:
            out.print(f"    since {a.since}", markup=False)


def _usage(message: str) -> NoReturn:
    err.print(message, markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def _load(env: Path) -> Checked:
    return load_or_fail(env)


def _serve_drain_hook(env: Path, listen: str) -> None:
    host, _, port = listen.rpartition(":")
    why = allowed_url(f"http://{listen}") if port.isdigit() else f"{listen!r} is not HOST:PORT"
    if why is None and host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        why = f"{host} is not loopback: Alertmanager posts to the drain hook on its own node"
    if why is not None:
        _usage(f"--drain-hook: {why}")
    checked = _load(env)
    template = checked.inv.deploy.reboot.drain
    if not template:
        _usage(f"{env}: deploy.reboot.drain is empty: nothing to run for a level 3 alert")
    hook = responder(checked.index, template, emit=lambda line: out.print(line, markup=False))
    server = serve(hook, host.strip("[]"), int(port))
    out.print(f"drain hook for {env} on http://{listen}/drain: {' '.join(template)}", markup=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def alerts(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/lab"),
    url: str | None = typer.Option(
        None, "--url", help="Alertmanager base URL, loopback or a lab address (default: the inventory's monitoring "
        "servers', at their lab addresses when a lab is up; loopback when the inventory names none)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
    timeout_s: float = typer.Option(10.0, "--timeout", min=0.1, max=300, help="seconds to wait for the answer"),
    drain_hook: str | None = typer.Option(
        None, "--drain-hook", help="instead of listing: serve level 3's drain webhook on HOST:PORT (loopback), "
        "running deploy.reboot.drain for each firing level 3 alert's host"),
    where: bool = typer.Option(False, "--where", help="instead of listing: say where the monitoring servers' "
                               "Alertmanager and store are (nothing is contacted); `make deploy` ends with it"),
) -> None:
    """List the active alerts with host, rack, U and, for a port, the cable, both ends, lanes and the repair.

    Exit 0: no alert; 4: alerts listed; 5: Alertmanager unreachable.
    """
    if drain_hook is not None:
        _serve_drain_hook(env, drain_hook)
        return
    if where:
        _where(env, _load(env).index)
        return
    if url is not None and (why := allowed_url(url)) is not None:
        _usage(f"--url: {why}")
    checked = _load(env)
    if url is not None:
        tries = [("--url", url)]
    else:
        tries, skipped = alertmanagers(env, checked.index)
        for line in skipped:
            err.print(f"alerts: not reading {line}", markup=False)
        if not tries:  # no server this command may read: the node it runs on (the monitoring node itself)
            tries = [("this node", DEFAULT_URL)]
    failed: list[str] = []
    text = None
    for who, candidate in tries:  # an HA pair: the first that answers (each holds every alert)
        try:
            text = fetch(candidate, timeout_s)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            failed.append(f"{who} ({candidate}): {reason}" if who != "--url" else f"{candidate}: {reason}")
            continue
        url = candidate
        break
    if text is None or url is None:
        err.print("Alertmanager unreachable: " + "; ".join(failed), markup=False)
        raise typer.Exit(int(ExitCode.UNREACHABLE)) from None
    try:
        listed = located_alerts(checked.index, text)
    except ValueError as exc:
        _usage(f"{url}/api/v2/alerts: {exc}")
    if fmt == Format.json:
        print_json({"url": url, "environment": env.name, "alerts": [a.as_dict() for a in listed]})
    else:
        _print(listed, url)
    raise typer.Exit(int(ExitCode.FINDINGS) if listed else 0)
