"""nvidia-smi topo -m, nvlink --status, --query-gpu, -q."""

from __future__ import annotations

import pytest
from _parse_helpers import fixture, raises_at

from clusterforge.parse import (
    nvidia_smi_nvlink,
    nvidia_smi_q,
    nvidia_smi_query_gpu,
    nvidia_smi_topo,
)

TOPO = "nvidia-smi-topo/"


def test_topo_nv18_with_12_nics_and_legend() -> None:
    t = nvidia_smi_topo.parse(fixture(TOPO + "aihub0007-8gpu-nv18-12nic-roce-bond-1numa"))
    assert len(t.gpus) == 8 and len(t.nics) == 12
    assert t.matrix["GPU0"]["GPU7"] == "NV18" and t.matrix["GPU0"]["NIC0"] == "PIX"
    assert t.matrix["NIC3"]["NIC4"] == "PIX" and "NIC3" not in t.matrix["NIC3"]
    assert t.nic_legend["NIC11"] == "mlx5_11"
    assert t.affinity["GPU5"].cpu == "0-191" and t.affinity["GPU5"].numa == "0"
    assert t.affinity_columns == ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def test_topo_empty_cpu_affinity_cells() -> None:
    t = nvidia_smi_topo.parse(fixture(TOPO + "princeton-della-8xh100-6nic-slurm-cpuset"))
    assert [t.affinity[g].cpu for g in t.gpus] == [None] * 4 + ["1"] * 4
    assert [t.affinity[g].numa for g in t.gpus] == ["0"] * 4 + ["1"] * 4
    t = nvidia_smi_topo.parse(fixture(TOPO + "brev-4of8-nv18-cuda-visible-partial-affinity"))
    assert t.affinity["GPU0"].cpu == "44-51,148-155" and t.affinity["GPU1"].cpu is None
    assert t.affinity["GPU1"].numa == "1" and t.nics == ()


def test_topo_respaced_and_old_layouts() -> None:
    t = nvidia_smi_topo.parse(fixture(TOPO + "mlengineering-8xh100-nv18-respaced"))
    assert t.affinity["GPU4"].cpu == "52-103" and t.affinity["GPU4"].numa == "1"
    assert t.affinity_columns == ("CPU Affinity", "NUMA Affinity")
    t = nvidia_smi_topo.parse(fixture(TOPO + "mlengineering-2gpu-nv2-nolegend"))
    assert t.matrix == {"GPU0": {"GPU1": "NV2"}, "GPU1": {"GPU0": "NV2"}}
    assert t.affinity["GPU0"].cpu == "0-23" and t.affinity["GPU0"].numa is None  # N/A


def test_topo_ansi_header_tabs_and_stripped_rows() -> None:
    t = nvidia_smi_topo.parse(fixture(TOPO + "nvutil-1xh100-80gb-590.48.01-single-gpu"))
    assert t.gpus == ("GPU0",) and t.matrix == {"GPU0": {}}
    assert t.affinity["GPU0"].cpu == "0-19"
    t = nvidia_smi_topo.parse(
        fixture(TOPO + "vllm-collect-env-2xl40s-2nic-container-cpuset-stripped"))
    assert t.matrix["NIC1"] == {"GPU0": "SYS", "GPU1": "SYS", "NIC0": "PIX"}
    assert t.affinity["GPU1"].cpu == "0,2,4,6,8,10"
    t = nvidia_smi_topo.parse(fixture(TOPO + "gpuallocator-issue17-8x4090-tabs"))
    assert t.matrix["GPU6"]["NIC0"] == "PHB" and t.nic_legend == {}


def test_topo_errors() -> None:
    err = raises_at(nvidia_smi_topo.parse,
                    fixture(TOPO + "nvutil-windows-2080s-591.86-topo-error"), 1)
    assert "Option -m" in err.message
    good = fixture(TOPO + "stelline-puget-wrx90-2xrtx6000ada-2nic")
    lines = good.split("\n")
    raises_at(nvidia_smi_topo.parse, "\n".join(lines[:3]) + "\n", 3)  # NIC rows missing
    raises_at(nvidia_smi_topo.parse, good.replace("PHB", "PHX", 1), 2)
    raises_at(nvidia_smi_topo.parse, good.replace(" X ", "NV1", 1), 2)  # self cell
    raises_at(nvidia_smi_topo.parse, good + "garbage here\n")
    raises_at(nvidia_smi_topo.parse, good.replace("NIC1: mlx5_1", "NIC7: mlx5_7"))


