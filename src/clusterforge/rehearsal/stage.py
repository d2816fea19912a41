"""A rehearsal as the deploy's stage (deploy.api.Stage): the lab's containers as the targets, the lab's
stand-in repository for the pins as the package source, the lab's keys for SSH, its state directory for the
record. The deploy knows none of it: `clusterforge deploy --lab` (and the tests, benches and `make deploy`)
hand it a LabStage, as a site hands its own repository and hosts through the inventory."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..deploy.api import DeployError, Placed
from ..deploy.component import HostPlan
from ..deploy.options import DnfRepo, Mirror, Sources
from ..deploy.packages import all_pins, module_streams, nvidia_pins
from ..deploy.runner import SshSettings
from ..lab import LabState, read_state
from ..model.index import Index
from ..util.fsutil import directory_lock, write_atomic
from .lablink import lab_plans, lab_ssh, repo_url, serve_repo
from .standin import MONITORING_PACKAGES, STANDIN_RECIPE, SUPPORT_PACKAGES, build_repo, download_debs
from .standin_rpm import RPM_RECIPE, build_rpm_repo


def lab_families(state: LabState, index: Index) -> set[str]:
    """The OS families of the lab's hosts (their nodes' declared releases)."""
    releases = {index.hardware[name].os for name in state.hosts if name in index.hardware}
    return {family for r in releases if (family := index.cat.os.releases[r].family)}


def lab_repo(state: LabState, index: Index) -> Path:
    """The stand-in repositories for this lab's pins, built once into the lab's state directory: the apt one with
    every apt family's names (Debian's, Ubuntu's), and under rpm/ the dnf one when an EL-shaped host is there."""
    out = state.state_dir / "standin-repo"
    stamp = out / ".pins"
    families = lab_families(state, index)
    sw = index.inv.software
    apt = sorted({p for f in sorted((families - {"el9"}) | {"debian"}) for p in all_pins(sw, f)})
    rpm = all_pins(sw, "el9") if "el9" in families else []
    want = ("\n".join(f"{p.package}={p.version}" for p in apt) + f"\nkernel={platform.release()}\n"
            f"recipe={STANDIN_RECIPE}\n" + "".join(f"rpm:{p.package}={p.version}\n" for p in rpm)
            + (f"rpm-recipe={RPM_RECIPE}\n" if rpm else ""))
    if not stamp.is_file() or stamp.read_text() != want:
        try:
            real = download_debs((*SUPPORT_PACKAGES, *MONITORING_PACKAGES), state.state_dir / "support-debs")
        except (subprocess.SubprocessError, OSError):
            real = []  # the pyinfra engine does not need them; Ansible's apt module will say what is missing
        build_repo(out, apt, kernels=[platform.release()], real_debs=real)
        if rpm:
            branch = (sw.nvidia_driver or "").split(".", 1)[0]
            streams = {s: [p.package for p in nvidia_pins(sw, True, "el9")]
                       for s in module_streams("nvidia", family="el9", branch=branch)}
            # EPEL's node_exporter for the monitoring component: Debian's real one under its name
            ne = [d for d in real if d.name.startswith("prometheus-node-exporter_")]
            build_rpm_repo(out / RPM_DIR, rpm, kernels=[platform.release()], streams=streams,
                           node_exporter_deb=ne[0] if ne else None)
        stamp.write_text(want)
    return out


RPM_DIR = "rpm"


def lab_mirror(state: LabState) -> Mirror:
    """The apt source of the lab's stand-in repository, as the hosts are configured with it."""
    return Mirror(repo_url(state), "lab", ("main",), "trusted=yes")


def lab_sources(state: LabState, index: Index) -> Sources:
    """The lab's apt source, and its dnf repository (unsigned stand-ins: gpgcheck=0, LAB-ONLY) for EL hosts."""
    families = {"el9": DnfRepo(repo_url(state) + RPM_DIR + "/", gpgcheck=False)} \
        if "el9" in lab_families(state, index) else {}
    return Sources(lab_mirror(state), families)


