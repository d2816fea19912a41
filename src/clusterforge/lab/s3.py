"""LAB-ONLY: a real S3 server for the archive tier's S3 side (docs/storage.md, issue #23).

OpenStack Swift from Debian's packages (`swift-proxy`, `-account`, `-container`, `-object`, with `memcached`),
one node on loopback, its `s3api` middleware speaking S3 and `tempauth` holding one LAB user whose access key
and secret are the S3 keys. Everything lives under one directory (`root`): swift.conf and the rings
(`swift_dir`), the device directory (`mount_check = false`), each server's config and log. Nothing is written
elsewhere, nothing listens beyond 127.0.0.1, and `stop` ends every process it started (also when a start
fails half-way).

Footprint, measured (`S3Lab.rss_mb`): the five processes' resident memory, about 200 MB, well inside the lab's
budget; a Ceph RGW would need its monitors and OSDs too.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = ("swift-ring-builder", "swift-proxy-server", "swift-account-server", "swift-container-server",
         "swift-object-server", "memcached")
USER = ("lab", "archive")  # tempauth account and user: the S3 access key is "lab:archive"


class S3LabError(RuntimeError):
    """The lab's S3 server could not be started (its log's last lines say why)."""


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_SERVER = """[DEFAULT]
bind_ip = 127.0.0.1
bind_port = {port}
devices = {devices}
mount_check = false
swift_dir = {root}
workers = 0
log_name = lab-{kind}

[pipeline:main]
pipeline = {kind}-server

[app:{kind}-server]
use = egg:swift#{kind}
"""

_PROXY = """[DEFAULT]
bind_ip = 127.0.0.1
bind_port = {port}
swift_dir = {root}
workers = 0
log_name = lab-proxy

[pipeline:main]
pipeline = catch_errors gatekeeper proxy-logging cache listing_formats s3api tempauth copy proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:s3api]
use = egg:swift#s3api
location = {region}

[filter:tempauth]
use = egg:swift#tempauth
user_{account}_{user} = {secret} .admin

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:{memcache}

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:copy]
use = egg:swift#copy
"""

_SWIFT_CONF = """[swift-hash]
swift_hash_path_prefix = {prefix}
swift_hash_path_suffix = {suffix}

[storage-policy:0]
name = lab
default = yes
"""


@dataclass
class S3Lab:
    """A running single-node Swift with s3api (`start`), its S3 endpoint and keys."""

    root: Path
    region: str = "default"
    endpoint: str = ""
    access_key: str = ":".join(USER)
    secret_key: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, timeout_s: float = 60.0) -> S3Lab:
        missing = missing_tools()
        if missing:
            raise S3LabError(f"not installed: {', '.join(missing)} (scripts/lab-deps.sh installs Debian's swift "
                             "and memcached)")
        root = self.root
        devices = root / "srv"
        (devices / "d1").mkdir(parents=True, exist_ok=True)
        self.secret_key = secrets.token_hex(16)
        (root / "swift.conf").write_text(_SWIFT_CONF.format(prefix=secrets.token_hex(8), suffix=secrets.token_hex(8)))
        ports = {k: _free_port() for k in ("account", "container", "object", "proxy", "memcache")}
        for kind in ("account", "container", "object"):
            builder = str(root / f"{kind}.builder")
            for argv in (["swift-ring-builder", builder, "create", "8", "1", "1"],
                         ["swift-ring-builder", builder, "add", f"r1z1-127.0.0.1:{ports[kind]}/d1", "1"],
                         ["swift-ring-builder", builder, "rebalance"]):
                res = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
                if res.returncode not in (0, 1):  # rebalance exits 1 with a warning on a one-device ring
                    raise S3LabError(f"{' '.join(argv[:1] + argv[2:])}: {res.stdout[-300:]}{res.stderr[-300:]}")
            (root / f"{kind}-server.conf").write_text(_SERVER.format(port=ports[kind], devices=devices, root=root,
                                                                     kind=kind))
        (root / "proxy-server.conf").write_text(_PROXY.format(
            port=ports["proxy"], root=root, region=self.region, account=USER[0], user=USER[1],
            secret=self.secret_key, memcache=ports["memcache"]))
        try:
            self._spawn("memcached", ["memcached", "-l", "127.0.0.1", "-p", str(ports["memcache"]), "-U", "0",
                                      "-m", "16", *(["-u", "root"] if os.geteuid() == 0 else [])])
            for kind in ("account", "container", "object", "proxy"):
                self._spawn(kind, [f"swift-{kind}-server", str(root / f"{kind}-server.conf")])
            self.endpoint = f"http://127.0.0.1:{ports['proxy']}"
            self._wait(ports, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115  (closed by the process's end)
        try:
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True))
        finally:
            log.close()

    def _wait(self, ports: dict[str, int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        pending = dict(ports)
        while pending:
            for name, port in list(pending.items()):
                with socket.socket() as s:
                    s.settimeout(0.5)
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        del pending[name]
            dead = [p for p in self.procs if p.poll() is not None]
            if dead or (pending and time.monotonic() >= deadline):
                raise S3LabError(f"the lab's S3 server did not start ({', '.join(pending) or 'a process exited'}): "
                                 + self.log_tail())
            if pending:
                time.sleep(0.2)

    def log_tail(self, lines: int = 5) -> str:
        out = []
        for log in sorted(self.root.glob("*.log")):
            tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
            if tail:
                out.append(f"{log.name}: " + " | ".join(tail))
        return "; ".join(out)

    def rss_mb(self) -> float:
        """The resident memory of every process it runs, MB (from /proc)."""
        total = 0
        for p in self.procs:
            try:
                status = Path(f"/proc/{p.pid}/status").read_text()
            except OSError:
                continue
            total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        return total / 1024

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.procs.clear()

    def __enter__(self) -> S3Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
