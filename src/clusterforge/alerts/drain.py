"""Level 3's drain hook in this process (`clusterforge alerts ENV --drain-hook 127.0.0.1:PORT`): Alertmanager's
webhook in, respond/level3.py's response out, with the same config the render gives the monitoring node's hook
(`render.drain_hook_config`: each node's deploy.reboot.drain, the migration policy).

Alertmanager posts its webhook JSON to `http://127.0.0.1:<drain_hook_port>/drain`; for every firing level 3
alert whose `host` is a declared node the node is drained once per firing, and its jobs moved where the policy
says (docs/monitoring.md, "Level 3"). Only declared node names reach a hook: a label naming anything else is
ignored and journalled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..model.hooks import hook_argv
from ..model.index import Index
from ..render import ALERTMANAGER_PORT, drain_hook_config
from ..respond.level3 import Responder, firing

MAX_BODY = 4 * 1024 * 1024


def drain_targets(index: Index, payload: Any) -> tuple[list[str], list[str]]:
    """(declared hosts to drain, ignored host labels) from one Alertmanager webhook payload."""
    hosts = {host for _, host, _ in firing(payload)}
    return sorted(h for h in hosts if h in index.nodes), sorted(h for h in hosts if h not in index.nodes)


def responder(index: Index, template: Sequence[str] | None = None, **kw: Any) -> Responder:
    """The response for ENV as its monitoring node runs it; `template`: another drain argv than
    deploy.reboot.drain (without alerts.page.drain: the drain only). Keyword arguments go to Responder (journal,
    run, post, clock, sleep, emit)."""
    config = drain_hook_config(index, [f"http://127.0.0.1:{ALERTMANAGER_PORT}"]) or {
        "hosts": {n.name: {"drain": [], "migrate": False} for n in index.inv.nodes}, "migrate": None,
        "alertmanagers": [f"http://127.0.0.1:{ALERTMANAGER_PORT}"]}
    argv = list(template) if template is not None else list(index.inv.deploy.reboot.drain)
    config["hosts"] = {h: {**t, "drain": hook_argv(argv, h, None)} for h, t in config["hosts"].items()}
    return Responder(config, **kw)


def serve(hook: Responder, host: str, port: int) -> ThreadingHTTPServer:
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
