"""Lab figures: a simulated fabric planned -> ibsim -> OpenSM ftree -> ibnetdiscover -> validate.

Fabric only (no containers), on the prod inventory (256 GPU nodes + 22 storage/SM nodes,
534 HCA ports, 48 switches): each step timed once (they are seconds, not microseconds).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.lab.fabric_tools import FabricClient, ibnetdiscover, start_opensm, stop_opensm
from clusterforge.lab.ibsim import LocalEndpoint, start_ibsim, stop_ibsim
from clusterforge.parse import ibnetdiscover as parse_ibnetdiscover
from clusterforge.render import render, write_tree
from clusterforge.validate.fabric import diff_fabric

ROOT = Path(__file__).resolve().parents[1]


def fabric_only(env: Path = ROOT / "inventories" / "prod") -> list[dict[str, object]]:
    if shutil.which("ibsim") is None or shutil.which("opensm") is None:
        return [{"bench": "lab fabric", "skipped": "ibsim/opensm not installed (scripts/lab-deps.sh)"}]
    steps: dict[str, float] = {}
    t = time.perf_counter()
    checked = load_checked(env)
    steps["plan (load+check+plan)"] = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="cf-labbench-") as tmp_s:
        tmp = Path(tmp_s)
        t = time.perf_counter()
        write_tree(tmp / "render", render(checked.index, env.name).files)
        steps["render"] = time.perf_counter() - t
        sm = next(s.node for s in (checked.inv.opensm.sm_nodes if checked.inv.opensm else []))
        sm_dir = tmp / "render" / "opensm" / sm
        conf = (sm_dir / "opensm.conf").read_text().replace("/etc/opensm/", f"{sm_dir}/")
        (sm_dir / "opensm.local.conf").write_text(conf)
        t = time.perf_counter()
        sim = start_ibsim(tmp / "render" / "fabric" / "ibsim.net", tmp / "ibsim",
                          LocalEndpoint(f"cf-bench-{os.getpid()}"), timeout=120)
        steps["ibsim start"] = time.perf_counter() - t
        try:
            client = FabricClient(sim.endpoint, f"{sm} mlx5_0", tmp / "scratch")
            t = time.perf_counter()
            osm = start_opensm(client, f"{sm} mlx5_0", tmp / "opensm", config=sm_dir / "opensm.local.conf",
                               sweep_interval=None, timeout=300)
            steps["OpenSM ftree to MASTER"] = time.perf_counter() - t
            try:
                t = time.perf_counter()
                text = ibnetdiscover(client, timeout=300)
                steps["ibnetdiscover"] = time.perf_counter() - t
                t = time.perf_counter()
                found = diff_fabric(checked.index, parse_ibnetdiscover.parse(text))
                steps["validate (parse+diff)"] = time.perf_counter() - t
                log = (tmp / "opensm" / "opensm.log").read_text(errors="replace")
                # ftree writes its CA ordering dump next to OpenSM's cache: proof it routed
                ftree = any("ftree" in p.name for p in (tmp / "opensm").rglob("*")) or "ftree" in log
            finally:
                stop_opensm(osm)
        finally:
            stop_ibsim(sim)
    rows: list[dict[str, object]] = [
        {"bench": "lab fabric (prod, 534 HCA ports)", "step": k, "seconds": round(v, 3)} for k, v in steps.items()
    ]
    rows.append({"bench": "lab fabric (prod, 534 HCA ports)", "step": "findings (must be 0)",
                 "seconds": len(found), "ftree routed": ftree})
    return rows


def containers(env: Path = ROOT / "inventories" / "lab") -> list[dict[str, object]]:
    """`clusterforge lab up` (image cached or cold), validate, fault round trip, `lab down`."""
    if (skipped := _without_podman("lab containers")) is not None:
        return skipped
    from typer.testing import CliRunner

    from clusterforge.cli.main import app
    from clusterforge.lab.image import DEFAULT_PACKAGES, image_tag

    runner = CliRunner()
    rows: list[dict[str, object]] = []
    with _lab_copy(env, "labbench") as (_, copy):
        services = copy / "services.yaml"
        services.write_text(services.read_text().replace("198.18.10.", "198.18.30."))
        cached = _image_present(image_tag(DEFAULT_PACKAGES, "bookworm"))
        try:
            for step, args in (
                (f"lab up ({'image cached' if cached else 'cold image build'})", ["lab", "up", str(copy)]),
                ("lab up again (no-op)", ["lab", "up", str(copy)]),
                ("validate (11 hosts + fabric)", ["validate", str(copy)]),
                ("fault swap + converge", ["lab", "fault", "swap", "C-00001", "C-00003", "--env", str(copy)]),
                ("validate (finds the swap)", ["validate", str(copy)]),
                ("heal + converge", ["lab", "heal", "--env", str(copy)]),
            ):
                t = time.perf_counter()
                result = runner.invoke(app, args)
                rows.append({"bench": "lab containers", "step": step, "seconds": round(time.perf_counter() - t, 2),
                             "exit": result.exit_code})
        finally:
            t = time.perf_counter()
            result = runner.invoke(app, ["lab", "down", str(copy)])
            rows.append({"bench": "lab containers", "step": "lab down", "seconds": round(time.perf_counter() - t, 2),
                         "exit": result.exit_code})
    return rows


def _without_podman(bench: str) -> list[dict[str, object]] | None:
    """BENCH's row saying it is skipped, where the containers cannot start here (no podman or not root)."""
    if shutil.which("podman") is None or os.geteuid() != 0:
        return [{"bench": bench, "skipped": "needs root and podman (scripts/lab-deps.sh)"}]
    return None