NVLINK = "nvidia-smi-nvlink-status/"


def test_nvlink_speeds_and_messages() -> None:
    s = nvidia_smi_nvlink.parse(fixture(NVLINK + "gpud-8xa100-sxm4-80gb"))
    assert len(s.gpus) == 8 and all(len(g.links) == 12 for g in s.gpus)
    assert {lk.speed_gbs for g in s.gpus for lk in g.links} == {25.0}
    s = nvidia_smi_nvlink.parse(fixture(NVLINK + "nvutil-1xh100-80gb-590.48.01-18links"))
    assert [lk.link for lk in s.gpus[0].links] == list(range(18))
    assert s.gpus[0].links[0].speed_gbs == 26.562
    for name, status in [("nvutil-h100-mig-590.48.01-mig-mode-message", "mig"),
                         ("nvutil-l40s-595.80-no-nvlink-support", "not_supported"),
                         ("nvutil-rtx2080s-595.71.05-links-inactive", "inactive")]:
        (gpu,) = nvidia_smi_nvlink.parse(fixture(NVLINK + name)).gpus
        assert gpu.status == status and gpu.links == () and gpu.message


def test_nvlink_empty_inactive_links_and_errors() -> None:
    assert nvidia_smi_nvlink.parse(fixture(NVLINK + "gpud-1xa10-empty")).gpus == ()
    text = "GPU 0: NVIDIA A100 (UUID: GPU-1)\n\t Link 0: 25 GB/s\n\t Link 1: <inactive>\n"
    (gpu,) = nvidia_smi_nvlink.parse(text).gpus
    assert [(lk.active, lk.speed_gbs) for lk in gpu.links] == [(True, 25.0), (False, None)]
    elided = fixture(NVLINK + "mlengineering-h100-26.562-elided")
    err = raises_at(nvidia_smi_nvlink.parse, elided, 3)
    assert "elided" in err.message
    raises_at(nvidia_smi_nvlink.parse, "GPU 0: X (UUID: GPU-1)\n", 1)  # no links, no message
    raises_at(nvidia_smi_nvlink.parse, "Link 0: 25 GB/s\n", 1)
    raises_at(nvidia_smi_nvlink.parse, text.replace("Link 1", "Link 3"), 3)


QG = "nvidia-smi-query-gpu/"


def test_query_gpu_values_units_placeholders() -> None:
    r = nvidia_smi_query_gpu.parse(fixture(QG + "llmbook-1xrtx4090-name-mem-pcie-gen-width"))
    assert [f.name for f in r.fields] == ["name", "memory.total", "pcie.link.gen.max",
                                          "pcie.link.width.max"]
    assert r.fields[1].unit == "MiB" and r.rows[0].values["memory.total"] == "24564"
    r = nvidia_smi_query_gpu.parse(fixture(QG + "nvutil-windows-2080s-610.62-function-not-found"))
    row = r.rows[0]
    assert row.values["bbx.time_run"] is None
    assert row.unavailable["bbx.time_run"] == "Function Not Found"
    assert row.values["serial"] is None and row.unavailable["serial"] == "N/A"
    assert row.values["fan.speed"] == "38" and row.values["driver_model.current"] == "WDDM"
    r = nvidia_smi_query_gpu.parse(fixture(QG + "nvutil-1xh100-80gb-590.48.01-allfields-idle"))
    assert r.rows[0].unavailable["display_mode"] == "Requested functionality has been deprecated"
    assert r.rows[0].values["ecc.errors.uncorrected.aggregate.total"] == "0"


