"""One tool table (collect/tools.py): every command collect plans and accept runs is its tool's entry, followed by
the host's own arguments, and every entry names a parser that exists; a tool is spelled one way everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.accept.plan import accept_plan
from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets, fabric_commands
from clusterforge.collect.tools import TOOLS
from clusterforge.parse import PARSERS

ROOT = Path(__file__).resolve().parents[3]


def _tool(stem: str) -> str:
    """The table's key for an output stem: `mlxlink@mlx5_0.1` -> mlxlink, `ibnetdiscover-plane1` -> ibnetdiscover."""
    base = stem.split("@", 1)[0]
    return base.split("-plane", 1)[0] if "-plane" in base else base


def test_every_entry_names_a_parser() -> None:
    assert {t.parser for t in TOOLS.values()} <= set(PARSERS)


@pytest.mark.parametrize("env", ["inventories/lab", "inventories/prod", "tests/fixtures/inventories/lab-planes"])
def test_collect_and_accept_take_their_commands_from_the_table(env: str) -> None:
    index = load_checked(ROOT / env).index
    hosts, fabric = default_targets(index, {n.name: "198.18.0.1" for n in index.inv.nodes})
    commands = [(stem, argv) for t in hosts for stem, argv in t.commands.items()]
    if fabric is not None:
        commands += list(fabric_commands(index, fabric.host).items())
    commands += [(stem, tuple(argv)) for n in accept_plan(index).nodes for stem, argv in n.commands.items()
                 if stem in TOOLS]
    assert commands
    for stem, argv in commands:
        tool = TOOLS[_tool(stem)]
        assert argv[:len(tool.argv)] == tool.argv, (stem, argv)


def test_nvlink_is_spelled_one_way() -> None:
    index = load_checked(ROOT / "inventories" / "lab").index
    hosts, _ = default_targets(index, {"gpu01": "198.18.0.1"})
    collected = hosts[0].commands["nvidia-smi-nvlink"]
    accepted = next(n for n in accept_plan(index).nodes if n.node == "gpu01").commands["nvidia-smi-nvlink"]
    assert tuple(accepted) == collected == ("nvidia-smi", "nvlink", "--status")
