"""The deploy verb: inventory -> host plans -> (a caller's stage) -> engine -> results.

    outcome = deploy(Path("inventories/lab"), DeployRequest(dry_run=True, stage=LabStage(Path(".lab/lab/state"))))
    outcome.exit_code   # 0 all hosts fine, 1 some host failed, 5 some host unreachable
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..check.checked import load_checked
from ..inventory import addresses_file
from ..inventory.env_entries import dir_name
from ..inventory.selection import SelectionError, select_nodes
from ..model.index import Index
from ..util.errors import ExitCode
from ..util.fsutil import LockTimeout
from .component import HostPlan
from .desired import COMPONENTS, host_plans
from .options import DeployOptions, Mirror, Sources, mirrors_of_inventory, read_repo_auth
from .reboot import RebootOutcome, reboot_hosts
from .record import RecordError, changed_plans, read_record, update_record
from .retire import retire_component
from .runner import HostResult, HostSession, SshSettings, make_state, run_deploy

EXIT_OK = int(ExitCode.OK)
EXIT_HOSTS_FAILED = int(ExitCode.FAILURE)  # a host failed (the others finished)
EXIT_UNREACHABLE = int(ExitCode.UNREACHABLE)  # a host could not be reached
EXIT_USAGE = int(ExitCode.USAGE_OR_PARSE)


class DeployError(Exception):
    """A problem with the request itself (bad --limit, no such stage): nothing was started."""


@dataclass(frozen=True)
class Placed:
    """A stage's hosts for a run: the plans addressed at them, what each is (for the record), the network and
    addresses every target must be in (the guard: a staged run never reaches an inventory address)."""

    plans: list[HostPlan]
    ids: dict[str, str]
    network: str
    addresses: frozenset[str]
    notes: tuple[str, ...] = ()


class Stage(Protocol):
    """Where a staged run deploys, handed in by the caller (deploy imports no lab): its package repository
    for the run's duration, its hosts, how to reach them and where it keeps its record."""

    @property
    def record_dir(self) -> Path: ...

    def session(self, index: Index) -> AbstractContextManager[Mirror | Sources]:
        """The repositories the hosts are pointed at, served while the run lasts."""
        ...

    def place(self, wanted: Mapping[str, HostPlan], limit: tuple[str, ...]) -> Placed:
        """The plans of the hosts the stage has, addressed at them (DeployError when `limit` names one it has
        not)."""
        ...

    def ssh(self) -> SshSettings: ...


@dataclass(frozen=True)
class DeployRequest:
    dry_run: bool = False
    limit: tuple[str, ...] = ()
    batch: int = 0
    max_fail_percent: int = 100
    parallel: int | None = None
    """Hosts at once; None: the inventory's `deploy.parallel`."""
    components: tuple[str, ...] | None = None
    stage: Stage | None = None
    """Where a staged run deploys instead of the inventory's hosts (a rehearsal on the lab: the caller's,
    rehearsal/stage.py); None: the inventory's hosts at their management addresses."""
    ssh: SshSettings | None = None
    repo: Mirror | None = None
    root: str = "/"
    changed_only: bool = False
    """Only hosts and components whose desired state is not the one on record (record.py)."""
    record_dir: Path | None = None
    """Where a run against the inventory's hosts keeps its record (a staged run keeps it where its stage does)."""

    @property
    def record_at(self) -> Path | None:
        return self.stage.record_dir if self.stage is not None else self.record_dir


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


def plans_for(env: Path, req: DeployRequest, mirror: Mirror | Sources | None, index: Index, *,
              whole: bool = False) -> dict[str, HostPlan]:
    """The selected hosts' plans: with the components the request names, or `whole` (every component: what
    `retire` needs to know the host still wants)."""
    # a staged run's repositories replace every one the inventory names (a rehearsal never reaches the site's)
    staged = req.repo is not None or mirror is not None
    sources = mirror if isinstance(mirror, Sources) else Sources(mirror)
    opts = DeployOptions(env.name, repo=req.repo or sources.apt or (None if staged else Mirror.of_inventory(index.inv)),
                         repo_auth=read_repo_auth(), root=req.root, components=None if whole else req.components,
                         mirrors=dict(sources.families) if staged else mirrors_of_inventory(index.inv))
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
    """The targets of a run, for either engine: a stage's hosts (its repository served for the run's duration)
    or the inventory's hosts; with `changed_only`, cut down to what changed."""
    if req.stage is None:
        plans = list(plans_for(env, req, None, index, whole=True).values())
        ids = {p.name: f"ssh:{p.address}" for p in plans}
        record = _record(req, env)
        plans = with_retire(plans, req, ids, record)
        yield Targets(_only_changed(plans, req, ids, record), req.ssh or ssh_from_inventory(env, index), ids)
        return
    with req.stage.session(index) as mirror:
        placed = req.stage.place(plans_for(env, req, mirror, index, whole=True), req.limit)
        staged_only(placed)
        record = _record(req, env)
        plans = with_retire(placed.plans, req, placed.ids, record)
        yield Targets(_only_changed(plans, req, placed.ids, record), req.ssh or req.stage.ssh(), placed.ids,
                      placed.notes)


def staged_only(placed: Placed) -> None:
    """Refuse (DeployError) any target that is not one of the stage's own addresses on its network: a staged
    run (a rehearsal on the lab) must never reach an inventory address."""
    net = ipaddress.ip_network(placed.network)
    bad = [f"{p.name} at {p.address}" for p in placed.plans
           if p.address not in placed.addresses or ipaddress.ip_address(p.address) not in net]
    if bad:
        raise DeployError(f"refusing to deploy outside the staged network {placed.network}: {', '.join(bad[:5])}")


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
        driver = next((p for p in plan.pins if p.driver), None)
        want = driver.version.split("-", 1)[0] if driver else ""
        if want and facts.nvidia_loaded != want:
            return f"back, but nvidia module {facts.nvidia_loaded or 'not loaded'} (want {want})"
        return None
    return "did not come back before the reboot policy's timeout"
