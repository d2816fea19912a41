"""The floor page's site (issue #37; docs/floor.md): its files, its documents, and a read-only HTTP server for them.

`FloorSite` answers a path with what the page asks for and nothing else: the page (`/`, `/floor.js`,
`/floor.css`), the floor (`/floor.json`), the live state (`/live.json`, its sources read again at most every
`refresh_s`), and a node's or switch's document (`/nodes/<name>.json`, `/switches/<name>.json`, for names the
inventory declares: a name is looked up, never joined into a path). Everything else is 404, every method but GET
and HEAD 405. `write_site` writes the same files into a directory for a web server (live.json as of then).
`serve` runs it with the standard library's threading server; the caller chooses the address (the command
refuses anything but loopback without its explicit flag: the page has no authentication).
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from ..model.index import Index
from ..util.fsutil import write_atomic
from .doc import floor_doc, node_doc, switch_doc
from .live import Reading, live_doc

STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/floor.js": ("floor.js", "text/javascript; charset=utf-8"),
          "/floor.css": ("floor.css", "text/css; charset=utf-8")}
JSON = "application/json"
HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                                      "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"}

Reader = Callable[[], str]
"""A source: returns its text now, or raises OSError / ValueError saying why it cannot."""


def static_file(name: str) -> bytes:
    return resources.files("clusterforge.floor").joinpath("static", name).read_bytes()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(data: Any) -> bytes:
    # `<` escaped too: a document is data wherever it ends up, never markup
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").encode()


class FloorSite:
    def __init__(self, index: Index, environment: str, sources: Mapping[str, tuple[str, Reader]],
                 refresh_s: float = 5.0, clock: Callable[[], str] = _now) -> None:
        self.index = index
        self.refresh_s = refresh_s
        self.sources = dict(sources)
        self.clock = clock
        doc = floor_doc(index, environment)
        doc["refresh_s"] = refresh_s
        self.floor = _json(doc)
        self._readings: dict[str, Reading] = {name: Reading(None, None, None, where)
                                              for name, (where, _r) in self.sources.items()}
        self._live: bytes | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def live(self) -> bytes:
        """The live document, its sources read again when the last reading is older than refresh_s."""
        with self._lock:
            if self._live is None or time.monotonic() - self._read_at >= self.refresh_s:
                now = self.clock()
                for name, (where, read) in self.sources.items():
                    before = self._readings[name]
                    try:
                        self._readings[name] = Reading(read(), now, None, where)
                    except (OSError, ValueError) as exc:
                        self._readings[name] = Reading(before.text, before.read_at, str(exc) or type(exc).__name__,
                                                       where)
                self._live = _json(live_doc(self.index, self._readings, now))
                self._read_at = time.monotonic()
            return self._live

    def get(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a request path (its query ignored)."""
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path in STATIC:
            name, kind = STATIC[path]
            return 200, kind, static_file(name)
        if path == "/floor.json":
            return 200, JSON, self.floor
        if path == "/live.json":
            return 200, JSON, self.live()
        for prefix, make in (("/nodes/", node_doc), ("/switches/", switch_doc)):
            if path.startswith(prefix) and path.endswith(".json"):
                doc = make(self.index, path[len(prefix):-len(".json")])
                if doc is not None:
                    return 200, JSON, _json(doc)
        return 404, "text/plain; charset=utf-8", b"not found\n"


def write_site(site: FloorSite, out: Path) -> int:
    """Every file of the site under `out` (each written atomically); how many."""
    files: dict[str, bytes] = {name: static_file(name) for name, _kind in STATIC.values()}
    files["floor.json"] = site.floor
    files["live.json"] = site.live()
    for n in site.index.inv.nodes:
        files[f"nodes/{n.name}.json"] = _json(node_doc(site.index, n.name))
    for s in site.index.inv.switches:
        files[f"switches/{s.name}.json"] = _json(switch_doc(site.index, s.name))
    for rel, body in files.items():
        write_atomic(out / rel, body)
    return len(files)


def handler(site: FloorSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "clusterforge-floor"
        sys_version = ""

        def _answer(self, body: bool) -> None:
            status, kind, data = site.get(self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for k, v in HEADERS.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

        def _refuse(self) -> None:
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: the command prints its address once

    return Handler


def serve(site: FloorSite, host: str, port: int) -> ThreadingHTTPServer:
    """The server, bound (port 0: a free one); the caller runs `serve_forever` and closes it."""
    server = ThreadingHTTPServer((host, port), handler(site))
    server.daemon_threads = True
    return server
