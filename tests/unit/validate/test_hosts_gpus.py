"""Host and GPU checks on real captured outputs (tests/fixtures), against small inventories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clusterforge.api import Checked, load_checked
from clusterforge.parse import ibstat, nvidia_smi_topo
from clusterforge.validate.gpus import check_topo
from clusterforge.validate.hosts import check_host

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"

DGX = """
nodes:
  - name: dgx01
    rack: r02
    u: 10
    gpus: {{model: {gpu}, count: 8, numa: [0, 0, 0, 0, 1, 1, 1, 1]}}
    hcas:
      - {{name: mlx5_0, model: ConnectX-6, gpu: {gpu0}, numa: 0, ports: [{{port: 1, rate: HDR}}]}}
      - {{name: mlx5_6, model: ConnectX-6, gpu: 7, numa: 1, ports: [{{port: 1, rate: HDR}}]}}
"""


def env_with(tmp_path: Path, extra: str) -> Checked:
    env = tmp_path / "env"
    shutil.copytree(ROOT / "tests" / "errors" / "_base", env)
    (env / "zz-extra.yaml").write_text(extra)
    return load_checked(env)


def topo_dgx_a100() -> nvidia_smi_topo.NvidiaSmiTopo:
    return nvidia_smi_topo.parse((FIX / "nvidia-smi-topo" / "litgpt-dgx-a100-nv12-10nic-tabs.txt").read_text())


def test_dgx_a100_topology_matches_its_declaration(tmp_path: Path) -> None:
    # mlx5_0 (NIC0) is PXB to GPU2/GPU3 in this capture: pairing it with GPU2 is right.
    checked = env_with(tmp_path, DGX.format(gpu="A100-SXM", gpu0=2).replace("gpu: 7", "gpu: 4"))
    findings = check_topo(checked.index, "dgx01", topo_dgx_a100())
    # mlx5_6 (NIC6) is SYS to every GPU in the capture: its pairing with GPU4 is wrong.
    assert [(f.rule, f.subject) for f in findings] == [("GPU-HCA-AFFINITY", "dgx01 mlx5_6")]
    assert findings[0].observed == "SYS"


def test_wrong_pairing_and_wrong_gpu_model(tmp_path: Path) -> None:
    checked = env_with(tmp_path, DGX.format(gpu="H100-SXM", gpu0=0))
    rules = sorted((f.rule, f.subject) for f in check_topo(checked.index, "dgx01", topo_dgx_a100()))
    assert rules == [
        ("GPU-HCA-AFFINITY", "dgx01 mlx5_0"),  # NIC0 is SYS from GPU0
        ("GPU-HCA-AFFINITY", "dgx01 mlx5_6"),
        ("GPU-NVLINK", "dgx01"),  # an H100 SXM node must show NV18, the capture shows NV12
    ]


def test_gpu_count(tmp_path: Path) -> None:
    checked = env_with(tmp_path, DGX.format(gpu="A100-SXM", gpu0=2).replace("count: 8", "count: 16")
                       .replace("numa: [0, 0, 0, 0, 1, 1, 1, 1]", "numa: []").replace("gpu: 7", "gpu: 2"))
    findings = check_topo(checked.index, "dgx01", topo_dgx_a100())
    assert [f.rule for f in findings if f.rule == "GPU-COUNT"] == ["GPU-COUNT"]


HOST = """
nodes:
  - name: h1
    rack: r02
    u: 10
    hcas:
      - {{name: mlx5_0, model: ConnectX-6, ports: [{{port: 1, rate: {rate}, guid: '{guid}'}}]}}