def test_query_gpu_errors() -> None:
    err = raises_at(nvidia_smi_query_gpu.parse,
                    fixture(QG + "mlengineering-8xh100-name-busid-vbios-elided"), 3)
    assert "elided" in err.message
    raises_at(nvidia_smi_query_gpu.parse, "name, pci.bus_id\nNVIDIA H100\n", 2)
    raises_at(nvidia_smi_query_gpu.parse, "NVIDIA H100, 00000000:04:00.0\n", 1)  # noheader
    raises_at(nvidia_smi_query_gpu.parse, "name, pci.bus_id\n", 1)


Q = "nvidia-smi-q/"


def test_q_eight_h100() -> None:
    q = nvidia_smi_q.parse(fixture(Q + "gpud-8xh100-535.161.08"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus) == ("535.161.08", "12.2", 8)
    assert len(q.gpus) == 8 and {g.product_name for g in q.gpus} == {"NVIDIA H100 80GB HBM3"}
    g = q.gpus[0]
    assert g.bus_id == "00000000:19:00.0" and g.driver_version == "535.161.08"
    assert (g.ecc_mode_current, g.ecc_mode_pending) == ("Enabled", "Enabled")
    assert g.ecc_errors is not None and g.ecc_errors.volatile["DRAM Uncorrectable"] == 0
    assert g.ecc_errors.aggregate["SRAM Threshold Exceeded"] == "No"
    assert g.remapped_rows is not None and g.remapped_rows.histogram["Max"] == 2560


def test_q_remapped_rows_and_legacy_ecc() -> None:
    (g,) = nvidia_smi_q.parse(fixture(Q + "gpud-1xa10-535.129.03")).gpus
    rr = g.remapped_rows
    assert rr is not None and (rr.correctable, rr.uncorrectable, rr.pending) == (0, 4, True)
    (g,) = nvidia_smi_q.parse(
        fixture(Q + "simulator-capture-gh200-480gb-550.127.05-dram-uncorrectable-remapped")).gpus
    assert g.ecc_errors is not None and g.ecc_errors.aggregate["DRAM Uncorrectable"] == 1
    assert g.remapped_rows is not None and g.remapped_rows.histogram["High"] == 1
    (g,) = nvidia_smi_q.parse(fixture(Q + "gpud-1xtitanv-560.35.03")).gpus
    assert g.remapped_rows is None and g.ecc_mode_current is None
    q = nvidia_smi_q.parse(fixture(Q + "v100-sxm2-32gb-580.105.08-q-d-ecc-gpu2-legacy-layout"))
    (g,) = q.gpus
    assert q.attached_gpus == 4 and g.product_name is None and g.bus_id == "00000000:61:00.0"
    assert g.ecc_errors is not None
    assert g.ecc_errors.volatile["Double Bit/CBU"] == 0
    assert g.ecc_errors.aggregate["Single Bit/Texture Memory"] is None


def test_q_windows_and_mig() -> None:
    q = nvidia_smi_q.parse(fixture(Q + "nvutil-windows-2080s-610.62-wddm-idle"))
    assert q.driver_version == "610.62" and q.cuda_version == "13.3"
    (g,) = nvidia_smi_q.parse(fixture(Q + "nvutil-h200-mig-590.48.01-idle")).gpus
    assert g.mig_mode == "Enabled" and g.product_name == "NVIDIA H200"


def test_q_truncated_and_excerpt_raise() -> None:
    err = raises_at(nvidia_smi_q.parse, fixture(Q + "gpud-8xh100-535.183.01-truncated-invalid"), 91)
    assert "truncated" in err.message
    raises_at(nvidia_smi_q.parse,
              fixture(Q + "amax-a100-80gb-pcie-remapped-rows-14-uncorrectable-excerpt"), 1)
    full = fixture(Q + "gpud-8xh100-535.161.08").split("\n")
    raises_at(nvidia_smi_q.parse, "\n".join(full[:-8]))  # last GPU cut short
    raises_at(nvidia_smi_q.parse, "\n".join(full[:420]))  # 2 of 8 GPUs
    raises_at(nvidia_smi_q.parse, "\n".join(full[:8]))  # header only


@pytest.mark.parametrize("cut", [300, 1000, 1600])
def test_q_cut_mid_section_raises(cut: int) -> None:
    full = fixture(Q + "gpud-8xh100-535.183.01").split("\n")
    raises_at(nvidia_smi_q.parse, "\n".join(full[:cut]))
