"""`validate ENV --from DIR --fabric-only` without loading the inventory: the declared fabric from a cache.

Loading and checking an environment means importing the models (pydantic), the checks and the planner,
which cost more than the validation itself. `validate` keeps, under the environment's state directory
(`$CLUSTERFORGE_STATE_DIR` or `state/`, then the environment's name: `validate/declared-fabric.json`),
what the fabric check needs of the inventory: each declared switch and HCA by the name ibnetdiscover shows
for it, the locked GUIDs, and every declared link with its width and speed. The file is keyed by a digest of
every byte of the environment's YAML files and of clusterforge's own files (`inventory_key`): any change
to either, and it no longer applies. It is written atomically, by `declared.refresh` when a full run
loaded the environment.

`fast_validate(argv)` is tried by the console entry (cli/entry.py) before anything else is imported. It
answers only when it can prove the full validator would find nothing: the saved directory holds exactly
`fabric/ibnetdiscover.txt`, every device it shows binds to a declared one (by locked GUID, or by the
description of a device without a conflicting lock), no description or GUID repeats, and the links are
exactly the declared ones at the declared width and speed. Then it prints the clean report the full command
prints (`tests/unit/validate/test_quick.py` holds the two byte for byte) and exits 0. Anything else, a
finding, an option it does not handle, a cache that is missing, stale or unreadable, returns None and the
full command runs (which reports the findings and rebuilds the cache). Imports: the standard library, the
ibnetdiscover parser and the saved-output reader; rich only to print the text summary.

`CLUSTERFORGE_NO_CACHE=1` turns the cache off (neither read nor written).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..util.jsonstate import loads, read_bytes

if TYPE_CHECKING:
    from ..parse.ibnetdiscover import IbNode, IbTopology

CACHE_FORMAT = 2
CACHE_FILE = Path("validate") / "declared-fabric.json"
STATE_DIR_ENV = "CLUSTERFORGE_STATE_DIR"  # the same directory as the deploy record (deploy/record.py)
NO_CACHE_ENV = "CLUSTERFORGE_NO_CACHE"
_PACKAGE = Path(__file__).resolve().parents[1]


def cache_enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "") in ("", "0")


def cache_path(env: Path) -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or "state") / env.resolve().name / CACHE_FILE


def environment_files(env: Path) -> list[Path]:
    """The files `load.environment_files` reads (held to it by a test), without importing the loader."""
    from ..inventory.env_entries import broken_entries, is_candidate

    if env.is_file():
        return [env]
    entries = list(env.iterdir())
    if broken_entries(entries):  # the loader refuses these (INV-ENV): never answer clean past one
        raise OSError(f"{env}: an entry named like an inventory file is not a readable file")
    return sorted(p for p in entries if is_candidate(p) and p.is_file())


def inventory_key(env: Path) -> str:
    """sha256 over every byte of the environment's files (names included) and a stamp of clusterforge's own
    files (path, size, mtime: a changed check or model must not reuse what the old code concluded)."""
    h = hashlib.sha256(f"clusterforge-declared-fabric/{CACHE_FORMAT}\0".encode())
    for f in environment_files(env):
        data = f.read_bytes()
        h.update(f"{f.name}\0{len(data)}\0".encode())
        h.update(data)
    h.update(code_stamp().encode())
    return h.hexdigest()


def code_stamp(package: Path = _PACKAGE) -> str:
    h = hashlib.sha256()
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, name)
            st = os.stat(path)
            h.update(f"{os.path.relpath(path, package)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def cache_text(doc: dict[str, Any]) -> str:
    """The file: the sha256 of the JSON document on the first line, then the document (one line)."""
    body = json.dumps(doc, separators=(",", ":"))
    return f"{hashlib.sha256(body.encode()).hexdigest()}\n{body}\n"


def read_cache(env: Path, key: str) -> dict[str, Any] | None:
    """The cached declared fabric of `env` when it is there, intact (its digest line), well-formed and of this
    key; else None (a damaged or foreign file is ignored, and the next full run writes it again)."""
    try:
        digest, _, body = read_bytes(cache_path(env)).partition(b"\n")
        if hashlib.sha256(body.rstrip(b"\n")).hexdigest().encode() != digest:
            return None
        doc = loads(body)  # nested too deeply (a RecursionError before): damaged, ignored, written again
    except (OSError, ValueError, RuntimeError):  # RuntimeError: the state directory's path loops
        return None
    if not isinstance(doc, dict) or doc.get("format") != CACHE_FORMAT or doc.get("key") != key:
        return None
    try:
        return _checked_shape(doc)
    except (TypeError, ValueError, KeyError):
        return None


def link_key(a: tuple[str, int], b: tuple[str, int]) -> str:
    """A link's two ends, in order, as one string: `device|port|device|port` ("gpu01 mlx5_0|1|leaf01|3"; a name
    never holds `|`). The cache's `links` maps it to `"<width> <speed>"`."""
    if b < a:
        a, b = b, a
    return f"{a[0]}|{a[1]}|{b[0]}|{b[1]}"


