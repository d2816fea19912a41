"""`check` with rail planes: a subnet-manager node needs a port in every plane (INV-SM), and the
plan of an environment with `planes: rail` keeps each plane apart."""

from __future__ import annotations

import shutil
from pathlib import Path

from _plan_util import ROOT
from typer.testing import CliRunner

from clusterforge.cli.main import app

runner = CliRunner()

SM_ONE_PORT = "      - {name: mlx5_0, model: ConnectX-6, netdev: ib0, rail: 0, ports: [{port: 1, rate: HDR}]}\n"
SM_TWO_PORTS = SM_ONE_PORT + \
    "      - {name: mlx5_1, model: ConnectX-6, netdev: ib1, rail: 1, ports: [{port: 1, rate: HDR}]}\n"


def _staging(tmp: Path, sm_ports: int) -> Path:
    env = tmp / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    fabric = env / "fabric.yaml"
    text = fabric.read_text()
    assert "  rails: 2\n" in text
    fabric.write_text(text.replace("  rails: 2\n", "  rails: 2\n  planes: rail\n"))
    (env / "cabling.generated.yaml").unlink()  # plan from scratch
    hw = env / "hardware.yaml"
    block = hw.read_text()
    sm = block.index("  - name: sm-node")
    at = block.index(SM_ONE_PORT, sm)
    if sm_ports == 2:
        hw.write_text(block[:at] + SM_TWO_PORTS + block[at + len(SM_ONE_PORT):])
    return env


def test_sm_node_without_a_port_in_every_plane(tmp_path: Path) -> None:
    env = _staging(tmp_path, 1)
    result = runner.invoke(app, ["check", str(env)])
    assert result.exit_code == 3, result.output
    assert "services.yaml:28:14: opensm.sm_nodes[0].node: SM node sm01 has no port in rail plane(s) 1 of 2" \
        in result.output
    assert "SM node sm02 has no port in rail plane(s) 1 of 2" in result.output
    assert "[INV-SM]" in result.output


def test_sm_nodes_with_a_port_in_each_plane_pass(tmp_path: Path) -> None:
    env = _staging(tmp_path, 2)
    result = runner.invoke(app, ["check", str(env)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["plan", str(env), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"planes": 2' in result.output
    text = runner.invoke(app, ["plan", str(env)]).output
    assert "2 rail planes of 1 rail(s), 2 QM8700 spine(s) per plane" in text
    assert "0 across them" in text


def test_options_rail_planes_cannot_take_are_refused_at_their_line(tmp_path: Path) -> None:
    # infrastructure leaves (one plane only) and a third tier, each with planes: check names the field's line
    for i, (extra, field, why) in enumerate((
            ("  infra_roles: [subnet-manager]\n", "fabric.infra_roles", "infrastructure leaves would join one plane"),
            ("  tiers: 3\n", "fabric.tiers", "rail planes are two-tier Clos networks"))):
        env = _staging(tmp_path / str(i), 2)
        fabric = env / "fabric.yaml"
        text = fabric.read_text().replace("  tiers: auto\n", "").replace("  planes: rail\n", "  planes: rail\n" + extra)
        fabric.write_text(text)
        line = text.splitlines().index(extra.rstrip("\n")) + 1
        result = runner.invoke(app, ["check", str(env)])
        assert result.exit_code == 3, result.output
        assert f"fabric.yaml:{line}:" in result.output and f": {field}: the fabric spec cannot be planned" \
            in result.output, result.output
        assert why in result.output and "[INV-PLAN]" in result.output and "Traceback" not in result.output
