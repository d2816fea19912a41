"""`--limit` selections (inventory/selection.py): names, racks, roles, scalable units, and hostlist ranges
of any of them (`gpu[01-04]`, `lab-su0[1-2]-r01`), each name of a range required to match."""

from __future__ import annotations

import re

import pytest

from cf_lab_inventory import index_of, lab_data
from clusterforge.inventory.selection import SelectionError, select_nodes, split_tokens
from clusterforge.util.hostlist import HostlistError, compress, expand, split

INDEX = index_of(lab_data())


def test_split_tokens_keeps_a_range_whole() -> None:
    assert split_tokens(["gpu[01-03,07],login", " sm01 "]) == ("gpu[01-03,07]", "login", "sm01")
    assert split_tokens(["a,,b"]) == ("a", "b")
    assert split("x[1-2,4],y[3]") == ["x[1-2,4]", "y[3]"]


@pytest.mark.parametrize(("limit", "nodes"), [
    (["gpu[01-04]"], ["gpu01", "gpu02", "gpu03", "gpu04"]),
    (["gpu[01-02,07]"], ["gpu01", "gpu02", "gpu07"]),
    (["gpu[07-08]", "sm01"], ["gpu07", "gpu08", "sm01"]),
    (["lab-su0[1-2]-r01"], [f"gpu0{i}" for i in range(1, 9)]),  # a range of racks
    (["su[01-02]"], [f"gpu0{i}" for i in range(1, 9)]),  # a range of scalable units
    (["gpu[05-06],lus[01-02]"], ["gpu05", "gpu06", "lus01", "lus02"]),
])
def test_ranges_select_what_their_names_select(limit: list[str], nodes: list[str]) -> None:
    assert select_nodes(INDEX, split_tokens(limit)) == nodes
    assert select_nodes(INDEX, expand(",".join(limit))) == nodes  # the same as the names written out


def test_a_range_with_a_name_that_matches_nothing_is_refused() -> None:
    with pytest.raises(SelectionError, match="gpu09"):
        select_nodes(INDEX, ["gpu[01-09]"])
    with pytest.raises(SelectionError, match="runs backwards"):
        select_nodes(INDEX, ["gpu[04-01]"])
    with pytest.raises(SelectionError, match="not a host range"):
        select_nodes(INDEX, ["gpu[01-04"])
    # a range naming more than the inventory could match is refused before a name is built
    with pytest.raises(SelectionError, match="names more than"):
        select_nodes(INDEX, ["gpu[0-999999999999]"])


def test_expand_is_strict_and_bounded() -> None:
    assert expand("gpu[0001-0003],n[9-10]") == ["gpu0001", "gpu0002", "gpu0003", "n9", "n10"]
    assert expand("lab-su[01-02]-r01") == ["lab-su01-r01", "lab-su02-r01"]
    for bad in ("gpu[1-", "gpu]", "a[1]b[2]", "x[a-b]", "x[1--2]", "x[]"):
        with pytest.raises(HostlistError):
            expand(bad)
    with pytest.raises(HostlistError, match="more than 10"):
        expand("gpu[1-11]", limit=10)


def test_compress_of_a_thousand_nodes_is_one_range_and_expands_back() -> None:
    names = [f"gpu{i:05d}" for i in range(1, 2049)]
    assert compress(names) == "gpu[00001-02048]"
    assert expand(compress(names)) == names
    holes = names[::2]  # every other node: still exact
    assert expand(compress(holes)) == holes


@pytest.mark.parametrize(("text", "says"), [
    ("gpu[01-100]", "padded differently at its ends (write both with 3 digits"),
    ("gpu[00-100]", "padded differently"), ("gpu[1-010]", "padded differently"),
    ("gpu[[1-2]]", "nested brackets"), ("gpu[1-[2]]", "nested brackets"), ("gpu[]", "an empty range"),
    ("gpu[1-3,]", "'' is not a number"), ("gpu[5-1]", "runs backwards (write 1-5)"),
    ("a[1-2]b[1-2]", "two ranges in one name"), ("gpu[" + "9" * 30 + "]", "more than 18 digits"),
    ("gpu[0-999999999]", "names more than 100,000 hosts"),  # the default bound, counted before building
])
def test_every_bad_range_gets_its_own_clear_error(text: str, says: str) -> None:
    with pytest.raises(HostlistError, match=re.escape(says)):
        expand(text)


def test_unpadded_and_equally_padded_ranges_are_fine() -> None:
    assert len(expand("gpu[1-100]")) == 100 and expand("gpu[0-10]")[-1] == "gpu10"
    assert expand("gpu[098-101]") == ["gpu098", "gpu099", "gpu100", "gpu101"]


def test_a_huge_message_is_cut() -> None:
    with pytest.raises(HostlistError) as exc:
        expand("x" * 100_000 + "[1-")
    assert len(str(exc.value)) < 300


def test_node_names_is_the_one_reading_of_a_host_selection() -> None:
    """validate's and firmware's --limit and a day-2 wave's read host names and ranges through node_names."""
    from clusterforge.inventory.selection import node_names

    assert node_names(INDEX, "gpu[01-02],sm01") == ["gpu01", "gpu02", "sm01"]
    for given, says in (("", "selects no host"), ("gpu[01-", "not a host range"), ("gpu99", "not a node of the"),
                        ("gpu[0-99999999]", "names more than")):
        with pytest.raises(SelectionError, match=says):
            node_names(INDEX, given)
