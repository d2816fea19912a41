"""The deploy verb: inventory -> host plans -> (lab glue) -> engine -> results.

    outcome = deploy(Path("inventories/lab"), DeployRequest(dry_run=True, lab_state=Path(".lab")))
    outcome.exit_code   # 0 all hosts fine, 1 some host failed, 5 some host unreachable
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import platform
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..check.checked import load_checked
from ..inventory import addresses_file
from ..inventory.env_entries import dir_name
from ..inventory.selection import SelectionError, select_nodes
from ..lab import LabState, read_state
from ..model.index import Index
from ..util.errors import ExitCode
from ..util.fsutil import LockTimeout
from .component import HostPlan
from .desired import COMPONENTS, host_plans
from .lablink import lab_plans, lab_ssh, repo_url, serve_repo
from .options import DeployOptions, Mirror, read_repo_auth
from .packages import all_pins
from .reboot import RebootOutcome, reboot_hosts
from .record import RecordError, changed_plans, read_record, update_record
from .retire import retire_component
from .runner import HostResult, HostSession, SshSettings, make_state, run_deploy
from .standin import MONITORING_PACKAGES, STANDIN_RECIPE, SUPPORT_PACKAGES, build_repo, download_debs

EXIT_OK = int(ExitCode.OK)
EXIT_HOSTS_FAILED = int(ExitCode.FAILURE)  # a host failed (the others finished)
EXIT_UNREACHABLE = int(ExitCode.UNREACHABLE)  # a host could not be reached
EXIT_USAGE = int(ExitCode.USAGE_OR_PARSE)


class DeployError(Exception):
    """A problem with the request itself (bad --limit, missing lab): nothing was started."""


@dataclass(frozen=True)
class DeployRequest:
    dry_run: bool = False
    limit: tuple[str, ...] = ()
    batch: int = 0
    max_fail_percent: int = 100
    parallel: int | None = None
    """Hosts at once; None: the inventory's `deploy.parallel`."""
    components: tuple[str, ...] | None = None
    lab_state: Path | None = None
    ssh: SshSettings | None = None
    repo: Mirror | None = None
    root: str = "/"
    changed_only: bool = False
    """Only hosts and components whose desired state is not the one on record (record.py)."""
    record_dir: Path | None = None
    """Where a run against the inventory's hosts keeps its record (a lab run keeps it in the lab's state)."""

    @property
    def record_at(self) -> Path | None:
        return self.lab_state if self.lab_state is not None else self.record_dir


@dataclass
class DeployOutcome:
    results: list[HostResult]
    reboots: list[RebootOutcome] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if any(r.status == "unreachable" for r in self.results):
            return EXIT_UNREACHABLE
        bad = any(r.failed for r in self.results) or any(not o.done and "policy 'none'" not in o.message
                                                          for o in self.reboots)
        return EXIT_HOSTS_FAILED if bad else EXIT_OK


def select_hosts(index: Index, limit: Sequence[str]) -> list[str]:
    """Nodes matching any of `limit` (node name, rack name, role or scalable unit `suNN`); all when empty."""
    try:
        return select_nodes(index, limit)
    except SelectionError as exc:
        raise DeployError(str(exc)) from None


def ssh_from_inventory(env: Path, index: Index) -> SshSettings:
    d = index.inv.deploy
    known = (env / d.known_hosts) if d.known_hosts else None
    return SshSettings(user=d.ssh_user, port=d.ssh_port, known_hosts=known, connect_retries=d.connect_retries)


def lab_repo(state: LabState, index: Index) -> Path:
    """The stand-in repository for this lab's pins, built once into the lab's state directory."""
    out = state.state_dir / "standin-repo"
    stamp = out / ".pins"
    pins = all_pins(index.inv.software)
    want = ("\n".join(f"{p.package}={p.version}" for p in pins) + f"\nkernel={platform.release()}\n"
            f"recipe={STANDIN_RECIPE}\n")
    if not stamp.is_file() or stamp.read_text() != want:
        try:
            real = download_debs((*SUPPORT_PACKAGES, *MONITORING_PACKAGES), state.state_dir / "support-debs")
        except (subprocess.SubprocessError, OSError):
            real = []  # the pyinfra engine does not need them; Ansible's apt module will say what is missing
        build_repo(out, pins, kernels=[platform.release()], real_debs=real)
        stamp.write_text(want)
    return out


def lab_mirror(state: LabState) -> Mirror:
    """The apt source of the lab's stand-in repository, as the hosts are configured with it."""
    return Mirror(repo_url(state), "lab", ("main",), "trusted=yes")


