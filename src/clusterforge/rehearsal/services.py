"""What runs in a lab, read from its hosts: the systemd units the deploy manages (`lab services`) and the
subnet managers, master or standby, as another lab host sees them (`sminfo`). Bringing the lab up and down
and mapping the inventory onto it is labenv's."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..check.checked import Checked
from ..collect.plan import plane_ports
from ..lab import LabState, ssh_command
from ..lab.proc import run
from ..model.index import Index
from ..validate.planes import switch_plane
from .env import hca_plane, sm_nodes_by_priority


@dataclass(frozen=True)
class UnitState:
    host: str
    unit: str
    enabled: str
    active: str

    @property
    def ok(self) -> bool:
        return self.enabled in ("enabled", "static", "generated", "alias") and self.active == "active"


def managed_units(checked: Checked) -> dict[str, tuple[str, ...]]:
    """node -> the systemd units the deploy enables and starts there (its components' services)."""
    from ..deploy.desired import host_plans
    from ..deploy.options import DeployOptions

    plans = host_plans(checked.index, DeployOptions(checked.index.inv.site.name))
    return {n: tuple(u for c in p.components for u in c.services) for n, p in plans.items()}


def unit_states(state: LabState, checked: Checked) -> list[UnitState] | None:
    """The deploy's units on every lab host (is-enabled, is-active), or None when the lab has no systemd."""
    units = managed_units(checked)

    def probe(host: str) -> list[UnitState] | None:
        names = units.get(host, ())
        script = ('[ -d /run/systemd/system ] || { echo no-systemd; exit 0; }; '
                  'for u in "$@"; do echo "$u $(systemctl is-enabled "$u" 2>/dev/null || true) '
                  '$(systemctl is-active "$u" 2>/dev/null || true)"; done')
        res = run(ssh_command(state, host, ["sh", "-c", script, "units", *names]), timeout=60, check=False)
        if res.stdout.strip() == "no-systemd":
            return None
        out = []
        for line in res.stdout.splitlines():
            parts = line.split()
            if parts:
                out.append(UnitState(host, parts[0], parts[1] if len(parts) > 2 else "",
                                     parts[-1] if len(parts) > 1 else ""))
        return out

    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(probe, sorted(state.hosts)))
    if all(f is None for f in found):
        return None
    return [u for f in found if f for u in f]


def sm_states(state: LabState, checked: Checked) -> dict[str, str]:
    """SM node -> `sminfo` of its port as seen from another lab host ("priority 15 state 3 SMINFO_MASTER");
    with rail planes one entry per plane, `sm01 plane1`: its port in that plane, seen from that plane."""
    index = checked.index
    planes = switch_plane(index)
    out: dict[str, str] = {}
    for sm in sm_nodes_by_priority(index):
        rec = state.hosts.get(sm)
        if rec is None:
            continue
        views: list[tuple[str, str, int | None]] = [(f"{sm} plane{pl}", hca, pl)
                                                    for pl, (hca, _) in plane_ports(index, sm).items()]
        for key, hca, plane in views or [(sm, rec.hcas[0][0] if rec.hcas else "", None)]:
            ibstat = run(ssh_command(state, sm, ["ibstat", hca]), timeout=60, check=False).stdout
            lid = next((ln.split(":")[1].strip() for ln in ibstat.splitlines() if "Base lid" in ln), "")
            viewer, via = _viewer(state, index, planes, sm, plane)
            argv = ["sminfo", *([] if via is None else ["-C", via]), lid]
            res = run(ssh_command(state, viewer, argv), timeout=60, check=False) if lid not in ("", "0") else None
            text = res.stdout.strip() if res is not None and res.returncode == 0 else "no SM answers on its port"
            out[key] = text[text.index("priority"):] if "priority" in text else text
    return out


def _viewer(state: LabState, index: Index, planes: dict[str, int], sm: str, plane: int | None
            ) -> tuple[str, str | None]:
    """Another lab host with an HCA to ask `sminfo` from, and (rail planes) its HCA in `plane`."""
    for host in sorted(state.hosts):
        for dev, _ in state.hosts[host].hcas if host != sm else ():
            if plane is None:
                return host, None
            if hca_plane(index, planes, host, dev) == plane:
                return host, dev
    return sm, None
