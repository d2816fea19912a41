"""Fixture discovery and golden-file writing for the parser tests.

Run ``.venv/bin/python tests/unit/parse/_parse_fixtures.py`` to (re)write every
``tests/fixtures/<dir>/<name>.expected.json`` from the current parsers.  Goldens
must then be reviewed against the raw text before committing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# fixture directory -> parser name (key of PARSERS, or "ibnetdiscover-p")
DIR_TO_TOOL = {
    "ibstat": "ibstat",
    "ibstat-p": "ibstat-p",
    "ibstatus": "ibstatus",
    "ibnetdiscover": "ibnetdiscover",
    "ibnetdiscover-p": "ibnetdiscover-p",
    "ibv_devinfo": "ibv-devinfo",
    "iblinkinfo": "iblinkinfo",
    "nvidia-smi-topo": "nvidia-smi-topo",
    "nvidia-smi-nvlink-status": "nvidia-smi-nvlink",
    "nvidia-smi-query-gpu": "nvidia-smi-query-gpu",
    "nvidia-smi-q": "nvidia-smi-q",
    "ibdev2netdev": "ibdev2netdev",
    "lnetctl-net-show": "lnetctl-net-show",
    "lctl-list_nids": "lctl-list-nids",
    "nccl-tests": "nccl-tests",
    "perftest": "perftest",
    "dcgmi-diag": "dcgmi-diag",
    "dcgmi-diag-json": "dcgmi-diag-json",
    "mlxfwmanager": "mlxfwmanager",
    "mlxlink": "mlxlink",
    "flint-query": "flint-q",
    "lfs-df": "lfs-df",
    "lctl-get_param-hsm": "lctl-hsm",
    "rpm-query": "rpm-query",
    "sinfo-R": "sinfo-reasons",
}


def fixture_files() -> list[Path]:
    out: list[Path] = []
    for d in sorted(DIR_TO_TOOL):
        out.extend(sorted((FIXTURES / d).glob("*.txt")))
    return out


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def expected_path(path: Path) -> Path:
    return path.with_name(path.stem + ".expected.json")


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def parse_fn(tool: str) -> Any:
    from clusterforge.parse import PARSERS
    from clusterforge.parse.ibnetdiscover_ports import parse as parse_ports

    return parse_ports if tool == "ibnetdiscover-p" else PARSERS[tool]


def actual(path: Path) -> Any:
    """to_jsonable(...) of the fixture, or {"error": {"line": N}} when it raises ParseError."""
    from clusterforge.parse import ParseError, to_jsonable

    tool = DIR_TO_TOOL[path.parent.name]
    try:
        records = parse_fn(tool)(read_text(path))
    except ParseError as err:
        return {"error": {"line": err.line_no}}
    return to_jsonable(tool, records)


def dumps(obj: Any, indent: int = 0) -> str:
    """JSON with short containers kept on one line (keeps big goldens readable)."""
    flat = json.dumps(obj, ensure_ascii=False)
    if len(flat) + indent <= 100 or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad = " " * (indent + 2)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps(v, indent + 2)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 2) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def main() -> None:
    for path in fixture_files():
        expected_path(path).write_text(dumps(actual(path)) + "\n", encoding="utf-8")
        print("wrote", expected_path(path).relative_to(FIXTURES))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))
    main()
