"""The YAML loader decision's figures (issue 21): yaml-rs beside PyYAML's C loader (the fallback,
YAML 1.2 core schema, and PyYAML's own safe loader) and ruamel.yaml's safe loader, on the same
generated inventory files in the same run; each checked to read the same data as yaml-rs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from clusterforge.inventory.yaml_engine import _yaml_rs, loads_pyyaml
from timing import best_of


class BenchFailed(Exception):
    pass




def bench_yaml(envs: dict[int, Path]) -> list[dict[str, object]]:
    from ruamel.yaml import YAML  # ansible-lint's dependency in the dev extras

    ruamel = YAML(typ="safe", pure=True)
    assert _yaml_rs is not None
    parsers: dict[str, Callable[[str], Any]] = {
        "yaml-rs (used)": _yaml_rs.loads,
        "PyYAML C, core 1.2 (fallback)": loads_pyyaml,
        "PyYAML CSafeLoader (1.1)": lambda t: yaml.load(t, Loader=yaml.CSafeLoader),
        "ruamel.yaml safe": ruamel.load,
    }
    rows: list[dict[str, object]] = []
    for nodes, env in envs.items():
        texts = [f.read_text(encoding="utf-8") for f in sorted(env.glob("*.yaml"))]
        reference = [_yaml_rs.loads(t) for t in texts]
        base = 0.0
        for name, parse in parsers.items():
            if [parse(t) for t in texts] != reference:
                raise BenchFailed(f"{name} reads the {nodes}-node files differently from yaml-rs")
            runs = 1 if name.startswith("ruamel") else 3
            seconds = best_of(lambda parse=parse, texts=texts: [parse(t) for t in texts], runs)
            base = base or seconds
            rows.append({"bench": "yaml parse", "nodes": nodes, "parser": name,
                         "mb": round(sum(map(len, texts)) / 1e6, 2), "seconds": round(seconds, 3),
                         "x_yaml_rs": round(seconds / base, 1)})
    return rows
