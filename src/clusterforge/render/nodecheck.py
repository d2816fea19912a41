"""The node health check (docs/health.md): `cf-nodecheck`, Slurm's HealthCheckProgram, and what it expects of
each node, from the model.

    slurm/healthcheck.conf                              HealthCheckProgram / Interval / NodeState, to Include
                                                        from slurm.conf
    slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck the check (one script; stdlib Python with the parsers
                                                        it uses embedded verbatim: nothing of clusterforge is
                                                        installed on the nodes; not /usr/local/sbin, which
                                                        the lab mounts read-only)
    hosts/<node>/etc/clusterforge/nodecheck.json        what that node must show (each compute node)

Why our own check and not LBNL NHC: NHC's checks are shell functions a site configures by hand per node
type; ours are derived from the declaration validate uses (the same parsers read the same tools: ibstat,
nvidia-smi), its drain reasons name the part, and its one rule about Slurm (resume only its own drains) is
tested. Pure.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from ..collect.tools import argv
from ..model.health import HealthCheck
from ..model.hooks import hook_argv
from ..parse import _common, errors, ibstat, nvidia_smi_nvlink, nvidia_smi_query_gpu
from ..util import echo, guid
from .context_lustre import clients
from .fabric import FabricView
from .spec import FileSpec, host_file

PATH = "/usr/local/lib/clusterforge/cf-nodecheck"
SLURM_CONF = "/etc/slurm/clusterforge-healthcheck.conf"
"""The HealthCheck* lines, included from slurm.conf on every compute node (docs/health.md)."""
CONFIG = "/etc/clusterforge/nodecheck.json"
TEMPLATE = "slurm/cf-nodecheck.py.j2"
MODULES = {"clusterforge.parse.errors": errors, "clusterforge.util.echo": echo, "clusterforge.util.guid": guid,
           "clusterforge.parse._common": _common, "clusterforge.parse.ibstat": ibstat,
           "clusterforge.parse.nvidia_smi_query_gpu": nvidia_smi_query_gpu,
           "clusterforge.parse.nvidia_smi_nvlink": nvidia_smi_nvlink}


def mounts_of(fab: FabricView) -> dict[str, list[str]]:
    """node -> the Lustre mount points it mounts (each file system's clients computed once)."""
    out: dict[str, list[str]] = {}
    for fs in fab.index.inv.lustre:
        for node in clients(fab, fs):
            out.setdefault(node, []).append(fs.mount)
    return out


def expectations(fab: FabricView, node: str, mounts: dict[str, list[str]] | None = None,
                 name: str | None = None) -> dict[str, Any]:
    """What `node` must show, as the check reads it (its config file). `mounts`: `mounts_of(fab)`; `name`: the
    name written for it (default `node`)."""
    index = fab.index
    hc = index.inv.health_check
    hw = index.hardware[node]
    gpus = hw.gpus.count if hw.gpus is not None else 0
    mine = (mounts if mounts is not None else mounts_of(fab)).get(node, [])
    return {
        "node": name or node, "reason_prefix": hc.reason_prefix, "tool_timeout_s": hc.tool_timeout_s,
        "checks": list(hc.checks),
        "gpus": gpus,
        "nvidia_driver": index.inv.software.nvidia_driver if gpus else None,
        "nvlink": bool(gpus) and hw.gpus is not None and hw.gpus.nvlink_topology != "none",
        "hca_ports": [{"hca": h.name, "port": p.port, "rate": p.rate, "gbps": index.cat.rates[p.rate].gbps}
                      for h in hw.hcas for p in h.ports],
        "mounts": mine,
        # the one path to the scheduler (model/hooks.py): the inventory's hooks, this node filled in, `{reason}`
        # left for the check to fill with the part it found wrong
        "drain": hook_argv(index.inv.deploy.reboot.drain, name or node),
        "resume": hook_argv(index.inv.deploy.reboot.resume, name or node),
    }


@cache
def sources() -> str:
    """The embedded modules as one Python literal (full module name -> source text; read once a process: a
    day-2 diff builds both sides' plans)."""
    return repr({name: Path(str(mod.__file__)).read_text(encoding="utf-8") for name, mod in MODULES.items()})


def healthcheck_lines(hc: HealthCheck) -> list[str]:
    """slurm.conf's HealthCheck* lines (slurm/healthcheck.conf; the lab's Slurm writes the same), or none."""
    if not hc.enabled:
        return []
    return [f"HealthCheckProgram={PATH}", f"HealthCheckInterval={hc.interval_s}",
            f"HealthCheckNodeState={','.join(hc.node_state)}"]


def tool_argv() -> dict[str, str]:
    """The commands the check runs, from the one tool table (collect/tools.py), each as a Python list literal for
    the rendered program (our constants, never inventory text)."""
    return {stem: json.dumps(list(argv(stem))) for stem in ("nvidia-smi-query-gpu", "nvidia-smi-nvlink", "ibstat")}


def nodecheck_files(fab: FabricView) -> list[FileSpec]:
    hc = fab.index.inv.health_check
    if not hc.enabled:
        return []
    nodes = [n.name for n in fab.index.inv.nodes if n.role == "compute"]
    if not nodes:
        return []
    # the Slurm lines (into slurm.conf: SLURM_CONF) and the check itself go to every compute node; each
    # node's expectations to that node
    out = [FileSpec("slurm/healthcheck.conf", "slurm/healthcheck.conf.j2", {"lines": healthcheck_lines(hc)},
                    dest=SLURM_CONF),
           FileSpec(f"slurm/nodes{PATH}", TEMPLATE, {"sources": sources(), "config": CONFIG, "argv": tool_argv()},
                    dest=PATH)]
    mounts = mounts_of(fab)
    texts: dict[str, str] = {}  # nodes that expect the same (one profile, the same mounts) share one encoding
    for node in nodes:
        mine = expectations(fab, node, mounts, name=_SELF)
        key = json.dumps(mine, sort_keys=True)  # the C encoder: fast
        if key not in texts:
            texts[key] = json.dumps(mine, indent=1, sort_keys=True)
        out.append(host_file(node, CONFIG, "slurm/nodecheck.json.j2",
                             {"json": texts[key].replace(_SELF_JSON, json.dumps(node)[1:-1])}))
    return out


# Where a node's own name goes in its expectations, encoded once for all its like: a NUL can never be in an
# inventory's text (free text refuses control characters), so nothing else is ever replaced
_SELF = "\x00self\x00"
_SELF_JSON = json.dumps(_SELF)[1:-1]
