"""The saved change plan (`diff --output plan.json`) that `apply` carries out, and the guards around it.

A plan file is the `diff --format json` document plus a `meta` block and a `digest`:

* `meta.format`: this file format's version (`FORMAT`); `meta.tool`: the clusterforge version that
  made it (`apply` refuses a plan made by another version: the steps' commands and their meaning
  belong to the version that planned them);
* `meta.inventories.new` / `.old`: each inventory's path (the old one's git revision with `--rev`)
  and two digests of it as loaded:
  - `model`: sha256 of the canonical JSON of the loaded, checked inventory model (every YAML file
    merged, the generated cabling, GUID and address files included). This is what decides
    staleness: any change that reaches the model (a device, a cable, a pin, a hook, a learned GUID)
    makes the plan stale; a comment or a re-formatted YAML file does not;
  - `files`: sha256 over the names and bytes of the files the loader reads (`inventory_digest`,
    as the deploy record keeps it): when it is unchanged the model is too, so `apply` skips
    loading the inventory;
* `meta.record`: the deploy record directory (docs/deploy.md: the lab's state for a running lab,
  else `state/<env>/`, or `diff --record`) and a digest of what it holds (`applied.json` and
  `history.jsonl`, names and bytes; a missing file counts as absent): any deploy since the plan
  was made changes it;
* `meta.env`: the environment as the plan's commands name it, and its absolute path; `meta.cwd`:
  the directory the plan was made in (apply runs the steps' commands there, so relative paths in
  them mean what they meant when reviewed); `meta.created`: when (UTC);
* `digest`: sha256 over the canonical JSON of the whole document without `digest` (sorted keys,
  no whitespace). A hand-edited plan no longer matches and is refused. It is a checksum, not a
  signature: it catches edits and corruption, not someone who recomputes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..model import Inventory
from ..util import jsonstate
from ..util.fsutil import write_atomic
from .steps import Step

FORMAT = 1
TOOL = f"clusterforge {__version__}"
RECORD_FILES = ("applied.json", "history.jsonl")


class PlanFileError(Exception):
    """The plan file cannot be used: unreadable, not a plan, edited, or from another tool version."""


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def model_digest(inv: Inventory) -> str:
    """The inventory as loaded (see the module docstring): what decides whether a plan is stale."""
    return _sha(canonical(inv.model_dump(mode="json")))


def files_digest(env: Path) -> str:
    """The inventory's files as the loader reads them (names and bytes); "absent" when it is gone."""
    from ..deploy.record import inventory_digest

    try:
        return "sha256:" + inventory_digest(env)
    except OSError:
        return "absent"


def record_digest(directory: Path) -> str:
    """What the deploy record in `directory` holds (applied.json, history.jsonl)."""
    h = hashlib.sha256()
    for name in RECORD_FILES:
        path = directory / name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            h.update(f"{name}\0absent\0".encode())
            continue
        h.update(f"{name}\0{len(raw)}\0".encode() + raw)
    return "sha256:" + h.hexdigest()


def record_dir(env: Path, record: Path | None) -> Path:
    """Where the deploy record of `env` is kept: `record` if given, the running lab's state, else
    `state/<env>/` (deploy/record.py)."""
    from ..deploy.record import default_dir
    from ..rehearsal import env as labenv

    if record is not None:
        return record
    lab = labenv.running(env)
    return lab.state_dir if lab is not None else default_dir(env)


def document_digest(doc: dict[str, Any]) -> str:
    return _sha(canonical({k: v for k, v in doc.items() if k != "digest"}))


def plan_document(plan: dict[str, Any], *, env: Path, new_inv: Inventory, old_inv: Inventory, old_path: Path,
                  old_rev: str | None, record: Path, created: str | None = None) -> dict[str, Any]:
    """The plan file's content: `meta`, the plan (`ChangePlan.to_dict()`), `digest`."""
    meta = {
        "format": FORMAT,
        "tool": TOOL,
        "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "env": str(env),
        "env_path": str(env.resolve()),
        "cwd": os.getcwd(),
        "inventories": {
            "new": {"path": str(env.resolve()), "model": model_digest(new_inv), "files": files_digest(env)},
            "old": {"path": str(old_path.resolve()) if old_rev is None else str(old_path), "rev": old_rev,
                    "model": model_digest(old_inv)},
        },
        "record": {"dir": str(record.resolve()), "digest": record_digest(record)},
    }
    doc: dict[str, Any] = {"meta": meta, **plan}
    doc["digest"] = document_digest(doc)
    return doc


def write_plan_file(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(doc, indent=2) + "\n")


@dataclass(frozen=True)
class PlanFile:
    path: Path
    doc: dict[str, Any]
    steps: tuple[Step, ...]

    @property
    def digest(self) -> str:
        return str(self.doc["digest"])

    @property
    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.doc["meta"]
        return meta

    @property
    def env(self) -> Path:
        return Path(self.meta["env_path"])

    @property
    def record(self) -> Path:
        return Path(self.meta["record"]["dir"])

    def cable(self, cable_id: str) -> dict[str, Any] | None:
        """The plan's entry for a changed cable (`old`/`new` with ends as written), or None."""
        for c in self.doc.get("cables", []):
            if isinstance(c, dict) and c.get("id") == cable_id:
                return c
        return None


def read_plan_file(path: Path) -> PlanFile:
    """Load a plan file and check it is whole and ours: format, digest, tool version, steps."""
    try:
        doc = jsonstate.loads(jsonstate.read_bytes(path))  # a regular file, bounded in size and nesting
    except OSError as exc:
        raise PlanFileError(f"{path}: {exc.strerror or exc}") from None
    except jsonstate.StateFileError as exc:
        raise PlanFileError(f"{path}: not a plan file: {exc}") from None
    except ValueError as exc:
        raise PlanFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("meta"), dict) or "digest" not in doc:
        raise PlanFileError(f"{path}: not a plan file (no meta/digest: write one with "
                            f"`clusterforge diff ... --output {path.name}`)")
    meta = doc["meta"]
    if meta.get("format") != FORMAT:
        raise PlanFileError(f"{path}: plan file format {meta.get('format')!r}, this clusterforge reads {FORMAT}")
    if doc["digest"] != document_digest(doc):
        raise PlanFileError(f"{path}: the plan was edited after it was made (its digest does not match); "
                            "make a new one with `clusterforge diff ... --output`")
    if meta.get("tool") != TOOL:
        raise PlanFileError(f"{path}: made by {meta.get('tool')}, this is {TOOL}; plan again with this version")
    try:
        raw = doc.get("steps", [])
        if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
            raise ValueError("steps: not a list of step objects")
        steps = tuple(Step.from_dict(s) for s in raw)
        for i, s in enumerate(steps, 1):
            if s.n != i:
                raise ValueError(f"step {s.n} is numbered out of order (expected {i})")
        for key in ("env_path", "inventories", "record"):
            if key not in meta:
                raise ValueError(f"meta.{key} missing")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # any other shape: not one we wrote
        why = str(exc) if isinstance(exc, ValueError | TypeError) else f"not a plan file ({type(exc).__name__}: {exc})"
        raise PlanFileError(f"{path}: {why}") from None
    return PlanFile(path, doc, steps)
