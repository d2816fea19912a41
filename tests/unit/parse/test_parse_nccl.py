"""nccl-tests output."""

from __future__ import annotations

from _parse_helpers import fixture, raises_at

from clusterforge.parse import nccl_tests

N = "nccl-tests/"


def test_complete_run() -> None:
    r = nccl_tests.parse(fixture(N + "a3mega-2node-16xh100-allreduce"))
    assert (r.status, r.avg_busbw, r.out_of_bounds, r.out_of_bounds_ok) == ("ok", 70.742, 0, True)
    assert len(r.rows) == 31 and len(r.devices) == 16
    last = r.rows[-1]
    assert (last.size, last.count, last.type, last.redop, last.root) == (
        8589934592, 2147483648, "float", "sum", -1)
    assert last.out_of_place is not None and last.out_of_place.busbw == 338.82
    assert last.in_place is not None
    assert (last.in_place.time_us, last.in_place.wrong) == (47743.0, 0)
    assert r.params["maxBytes"] == 8589934592 and r.params["warmup iters"] == 5
    assert r.devices[15].host == "ztan-mig-gq73" and r.devices[15].bus_id == "0000:8c:00"


def test_died_without_footer_is_no_result_not_zero() -> None:
    r = nccl_tests.parse(
        fixture(N + "issue322-1024rank-128node-8xh100-maxbytes-reduced-cuda-failures"))
    assert r.avg_busbw is None and r.status == "no result"
    assert len(r.rows) == 5 and r.rows[-1].size == 17179869184
    assert len(r.failures) == 77 and "unhandled cuda error" in r.failures[0]


def test_mpi_launch_failure_is_no_result() -> None:
    r = nccl_tests.parse(fixture(N + "gcm-mpirun-not-enough-slots-error"))
    assert (r.status, r.avg_busbw, r.rows, r.devices) == ("no result", None, (), ())


def test_wrong_values_and_out_of_bounds_failed() -> None:
    r = nccl_tests.parse(
        fixture(N + "issue369-2rank-gh200-slingshot-wrong-values-out-of-bounds-failed"))
    assert r.status == "failed" and r.avg_busbw == 4.79995
    assert (r.out_of_bounds, r.out_of_bounds_ok) == (4, False)
    bad = [(row.size, row.out_of_place.wrong, row.in_place.wrong) for row in r.rows
           if row.out_of_place and row.in_place and row.out_of_place.wrong]
    assert bad == [(1048576, 96, 32)]
    assert r.test == "all_reduce_perf" and r.nccl_tests_version == "2.17.8"


def test_tagged_mpi_output_and_nccl_banner() -> None:
    r = nccl_tests.parse(fixture(N + "ncclebpf-mpirun-tag-output-2rank-same-gpu-socket-rtx5090"))
    assert (r.status, r.avg_busbw, len(r.rows), r.test) == ("ok", 1.58183, 8, "all_reduce_perf_mpi")
    assert r.params["iters"] == 50
    r = nccl_tests.parse(fixture(N + "gcm-1node-8xa100-80gb-allreduce-hostname-templated"))
    assert r.nccl_version == "2.16.2+cuda11.6" and r.devices[0].host == "{hostname}"
    r = nccl_tests.parse(fixture(N + "single-node-8xh100-g8-nvls-448-edited-indent"))
    assert r.avg_busbw == 448.212
    assert max(x.out_of_place.busbw or 0 for x in r.rows if x.out_of_place) == 470.73


def test_truncated_row_and_bad_values_raise() -> None:
    text = fixture(N + "gcm-1node-8xa100-80gb-allreduce-hostname-templated")
    lines = text.split("\n")
    cut = "\n".join(lines[:17]) + "\n" + lines[17][:40]
    raises_at(nccl_tests.parse, cut, 18)
    raises_at(nccl_tests.parse, text.replace("210.68", "21O.68"), 18)
    raises_at(nccl_tests.parse, text.replace("bandwidth    : 210.99", "bandwidth : x"))
    raises_at(nccl_tests.parse, text + text)  # two result tables


def test_validation_off_wrong_is_none() -> None:
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
            "     time   algbw   busbw #wrong\n"
            "        1024           256     float     sum      -1    12.50    0.08    0.14    N/A"
            "    12.40    0.08    0.14    N/A\n# Avg bus bandwidth    : 0.14\n")
    r = nccl_tests.parse(text)
    assert r.rows[0].out_of_place is not None and r.rows[0].out_of_place.wrong is None
    assert r.status == "ok" and r.avg_busbw == 0.14
