"""YAML files of an environment -> one Inventory, with every error located at file:line:col.

An environment is a directory of YAML files merged into one document: mapping sections
(`site`, `fabric`, ...) may appear in one file only; list sections (`nodes`, `cables`, ...)
are concatenated in file-name order. The happy path is yaml-rs (a YAML 1.2 parser in Rust,
~13x faster than PyYAML on a 50,000-cable file); PyYAML composes the node tree with line
marks only when an error has to be located or a syntax error explained.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..model import Inventory
from ..model.base import pattern_error
from ..model.storage import looks_like_secret
from ..util.echo import echo
from ..util.errors import InventoryInvalid, InventoryIssue
from ..util.errors import Path as ErrPath
from .env_entries import entry_issues, is_candidate
from .load_text import ALIAS_BUDGET as ALIAS_BUDGET  # re-exported: the guards' bounds and reader
from .load_text import MAX_FILE_BYTES as MAX_FILE_BYTES
from .load_text import YAML_LOADER as _Loader
from .load_text import alias_bomb
from .load_text import read_text as read_text
from .yaml_engine import YamlSyntaxError
from .yaml_engine import loads as yaml_loads


class _DupKeyError(yaml.MarkedYAMLError):
    pass


class _StrictLoader(_Loader):  # type: ignore[valid-type,misc]
    """Safe loader that refuses duplicate keys inside one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise _DupKeyError(
                    None,
                    None,
                    f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)


@dataclass
class _Segment:
    file: Path
    start: int  # index in the merged list where this file's items begin
    count: int


@dataclass
class Source:
    """Where each top-level section came from, to turn error paths into file:line:col."""

    files: list[Path] = field(default_factory=list)
    mapping_origin: dict[str, Path] = field(default_factory=dict)
    list_segments: dict[str, list[_Segment]] = field(default_factory=dict)
    _trees: dict[Path, yaml.Node | None] = field(default_factory=dict)

    def locate(self, path: ErrPath) -> tuple[str | None, int | None, int | None]:
        file, local = self._resolve(path)
        if file is None or local is None:
            return (str(file) if file else None, None, None)
        node = self._tree(file)
        mark = _walk(node, list(local)) if node is not None else None
        if mark is None:
            return (str(file), None, None)
        return (str(file), mark.line + 1, mark.column + 1)

    def locate_many(self, paths: list[ErrPath]) -> list[tuple[str | None, int | None, int | None]]:
        """`locate` for many paths at once. A large file is not composed into a node tree (a
        PyYAML node per scalar: gigabytes for a broken 50 MB file) but read once as events."""
        resolved = [self._resolve(p) for p in paths]
        big: dict[Path, set[tuple[str | int, ...]]] = {}
        for file, local in resolved:
            if file is not None and local is not None and file not in self._trees and _is_big(file):
                big.setdefault(file, set()).add(local)
        marks = {file: _stream_marks(file, wanted) for file, wanted in big.items()}
        out: list[tuple[str | None, int | None, int | None]] = []
        for path, (file, local) in zip(paths, resolved, strict=True):
            if file is not None and local is not None and file in marks:
                pos = marks[file].get(local)
                out.append((str(file), *pos) if pos else (str(file), None, None))
            else:
                out.append(self.locate(path))
        return out

    def _resolve(self, path: ErrPath) -> tuple[Path | None, tuple[str | int, ...] | None]:
        """The file an error path points into and the path within that file's document."""
        first = self.files[0] if self.files else None
        if not path or not isinstance(path[0], str):
            return first, None
        top = path[0]
        rest: list[str | int] = list(path[1:])
        file = self.mapping_origin.get(top)
        if top in self.list_segments and rest and isinstance(rest[0], int):
            for seg in self.list_segments[top]:
                if seg.start <= rest[0] < seg.start + seg.count:
                    file, rest[0] = seg.file, rest[0] - seg.start
                    break
        elif top in self.list_segments:
            file = self.list_segments[top][0].file
        if file is None:
            return first, None
        return file, (top, *rest)

    def _tree(self, file: Path) -> yaml.Node | None:
        if file not in self._trees:
            try:
                self._trees[file] = yaml.compose(file.read_text(encoding="utf-8"), Loader=_Loader)
            except (yaml.YAMLError, OSError, UnicodeDecodeError, RecursionError):
                self._trees[file] = None
        return self._trees[file]