@contextlib.contextmanager
def lab_session(state: LabState, index: Index) -> Iterator[Mirror]:
    server = serve_repo(lab_repo(state, index), state.gateway)
    try:
        yield lab_mirror(state)
    finally:
        server.terminate()
        server.wait(timeout=10)


def plans_for(env: Path, req: DeployRequest, mirror: Mirror | None, index: Index, *,
              whole: bool = False) -> dict[str, HostPlan]:
    """The selected hosts' plans: with the components the request names, or `whole` (every component: what
    `retire` needs to know the host still wants)."""
    opts = DeployOptions(env.name, repo=req.repo or mirror or Mirror.of_inventory(index.inv),
                         repo_auth=read_repo_auth(), root=req.root, components=None if whole else req.components)
    wanted = set(select_hosts(index, req.limit))
    return {n: p for n, p in host_plans(index, opts).items() if n in wanted}


def _record(req: DeployRequest, env: Path) -> dict[str, dict[str, Any]]:
    """The run's deploy record (record.py), read once: empty when the run keeps none or none exists yet; one
    that is not as a deploy wrote it for this environment refuses the run (nothing retired, nothing deployed)."""
    where = req.record_at
    try:
        return read_record(where, dir_name(env)) if where is not None else {}
    except RecordError as exc:
        raise DeployError(str(exc)) from None


def with_retire(whole: Sequence[HostPlan], req: DeployRequest, ids: Mapping[str, str],
                record: Mapping[str, Mapping[str, Any]]) -> list[HostPlan]:
    """Each host's plan cut to the components the request names, after what it was deployed (the record:
    record.py) and no component wants any more, to retire first (retire.py). No record: nothing to retire."""
    selection = frozenset(req.components) if req.components is not None else None
    out = []
    for plan in whole:
        comps = tuple(c for c in plan.components if selection is None or c.name in selection)
        rec = record.get(plan.name) or {}
        applied = rec.get("components", {}) if rec.get("target") == ids.get(plan.name) else {}
        retire = retire_component(plan, applied, COMPONENTS, selection) if applied else None
        out.append(dataclasses.replace(plan, components=comps if retire is None else (retire, *comps)))
    return out


@dataclass(frozen=True)
class Targets:
    """What a run deploys to: the host plans, how to reach them, and what each host is (for the record)."""

    plans: list[HostPlan]
    ssh: SshSettings
    ids: dict[str, str]
    notes: tuple[str, ...] = ()


@contextlib.contextmanager
def deploy_targets(env: Path, req: DeployRequest, index: Index) -> Iterator[Targets]:
    """The targets of a run, for either engine: the lab's containers (its stand-in repository served
    for the run's duration) or the inventory's hosts; with `changed_only`, cut down to what changed."""
    if req.lab_state is None:
        plans = list(plans_for(env, req, None, index, whole=True).values())
        ids = targets(plans, None)
        record = _record(req, env)
        plans = with_retire(plans, req, ids, record)
        yield Targets(_only_changed(plans, req, ids, record), req.ssh or ssh_from_inventory(env, index), ids)
        return
    state = read_state(req.lab_state)
    if state is None:
        raise DeployError(f"no lab recorded in {req.lab_state}: start it first")
    with lab_session(state, index) as mirror:
        wanted = plans_for(env, req, mirror, index, whole=True)
        absent = [n for n in wanted if n not in state.hosts]
        if absent and req.limit:
            raise DeployError(f"--limit {', '.join(req.limit)}: {len(absent)} of the selected host(s) have no "
                              f"container in the lab ({', '.join(absent[:5])}{', ...' if len(absent) > 5 else ''}): "
                              "bring it up with that selection (`clusterforge lab up ENV --limit ...`)")
        plans = lab_plans(wanted, state)
        lab_only_targets(plans, state)
        ids = targets(plans, state)
        record = _record(req, env)
        plans = with_retire(plans, req, ids, record)
        notes = (f"lab: {len(plans)} of {len(wanted)} host(s) have a container; the other {len(absent)} are "
                 "not deployed (their HCAs are simulated)",) if absent else ()
        yield Targets(_only_changed(plans, req, ids, record), req.ssh or lab_ssh(state), ids, notes)


def lab_only_targets(plans: Sequence[HostPlan], state: LabState) -> None:
    """Refuse (DeployError) any target that is not a lab container's address on the lab's own network:
    a lab run must never reach an inventory address."""
    net = ipaddress.ip_network(state.network_cidr)
    lab_addresses = {rec.address for rec in state.hosts.values()}
    bad = [f"{p.name} at {p.address}" for p in plans
           if p.address not in lab_addresses or ipaddress.ip_address(p.address) not in net]
    if bad:
        raise DeployError(f"refusing to deploy outside the lab network {state.network_cidr}: {', '.join(bad[:5])}")