def _checked_shape(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its fields converted to what `proven_clean` reads; raises on any other shape. The
    links are only looked up: a value of another type cannot compare equal, so it fails the proof."""
    if not isinstance(doc["fast"], bool) or not isinstance(doc["links"], dict):
        raise TypeError("fast / links")
    switches = {str(s) for s in doc["switches"]}
    hcas = {str(h) for h in doc["hcas"]}
    locks = [(str(k), str(g)) for k, g in doc["locks"]]
    return {"fast": doc["fast"], "switches": switches, "hcas": hcas, "locks": locks, "links": doc["links"]}


def proven_clean(declared: dict[str, Any], topo: IbTopology) -> bool:
    """True only when validate.fabric.diff_fabric would return no finding for `topo` (see the module doc):
    the same binding as validate.identify.bind, with every case it would report (or that needs its
    position or Mellanox-description rules) answered False."""
    if not declared["fast"] or topo.routers:
        return False
    nodes: list[IbNode] = [*topo.switches, *topo.cas]
    if len({n.guid for n in nodes}) != len(nodes):
        return False
    descs = [n.name.strip() for n in nodes]
    if len({d for d in descs if d}) != sum(1 for d in descs if d):
        return False  # FAB-DUP-DESC
    switches: set[str] = declared["switches"]
    locks: list[tuple[str, str]] = declared["locks"]
    lock_of = dict(locks)
    owner = {g: k for k, g in locks}
    bound: dict[str, str] = {}
    for n in nodes:
        key = owner.get(n.guid)
        if key is not None:
            if (key in switches) != (n.kind == "switch"):
                return False
            bound[n.guid] = key
    taken = set(bound.values())
    if len(taken) != len(bound):
        return False
    for n, desc in zip(nodes, descs, strict=True):
        if n.guid in bound:
            continue
        key = _by_description(declared, n.kind, desc)
        if key is None or key in taken or lock_of.get(key, n.guid) != n.guid:
            return False  # unknown device, or one that would be bound by position, or a replaced GUID
        bound[n.guid] = key
        taken.add(key)
    expected: dict[str, Any] = declared["links"]
    seen: set[str] = set()
    for link in topo.links:
        ka, kb = bound.get(link.a.guid), bound.get(link.b.guid)
        if ka is None or kb is None:
            return False
        ends = link_key((ka, link.a.port), (kb, link.b.port))
        if ends in seen or expected.get(ends) != f"{link.width} {link.speed}":
            return False  # unexpected, miswired, degraded, or seen twice
        seen.add(ends)
    return len(seen) == len(expected)  # else some declared link is missing


def _by_description(declared: dict[str, Any], kind: str, desc: str) -> str | None:
    """validate.identify.by_description for the switch-name and "<host> <hca>" forms."""
    if kind == "switch":
        return desc if desc in declared["switches"] else None
    parts = desc.split()
    if len(parts) >= 2 and f"{parts[0]} {parts[1]}" in declared["hcas"]:
        return f"{parts[0]} {parts[1]}"
    return None


@dataclass
class _Args:
    env: Path
    from_dir: Path
    fmt: str = "text"
    fabric_only: bool = False
    rest: list[str] = field(default_factory=list)


def _parse_argv(argv: list[str]) -> _Args | None:
    """`validate ENV --from DIR --fabric-only [--format json|text] [--no-lab]` in any order, or None."""
    if not argv or argv[0] != "validate":
        return None
    values: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in ("--from", "--format"):
            if not eq:
                nxt = next(args, None)
                if nxt is None:
                    return None
                value = nxt
            if name in values:
                return None
            values[name] = value
        elif arg in ("--fabric-only", "--no-lab"):
            flags.add(arg)
        elif arg.startswith("-"):
            return None  # --help, --limit, --junit, --save, ...: the full command
        else:
            positional.append(arg)
    if len(positional) != 1 or "--from" not in values or "--fabric-only" not in flags:
        return None
    fmt = values.get("--format", "text")
    if fmt not in ("text", "json"):
        return None
    return _Args(Path(positional[0]), Path(values["--from"]), fmt, True)


def fast_validate(argv: list[str]) -> int | None:
    """The exit code after printing a proven-clean report, or None: run the full command."""
    args = _parse_argv(argv)
    if args is None or not cache_enabled():
        return None
    try:
        if not (args.env.is_dir() or args.env.is_file()) or not args.from_dir.is_dir():
            return None
        declared = read_cache(args.env, inventory_key(args.env))
        if declared is None or not declared["fast"]:
            return None
        from ..collect.store import load_dir

        obs = load_dir(args.from_dir)
    except (OSError, ValueError):
        return None  # the full command says what is wrong
    if set(obs.fabric) != {"ibnetdiscover"} or obs.hosts or obs.unreachable:
        return None
    from ..parse import ParseError, ibnetdiscover

    try:
        topo = ibnetdiscover.parse(obs.fabric["ibnetdiscover"])
    except ParseError:
        return None
    if not proven_clean(declared, topo):
        return None
    _print_clean(args.fmt)
    return 0


def clean_report() -> Any:
    """The Report the full command makes for a clean fabric-only run (validate.run.Report's fields)."""
    return _CleanReport()


@dataclass
class _CleanReport:
    findings: list[Any] = field(default_factory=list)
    hosts_checked: list[str] = field(default_factory=list)
    fabric_checked: bool = True
    errors: int = 0
    unreachable: int = 0


def _print_clean(fmt: str) -> None:
    from .report import print_summary, to_json

    report = clean_report()
    if fmt == "json":  # as cli.console.print_json writes it
        sys.stdout.write(json.dumps(to_json(report), indent=2, sort_keys=False, default=str, allow_nan=False) + "\n")
        return
    from rich.console import Console

    print_summary(Console(highlight=False, soft_wrap=True), report)
