"""The rendered `ib-health` script against the real `sminfo` (infiniband-diags) on a simulated fabric
(ibsim, local mode): before OpenSM runs no subnet manager answers (cf_ib_sm_master 0), with OpenSM
MASTER it reports 1 with the SM's LID and GUID. No container: the fabric-only part of the lab."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from clusterforge.lab.fabric_tools import FabricClient, run_client, start_opensm, stop_opensm
from clusterforge.lab.ibsim import LocalEndpoint, start_ibsim, stop_ibsim
from clusterforge.render import ib_health
from clusterforge.render.core import banner
from clusterforge.render.env import environment

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("fabric_tools")]

NETFILE = Path("tests/fixtures/lab/fabric.net")


def test_ib_health_reads_the_real_sminfo(tmp_path: Path) -> None:
    spec = ib_health.file_spec()
    script = tmp_path / "ib-health"
    script.write_text(environment().get_template(spec.template).render({**spec.context, "banner": banner("lab")}))
    sim = start_ibsim(NETFILE, tmp_path / "ibsim", LocalEndpoint(f"cf-test-ibhealth-{os.getpid()}"))
    try:
        client = FabricClient(sim.endpoint, "gpu01 mlx5_0", tmp_path / "scratch")
        # /usr/bin/python3 as on a node, isolated (-I): nothing of clusterforge importable
        argv = ["/usr/bin/python3", "-I", str(script)]
        before = run_client(client, argv, timeout=60).stdout
        assert "\ncf_ib_sm_master 0\n" in before, before
        sm = start_opensm(client, "sm01 mlx5_0", tmp_path / "opensm", sweep_interval=1)
        try:
            deadline = time.monotonic() + 30
            text = ""
            while time.monotonic() < deadline:
                text = run_client(client, argv, timeout=60).stdout
                if "} 1\n" in text:
                    break
                time.sleep(1)
            assert 'cf_ib_sm_master{sm_lid="' in text and '",sm_priority="0"} 1\n' in text, text
            assert "cf_ib_health_error" not in text
        finally:
            stop_opensm(sm)
    finally:
        stop_ibsim(sim)
