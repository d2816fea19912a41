"""Rendering a rail-plane fabric: one OpenSM instance per plane on every SM node (its own opensm.conf
bound to the SM node's port in that plane, GUID files and partitions of that plane only)."""

from __future__ import annotations

import shutil
from pathlib import Path

from _plan_util import ROOT
from typer.testing import CliRunner

from clusterforge.cli.main import app

runner = CliRunner()
ONE = "      - {name: mlx5_0, model: ConnectX-6, netdev: ib0, rail: 0, ports: [{port: 1, rate: HDR}]}\n"
TWO = ONE + "      - {name: mlx5_1, model: ConnectX-6, netdev: ib1, rail: 1, ports: [{port: 1, rate: HDR}]}\n"


def _render(tmp: Path) -> Path:
    env = tmp / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    (env / "cabling.generated.yaml").unlink()
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("  rails: 2\n", "  rails: 2\n  planes: rail\n"))
    hw = env / "hardware.yaml"
    text = hw.read_text()
    at = text.index(ONE, text.index("  - name: sm-node"))
    hw.write_text(text[:at] + TWO + text[at + len(ONE):])
    out = tmp / "out"
    result = runner.invoke(app, ["render", str(env), "-o", str(out), "--no-svg"])
    assert result.exit_code == 0, result.output
    return out / "opensm"


def test_one_opensm_instance_per_plane(tmp_path: Path) -> None:
    osm = _render(tmp_path)
    assert sorted(p.name for p in osm.iterdir()) == ["sm01", "sm02"]
    for sm in ("sm01", "sm02"):
        assert sorted(p.name for p in (osm / sm).iterdir()) == ["default", "plane0", "plane1", "systemd"]
        # the per-plane template unit and the distribution's per-port opensm.service kept off
        unit = (osm / sm / "systemd" / "opensm-plane@.service").read_text()
        assert "ExecStart=/usr/sbin/opensm -F /etc/opensm/plane%i/opensm.conf" in unit
        assert "OSM_CACHE_DIR=/var/cache/opensm/plane%i" in unit
        assert "PORTS=NONE" in (osm / sm / "default" / "opensm").read_text().splitlines()
    for plane, hca, spines in ((0, "mlx5_0", "spine-pl01-"), (1, "mlx5_1", "spine-pl02-")):
        d = osm / "sm01" / f"plane{plane}"
        conf = (d / "opensm.conf").read_text()
        assert f"(sm01/{hca}/1" in conf  # bound to the SM node's port in this plane
        assert f"root_guid_file /etc/opensm/plane{plane}/root-guids.conf" in conf
        assert f"log_file /var/log/opensm-plane{plane}.log" in conf
        assert "sm_priority 15" in conf
        assert "sm_priority 14" in (osm / "sm02" / f"plane{plane}" / "opensm.conf").read_text()
        roots = [ln for ln in (d / "root-guids.conf").read_text().splitlines() if ln.startswith("0x")]
        assert roots and all(ln.split("# ")[1].startswith(spines) for ln in roots)
        cn = [ln for ln in (d / "cn-guids.conf").read_text().splitlines() if ln.startswith("0x")]
        assert len(cn) == 32 and all(ln.endswith(f"/{hca}/1") for ln in cn)  # 32 GPU nodes, this plane's port
        other = "mlx5_1" if hca == "mlx5_0" else "mlx5_0"
        assert f"/{other}/" not in (d / "partitions.conf").read_text()


def test_nccl_for_rail_planes(tmp_path: Path) -> None:
    osm = _render(tmp_path)
    confs = sorted(osm.parent.glob("**/gpu0001/etc/nccl.conf"))
    assert len(confs) == 1
    text = confs[0].read_text()
    assert "NCCL_CROSS_NIC=0" in text and "NCCL_PXN_DISABLE=0" in text
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in text


def test_install_paths_and_units() -> None:
    from clusterforge.render.context_opensm import install_path, plane_services

    assert install_path("opensm/sm01/opensm.conf") == ("sm01", "/etc/opensm/opensm.conf")
    assert install_path("opensm/sm01/plane1/opensm.conf") == ("sm01", "/etc/opensm/plane1/opensm.conf")
    assert install_path("opensm/sm01/systemd/opensm-plane@.service") == (
        "sm01", "/etc/systemd/system/opensm-plane@.service")
    assert install_path("opensm/sm01/default/opensm") == ("sm01", "/etc/default/opensm")
    assert install_path("opensm/sm01/other/x") is None and install_path("fabric/node-name-map") is None
    assert plane_services(["/etc/opensm/opensm.conf", "/etc/opensm/partitions.conf"]) == ("opensm",)
    assert plane_services(["/etc/opensm/plane1/opensm.conf", "/etc/opensm/plane0/opensm.conf",
                           "/etc/opensm/plane0/partitions.conf"]) == ("opensm-plane@0", "opensm-plane@1")
