"""What the observations do not cover: missing data is a finding, never a silent pass.

A validation that read nothing must not say "clean". Every host `collect` would visit is
expected to have answered (or to be marked unreachable) with the outputs its declared
hardware calls for: ibstat where it has HCAs, nvidia-smi where it has GPUs. Outputs of
tools that may legitimately be absent (not installed: ofed_info, dpkg-query or rpm, lctl) are not
required. A host directory that names no declared node is reported too: its outputs were
not checked, and it is often a typo for a host whose data is then missing.
"""

from __future__ import annotations

from ..collect.plan import MLXLINK, default_targets
from ..collect.store import Observations
from ..model.index import Index
from ..util.echo import one_line
from .findings import Finding

# outputs required when collect asks for them (others may be absent: the tool is not installed)
REQUIRED = ("ibstat", "nvidia-smi-topo", "nvidia-smi-nvlink", "nvidia-smi-query-gpu")
_WHAT = {
    "ibstat": "its HCAs and ports were not checked",
    "nvidia-smi-topo": "GPU/HCA affinity was not checked",
    "nvidia-smi-nvlink": "NVLink was not checked",
    "nvidia-smi-query-gpu": "the GPU count and driver were not checked",
}


_LINK_HEALTH = "that port's BER and module were not checked (collect.link_health)"


def expected_outputs(index: Index) -> dict[str, tuple[str, ...]]:
    """host -> the outputs `collect` asks it for that must be there."""
    hosts, _ = default_targets(index, dict.fromkeys(index.addresses.mgmt, ""))
    return {t.host: tuple(stem for stem in t.commands if stem in REQUIRED or stem.startswith(MLXLINK + "@"))
            for t in hosts}


def coverage_findings(index: Index, obs: Observations, *, hosts: bool = True) -> list[Finding]:
    """FAB-NO-DATA, HOST-NO-DATA and HOST-UNKNOWN for what `obs` lacks or cannot place."""
    out: list[Finding] = []
    saved = f" ({one_line(str(obs.root))}/fabric/ibnetdiscover.txt)" if obs.root is not None else ""
    if not any(k == "ibnetdiscover" or k.startswith("ibnetdiscover-plane") for k in obs.fabric) and index.inv.cables:
        out.append(
            Finding(
                "FAB-NO-DATA",
                "error",
                "fabric",
                f"no ibnetdiscover output{saved}: the fabric was not checked",
                action="collect from the subnet-manager node (`clusterforge validate` does), "
                "or save its `ibnetdiscover` output as fabric/ibnetdiscover.txt and re-run with --from",
            )
        )
    seen = set(obs.hosts) | set(obs.unreachable)
    for host in sorted(seen - set(index.nodes)):
        # a directory name, not a node's: written onto one line (a line break in it printed a line of its own)
        where = one_line(f"{obs.root}/hosts/{host}" if obs.root is not None else host)
        out.append(
            Finding(
                "HOST-UNKNOWN",
                "error",
                one_line(host),
                f"{where} names no node of the inventory: its outputs were not checked",
                action="rename it to the node's name, or remove it if it belongs to another environment",
                host=one_line(host),  # as saved: no node of the inventory
            )
        )
    if not hosts:
        return out
    expected = expected_outputs(index)
    absent = sorted(h for h in expected if h not in seen)
    out += [_no_data(obs, h, f"{h}: no outputs: the host was not checked", expected[h]) for h in absent]
    for host in sorted(h for h in obs.hosts if h in expected):
        texts = obs.hosts[host]
        missing = [s for s in expected[host] if not _has(texts, s)]
        if not texts:
            out.append(_no_data(obs, host, f"{host}: no outputs at all: the host was not checked", expected[host]))
        elif missing:
            what = "; ".join(f"no {s} output: {_WHAT.get(s, _LINK_HEALTH)}" for s in missing)
            out.append(_no_data(obs, host, f"{host}: {what}", tuple(missing)))
    return out


def _has(texts: dict[str, str], stem: str) -> bool:
    return stem in texts or (stem == "ibstat" and any(s.startswith("ibstat@") for s in texts))


def _no_data(obs: Observations, host: str, message: str, stems: tuple[str, ...]) -> Finding:
    files = ", ".join(f"{s}.txt" for s in stems)
    where = f" under {one_line(str(obs.root))}/hosts/{host}/" if obs.root is not None else ""
    return Finding(
        "HOST-NO-DATA",
        "error",
        host,
        message,
        expected=files or None,
        action=f"re-collect from {host} (are the tools installed and on PATH?)"
        + (f", or save {files}{where}" if files else ""),
        host=host,
    )
