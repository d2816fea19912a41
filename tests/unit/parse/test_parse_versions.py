"""ofed_info -s and dpkg-query version lines. No captures of these were available, so the
inputs below are written from the tools' documented formats (and marked as such)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterforge.parse import ParseError, dpkg_query, ofed_info


@pytest.mark.parametrize(
    ("text", "product", "version"),
    [
        ("MLNX_OFED_LINUX-5.8-1.0.1.1:\n", "MLNX_OFED_LINUX", "5.8-1.0.1.1"),  # documented MLNX_OFED form
        ("OFED-internal-24.10-1.1.4:\n", "OFED-internal", "24.10-1.1.4"),  # documented DOCA-OFED form
    ],
)
def test_ofed_info(text: str, product: str, version: str) -> None:
    info = ofed_info.parse(text)
    assert (info.product, info.version) == (product, version)


@pytest.mark.parametrize("text", ["", "bash: ofed_info: command not found", "MLNX_OFED_LINUX-5.8:\nextra\n"])
def test_ofed_info_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        ofed_info.parse(text)


def test_dpkg_query() -> None:
    text = "libnccl2 2.21.5-1+cuda12.4\nlustre-client-utils 2.15.5-1\nnvidia-driver-550 550.90.07-0ubuntu1\n"
    assert dpkg_query.parse(text) == {
        "libnccl2": "2.21.5-1+cuda12.4", "lustre-client-utils": "2.15.5-1",
        "nvidia-driver-550": "550.90.07-0ubuntu1",
    }
    assert dpkg_query.parse("") == {}  # none of the asked packages is installed
    with pytest.raises(ParseError) as info:
        dpkg_query.parse("libnccl2 2.21.5-1\ndpkg-query: no packages found matching x\n")
    assert info.value.line_no == 2


@given(st.text(max_size=200))
def test_version_parsers_raise_only_parse_errors(text: str) -> None:
    for parser in (ofed_info.parse, dpkg_query.parse):
        with contextlib.suppress(ParseError):
            parser(text)
