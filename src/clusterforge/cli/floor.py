"""`clusterforge floor ENV [--listen ADDR:PORT] [--out DIR]`: the floor page (docs/floor.md).

Serves the page on loopback (127.0.0.1:8750 by default) until interrupted, or with --out writes it into a
directory for a web server. Live state: the inventory's Alertmanager (at its lab address when a lab is up for ENV;
`--url` another, loopback or the lab range only, as `alerts` reads), and the last `validate` and `accept` reports
(`--validate FILE`, `--accept FILE`: their `--format json` output; by default out/<ENV>/validate.json and
out/<ENV>/accept.json where they exist, which `make deploy` writes for validate), and the nodes the scheduler
holds out of service, from `deploy.reboot.reasons` (`sinfo -R`) where the inventory declares it. The page has no
authentication: an address other than loopback needs --unauthenticated, and the command says so.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NoReturn

import typer

from ..collect.store import read_output
from ..floor.serve import FloorSite, Reader, serve, write_site
from ..util.echo import one_line
from ..util.errors import ExitCode
from ..util.program import own
from .alerts import alertmanagers, allowed_url, fetch
from .console import Format, err, out, print_json
from .loading import check_output_path, load_or_fail

DEFAULT_LISTEN = "127.0.0.1:8750"


def _listen(text: str, unauthenticated: bool) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        _usage(f"--listen {text!r}: give ADDRESS:PORT (e.g. {DEFAULT_LISTEN})")
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        _usage(f"--listen {text!r}: {host!r} is not an address")
    if not addr.is_loopback and not unauthenticated:
        _usage(f"--listen {text}: not loopback. The page has no authentication and shows the whole floor: give "
               "--unauthenticated to serve it there anyway (or put an authenticating proxy in front of loopback)")
    return host, int(port)


def _usage(msg: str) -> NoReturn:
    err.print(f"floor: {msg}", markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def _file_reader(path: Path) -> Reader:
    def read() -> str:
        return read_output(path)

    return read


def _alertmanager(url: str) -> Reader:
    def read() -> str:
        return fetch(url, timeout_s=3.0)

    return read


HOOK_TIMEOUT_S = 10.0


def _scheduler(argv: list[str]) -> Reader:
    """`deploy.reboot.reasons` run (no shell), its standard output the source's text; a failure says why."""
    def read() -> str:
        try:
            done = subprocess.run(own(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=HOOK_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise ValueError(f"no answer in {HOOK_TIMEOUT_S:g} s") from None
        except OSError as exc:
            raise ValueError(f"{argv[0]}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            why = one_line(done.stderr.strip().splitlines()[-1]) if done.stderr.strip() else "no message"
            raise ValueError(f"exit {done.returncode}: {why}")
        return done.stdout

    return read


def _missing(why: str) -> Reader:
    def read() -> str:
        raise ValueError(why)

    return read


def floor(
    env: Path = typer.Argument(..., help="environment directory"),
    listen: str = typer.Option(DEFAULT_LISTEN, "--listen", help="ADDRESS:PORT to serve on (loopback by default)"),
    out_dir: Path | None = typer.Option(None, "--out", help="write the page and its documents into this directory "
                                        "for a web server instead of serving them"),
    url: str | None = typer.Option(None, "--url", help="the Alertmanager to read (default: the inventory's)"),
    validate_report: Path | None = typer.Option(None, "--validate", help="the last `validate --format json` report "
                                                "(default: out/<ENV>/validate.json where it exists)"),
    accept_report: Path | None = typer.Option(None, "--accept", help="the last `accept --format json` judgement "
                                              "(default: out/<ENV>/accept.json where it exists)"),
    refresh_s: float = typer.Option(5.0, "--refresh", min=1.0, max=3600.0,
                                    help="seconds between the page's readings of its sources"),
    unauthenticated: bool = typer.Option(False, "--unauthenticated", help="allow a --listen address other than "
                                         "loopback: the page has no authentication"),
    background: bool = typer.Option(False, "--background", help="a lab's page: serve it in the background until "
                                    "`lab down` (again: say where the one running is)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json (where the page is, or what --out wrote)"),
) -> None:
    """Serve the floor page: rows, racks and units, the fabric's leaves and spines, a node's cables, coloured by
    the live alerts and the last validate and accept findings."""
    host, port = _listen(listen, unauthenticated)
    if background:
        if out_dir is not None:
            _usage("--background serves the page; --out writes it: give one")
        args = [str(env), "--listen", listen, "--refresh", str(refresh_s)]
        args += ["--url", url] if url is not None else []
        args += ["--validate", str(validate_report)] if validate_report is not None else []
        args += ["--accept", str(accept_report)] if accept_report is not None else []
        args += ["--unauthenticated"] if unauthenticated else []
        _background(env, host, port, args, fmt)
        return
    if url is not None and (why := allowed_url(url)) is not None:
        _usage(f"--url: {why}")
    if out_dir is not None:
        check_output_path(out_dir, "--out", directory=True)
    checked = load_or_fail(env)
    index = checked.index
    sources: dict[str, tuple[str, Reader]] = {}
    if url is not None:
        sources["alertmanager"] = (url, _alertmanager(url))
    elif index.inv.monitoring is not None:
        found, skipped = alertmanagers(env, index)
        if found:
            sources["alertmanager"] = (found[0][1], _alertmanager(found[0][1]))
        else:
            sources["alertmanager"] = ("-", _missing("no Alertmanager this command reads: " + "; ".join(skipped)))
    base = Path("out") / env.resolve().name
    for name, given in (("validate", validate_report), ("accept", accept_report)):
        path = given if given is not None else base / f"{name}.json"
        if given is not None or path.is_file():
            sources[name] = (str(path), _file_reader(path))
    hook = list(index.inv.deploy.reboot.reasons)
    if hook:
        sources["scheduler"] = (shlex.join(hook), _scheduler(hook))
    site = FloorSite(index, env.name, sources, refresh_s=refresh_s)
    if out_dir is not None:
        n = write_site(site, out_dir)
        _say(fmt, f"floor: wrote {n} files to {one_line(str(out_dir))} (serve that directory with a web server; "
             "live.json is as of now)", out=str(out_dir), files=n)
        return
    try:
        server = serve(site, host, port)
    except OSError as exc:
        err.print(f"floor: cannot listen on {host}:{port}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    bound = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    _say(fmt, f"floor: {url} (Ctrl-C stops it; read-only"
         + ("; NO AUTHENTICATION: anyone who reaches this address sees the floor" if unauthenticated and
            not ipaddress.ip_address(host).is_loopback else "") + ")", url=url, authenticated=False)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


PIDFILE = "floor.json"
"""In the lab's state directory: the background page's process and address (`floor --background`)."""


def _ours(pid: int) -> bool:
    """Whether `pid` is a running `clusterforge floor` (its command line says so): never signal another process."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"floor" in cmdline and any(b"clusterforge" in part for part in cmdline)


def _recorded(state_dir: Path) -> dict[str, object] | None:
    try:
        data = json.loads((state_dir / PIDFILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) and _ours(data["pid"]) else None


def _say(fmt: Format, text: str, **fields: object) -> None:
    if fmt is Format.json:
        print_json({"message": text, **fields})
    else:
        out.print(text, markup=False)


def _background(env: Path, host: str, port: int, args: list[str], fmt: Format) -> None:
    """Start `clusterforge floor ENV ...` as its own session, logging into the lab's state directory; return once
    it answers (or say why it did not). A lab only: `lab down` stops it."""
    from ..rehearsal import env as labenv

    if labenv.running(env) is None:
        _usage(f"--background serves a lab's page until `lab down`: no lab is up for {env} (run the command in a "
               "terminal, or under the site's service manager, for a real environment)")
    state_dir = labenv.paths(env).state_dir
    running = _recorded(state_dir)
    if running is not None:
        _say(fmt, f"floor: {running['url']} (already served, pid {running['pid']}; `lab down` stops it)",
             url=running["url"], pid=running["pid"], started=False)
        return
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
    log = state_dir / "floor.log"
    argv = [sys.executable, "-c", "import sys; from clusterforge.cli.entry import main; sys.argv[0] = "
            "'clusterforge'; main()", "floor", *args]
    with log.open("ab") as fh:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "floor.json", timeout=2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    proc.terminate()
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                err.print(f"floor: the background page did not start: {tail.strip() or 'no output'}", markup=False)
                raise typer.Exit(int(ExitCode.FAILURE)) from None
            time.sleep(0.2)
    (state_dir / PIDFILE).write_text(json.dumps({"pid": proc.pid, "url": url, "environment": str(env)}))
    _say(fmt, f"floor: {url} (the lab's page, live; `lab down` stops it)", url=url, pid=proc.pid, started=True)


def stop_background(state_dir: Path) -> bool:
    """Stop the lab's background page, if one runs (its whole session: the process only, it starts no other);
    whether one did."""
    running = _recorded(state_dir)
    (state_dir / PIDFILE).unlink(missing_ok=True)
    if running is None:
        return False
    pid = int(str(running["pid"]))
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 10
    while _ours(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _ours(pid):
        os.killpg(pid, signal.SIGKILL)
    return True
