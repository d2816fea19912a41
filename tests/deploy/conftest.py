"""A small lab for the deploy tests: gpu01, gpu02, sm01, lus01 from inventories/lab, in podman."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from lab_deploy_support import ENV, NODES, DeployLab, free_subnet, missing_tools

from clusterforge.api import load_checked
from clusterforge.lab import down, up
from clusterforge.rehearsal.env import lab_spec
from clusterforge.render import render_environment


@pytest.fixture(scope="session")
def deploy_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeployLab]:
    why = missing_tools()
    if why:
        pytest.skip(why)
    work = tmp_path_factory.mktemp("deploy-lab")
    index = load_checked(ENV).index
    netfile = work / "ibsim.net"
    netfile.write_text(render_environment(index, "lab")["fabric/ibsim.net"])
    spec = lab_spec(index, name=f"dep{os.getpid() % 100000}", cidr=free_subnet(), state_dir=work / "lab",
                    netfile=netfile, nodes=NODES, start_sm=True)
    state = up(spec, mode="podman")
    try:
        yield DeployLab(spec, state)
    finally:
        down(spec.state_dir)