BIG_FILE = 2 * 1024 * 1024
"""Files larger than this are located over the event stream (see Source.locate_many)."""


def _is_big(file: Path) -> bool:
    try:
        return file.stat().st_size > BIG_FILE
    except OSError:
        return False


class _Frame:
    __slots__ = ("expect_key", "index", "is_map", "key", "key_mark", "path")

    def __init__(self, path: tuple[str | int, ...] | None, is_map: bool) -> None:
        self.path, self.is_map = path, is_map
        self.index, self.expect_key = 0, True
        self.key: str | None = None
        self.key_mark: Any = None


def _stream_marks(file: Path, wanted: set[tuple[str | int, ...]]) -> dict[tuple[str | int, ...], tuple[int, int]]:
    """(line, col) of each wanted path, as `_walk` would find it, in one pass over the events.

    Only nodes on the way to a wanted path are recorded (their start mark, the mark of the
    key that holds them, whether they are mappings); everything else is skipped unbuilt.
    """
    prefixes = {w[:k] for w in wanted for k in range(len(w) + 1)}
    open_parents = {w[:-1] for w in wanted if w}  # once all are closed, nothing more can be found
    seen: dict[tuple[str | int, ...], tuple[Any, Any, bool]] = {}
    stack: list[_Frame] = []
    try:
        text = file.read_text(encoding="utf-8-sig")
        for event in yaml.parse(text, Loader=_Loader):
            if not isinstance(event, yaml.NodeEvent):
                if isinstance(event, yaml.CollectionEndEvent) and stack:
                    closed = stack.pop().path
                    _done(stack)
                    if closed is not None and closed in open_parents:
                        open_parents.discard(closed)
                        if not open_parents:
                            break
                continue
            path: tuple[str | int, ...] | None = ()
            key_mark = None
            if stack:
                top = stack[-1]
                if top.path is None:
                    path = None
                elif not top.is_map:
                    path = (*top.path, top.index)
                    top.index += 1
                elif top.expect_key:
                    path = None  # a key: remembered below, not a place of its own
                    top.key = event.value if isinstance(event, yaml.ScalarEvent) else None
                    top.key_mark = event.start_mark
                else:
                    path = None if top.key is None else (*top.path, top.key)
                    key_mark = top.key_mark
            if path is not None and path not in prefixes:
                path = None
            is_map = isinstance(event, yaml.MappingStartEvent)
            if path is not None and path not in seen:
                seen[path] = (event.start_mark, key_mark, is_map)
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append(_Frame(path, is_map))
            else:
                _done(stack)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    out: dict[tuple[str | int, ...], tuple[int, int]] = {}
    for want in wanted:
        mark = seen[()][0] if () in seen else None
        node = seen.get(())
        for k in range(1, len(want) + 1):
            step = seen.get(want[:k])
            if step is None or node is None or (isinstance(want[k - 1], int) == node[2]):
                node = None
                break
            mark, node = (step[1] if node[2] else step[0]), step
        else:
            if node is not None and not node[2]:
                mark = node[0]
        if mark is not None:
            out[want] = (mark.line + 1, mark.column + 1)
    return out


def _done(stack: list[_Frame]) -> None:
    """A child of the innermost collection is complete: a mapping alternates key and value."""
    if stack and stack[-1].is_map:
        stack[-1].expect_key = not stack[-1].expect_key


def _walk(node: yaml.Node, path: list[str | int]) -> yaml.Mark | None:
    """The mark of the deepest node along `path` (a key's mark for mapping keys)."""
    mark = node.start_mark
    for part in path:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    mark, node = key_node.start_mark, value_node
                    break
            else:
                return mark
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                node = node.value[part]
                mark = node.start_mark
            else:
                return mark
        else:
            return mark
    return mark if isinstance(node, yaml.MappingNode) else node.start_mark


