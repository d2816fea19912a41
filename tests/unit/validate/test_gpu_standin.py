"""The lab's nvidia-smi stand-in output: it must parse with the real parsers and validate clean
for the hardware it was derived from (the parsers themselves are tested on real captures)."""

from __future__ import annotations

from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.parse import nvidia_smi_nvlink, nvidia_smi_query_gpu, nvidia_smi_topo
from clusterforge.sim.nvidia_smi import nvlink_status, query_gpu, topo_m
from clusterforge.validate.gpus import check_nvlink, check_topo
from clusterforge.validate.software import check_driver

ROOT = Path(__file__).resolve().parents[3]


def test_standin_outputs_parse_and_validate_clean() -> None:
    idx = load_checked(ROOT / "inventories" / "lab").index
    hw = idx.hardware["gpu03"]
    topo = nvidia_smi_topo.parse(topo_m(hw, idx.cat))
    assert topo.gpus == tuple(f"GPU{i}" for i in range(8))
    assert topo.matrix["GPU0"]["GPU7"] == "NV12"  # A100 SXM behind NVSwitch
    assert topo.matrix["GPU0"]["NIC0"] == "PIX" and topo.nic_legend["NIC1"] == "mlx5_1"
    assert check_topo(idx, "gpu03", topo) == []
    nv = nvidia_smi_nvlink.parse(nvlink_status("gpu03", hw, idx.cat))
    assert len(nv.gpus) == 8 and all(len(g.links) == 12 for g in nv.gpus)
    assert check_nvlink(idx, "gpu03", nv) == []
    q = nvidia_smi_query_gpu.parse(query_gpu("gpu03", hw, idx.cat, ["index", "name", "driver_version"], "1.2.3"))
    assert q.rows[0].values["name"] == "NVIDIA A100-SXM4-80GB"
    assert [f.rule for f in check_driver(idx, "gpu03", q)] == ["SW-VERSION"]  # pinned 550.90.07