@contextlib.contextmanager
def _lab_copy(env: Path, name: str) -> Iterator[tuple[Path, Path]]:
    """(a fresh directory, a copy of ENV named NAME in it); the lab's state kept under it for the block."""
    with tempfile.TemporaryDirectory(prefix=f"cf-{name}-") as tmp_s:
        tmp = Path(tmp_s)
        copy = tmp / name
        shutil.copytree(env, copy)
        os.environ["CLUSTERFORGE_LAB_ROOT"] = str(tmp / "state")
        try:
            yield tmp, copy
        finally:
            os.environ.pop("CLUSTERFORGE_LAB_ROOT", None)


def _image_present(tag: str) -> bool:
    import subprocess

    proc = subprocess.run(["podman", "image", "exists", tag], capture_output=True, timeout=60, check=False)
    return proc.returncode == 0


def _median_mem_mb(lab: str) -> float | None:
    """Median memory use of the lab's containers (podman stats), MB."""
    import json
    import statistics
    import subprocess

    res = subprocess.run(["podman", "stats", "--no-stream", "--format", "json"], capture_output=True, text=True,
                         timeout=300, check=False)
    units = {"kB": 1e-3, "KB": 1e-3, "MB": 1.0, "GB": 1e3, "B": 1e-6, "MiB": 1.048576, "GiB": 1073.741824}
    mems = []
    for row in json.loads(res.stdout or "[]"):
        if not str(row.get("name", "")).startswith(f"cf-lab-{lab}-"):
            continue
        used = str(row.get("mem_usage", "")).split("/")[0].strip()
        num = used.rstrip("kKMGiB")
        unit = used[len(num):]
        if num and unit in units:
            mems.append(float(num) * units[unit])
    return round(statistics.median(mems), 1) if mems else None


def prod_rehearsal(env: Path = ROOT / "inventories" / "prod",
                   sizes: tuple[tuple[int | None, bool], ...] = ((None, True), (14, True), (32, False), (64, False),
                                                                 (128, False))) -> list[dict[str, object]]:
    """`make deploy ENV=prod LAB=1` by steps on a systemd lab: up, deploy (pyinfra), validate (the whole prod
    fabric + the lab hosts), `lab services`, memory per container, down; for the default selection (a GPU
    rack, both SMs, one Lustre server: 7 containers) and for 14 / 32 / 64 / 128 containers (GPU nodes + the SMs +
    lus01). systemd labs stop at ~14 containers here (fs.inotify.max_user_instances = 128, systemd takes 7
    each): the larger sizes run without systemd (sh init; the deploy then starts no unit). A size whose
    bring-up fails is reported as such; without systemd that ends the series."""
    if (skipped := _without_podman("prod rehearsal")) is not None:
        return skipped
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    runner = CliRunner()
    rows: list[dict[str, object]] = []
    with _lab_copy(env, "prodbench") as (tmp, copy):
        checked = load_checked(copy)
        gpus = [n.name for n in checked.inv.nodes if n.role == "compute"]
        try:
            for size, systemd in sizes:
                limit = [] if size is None else ["--limit", ",".join([*gpus[:size - 3], "sm01", "sm02", "lus01"])]
                label = "default (7)" if size is None else str(size)
                row: dict[str, object] = {"bench": "prod rehearsal", "containers": label, "systemd": systemd}
                kind = ["--systemd", "--no-start-sm"] if systemd else []
                steps = (("up", ["lab", "up", str(copy), *kind, "--replace", "--cidr", "198.18.80.0/20", *limit]),
                         ("deploy", ["deploy", str(copy), "--no-diffs", "--plan-file", str(tmp / "plan.json")]),
                         ("deploy again", ["deploy", str(copy), "--no-diffs", "--plan-file", str(tmp / "plan.json")]),
                         ("validate", ["validate", str(copy)]),
                         *((("services", ["lab", "services", str(copy)]),) if systemd else ()))
                ok = True
                for step, args in steps:
                    t = time.perf_counter()
                    result = runner.invoke(app, args)
                    row[f"{step} s"] = round(time.perf_counter() - t, 1)
                    if result.exit_code != 0:
                        row[f"{step} exit"] = result.exit_code
                        why = result.output.strip().splitlines()[-1:] or [repr(result.exception)]
                        row[f"{step} error"] = why[0][:200]
                        ok = False
                        break
                if ok:
                    row["MB/container"] = _median_mem_mb("cf-prodbench")
                t = time.perf_counter()
                runner.invoke(app, ["lab", "down", str(copy)])
                row["down s"] = round(time.perf_counter() - t, 1)
                rows.append(row)
                if not ok and not systemd:  # a refused systemd size (inotify) does not end the series
                    break
        finally:
            runner.invoke(app, ["lab", "down", str(copy)])
    return rows
