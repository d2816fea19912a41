"""Level 3's drain: Alertmanager's webhook in, the inventory's `deploy.reboot.drain` hook out.

Alertmanager posts its webhook JSON to `http://127.0.0.1:<drain_hook_port>/drain` on the
monitoring node; for every firing level 3 alert whose `host` is a declared node, the drain hook
runs once (an argv with `{host}` replaced, never a shell), so the scheduler moves the jobs. A host
already drained by this receiver is not drained again while its alert repeats. Only declared
node names reach the hook: a label naming anything else is ignored and logged.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..deploy.reboot import HOOK_TIMEOUT_S
from ..model.hooks import ALERT_REASON, hook_argv
from ..model.index import Index

MAX_BODY = 4 * 1024 * 1024


def drain_targets(index: Index, payload: Any) -> tuple[list[str], list[str]]:
    """(declared hosts to drain, ignored host labels) from one Alertmanager webhook payload."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise ValueError("not an Alertmanager webhook payload (no alerts list)")
    hosts: set[str] = set()
    ignored: set[str] = set()
    for alert in payload["alerts"]:
        if not isinstance(alert, dict) or alert.get("status") != "firing":
            continue
        labels = alert.get("labels")
        if not isinstance(labels, dict) or str(labels.get("level")) != "3" or "host" not in labels:
            continue
        host = str(labels["host"])
        (hosts if host in index.nodes else ignored).add(host)
    return sorted(hosts), sorted(ignored)


@dataclass
class DrainHook:
    index: Index
    template: Sequence[str]
    run: Callable[[list[str]], int] = field(
        default=lambda argv: subprocess.run(argv, check=False, timeout=HOOK_TIMEOUT_S, capture_output=True).returncode)
    drained: dict[str, int] = field(default_factory=dict)
    """Host -> the hook's exit status, for every host this receiver drained."""
    log: list[str] = field(default_factory=list)
    report: Callable[[str], None] = field(default=lambda line: None)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _note(self, line: str) -> None:
        self.log.append(line)
        self.report(line)

    def handle(self, payload: Any) -> list[str]:
        """Drain what the payload asks for; the hosts drained now."""
        hosts, ignored = drain_targets(self.index, payload)
        now: list[str] = []
        with self.lock:
            for name in ignored:
                self._note(f"ignored host {name!r}: not a node of the inventory")
            for host in hosts:
                if host in self.drained and self.drained[host] == 0:
                    continue
                code = self.run(hook_argv(self.template, host, ALERT_REASON))
                self.drained[host] = code
                self._note(f"drain {host}: exit {code}")
                now.append(host)
        return now


def serve(hook: DrainHook, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) that passes POST /drain to `hook`."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != "/drain" or not 0 < length <= MAX_BODY:
                self.send_error(404 if self.path != "/drain" else 400)
                return
            try:
                hook.handle(json.loads(self.rfile.read(length)))
            except (ValueError, UnicodeDecodeError) as exc:
                self.send_error(400, str(exc)[:200])
                return
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)
