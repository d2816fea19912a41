"""`clusterforge init DIR`: scaffold a new environment (site, one rack, one profile, a fabric spec).

The files are a starting point that passes `check` as written: two 8-GPU nodes with two rails in one
rack, and a rail-optimized fabric spec the planner turns into leaves, spines and cables. Edit them,
then `clusterforge check DIR`, `plan DIR --write`, `render DIR --output out/NAME`.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from ..inventory.env_entries import dir_name
from ..util.errors import ExitCode
from .console import Format, err, out, print_json

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


def files(name: str) -> dict[str, str]:
    """The scaffold's files by name: what `init` writes."""
    return {
        "site.yaml": f"""\
# The site: rows of racks. Every rack sits in a row at a position (floor distance = cable length).
site:
  name: {name}
  rows:
    - {{name: row-a, index: 0}}
racks:
  - {{name: r01, row: row-a, position: 0, cooling: air}}
""",
        "hardware.yaml": """\
# Node profiles: the hardware a node is built from (GPUs, HCAs with their rail, NUMA node and ports).
profiles:
  - name: gpu-node
    u_height: 4
    power_kw: 6.5
    gpus: {model: A100-SXM, count: 8, nvlink_topology: nvswitch, numa: [0, 0, 0, 0, 1, 1, 1, 1]}
    hcas:
      - {name: mlx5_0, model: ConnectX-6, rail: 0, gpu: 0, numa: 0, netdev: ib0, ports: [{port: 1, rate: HDR}]}
      - {name: mlx5_1, model: ConnectX-6, rail: 1, gpu: 4, numa: 1, netdev: ib1, ports: [{port: 1, rate: HDR}]}
""",
        "nodes.yaml": """\
# Nodes: a name, a rack and its lowest U, a profile.
nodes:
  - {name: gpu0001, rack: r01, u: 2, profile: gpu-node}
  - {name: gpu0002, rack: r01, u: 6, profile: gpu-node}
""",
        "fabric.yaml": """\
# The InfiniBand fabric is generated from this spec (`clusterforge plan DIR`); `plan DIR --write`
# freezes it into cabling.generated.yaml, which technicians work from.
fabric:
  kind: rail-optimized
  tiers: auto
  rate: HDR
  leaf_model: QM8700
  spine_model: QM8700
  oversubscription: "1:1"
  rails: 2
  su_size: 2
  switch_row: row-a
""",
        "services.yaml": """\
# Address plans: management network and one IPoIB network per rail.
addressing:
  management: {cidr: 10.0.0.0/24, gateway: 10.0.0.1, first: 10}
  ipoib:
    - {name: ib0, rail: 0, cidr: 10.100.0.0/24, first: 10}
    - {name: ib1, rail: 1, cidr: 10.100.1.0/24, first: 10}
""",
    }


def init(
    directory: Path = typer.Argument(..., help="the new environment's directory (missing or empty)"),
    name: str = typer.Option("", "--name", help="the site's name (default: the directory's name)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Scaffold a new environment that passes `check`: site, one rack, one profile, a fabric spec.

    Refuses (exit 2) a directory that exists and is not empty, or a path that is not a directory.
    """
    site = name or re.sub(r"[^a-z0-9-]+", "-", dir_name(directory).lower()).strip("-")
    if not _NAME.match(site):
        err.print(f"init: {site!r} is not a site name (lower-case letters, digits and '-', starting with a letter); "
                  "give one with --name", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if directory.exists() and not directory.is_dir():
        err.print(f"init: {directory} exists and is not a directory", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if directory.is_dir() and any(directory.iterdir()):
        err.print(f"init: {directory} is not empty: init writes into a new or empty directory only", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for file, text in files(site).items():
            path = directory / file
            with path.open("x", encoding="utf-8") as fh:  # never overwrites (a racing writer included)
                fh.write(text)
            written.append(str(path))
    except OSError as exc:
        err.print(f"init: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    if fmt is Format.json:
        print_json({"environment": str(directory), "site": site, "files": written})
        return
    out.print(f"{directory}: new environment {site!r} ({len(written)} files)", markup=False)
    out.print(f"next: clusterforge check {directory}; clusterforge plan {directory} --write; "
              f"clusterforge render {directory} --output out/{site}", markup=False)