"""


@pytest.mark.parametrize(
    ("rate", "guid", "rules"),
    [
        ("HDR", "0xb8cef60300025b90", []),
        ("HDR100", "0xb8cef60300025b90", ["HOST-PORT-RATE"]),
        ("HDR", "0xb8cef60300025b91", ["HOST-GUID"]),
    ],
)
def test_ibstat_of_a_connectx6(tmp_path: Path, rate: str, guid: str, rules: list[str]) -> None:
    checked = env_with(tmp_path, HOST.format(rate=rate, guid=guid))
    cas = ibstat.parse((FIX / "ibstat" / "sharp-blog-cx6-hdr-mt4123.txt").read_text())
    assert [f.rule for f in check_host(checked.index, "h1", cas)] == rules


def test_ibstat_ethernet_port_and_missing_hca(tmp_path: Path) -> None:
    extra = HOST.format(rate="HDR", guid="0x1c918efffe7a03a0").replace(
        "ports: [{port: 1, rate: HDR, guid: '0x1c918efffe7a03a0'}]}",
        "ports: [{port: 1, rate: HDR, guid: '0x1c918efffe7a03a0'}]}\n"
        "      - {name: mlx5_12, model: ConnectX-6, ports: [{port: 1, rate: HDR}]}",
    )
    checked = env_with(tmp_path, extra)
    cas = ibstat.parse((FIX / "ibstat" / "gpud-a100-hdr-200g.txt").read_text())
    findings = check_host(checked.index, "h1", cas)
    assert sorted((f.rule, f.subject) for f in findings) == [
        ("HOST-HCA-MISSING", "h1 mlx5_12"),
        ("HOST-LINK-LAYER", "h1 mlx5_0/1"),  # the capture's mlx5_0 is an Ethernet port
    ]


def test_software_versions_against_pins(tmp_path: Path) -> None:
    from clusterforge.parse import dpkg_query, ofed_info
    from clusterforge.validate.software import check_ofed, check_packages

    env_with(tmp_path, "")
    services = tmp_path / "env" / "services.yaml"
    services.write_text(services.read_text().replace(
        "software:\n", "software:\n  nccl: 2.21.5-1\n  lustre_client: 2.15.5\n").replace(
        "doca_ofed: 24.04-0.7.0.0", "doca_ofed: 24.04-0.7.0.0"))
    idx = load_checked(tmp_path / "env").index
    assert check_ofed(idx, "gpu01", ofed_info.parse("OFED-internal-24.04-0.7.0.0:")) == []
    (f,) = check_ofed(idx, "gpu01", ofed_info.parse("MLNX_OFED_LINUX-5.8-1.0.1.1:"))
    assert (f.rule, f.expected, f.observed) == ("SW-VERSION", "24.04-0.7.0.0", "5.8-1.0.1.1")
    ok = dpkg_query.parse("libnccl2 2.21.5-1+cuda12.4\nlustre-client-utils 2.15.5-1\n")
    assert check_packages(idx, "gpu01", ok) == []
    bad = dpkg_query.parse("libnccl2 2.18.3-1+cuda12.2\nlustre-client-utils 2.15.50-1\n")
    assert sorted(f.observed or "" for f in check_packages(idx, "gpu01", bad)) == ["2.15.50-1", "2.18.3-1+cuda12.2"]


def test_nvlink_all_inactive_on_a_bridged_pair(tmp_path: Path) -> None:
    from clusterforge.parse import nvidia_smi_nvlink
    from clusterforge.validate.gpus import check_nvlink

    extra = ("nodes:\n  - name: ws1\n    rack: r02\n    u: 10\n"
             "    gpus: {model: A30, count: 1, nvlink_topology: bridged-pairs}\n")
    checked = env_with(tmp_path, extra)
    text = (FIX / "nvidia-smi-nvlink-status" / "nvutil-rtx2080s-595.71.05-links-inactive.txt").read_text()
    (f,) = check_nvlink(checked.index, "ws1", nvidia_smi_nvlink.parse(text))
    assert f.rule == "GPU-NVLINK-DOWN" and "all links" in f.message
    healthy = (FIX / "nvidia-smi-nvlink-status" / "gpud-8xa100-sxm4-80gb.txt").read_text()
    assert check_nvlink(checked.index, "ws1", nvidia_smi_nvlink.parse(healthy)) == []


def test_port_state_and_rate_on_a_polling_ddr_port(tmp_path: Path) -> None:
    extra = ("nodes:\n  - name: old1\n    rack: r02\n    u: 10\n    hcas:\n"
             "      - {name: mlx4_0, model: ConnectX-5, ports: [{port: 1, rate: EDR}, {port: 2, rate: EDR}]}\n")
    checked = env_with(tmp_path, extra)
    cas = ibstat.parse((FIX / "ibstat" / "archwiki-mt25418-ddr-dualport-polling.txt").read_text())
    found = sorted((f.rule, f.subject) for f in check_host(checked.index, "old1", cas))
    assert found == [("HOST-PORT-RATE", "old1 mlx4_0/1"), ("HOST-PORT-STATE", "old1 mlx4_0/2")]


def test_lnet_nids_of_a_lustre_client(tmp_path: Path) -> None:
    from clusterforge.parse import lctl_list_nids
    from clusterforge.validate.software import check_nids

    checked = env_with(tmp_path, "")
    assert check_nids(checked.index, "gpu01", lctl_list_nids.parse("10.100.0.10@o2ib\n")) == []
    (f,) = check_nids(checked.index, "gpu01", lctl_list_nids.parse("10.0.0.10@tcp\n"))
    assert f.rule == "LNET-NID" and f.observed == "10.0.0.10@tcp"


def test_dpu_on_a_gpu_root_complex(tmp_path: Path) -> None:
    # In the DGX A100 capture NIC2 (mlx5_2) is PXB to GPU0/GPU1 and NIC6 (mlx5_6) is SYS to every GPU.
    extra = DGX.format(gpu="A100-SXM", gpu0=2).replace("gpu: 7", "gpu: 4") + (
        "    dpus:\n"
        "      - {name: mlx5_2, model: BlueField-3, ports: [{port: 1, rate: NDR}]}\n"
        "      - {name: mlx5_7, model: BlueField-3, ports: [{port: 1, rate: NDR}]}\n"
    )
    mlx5_6 = "      - {name: mlx5_6, model: ConnectX-6, gpu: 4, numa: 1, ports: [{port: 1, rate: HDR}]}\n"
    extra = extra.replace(mlx5_6, "")
    checked = env_with(tmp_path, extra)
    findings = [f for f in check_topo(checked.index, "dgx01", topo_dgx_a100()) if f.rule == "GPU-DPU-ROOT-COMPLEX"]
    assert [(f.subject, f.observed) for f in findings] == [("dgx01 mlx5_2", "GPU0: PXB, GPU1: PXB")]
