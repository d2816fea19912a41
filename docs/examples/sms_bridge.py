#!/usr/bin/python3
"""An example a site adapts: level 3 to a phone or SMS gateway through clusterforge's pager webhook.

clusterforge's Alertmanager sends every level 3 notification to `monitoring.alerts.page.webhook` as
Alertmanager's webhook JSON (version 4). This bridge is that URL: for each firing alert of the notification
it writes one short text (level, alert, host, rack and U when the rule labelled them, the summary) and POSTs
`{"to": NUMBER, "text": TEXT}` as JSON to the gateway (`--gateway`, a provider's HTTP API: adapt `send`).

Retries are Alertmanager's: the bridge answers 200 only when the gateway took every text, else 502, and
Alertmanager sends the same notification again with backoff until it is delivered or the group's next
interval starts (tested: docs/monitoring.md, "Level 3 to a phone"). Resolved notifications are not sent to the
pager (the rendered alertmanager.yml has `send_resolved: false` for it), so a text always means "act now".

Standard library only. Run it on the monitoring node, on loopback:
    python3 sms_bridge.py --listen 127.0.0.1:9096 --gateway https://sms.example.org/api/send --to +15550100
and set `page.webhook: http://127.0.0.1:9096/` in the inventory.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 1024 * 1024
MAX_TEXT = 160  # one SMS


def texts(payload: Any) -> list[str]:
    """One text per firing alert of an Alertmanager webhook payload; ValueError when it is not one."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise ValueError("not an Alertmanager webhook payload")
    out = []
    for alert in payload["alerts"]:
        if not isinstance(alert, dict) or alert.get("status") != "firing":
            continue
        raw_labels, raw_notes = alert.get("labels"), alert.get("annotations")
        labels: dict[str, Any] = raw_labels if isinstance(raw_labels, dict) else {}
        notes: dict[str, Any] = raw_notes if isinstance(raw_notes, dict) else {}
        where = " ".join(str(labels[k]) if k != "u" else "U" + str(labels[k]) for k in ("rack", "u") if k in labels)
        head = f"L{labels.get('level', '?')} {labels.get('alertname', '?')} {labels.get('host', 'cluster')}"
        text = " ".join(p for p in (head, where and f"({where})", str(notes.get("summary", ""))) if p)
        out.append(text[:MAX_TEXT])
    return out


def send(gateway: str, to: str, text: str) -> None:
    """The gateway's API: adapt to the provider (auth headers from a file the bridge reads, never the inventory)."""
    body = json.dumps({"to": to, "text": text}).encode("utf-8")
    request = urllib.request.Request(gateway, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def serve(listen: str, gateway: str, to: list[str]) -> ThreadingHTTPServer:
    host, _, port = listen.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self.send_error(400)
                return
            try:
                messages = texts(json.loads(self.rfile.read(length)))
            except (ValueError, UnicodeDecodeError) as exc:
                self.send_error(400, str(exc)[:200])
                return
            try:
                for number in to:
                    for text in messages:
                        send(gateway, number, text)
            except OSError as exc:  # the gateway did not take it: Alertmanager sends the notification again
                self.send_error(502, str(exc)[:200])
                return
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, int(port)), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description="level 3 to an SMS gateway (Alertmanager webhook receiver)")
    parser.add_argument("--listen", default="127.0.0.1:9096")
    parser.add_argument("--gateway", required=True, help="the gateway's send URL")
    parser.add_argument("--to", action="append", required=True, help="a phone number (repeat for more)")
    args = parser.parse_args()
    serve(args.listen, args.gateway, args.to).serve_forever()


if __name__ == "__main__":
    main()
