"""The house stays as drawn (docs/architecture.md, "The house"): the package root holds only the face, every
capability folder imports only from the floors below it, and no module imports itself back through others.

The import graph is read from the source (every `import` and `from ... import`, at module level or inside a
function, typing-only ones included): a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PKG = SRC / "clusterforge"

FLOORS: list[tuple[str, ...]] = [
    ("clusterforge", "util"),
    ("catalog",),
    ("model",),
    ("parse", "collect", "inventory", "plan", "respond"),
    ("check",),
    ("render", "interchange"),
    ("sim",),
    ("validate",),
    ("accept", "firmware"),
    ("lab",),
    ("deploy",),
    ("rehearsal",),
    ("alerts",),
    ("day2", "floor"),
    ("cli",),
    ("api",),
]
"""Low to high; `clusterforge` is the package's __init__ (its version only), `api` the public face."""

FACE = {"__init__.py", "api.py", "py.typed"}


def _floor_of() -> dict[str, int]:
    return {cap: i for i, caps in enumerate(FLOORS) for cap in caps}


def _module(f: Path) -> tuple[str, bool]:
    parts = list(f.relative_to(SRC).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _capability(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "clusterforge"
    return parts[1]


def _graph() -> dict[str, set[str]]:
    files = [f for f in PKG.rglob("*.py") if "guest" not in f.relative_to(PKG).parts]
    modules = {_module(f)[0] for f in files}
    edges: dict[str, set[str]] = {}
    for f in files:
        name, is_pkg = _module(f)
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                    target = ".".join(up + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            out |= {t for t in targets if t.split(".")[0] == "clusterforge" and t != name}
        edges[name] = out
    return edges


def test_the_package_root_holds_only_the_face_and_the_capability_folders() -> None:
    loose = sorted(p.name for p in PKG.iterdir() if p.is_file() and p.name not in FACE)
    assert loose == []
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    drawn = {cap.split(".")[0] for caps in FLOORS for cap in caps} - {"clusterforge", "api"}
    assert folders == drawn


def test_the_face_exports_what_it_names() -> None:
    import clusterforge.api as api

    assert set(api.__all__) >= {"Checked", "load_checked", "summary", "load_inventory", "InventoryInvalid"}
    for name in api.__all__:
        assert getattr(api, name) is not None


def _arrows() -> list[tuple[str, str, str, str]]:
    """(from module, to module, from capability, to capability) for every import between capabilities."""
    out = []
    for mod, targets in _graph().items():
        for t in targets:
            a, b = _capability(mod), _capability(t)
            if a != b and not (a == "lab.rehearsal" and b == "lab" and t.startswith("clusterforge.rehearsal")):
                out.append((mod, t, a, b))
    return out


def test_every_capability_is_on_a_floor() -> None:
    floor = _floor_of()
    caps = {_capability(m) for m in _graph()} | {"api"}
    assert sorted(caps - set(floor)) == []


def test_no_arrow_runs_up_or_sideways() -> None:
    floor = _floor_of()
    bad = sorted(f"{m} -> {t} ({a} on floor {floor[a]}, {b} on floor {floor[b]})"
                 for m, t, a, b in _arrows() if floor[b] >= floor[a])
    assert bad == []


def test_no_module_imports_itself_back() -> None:
    edges = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan's strongly connected components, iteratively deep enough here
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_architecture_page_draws_these_floors() -> None:
    """docs/architecture.md's table of floors is this one, so the page and the test cannot drift apart."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The house", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"^\| \d+ \|", line)]
    drawn = [tuple(re.findall(r"`([a-z0-9_.]+)/?`", row.split("|")[2])) for row in rows]
    assert drawn == FLOORS


@pytest.mark.parametrize("cap", sorted({c for caps in FLOORS for c in caps} - {"clusterforge", "api"}))
def test_each_folder_says_what_it_owns(cap: str) -> None:
    init = PKG.joinpath(*cap.split(".")) / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert doc and len(doc) > 20, f"{init}: a docstring saying what the folder owns"


def test_the_graph_is_read_whole() -> None:
    """An empty or half-read graph would pass every rule above: the arrows between capabilities are many."""
    by_pair: dict[tuple[str, str], int] = defaultdict(int)
    for _, _, a, b in _arrows():
        by_pair[(a, b)] += 1
    assert len(by_pair) > 40 and sum(by_pair.values()) > 300


@pytest.mark.parametrize(("low", "high"), [("deploy", "lab"), ("deploy", "rehearsal"), ("lab", "model"),
                                           ("lab", "inventory"), ("lab", "check")])
def test_what_a_folder_must_not_know(low: str, high: str) -> None:
    """The deploy takes its targets and repositories from its caller (a rehearsal hands it a stage: it
    imports no lab); the lab's machinery knows no inventory (docs/architecture.md, #38)."""
    arrows = [(src, dst) for src, dsts in _graph().items() if _capability(src) == low
              for dst in dsts if _capability(dst) == high]
    assert not arrows, f"{low} imports {high}: {arrows[:5]}"


def test_templates_are_rendered_in_one_place() -> None:
    """Jinja is called in one place: render.core's `render_text` (render, the deploy and day-2 alike, each file's
    banner and environment merged by `file_context`); nothing else gets a template or the Environment (#38)."""
    allowed = {PKG / "render" / "core.py", PKG / "render" / "env.py"}
    calls = re.compile(r"\.get_template\(|\bfrom_string\(|\benvironment\(\)|\bimport jinja2\b|\bfrom jinja2\b")
    found = [f"{p.relative_to(SRC)}:{n}" for p in sorted(PKG.rglob("*.py")) if p not in allowed
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if calls.search(line) and not line.lstrip().startswith("#")]
    assert not found, found


def test_render_is_reached_through_its_face() -> None:
    """Outside `render/`, every import of it names the package (`from ..render import X`), never a module behind
    it: the deploy, day-2, the rehearsal, sim and the CLI take specs, places and file names from render's face
    (#38 "deploy's imports of render shrink to render's face")."""
    behind = sorted((src, dst) for src, dsts in _graph().items() if _capability(src) != "render"
                    for dst in dsts if _capability(dst) == "render" and dst != "clusterforge.render")
    assert not behind, f"imports past render's face: {behind[:8]}"
    users = {_capability(src) for src, dsts in _graph().items() if "clusterforge.render" in dsts}
    assert {"deploy", "day2", "rehearsal", "cli", "sim"} <= users, users
