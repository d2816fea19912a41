"""pyinfra's CLI, two ways, for the same work on the same lab: clusterforge's named operations
(deploy/site.py: one read-only probe per host, each action's commands in one shell call) against
pyinfra's own operations (bench/pyinfra_native/site.py: files.put/files.block, apt.update,
apt.packages, a guarded `apt-mark hold`, systemd.service, server.modprobe).

    python bench/pyinfra_native_bench.py          # under flock /tmp/cf-lab.lock (root, podman)

Each style starts on fresh containers of one lab (gpu01, gpu02, sm01, lus01) and is timed for a dry run
(`pyinfra --dry`: facts and operations prepared, nothing executed), the first run, the second run and a dry
run again. Every timed run is checked, untimed: pyinfra exits 0, and after each real run clusterforge's
own dry run (its HostState probe) finds nothing left to change on any host, so both styles reached the
same state (files, pins, holds). A run that fails raises; it is never a figure.
Rows: {"bench": "pyinfra-ops", "style", "phase", "hosts", "wall_s"}, then native/clusterforge ratios.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from clusterforge.api import load_checked  # noqa: E402

ENV = ROOT / "inventories" / "lab"
WORK = Path("/var/tmp/cf-bench-native")
NODES = ("gpu01", "gpu02", "sm01", "lus01")
STYLES = {"native": ROOT / "bench" / "pyinfra_native" / "site.py", "clusterforge": ROOT / "deploy" / "site.py"}
PHASES = (("dry", True), ("first", False), ("second", False), ("dry-again", True))
TIMEOUT_S = 900


class BenchFailed(RuntimeError):
    """A timed run did not do its work: no figure."""


def _pyinfra(state_dir: Path, deploy_file: Path, dry: bool) -> float:
    from clusterforge.lab import read_state
    from clusterforge.rehearsal.stage import lab_session

    state = read_state(state_dir)
    if state is None:
        raise BenchFailed(f"no lab in {state_dir}")
    argv = [str(Path(sys.executable).with_name("pyinfra")), "-y", *(["--dry"] if dry else []),
            str(ROOT / "bench" / "pyinfra_native" / "inventory.py"), str(deploy_file)]
    env = dict(os.environ, CF_BENCH_LAB_STATE=str(state_dir), CLUSTERFORGE_ENV=str(ENV),
               PYTHONPATH=str(ROOT / "src"))
    with lab_session(state, load_checked(ENV).index):  # the stand-in repository, served for the run
        start = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
        wall = time.monotonic() - start
    if proc.returncode != 0:
        raise BenchFailed(f"pyinfra {deploy_file.name} (dry={dry}) exited {proc.returncode}: "
                          f"{(proc.stdout + proc.stderr)[-1500:]}")
    return wall


def _converged(state_dir: Path) -> None:
    """clusterforge's own dry run: every host reached, nothing left to change."""
    from clusterforge.deploy.api import DeployRequest, deploy
    from clusterforge.rehearsal.stage import LabStage

    out = deploy(ENV, DeployRequest(dry_run=True, stage=LabStage(state_dir)))
    bad = {r.name: (r.status, [f"{c.component}/{c.kind}/{c.target}" for c in r.changes][:5], r.error)
           for r in out.results if r.status != "ok" or r.changes}
    if bad or {r.name for r in out.results} != set(NODES):
        raise BenchFailed(f"not converged after the run: {bad}")


def run(nodes: tuple[str, ...] = NODES, cidr: str = "198.19.248.0/24") -> list[dict[str, Any]]:
    from clusterforge.lab import down, up
    from deploy_bench import bench_lab_spec

    spec = bench_lab_spec("cfnative", cidr, WORK, nodes)
    rows: list[dict[str, Any]] = []
    try:
        for style, deploy_file in STYLES.items():
            down(spec.state_dir)
            up(spec, mode="podman")
            for phase, dry in PHASES:
                wall = _pyinfra(spec.state_dir, deploy_file, dry)
                if not dry:
                    _converged(spec.state_dir)
                rows.append({"bench": "pyinfra-ops", "style": style, "phase": phase, "hosts": len(nodes),
                             "wall_s": round(wall, 3)})
    finally:
        down(spec.state_dir)
    by = {(r["style"], r["phase"]): r["wall_s"] for r in rows}
    for phase, _ in PHASES:
        rows.append({"bench": "pyinfra-ops", "metric": f"native/clusterforge {phase}",
                     "value": round(by[("native", phase)] / by[("clusterforge", phase)], 2)})
    return rows


if __name__ == "__main__":
    import json

    for row in run():
        print(json.dumps(row), flush=True)