def targets(plans: Sequence[HostPlan], state: LabState | None) -> dict[str, str]:
    """What each host is, for the record: its lab container (re-created: a new one), else its address."""
    out = {}
    for p in plans:
        rec = state.hosts.get(p.name) if state is not None else None
        out[p.name] = f"lab:{rec.container_id or rec.address}" if rec is not None else f"ssh:{p.address}"
    return out


def _only_changed(plans: list[HostPlan], req: DeployRequest, ids: dict[str, str],
                  record: Mapping[str, Mapping[str, Any]]) -> list[HostPlan]:
    if not req.changed_only:
        return plans
    if req.record_at is None:
        raise DeployError("--changed needs a deploy record: none is kept for this run")
    return changed_plans(plans, record, ids)


def run_engine(env: Path, req: DeployRequest, engine: str,
               run: Callable[[list[HostPlan], SshSettings, int], DeployOutcome],
               started: Callable[[int], None] | None = None) -> DeployOutcome:
    """Either engine's run: load, resolve the targets, run (when there is anything to do), and keep the
    record of what each finished host got (a dry run changes nothing, so records nothing). `started` hears
    how many hosts the run has once they are known (a progress bar's total)."""
    start = time.monotonic()
    checked = load_checked(env)
    index = checked.index
    with deploy_targets(env, req, index) as t:
        # the first real deploy freezes the addresses it hands out (a dry run writes nothing)
        try:
            frozen = None if req.dry_run or not t.plans else addresses_file.freeze_if_absent(env, index, checked.source)
        except LockTimeout as exc:
            raise DeployError(f"cannot freeze the addresses: {exc}") from None
        if started is not None:
            started(len(t.plans))
        parallel = req.parallel or index.inv.deploy.parallel
        outcome = run(t.plans, t.ssh, parallel) if t.plans else DeployOutcome([])
    outcome.notes[:0] = t.notes
    if frozen is not None:
        outcome.notes.append(f"addresses frozen in {frozen} (first deploy): commit it with the inventory")
    where = req.record_at
    if not req.dry_run and where is not None and outcome.results:
        update_record(where, t.plans, outcome.results, engine=engine, env=env, targets=t.ids)
    outcome.seconds = time.monotonic() - start
    return outcome


def deploy(env: Path, req: DeployRequest, progress: Callable[[HostResult], None] | None = None,
           started: Callable[[int], None] | None = None) -> DeployOutcome:
    """The pyinfra run; `progress` hears each host as it finishes, `started` the number of hosts first."""
    return run_engine(env, req, "pyinfra",
                      lambda plans, ssh, parallel: _run(plans, ssh, req, parallel, progress), started)


def _run(plans: list[HostPlan], ssh: SshSettings, req: DeployRequest, parallel: int,
         progress: Callable[[HostResult], None] | None) -> DeployOutcome:
    results = run_deploy(plans, ssh, dry_run=req.dry_run, batch=req.batch,
                         max_fail_percent=req.max_fail_percent, parallel=parallel, progress=progress)
    need = [p for p, r in zip(plans, results, strict=True) if r.reboot]
    reboots: list[RebootOutcome] = []
    if need and not req.dry_run:
        reboots = reboot_hosts(need, need[0].reboot, lambda p, deadline: _reboot_one(p, ssh, deadline))
    return DeployOutcome(results, reboots)


def _reboot_one(plan: HostPlan, ssh: SshSettings, deadline: float) -> str | None:
    """Reboot one host through SSH, wait until it answers again, check the new module is loaded."""
    session = HostSession(make_state([plan], ssh, 1), plan.name)
    try:
        session.connect()
        with contextlib.suppress(Exception):  # the connection drops as the host goes down
            session.run("systemctl reboot", "reboot", timeout=30)
    except Exception as exc:
        return f"could not start the reboot: {exc}"
    finally:
        session.close()
    time.sleep(5)
    while time.monotonic() < deadline:
        fresh = HostSession(make_state([plan], dataclasses.replace(ssh, connect_timeout_s=5), 1), plan.name)
        try:
            facts = fresh.facts(plan)
        except Exception:
            time.sleep(5)
            continue
        finally:
            fresh.close()
        driver = next((p for p in plan.pins if p.package.startswith("nvidia-driver-")), None)
        want = driver.version.split("-", 1)[0] if driver else ""
        if want and facts.nvidia_loaded != want:
            return f"back, but nvidia module {facts.nvidia_loaded or 'not loaded'} (want {want})"
        return None
    return "did not come back before the reboot policy's timeout"
