"""What was applied, kept on record: per host and component, a digest of the desired state deployed.

After a real (not dry) run, every host that finished (`ok` or `changed`) has the digests of
the components that run deployed written to `<dir>/applied.json`; a failed or unreachable
host keeps its previous record, so the next run retries it. One line per run is appended to
`<dir>/history.jsonl` (when, engine, environment, inventory digest, git commit, hosts by
status). The directory is the lab's state directory for a lab run (the record goes with the
lab), else `state/<env>/` (or `$CLUSTERFORGE_STATE_DIR/<env>/`).

`deploy --changed` deploys only the hosts and components whose desired state differs from
the record (or has none): after an inventory change, the hosts it touches. It trusts the
record: drift made by hand on a host is repaired by a full deploy, which is the default.

A digest covers a component's files (path, mode, content), package pins, packages, services
and modules. A secret file (repository credentials) counts by its path only: no digest of a
secret is ever written. Beside each digest the record keeps what the component owns on the host by name:
its services, the files it wrote whole (paths), the packages it holds. What a later inventory no longer
wants of those, the deploy retires (deploy/retire.py). A version 1 record (digests only) still reads: its
components retire nothing until they are deployed again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..inventory.env_entries import dir_name
from ..inventory.load import environment_files
from ..util import jsonstate
from ..util.echo import echo
from ..util.fsutil import directory_lock, remove_temporaries, write_atomic
from .component import RETIRE, Component, HostPlan

RECORD_FILE = "applied.json"
HISTORY_FILE = "history.jsonl"
STATE_DIR_ENV = "CLUSTERFORGE_STATE_DIR"
RECORD_VERSION = 3
READ_VERSIONS = (1, 2, 3)
"""1: digests only; 2: what each component owns by name; 3: the same with a checksum over the hosts."""


class RecordError(Exception):
    """The record file exists but cannot be read: say so rather than redeploying everything silently."""


def default_dir(env: Path) -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or "state") / dir_name(env)


def component_digest(c: Component) -> str:
    h = hashlib.sha256()
    h.update(c.name.encode())
    for f in sorted(c.files, key=lambda f: f.dest):
        content = b"<secret>" if f.secret else f.content.encode()
        h.update(f"\0file\0{f.dest}\0{f.mode:o}\0{int(f.block)}\0".encode() + hashlib.sha256(content).digest())
    for p in sorted(c.pins):
        h.update(f"\0pin\0{p.package}\0{p.version}\0{int(p.hold)}".encode())
    for label, items in (("package", c.packages), ("service", c.services), ("module", c.modules)):
        for item in sorted(items):
            h.update(f"\0{label}\0{item}".encode())
    return h.hexdigest()[:32]


def owned(c: Component) -> dict[str, list[str]]:
    """What a component puts on a host by name: its services, the files it writes whole (a managed block, as
    in /etc/hosts, is part of a file that is not ours), the packages it holds at their pin."""
    return {"services": list(c.services), "files": [f.dest for f in c.files if not f.block],
            "holds": [p.package for p in c.pins if p.hold]}


def record_entry(c: Component) -> dict[str, Any]:
    return {"digest": component_digest(c), **owned(c)}


def entry_digest(entry: Any) -> str | None:
    """A recorded component's digest: version 2 keeps it in an object, version 1 as the value itself."""
    if isinstance(entry, dict):
        digest = entry.get("digest")
        return digest if isinstance(digest, str) else None
    return entry if isinstance(entry, str) else None


