"""Package-level API: PARSERS, to_jsonable, ParseError."""

from __future__ import annotations

import json
import pickle

import pytest

from clusterforge.parse import PARSERS, ParseError, to_jsonable
from clusterforge.parse import ibstat as ibstat_mod

TOOLS = {
    "ibstat", "ibstat-p", "ibstatus", "ibnetdiscover", "iblinkinfo", "nvidia-smi-topo",
    "nvidia-smi-nvlink", "nvidia-smi-query-gpu", "nvidia-smi-q", "ibdev2netdev",
    "lnetctl-net-show", "lctl-list-nids", "nccl-tests", "ofed-info", "dpkg-query", "ibv-devinfo", "lustre-state",
    "mstlink", "mlxlink", "perftest", "dcgmi-diag", "dcgmi-diag-json", "mlxfwmanager", "mlxfwmanager-xml",
    "flint-q", "lfs-df", "lctl-hsm", "lctl-pcc", "lctl-recovery", "rpm-query", "ibroute", "sinfo-reasons",
}


def test_parsers_keys_are_exactly_the_tool_names() -> None:
    assert set(PARSERS) == TOOLS
    assert all(callable(fn) for fn in PARSERS.values())


def test_parse_error_attributes_and_str() -> None:
    err = ParseError("ibstat", 12, "xyz", "expected 'Port N:' header, got 'xyz'")
    assert (err.tool, err.line_no, err.line, err.message) == (
        "ibstat", 12, "xyz", "expected 'Port N:' header, got 'xyz'")
    assert str(err) == "line 12: expected 'Port N:' header, got 'xyz'"
    assert isinstance(err, Exception)
    again = pickle.loads(pickle.dumps(err))
    assert (again.tool, again.line_no, again.line, again.message) == (
        err.tool, err.line_no, err.line, err.message)


EMPTY_IS_NOTHING = {"nvidia-smi-nvlink", "dpkg-query", "rpm-query", "lustre-state", "lfs-df", "lctl-hsm",
                    "lctl-pcc", "lctl-recovery"}
"""Tools whose empty output means "none here" (no NVLink, no Lustre mounted, no MDT), not a broken run."""


@pytest.mark.parametrize("tool", sorted(TOOLS - EMPTY_IS_NOTHING))
def test_empty_input_is_a_parse_error_on_line_1(tool: str) -> None:
    for text in ("", "\n", "  \n\n"):
        with pytest.raises(ParseError) as info:
            PARSERS[tool](text)
        assert info.value.line_no == 1
        assert info.value.tool == tool


def test_empty_nvlink_status_means_no_nvlink() -> None:
    result = PARSERS["nvidia-smi-nvlink"]("")
    assert to_jsonable("nvidia-smi-nvlink", result) == {"gpus": []}


def test_empty_lustre_state_means_no_imports() -> None:
    # lctl get_param prints nothing on stdout when no Lustre device matches (nothing mounted)
    assert to_jsonable("lustre-state", PARSERS["lustre-state"]("")) == []


def test_to_jsonable_rejects_unknown_tool_and_wrong_records() -> None:
    with pytest.raises(KeyError):
        to_jsonable("ibstatt", ())
    with pytest.raises(TypeError):
        to_jsonable("ibnetdiscover", ())
    with pytest.raises(TypeError):
        to_jsonable("ibstat", ("not a CA",))


def test_to_jsonable_output_is_plain_json() -> None:
    text = "CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 0\n\tFirmware version: 1\n" \
           "\tHardware version: 0\n\tNode GUID: 0x1\n\tSystem image GUID: 0x2\n"
    out = to_jsonable("ibstat", PARSERS["ibstat"](text))
    assert json.loads(json.dumps(out)) == out
    assert out[0]["node_guid"] == "0x0000000000000001"
    assert isinstance(PARSERS["ibstat"](text)[0], ibstat_mod.IbstatCa)


def test_records_are_frozen() -> None:
    ca = PARSERS["ibstat"]("CA 'a'\nNumber of ports: 0\nFirmware version: \n"
                           "Hardware version: 0\nNode GUID: 0x1\nSystem image GUID: 0x1\n")
    assert isinstance(ca, tuple)
    with pytest.raises(AttributeError):
        ca[0].ca = "b"  # type: ignore[misc]
