"""Slurm hostlist compression: ranges, zero padding, prefixes; expands back to the input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterforge.util.hostlist import compress, expand


@pytest.mark.parametrize(("names", "expr"), [
    (["gpu01", "gpu02", "gpu03", "gpu04"], "gpu[01-04]"),
    (["gpu04", "gpu01", "gpu03", "gpu02", "gpu02"], "gpu[01-04]"),
    (["gpu01", "gpu02", "gpu03", "gpu07"], "gpu[01-03,07]"),
    (["gpu05"], "gpu05"),
    (["gpu09", "gpu10", "gpu11"], "gpu[09-11]"),
    (["gpu9", "gpu10"], "gpu[9-10]"),
    (["gpu9", "gpu010"], "gpu[9,010]"),
    (["leaf-su01-r0", "leaf-su01-r1", "leaf-su02-r0", "leaf-su02-r1"], "leaf-su01-r[0-1],leaf-su02-r[0-1]"),
    (["leaf-su01", "leaf-su02", "leaf-su13"], "leaf-su[01-02,13]"),
    (["login", "gpu1", "gpu2"], "gpu[1-2],login"),
    ([], ""),
])
def test_compress(names: list[str], expr: str) -> None:
    assert compress(names) == expr


def test_expand_inverts_known_cases() -> None:
    assert expand("gpu[01-03,07],login,n[9-10]") == ["gpu01", "gpu02", "gpu03", "gpu07", "login", "n9", "n10"]


_names = st.builds(
    lambda prefix, num, width: prefix + str(num).rjust(width, "0"),
    st.sampled_from(["gpu", "node-a", "leaf-su01-r", "x"]),
    st.integers(min_value=0, max_value=130),
    st.integers(min_value=1, max_value=4),
)


@given(st.lists(_names, max_size=40))
def test_compress_round_trips(names: list[str]) -> None:
    assert sorted(expand(compress(names))) == sorted(set(names))
