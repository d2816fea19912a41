"""The `ib-health` script (/usr/local/lib/clusterforge/ib-health): rendered from templates/monitoring/
ib-health.py.j2 with the parsers it uses embedded verbatim (clusterforge.parse.errors, .sminfo,
.mlxcables, .lustre_state, .mstlink, .mlxlink: nothing of clusterforge is installed on the nodes). The monitoring
component deploys it on every node with an HCA; node_exporter's textfile collector or Telegraf's exec
input reads what it prints."""

from __future__ import annotations

from pathlib import Path

from ..parse import errors as parse_errors
from ..parse import lustre_state, mlxcables, mlxlink, mstlink, sminfo
from .spec import FileSpec

TEMPLATE = "monitoring/ib-health.py.j2"
PATH = "/usr/local/lib/clusterforge/ib-health"
MODULES = {"errors": parse_errors, "sminfo": sminfo, "mlxcables": mlxcables, "lustre_state": lustre_state,
           "mstlink": mstlink, "mlxlink": mlxlink}


def context() -> dict[str, str]:
    """The template's context: the embedded sources as one Python literal (a dict name -> source text)."""
    sources = {name: Path(str(mod.__file__)).read_text(encoding="utf-8") for name, mod in MODULES.items()}
    return {"sources": repr(sources)}


def file_spec() -> FileSpec:
    """ib-health, rendered once under monitoring/nodes/ and installed on every node at PATH."""
    return FileSpec(f"monitoring/nodes{PATH}", TEMPLATE, context(), dest=PATH)
