"""Node sets as HPC admins read them (util/nodeset.py, ClusterShell's NodeSet): the text of the names a deploy
folds, expanding back to exactly those names; a name ClusterShell would read as syntax is never given to it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterforge.util.nodeset import expand, fold

GPUS = [f"gpu{i:04d}" for i in range(1, 2049)]


@pytest.mark.parametrize(("names", "text"), [
    (GPUS, "gpu[0001-2048]"),
    (["sm01", "sm02"], "sm[01-02]"),
    (["lus04", "lus02", "lus01", "lus03", "lus02"], "lus[01-04]"),
    ([*GPUS[:99], *GPUS[100:]], "gpu[0001-0099,0101-2048]"),
    (["login", "mgmt-a", "head"], "head,login,mgmt-a"),
    (["sm01", "login", "gpu0001", "gpu0002"], "gpu[0001-0002],login,sm01"),
    (["leaf-su01-r0", "leaf-su01-r1", "leaf-su02-r0", "leaf-su02-r1"], "leaf-su[01-02]-r[0-1]"),
    (["gpu9", "gpu10"], "gpu[9-10]"),
    (["n1"], "n1"),
    ([], ""),
])
def test_node_set_text(names: list[str], text: str) -> None:
    assert fold(names) == text
    assert sorted(expand(text)) == sorted(set(names))


def test_a_name_outside_the_node_set_grammar_is_never_read_as_one() -> None:
    """ClusterShell reads `!`, `,`, `[` and `@` as operators: such a name follows, escaped, unfolded."""
    assert fold(["ok1", "ok2", "a!b", "x,y", "gpu[1]", "@all", "-x", "bad\x1b[31m"]) == \
        "ok[1-2],-x,@all,a!b,bad\\x1b[31m,gpu[1],x,y"


_name = st.builds(lambda prefix, num, width: prefix + str(num).rjust(width, "0"),
                  st.sampled_from(["gpu", "sm", "lus", "node-a", "leaf-su01-r", "x"]),
                  st.integers(min_value=0, max_value=3000), st.integers(min_value=1, max_value=4))


@given(st.lists(_name | st.sampled_from(["login", "mgmt", "head-node"]), max_size=60))
def test_a_node_set_expands_to_exactly_its_names(names: list[str]) -> None:
    assert sorted(expand(fold(names))) == sorted(set(names))
