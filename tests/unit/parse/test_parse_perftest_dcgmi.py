"""perftest and dcgmi diag: what acceptance reads of them, on the real captures (tests/fixtures/perftest,
dcgmi-diag, dcgmi-diag-json; each with its .source), and garbage refused with the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.parse import ParseError, dcgmi_diag, perftest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _text(tool: str, name: str) -> str:
    (path,) = (FIXTURES / tool).glob(f"{name}*.txt")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "unit", "gbps"), [
    ("cn-ib-setup-doc-hdr-cx6-ib_write_bw", "Gb/sec", 196.80),  # HDR 200: 98 % of the data rate
    ("csegpu-ndr-cx7-ib_write_bw", "Gb/sec", 392.34),  # NDR 400
    ("csegpu-ndr-cx7-ib_send_bw-default-mib", "MiB/sec", 46557.03 * 8 * 2**20 / 1e9),
    ("cn-notes-qdr-mlx4-ib_send_bw-ud", "MB/sec", 3018.58 * 8 / 1e3),  # QDR, UD at the 4 KB MTU
])
def test_bandwidth_of_the_largest_message_in_gbps(name: str, unit: str, gbps: float) -> None:
    r = perftest.parse(_text("perftest", name))
    assert r.kind == "bw" and r.status == "ok" and r.units["BW average"] == unit
    assert r.bw_avg_gbps == pytest.approx(gbps, rel=1e-6)


def test_a_warning_inside_the_table_is_kept_not_a_row() -> None:
    r = perftest.parse(_text("perftest", "csegpu-ndr-cx7-ib_write_bw"))
    assert len(r.rows) == 1 and r.rows[0].size_bytes == 65536
    assert r.warnings == ("Conflicting CPU frequency values detected: 3295.212000 != 4999.302000. "
                          "CPU Frequency is not max.",)


def test_latency_columns_with_percentiles() -> None:
    r = perftest.parse(_text("perftest", "csegpu-ndr-cx7-ib_send_lat"))
    assert r.kind == "lat" and r.bw_avg_gbps is None
    assert r.rows[0].values["t_typical"] == 1.27 and r.rows[0].values["99.9% percentile"] == 5.19


def test_a_completion_error_is_a_failed_run() -> None:
    r = perftest.parse(_text("perftest", "issue173"))
    assert r.status == "failed" and r.bw_avg_gbps is None
    assert r.errors[1] == "Failed status 4: wr_id 0 syndrom 0x51"


@pytest.mark.parametrize("text", ["hello world\n", "#bytes #iterations BW peak[Gb/sec]\n 65536 5000\n",
                                  " RDMA_Write BW Test\n #bytes #iterations BW average[Gb/sec]\n 65536 x 1.0\n"])
def test_perftest_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        perftest.parse(text)


def test_a_header_without_rows_is_no_result() -> None:
    r = perftest.parse(" RDMA_Write BW Test\n Device : mlx5_0\n")
    assert r.status == "no result" and r.device == "mlx5_0"


def test_dcgmi_wrapped_error_is_joined_as_dcgm_cut_it() -> None:
    r = dcgmi_diag.parse(_text("dcgmi-diag", "azure-nd-h200"))
    (failed,) = r.failed()
    assert (failed.category, failed.name, r.status) == ("Deployment", "Persistence Mode", "fail")
    kind, text = failed.messages[0]
    assert kind == "error"
    assert text.startswith("Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires "
                           "peristence mode to be enabled. Enable persistence mode by running "
                           '"nvidia-smi -i <gpuId> -pm 1 " as root., Persistence mode for GPU 1 is currently disabled.')


def test_dcgmi_per_gpu_results() -> None:
    r = dcgmi_diag.parse(_text("dcgmi-diag", "mlengineering"))
    (t,) = r.tests
    assert t.result == "fail" and t.gpus[0] == "fail" and t.gpus[7] == "pass"
    assert t.messages[0][0] == "warning" and t.messages[0][1].endswith("and any other components.")
    four = dcgmi_diag.parse(_text("dcgmi-diag", "dcgm-issue124"))
    assert four.dcgm_version == "4.4.2" and [x.gpus for x in four.tests] == [{0: "pass"}] * 3


def test_dcgmi_all_pass() -> None:
    r = dcgmi_diag.parse(_text("dcgmi-diag", "aws-samples"))
    assert r.status == "pass" and len(r.tests) == 11 and r.driver_version == "535.104.12"
    assert {t.category for t in r.tests} == {"Deployment", "Integration", "Hardware"}


def test_dcgmi_json_with_a_warning_before_and_nulls_inside() -> None:
    r = dcgmi_diag.parse_json(_text("dcgmi-diag-json", "dcgm-repo"))
    assert r.status == "pass" and r.dcgm_version == "3.1.0" and len(r.tests) == 10
    assert r.tests[0].gpus == dict.fromkeys(range(8), "pass")


@pytest.mark.parametrize("text", ["garbage\n", "+-----+\n| only | a header |\n", "| Diagnostic | Result |\n"])
def test_dcgmi_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        dcgmi_diag.parse(text)


@pytest.mark.parametrize("text", ["not json", '{"x": 1}', "{", '{"DCGM GPU Diagnostic": {"test_categories": []}}'])
def test_dcgmi_json_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        dcgmi_diag.parse_json(text)


@pytest.mark.parametrize(("name", "gen", "width", "sm_mhz"), [
    ("gpud-8xh100-535.161.08", (5, 5), (16, 16), 1980),
    ("gpud-1xtitanv-560.35.03", (3, 1), (16, 16), 1912),  # idle: the link drops to Gen1 until loaded
    ("simulator-capture-gh200", (4, 4), (1, 1), 1980),
])
def test_nvidia_smi_q_pcie_link_and_max_clocks(name: str, gen: tuple[int, int], width: tuple[int, int],
                                               sm_mhz: int) -> None:
    from clusterforge.parse import nvidia_smi_q

    (path,) = (FIXTURES / "nvidia-smi-q").glob(f"{name}*.txt")
    g = nvidia_smi_q.parse(path.read_text(encoding="utf-8")).gpus[0]
    assert g.pcie is not None and (g.pcie.gen_max, g.pcie.gen_current) == gen
    assert (g.pcie.width_max, g.pcie.width_current) == width
    assert g.max_clocks_mhz is not None and g.max_clocks_mhz["SM"] == sm_mhz