def environment_files(env: Path) -> list[Path]:
    """The YAML files of an environment (a directory, or one file); InventoryInvalid if unreadable."""
    if env.is_file():
        return [env]
    if not env.is_dir():
        what = "not a directory of YAML files (nor one YAML file)" if env.exists() else _missing_env(env)
        raise InventoryInvalid([InventoryIssue((), what, str(env), rule="INV-ENV")])
    try:
        entries = list(env.iterdir())
    except OSError as exc:
        msg = f"cannot list the environment: {exc.strerror or exc}"
        raise InventoryInvalid([InventoryIssue((), msg, str(env), rule="INV-ENV")]) from None
    broken = entry_issues(entries)
    if broken:  # a link that leads nowhere, a directory named *.yaml, ...: never skipped without a word
        raise InventoryInvalid(broken)
    return sorted(p for p in entries if is_candidate(p) and p.is_file())


def _missing_env(env: Path) -> str:
    """Why `env` leads nowhere: a symbolic link loop, a link to nothing, or no such path."""
    try:
        env.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop, not an environment: fix the link or give the directory itself"
    if env.is_symlink():
        return f"a symbolic link to {echo(os.readlink(env))}, which does not exist: no such environment"
    return "no such environment"


def read_environment(env: Path) -> tuple[dict[str, Any], Source]:
    """Read and merge the YAML files; raise InventoryInvalid with every file-level error."""
    files = environment_files(env)
    if not files:
        raise InventoryInvalid([InventoryIssue((), "no *.yaml files in the environment", str(env), rule="INV-ENV")])
    merged: dict[str, Any] = {}
    source = Source(files=files)
    issues: list[InventoryIssue] = []
    for file in files:
        text_or_issue = read_text(file)
        if isinstance(text_or_issue, InventoryIssue):
            issues.append(text_or_issue)
            continue
        text = text_or_issue
        too_big = alias_bomb(file, text)
        if too_big is not None:
            issues.append(too_big)
            continue
        try:
            doc = yaml_loads(text)
        except YamlSyntaxError as exc:
            issues.append(_syntax_issue(file, text, exc.original))
            continue
        except RecursionError:
            issues.append(InventoryIssue((), "YAML: nested too deeply", str(file), rule="INV-YAML"))
            continue
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # both parsers failed in a way of their own (a panic, then worse)
            msg = f"YAML: the parser gave up on this file ({type(exc).__name__}: {exc})"
            issues.append(InventoryIssue((), msg, str(file), rule="INV-YAML"))
            continue
        if doc is None:
            continue
        if isinstance(doc, list) and (extra := _second_document(text)) is not None:
            msg = "a second YAML document ('---' or '...' between documents): an inventory file is one document"
            issues.append(InventoryIssue((), msg, str(file), extra, 1, rule="INV-YAML"))
            continue
        if not isinstance(doc, dict):
            issues.append(InventoryIssue((), "the file must be a mapping of sections", str(file), 1, 1,
                rule="INV-SCHEMA"))
            continue
        for key, value in doc.items():
            _merge_section(merged, source, issues, file, str(key), value)
    if issues:
        for i, issue in enumerate(issues):
            if issue.line is None and issue.path and issue.file is None:  # never moved to another file
                issues[i] = issue.located(*source.locate(issue.path))
        raise InventoryInvalid(issues)
    return merged, source


def _second_document(text: str) -> int | None:
    """The line where a second YAML document starts, or None for one document (yaml-rs returns several
    documents as a list, which reads like a file that is one list)."""
    try:
        starts = [e.start_mark.line + 1 if e.start_mark else 0 for e in yaml.parse(text, Loader=_Loader)
                  if isinstance(e, yaml.DocumentStartEvent)]
    except yaml.YAMLError:
        return None
    return starts[1] if len(starts) > 1 else None


def _syntax_issue(file: Path, text: str, exc: BaseException) -> InventoryIssue:
    """Locate a YAML error: PyYAML's marks when it sees the problem too, else yaml-rs's."""
    try:
        yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe, plain data only
    except yaml.MarkedYAMLError as located:
        mark = located.problem_mark
        return InventoryIssue(
            (),
            f"YAML: {located.problem or located.context}",
            str(file),
            mark.line + 1 if mark else None,
            mark.column + 1 if mark else None,
            rule="INV-YAML",
        )
    except yaml.YAMLError as other:
        return InventoryIssue((), f"YAML: {other}", str(file), rule="INV-YAML")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    m = re.search(r"line (\d+), column (\d+)", first)
    line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    return InventoryIssue((), f"YAML: {first}", str(file), line, col, rule="INV-YAML")