SERVE_DIR = "standin-serve"
"""In the lab's state directory: the lock and the users file of the one repository server of the lab."""


@contextlib.contextmanager
def lab_session(state: LabState, index: Index) -> Iterator[Sources]:
    """The stand-in repositories, built and served while the run lasts. Runs at the same time (a day-2 plan's
    parallel deploy steps, each its own process) share one server on the lab's one repository address: the
    first starts it, each counts itself in and out under the lock, the last one out stops it (before, the first
    to finish stopped it under the others' feet: `Connection refused` mid-install)."""
    ctl = state.state_dir / SERVE_DIR
    with directory_lock(ctl):
        repo = lab_repo(state, index)  # built once, under the lock: a run beside it waits for the build
        users = _users(ctl)
        if users is None or not _serving(users[0]):
            users = (serve_repo(repo, state.gateway).pid, 0)
        _write_users(ctl, (users[0], users[1] + 1))
    try:
        yield lab_sources(state, index)
    finally:
        with directory_lock(ctl):
            pid, count = _users(ctl) or (users[0], 1)
            if count <= 1:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
                (ctl / USERS_FILE).unlink(missing_ok=True)
            else:
                _write_users(ctl, (pid, count - 1))


USERS_FILE = "users.json"


def _users(ctl: Path) -> tuple[int, int] | None:
    """(the server's pid, how many runs use it), or None when no server is recorded."""
    try:
        data = json.loads((ctl / USERS_FILE).read_text())
        return int(data["pid"]), int(data["count"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_users(ctl: Path, users: tuple[int, int]) -> None:
    write_atomic(ctl / USERS_FILE, json.dumps({"pid": users[0], "count": users[1]}) + "\n")


def _serving(pid: int) -> bool:
    """Is `pid` a repository server still running (not a pid the system gave to something else since)?"""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"http.server" in cmdline


def placed_in(state: LabState, wanted: Mapping[str, HostPlan], limit: tuple[str, ...]) -> Placed:
    """The wanted hosts that have a container, addressed at it; what each is for the record (a re-created
    container is a new host); the lab's network and addresses (the guard)."""
    absent = [n for n in wanted if n not in state.hosts]
    if absent and limit:
        raise DeployError(f"--limit {', '.join(limit)}: {len(absent)} of the selected host(s) have no "
                          f"container in the lab ({', '.join(absent[:5])}{', ...' if len(absent) > 5 else ''}): "
                          "bring it up with that selection (`clusterforge lab up ENV --limit ...`)")
    plans = lab_plans(dict(wanted), state)
    ids = {p.name: f"lab:{state.hosts[p.name].container_id or state.hosts[p.name].address}" for p in plans}
    notes = (f"lab: {len(plans)} of {len(wanted)} host(s) have a container; the other {len(absent)} are "
             "not deployed (their HCAs are simulated)",) if absent else ()
    return Placed(plans, ids, state.network_cidr, frozenset(rec.address for rec in state.hosts.values()), notes)


@dataclass(frozen=True)
class LabStage:
    """The lab of an environment (its state directory) as the deploy's stage."""

    state_dir: Path

    @property
    def record_dir(self) -> Path:
        return self.state_dir

    def _state(self) -> LabState:
        state = read_state(self.state_dir)
        if state is None:
            raise DeployError(f"no lab recorded in {self.state_dir}: start it first")
        return state

    @contextlib.contextmanager
    def session(self, index: Index) -> Iterator[Sources]:
        with lab_session(self._state(), index) as sources:
            yield sources

    def place(self, wanted: Mapping[str, HostPlan], limit: tuple[str, ...]) -> Placed:
        return placed_in(self._state(), wanted, limit)

    def ssh(self) -> SshSettings:
        return lab_ssh(self._state())
