"""Fuzz the host selections a user types (#33): hostlist expressions (`--limit`, validate and firmware
selections, day-2 waves and `{hosts}` hooks) give names or a HostlistError, never another exception, and
never more names than the bound; the selection over the lab inventory gives nodes or a SelectionError; a
compressed list always expands back to itself. Bounded: a few hundred examples, well under a second each."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cf_lab_inventory import index_of, lab_data
from clusterforge.inventory.selection import SelectionError, limit_tokens, select_nodes
from clusterforge.util.hostlist import MAX_NAMES, HostlistError, compress, expand
from clusterforge.util.nodeset import expand as ns_expand
from clusterforge.util.nodeset import fold, size

INDEX = index_of(lab_data())
TOKENS = ["gpu", "sm", "0", "1", "01", "9", "10", "100", "999999999", "9" * 30, "[", "]", ",", "-", " ", "lab",
          "su", "su01", "lus01", "gpu01", "[[", "]]", "/", "\n", "\x00", ";", "$(", "`", "'", '"', "é", "\\",
          "compute", "lab-su01-r01", "all", "..", "*"]
TEXT = st.lists(st.sampled_from(TOKENS), max_size=24).map("".join)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(TEXT, st.integers(min_value=0, max_value=5000))
def test_expand_gives_names_or_a_hostlist_error(text: str, bound: int) -> None:
    start = time.monotonic()
    try:
        names = expand(text, limit=bound)
    except HostlistError as exc:
        assert str(exc) and len(str(exc)) < 400  # one bounded message
    else:
        assert len(names) <= bound
    assert time.monotonic() - start < 1.0


@FAST
@given(TEXT)
def test_expand_without_a_bound_stops_at_max_names(text: str) -> None:
    with contextlib.suppress(HostlistError):
        assert len(expand(text)) <= MAX_NAMES


@FAST
@given(st.lists(TEXT, max_size=3))
def test_a_selection_gives_nodes_or_a_selection_error(given_: list[str]) -> None:
    try:
        nodes = select_nodes(INDEX, limit_tokens(given_))
    except SelectionError as exc:
        assert str(exc).startswith("--limit")
    else:
        assert nodes and set(nodes) <= {n.name for n in INDEX.inv.nodes}  # never empty, never widened


@FAST
@given(st.lists(st.from_regex(r"[a-z]{1,3}(?:-[a-z]{1,2})?[0-9]{0,4}", fullmatch=True), min_size=1, max_size=40))
def test_compress_expands_back(names: list[str]) -> None:
    assert sorted(expand(compress(names))) == sorted(set(names))
    assert sorted(ns_expand(fold(names))) == sorted(set(names))
    assert size(fold(names)) == len(set(names))


@pytest.mark.parametrize("text", ["gpu[0-999999999]", "a[0-99999]b[0-99999]", "x[1-100000],y[1-2]"])
def test_the_node_set_of_too_many_names_is_refused_before_it_is_built(text: str) -> None:
    start = time.monotonic()
    with pytest.raises(ValueError, match="names more than 100,000 hosts"):
        ns_expand(text)
    with pytest.raises(HostlistError, match=r"names more than|two ranges in one name"):
        expand(text)
    assert time.monotonic() - start < 1.0
