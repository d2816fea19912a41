"""Every rendered file says where it goes (FileSpec.host, .dest), set by the builder that knows: a node's own
files under hosts/<node>/, OpenSM's on its SM nodes, a monitoring server's own; and the deploy reads those
fields, never the render path (#38)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.render import file_specs
from clusterforge.render.context_opensm import install_path

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("env", ["inventories/lab", "inventories/prod", "inventories/staging",
                                 "tests/fixtures/inventories/lab-planes"])
def test_each_file_names_its_host_and_place(env: str) -> None:
    path = ROOT / env
    index = load_checked(path).index
    nodes = {n.name for n in index.inv.nodes}
    specs = file_specs(index)
    assert specs
    for spec in specs:
        parts = spec.path.split("/")
        if parts[0] == "hosts":
            assert (spec.host, spec.dest) == (parts[1], "/" + "/".join(parts[2:])), spec.path
        elif parts[0] == "opensm":
            assert (spec.host, spec.dest) == install_path(spec.path), spec.path
        elif parts[0] == "monitoring" and parts[1] != "nodes":
            assert (spec.host, spec.dest) == (parts[1], "/" + "/".join(parts[2:])), spec.path
        elif spec.host:
            pytest.fail(f"{spec.path}: a host file outside hosts/, opensm/ or monitoring/: {spec.host}")
        assert not spec.host or spec.host in nodes, spec.path
        assert not spec.dest or spec.dest.startswith("/"), spec.path
    placed = [s for s in specs if s.dest]
    assert len(placed) > len(specs) // 2


def test_the_deploy_reads_where_a_file_goes_never_its_render_path() -> None:
    deploy = ROOT / "src" / "clusterforge" / "deploy"
    splits = re.compile(r"(spec|s|f)\.path\.split\(|install_path\(")
    found = [f"{p.name}:{n}" for p in sorted(deploy.glob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if splits.search(line)]
    assert not found, found
