"""render: Index -> every file of an environment, as text keyed by relative path.

Pure and reproducible: the same inventory renders to the same bytes (no timestamps,
sorted output). The one impure, opt-in step is turning the fabric diagram into SVG
with Graphviz's `dot` (`svg=True`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.index import Index
from ..util.echo import one_line
from ..util.gcpause import gc_paused
from .context_cabling import cabling_files
from .context_diagram import diagram_files
from .context_hosts import host_files
from .context_ibsim import ibsim_files
from .context_lustre import lustre_files
from .context_monitoring import monitoring_files
from .context_opensm import opensm_files
from .context_slurm import slurm_files
from .env import environment
from .fabric import FabricView
from .lustre_targets import target_files
from .lustre_tiers import tier_files
from .nodecheck import nodecheck_files
from .spec import FileSpec
from .svg import DotError, dot_available, dot_to_svg

DIAGRAM_DOT = "fabric/fabric.dot"
DIAGRAM_SVG = "fabric/fabric.svg"


def banner(env_name: str) -> list[str]:
    """The managed-file banner, without comment markers (each template adds its own).

    No timestamp (renders are byte-for-byte reproducible) and no `=` (old NCCL
    versions read every `KEY=value` line of nccl.conf, comments included). The name is
    a directory's: escaped onto one line (`echo.one_line`), it adds no line to a file.
    """
    return [
        f"Managed by clusterforge for environment {one_line(env_name)}. Do not edit:",
        "local changes are overwritten by the next render; change the inventory instead.",
    ]


def file_context(context: Mapping[str, Any], env_name: str) -> dict[str, Any]:
    """A template's whole context: the spec's variables, the managed-file banner and the environment's name
    (one line: a directory's name goes into comments of every file). What the deploy keeps beside each file."""
    name = one_line(env_name)
    return {**context, "banner": banner(name), "environment": name}


def render_text(template: str, context: Mapping[str, Any]) -> str:
    """The one place a template is rendered (render, the deploy, day-2 alike): `template` with its whole
    context (`file_context`)."""
    return environment().get_template(template).render(context)


def render_spec(spec: FileSpec, env_name: str) -> str:
    """One file of the environment, as `render` writes it."""
    return render_text(spec.template, file_context(spec.context, env_name))


@dataclass(frozen=True)
class Rendered:
    files: dict[str, str]
    """Relative path -> text, sorted by path."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Relative path -> kind (its template, e.g. `opensm/opensm.conf`)."""
    placeholders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Relative path -> devices with placeholder GUIDs in that file (only files that have any)."""
    notes: tuple[str, ...] = ()

    def count_by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(self.kinds.values()).items()))


Builder = Callable[[FabricView], list[FileSpec]]

BUILDERS: tuple[Builder, ...] = (
    opensm_files, slurm_files, ibsim_files, host_files, lustre_files, cabling_files, diagram_files,
    monitoring_files, nodecheck_files, target_files, tier_files,
)


HOST_BUILDERS: tuple[Builder, ...] = (opensm_files, host_files, lustre_files, target_files, tier_files)
"""The builders of the files that go onto hosts (what a deploy needs of the render)."""


def host_file_specs(index: Index) -> list[FileSpec]:
    """The files that go onto hosts (OpenSM, each node's, Lustre, tiers), each with its `host` and `dest`."""
    return file_specs(index, HOST_BUILDERS)


def file_specs(index: Index, builders: Sequence[Builder] = BUILDERS) -> list[FileSpec]:
    """Every file of the environment (or of `builders`) with its template and context, before rendering."""
    fab = FabricView(index)
    specs = [spec for build in builders for spec in build(fab)]
    seen: set[str] = set()
    for spec in specs:
        if spec.path in seen:
            raise ValueError(f"two rendered files share the path {spec.path}")
        seen.add(spec.path)
    return specs


def render(index: Index, env_name: str, *, svg: bool = False) -> Rendered:
    """Render every file of the environment; with `svg`, also draw the diagram with `dot`."""
    with gc_paused():  # many small acyclic contexts and strings: GC passes would dominate
        return _render(index, env_name, svg)


def _render(index: Index, env_name: str, svg: bool) -> Rendered:
    extra = file_context({}, env_name)  # the banner and the name, once for every file
    files: dict[str, str] = {}
    kinds: dict[str, str] = {}
    placeholders: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for spec in file_specs(index):
        files[spec.path] = render_text(spec.template, {**spec.context, **extra})
        kinds[spec.path] = spec.kind
        if spec.placeholders:
            placeholders[spec.path] = spec.placeholders
        notes.extend(spec.notes)
    if svg and DIAGRAM_DOT in files:
        drawing, note = _draw(files[DIAGRAM_DOT])
        if drawing is not None:
            files[DIAGRAM_SVG] = drawing
            kinds[DIAGRAM_SVG] = "diagram/fabric.svg"
        if note:
            notes.append(note)
    order = sorted(files)
    return Rendered(
        {p: files[p] for p in order},
        {p: kinds[p] for p in order},
        {p: placeholders[p] for p in sorted(placeholders)},
        tuple(notes),
    )


def _draw(source: str) -> tuple[str | None, str | None]:
    """(SVG, None), or (None, why there is none)."""
    if not dot_available():
        return None, f"Graphviz `dot` is not installed: wrote {DIAGRAM_DOT} only, no SVG"
    try:
        return dot_to_svg(source), None
    except DotError as exc:
        return None, f"no SVG drawn: {exc}"


def render_environment(index: Index, env_name: str) -> dict[str, str]:
    """Every rendered file of the environment: relative path -> text (pure)."""
    return render(index, env_name).files