class _Entry(BaseModel):
    """A version 2/3 component entry: its digest and what it owns by name (the shape a deploy writes)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    digest: str
    services: list[str] = []
    files: list[str] = []
    holds: list[str] = []


class _Host(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    target: str
    when: str = ""
    engine: str = ""
    components: dict[str, str | _Entry]


_HOSTS: TypeAdapter[dict[str, _Host]] = TypeAdapter(dict[str, _Host])
_MOVE = "move it away to start a new record (the next deploy is then a full one, and retires nothing)"


def _checksum(hosts: Mapping[str, Any]) -> str:
    """sha256 over the hosts as canonical JSON: a record changed by anything but a deploy no longer matches."""
    return hashlib.sha256(json.dumps(hosts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _shape_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = "hosts" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]
                              if p not in ("str", "_Entry"))  # the union's branch names are pydantic's, not ours
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg'].lower()}{more}"


def read_record(directory: Path, env_name: str | None = None) -> dict[str, dict[str, Any]]:
    """host -> {target, when, engine, components: {name: digest | entry}}; empty when there is no record.

    What retire removes comes from here, so a record is taken only whole and as a deploy wrote it: one that
    cannot be read, is not JSON, is of a version this release does not know (a newer one), has a field of
    the wrong shape, fails its checksum (cut, bit-flipped, edited by hand), or was written for another
    environment than `env_name` is a RecordError naming the file and what is wrong; the deploy is then
    refused and nothing is retired."""
    path = directory / RECORD_FILE
    if not path.exists() and not path.is_symlink():
        return {}
    try:
        raw = jsonstate.read_bytes(path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise RecordError(f"{path}:{line}: not valid UTF-8 (byte {raw[exc.start]:#04x} at byte offset "
                              f"{exc.start}); {_MOVE}") from None
        data = jsonstate.loads(text)
        if not isinstance(data, dict) or "hosts" not in data:
            raise ValueError("no hosts")
        version = data.get("version")
        if type(version) is not int or version not in READ_VERSIONS:  # `true` == 1 and 3.0 == 3 are no versions
            newer = isinstance(version, int) and not isinstance(version, bool) and version > RECORD_VERSION
            why = ": written by a newer clusterforge, whose record this one cannot read; deploy with that release"
            raise ValueError(f"version {echo(version)}" + (why if newer else ""))
        hosts = data["hosts"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise RecordError(f"{path}: not a deploy record ({getattr(exc, 'strerror', None) or exc}); {_MOVE}") from None
    try:
        _HOSTS.validate_python(hosts)
    except ValidationError as exc:
        raise RecordError(f"{path}: not a deploy record as a deploy writes it: {_shape_error(exc)}; {_MOVE}") from None
    kept = data.get("sha256")
    if kept is not None and kept != _checksum(hosts):
        raise RecordError(f"{path}: its checksum does not match its hosts (cut short, damaged, or edited by hand); "
                          f"{_MOVE}")
    if version >= 3 and kept is None:
        raise RecordError(f"{path}: a version {version} record without its checksum; {_MOVE}")
    written_for = data.get("env")
    if env_name is not None and written_for is not None and written_for != env_name:
        raise RecordError(f"{path}: written for environment {echo(written_for)}, not {echo(env_name)}: another "
                          "environment's record is never used (pass this one's own --record directory)")
    out: dict[str, dict[str, Any]] = hosts
    return out


def changed_plans(plans: Iterable[HostPlan], record: Mapping[str, Mapping[str, Any]],
                  targets: Mapping[str, str]) -> list[HostPlan]:
    """The plans cut down to the components whose desired state is not the one on record (hosts with
    none such left out). A host recorded for another target (a re-created lab container) has no record."""
    out = []
    for plan in plans:
        rec = record.get(plan.name)
        applied = rec.get("components", {}) if rec and rec.get("target") == targets.get(plan.name) else {}
        if not applied:  # nothing on record: all of it, without hashing
            out.append(plan)
            continue
        todo = tuple(c for c in plan.components if entry_digest(applied.get(c.name)) != component_digest(c))
        if todo:
            out.append(dataclasses.replace(plan, components=todo))
    return out


def update_record(directory: Path, plans: Iterable[HostPlan], results: Iterable[Any], *, engine: str, env: Path,
                  targets: Mapping[str, str]) -> None:
    """Record the components of every host that finished; append the run to the history. Under the
    directory's lock: deploys of disjoint hosts that run at the same time (a day-2 parallel group) each
    read the record the other wrote."""
    directory.mkdir(parents=True, exist_ok=True)
    with directory_lock(directory):
        # a run killed mid-write (SIGKILL: no cleanup of its own) left its temporary here: under the lock no
        # other run is writing, so every temporary in the directory is a dead run's
        remove_temporaries(directory, recursive=False)
        _update_record(directory, plans, results, engine=engine, env=env, targets=targets)


def _update_record(directory: Path, plans: Iterable[HostPlan], results: Iterable[Any], *, engine: str, env: Path,
                   targets: Mapping[str, str]) -> None:
    record = read_record(directory, dir_name(env))
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    by_name = {p.name: p for p in plans}
    statuses: dict[str, list[str]] = {}
    for r in results:
        statuses.setdefault(r.status, []).append(r.name)
        plan = by_name.get(r.name)
        if plan is None or r.status not in ("ok", "changed"):
            continue
        target = targets.get(r.name, plan.address)
        prev = record.get(r.name) or {}
        components = dict(prev.get("components", {})) if prev.get("target") == target else {}
        for c in plan.components:
            if c.name == RETIRE:  # what it retired is the host's no more
                for name in c.retires:
                    components.pop(name, None)
            else:
                components[c.name] = record_entry(c)
        record[r.name] = {"target": target, "when": when, "engine": engine, "components": components}
    hosts = dict(sorted(record.items()))
    write_atomic(directory / RECORD_FILE, json.dumps(
        {"version": RECORD_VERSION, "env": dir_name(env), "sha256": _checksum(hosts), "hosts": hosts},
        indent=1) + "\n")
    line = {"when": when, "engine": engine, "env": str(env), "inventory": inventory_digest(env),
            "commit": _git_commit(env), "hosts": {k: sorted(v) for k, v in sorted(statuses.items())}}
    with (directory / HISTORY_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def last_deploy(directory: Path) -> dict[str, Any] | None:
    """The newest run in the history that recorded a git commit, or None."""
    path = directory / HISTORY_FILE
    if not path.exists():
        return None
    try:
        data = jsonstate.read_bytes(path)
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the deploy history ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise RecordError(f"{path}: cannot read the deploy history ({exc}); move it away") from None
    offset = len(data)
    lines = data.split(b"\n")
    for number in range(len(lines), 0, -1):
        raw = lines[number - 1]
        offset -= len(raw) + (1 if number < len(lines) else 0)
        try:
            run = jsonstate.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise RecordError(
                f"{path}:{number}: not valid UTF-8 (byte {raw[exc.start]:#04x} at byte offset "
                f"{offset + exc.start}); the deploy history is damaged: repair or move that line away"
            ) from None
        except ValueError:
            continue  # a line cut short by a killed run: the ones before it still count
        if isinstance(run, dict) and run.get("commit"):
            return run
    return None


def inventory_digest(env: Path) -> str:
    """sha256 over the environment's files as the loader reads them (names and bytes): which inventory
    was applied."""
    h = hashlib.sha256()
    for f in environment_files(env):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def _git_commit(env: Path) -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=env if env.is_dir() else env.parent,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
