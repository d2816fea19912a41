"""Software checks: pinned versions and LNet NIDs."""

from __future__ import annotations

from collections.abc import Sequence

from ..collect.plan import family_of, version_packages
from ..model.index import Index
from ..parse.lctl_list_nids import LnetNid
from ..parse.nvidia_smi_query_gpu import QueryGpuResult
from ..parse.ofed_info import OfedInfo
from .findings import Finding


def check_driver(index: Index, host: str, query: QueryGpuResult) -> list[Finding]:
    pin = index.inv.software.nvidia_driver
    if pin is None:
        return []
    seen = {row.values.get("driver_version") for row in query.rows} - {None}
    if not seen or seen == {pin}:
        return []
    return [
        Finding(
            "SW-VERSION",
            "error",
            host,
            f"{host} runs NVIDIA driver {', '.join(sorted(s for s in seen if s))}, pinned {pin}",
            expected=pin,
            observed=", ".join(sorted(s for s in seen if s)),
            action="re-run the deploy for this host (`make deploy ENV=... LIMIT=<host>`)",
            host=host,
        )
    ]


def check_nids(index: Index, host: str, nids: Sequence[LnetNid]) -> list[Finding]:
    out: list[Finding] = []
    node = index.nodes[host]
    nets = {n.net for n in nids}
    for fs in index.inv.lustre:
        if not fs.runs_client(host, node.role):
            continue
        if fs.lnet not in nets and not (fs.lnet.endswith("0") and fs.lnet[:-1] in nets):
            out.append(
                Finding(
                    "LNET-NID",
                    "error",
                    host,
                    f"{host} has no NID on {fs.lnet} for Lustre {fs.name} (has {', '.join(sorted(nets)) or 'none'})",
                    expected=f"<ip>@{fs.lnet}",
                    observed=", ".join(n.nid for n in nids) or "none",
                    action=f"check lnet.conf / `options lnet networks=` for {fs.lnet}({','.join(fs.interfaces)}) "
                    "and that the IPoIB interface is up; `lnetctl net show`",
                    host=host,
                )
            )
    return out


def _pinned(pin: str, installed: str) -> bool:
    """A pin matches an installed version it equals or prefixes at a separator (2.21.5-1 ~ 2.21.5-1+cuda12.4)."""
    return installed == pin or (installed.startswith(pin) and installed[len(pin)] in "+-.~:")


def _version_finding(host: str, what: str, pin: str, seen: str) -> Finding:
    return Finding(
        "SW-VERSION", "error", host, f"{host} runs {what} {seen}, pinned {pin}", expected=pin, observed=seen,
        action="re-run the deploy for this host (`make deploy ENV=... LIMIT=<host>`)", host=host,
    )


def check_ofed(index: Index, host: str, info: OfedInfo) -> list[Finding]:
    pin = index.inv.software.doca_ofed
    if pin is None or _pinned(pin, info.version):
        return []
    return [_version_finding(host, f"{info.product}", pin, info.version)]


def check_packages(index: Index, host: str, installed: dict[str, str]) -> list[Finding]:
    pins = index.inv.software
    out: list[Finding] = []
    for package, field in version_packages(family_of(index, host)).items():
        pin = getattr(pins, field)
        seen = installed.get(package)
        if pin is not None and seen is not None and not _pinned(pin, seen):
            out.append(_version_finding(host, package, pin, seen))
    return out