def _merge_section(
    merged: dict[str, Any],
    source: Source,
    issues: list[InventoryIssue],
    file: Path,
    key: str,
    value: Any,
) -> None:
    if key not in merged:
        merged[key] = value
        if isinstance(value, list):
            source.list_segments[key] = [_Segment(file, 0, len(value))]
        else:
            source.mapping_origin[key] = file
        return
    if isinstance(value, list) and isinstance(merged[key], list):
        source.list_segments[key].append(_Segment(file, len(merged[key]), len(value)))
        merged[key] = merged[key] + value
        return
    first = source.mapping_origin.get(key) or source.list_segments[key][0].file
    tree = None if _is_big(file) else source._tree(file)
    mark = _walk(tree, [key]) if tree is not None else None
    streamed = _stream_marks(file, {(key,)}) if mark is None else {}
    found: tuple[int | None, int | None] = (
        (mark.line + 1, mark.column + 1) if mark is not None else streamed.get((key,), (None, None))
    )
    line, col = found
    issues.append(
        InventoryIssue((key,), f"duplicate section {key!r}: also defined in {first.name}", str(file), line, col,
                       rule="INV-SCHEMA")
    )


def load_inventory(env: Path) -> tuple[Inventory, Source]:
    """Load an environment into a validated Inventory or raise InventoryInvalid."""
    data, source = read_environment(env)
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        issues = [_issue_from_pydantic(err) for err in errors[:MAX_LOCATED]]
        where = source.locate_many([i.path for i in issues])
        located = [i.located(*w) for i, w in zip(issues, where, strict=True)]
        raise InventoryInvalid(located, more=len(errors) - len(issues)) from None
    return inv, source


MAX_LOCATED = 10_000
"""Structural errors reported one by one (a broken 50 MB file has 10^6); the rest are counted."""


def _issue_from_pydantic(err: Any) -> InventoryIssue:
    loc: tuple[str | int, ...] = tuple(
        p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "[key]")))
    )
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    kind = err["type"]
    if kind == "extra_forbidden":
        msg = f"unknown key {loc[-1]!r}"
        hint = _did_you_mean(loc)
        if hint:
            msg += f" (did you mean {hint!r}?)"
    elif kind == "missing":
        msg = "required field is missing"
    elif kind in ("literal_error", "enum"):
        msg = f"{echo(err.get('input'))}: {msg}"
    elif kind == "string_pattern_mismatch" and (
        known := pattern_error(err["ctx"]["pattern"], err.get("input"))
    ):
        msg = known
    elif kind != "value_error" and "input" in err and not isinstance(err["input"], dict | list):
        msg = f"{echo(err['input'])}: {msg}"
    if "input" in err and "hsm" in loc and isinstance(err["input"], str) and looks_like_secret(err["input"]):
        # a key pasted into an archive field is still a key: never quoted (an access key id in any field is
        # scrubbed by InventoryIssue itself)
        msg = msg.replace(echo(err["input"]), "<a value that looks like a credential, not echoed>")
    return InventoryIssue(loc, msg, rule="INV-SCHEMA")


def _did_you_mean(loc: tuple[str | int, ...]) -> str | None:
    """Closest field name of the model that holds the unknown key at `loc`."""
    model: Any = Inventory
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # list index: _unwrap already stepped into the item type
        model = _descend(model, part)
        if model is None:
            return None
    fields = getattr(model, "model_fields", None)
    if not fields:
        return None
    close = difflib.get_close_matches(str(loc[-1]), list(fields), n=1, cutoff=0.6)
    return close[0] if close else None


def _descend(tp: Any, part: str | int) -> Any:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if isinstance(part, int) or part not in tp.model_fields:
            return None
        return _unwrap(tp.model_fields[part].annotation)
    return None


def _unwrap(tp: Any) -> Any:
    """list[X] / X | None / dict[K, X] -> X."""
    while True:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        origin = typing.get_origin(tp)
        if origin is typing.Annotated or (origin in (list, tuple, set) and args):
            tp = args[0]
        elif origin is dict and len(args) == 2:
            tp = args[1]
        elif args and origin is not None and not isinstance(tp, type):
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            return models[0] if models else None
        else:
            return tp
