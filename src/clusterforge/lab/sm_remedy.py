"""The lab's remedy for a subnet manager that stopped sweeping (docs/lab.md).

umad2sim, ibsim's shim under the lab's OpenSM, has no MAD timeouts (the kernel's umad module times out a MAD
nobody answers; the shim does not). An OpenSM that was querying an SM at the moment that SM exited waits for
the answer forever and never sweeps again: a port plugged or healed in its plane then stays Initializing. Seen
on a rail-plane lab after an SM node's instances were stopped and started again (and after the deploy's own
restarts, once in three to six runs). The remedy: restart that plane's master OpenSM, the OpenSM units of the
highest-priority SM node the inventory names. `lab cable` and `lab heal` wait for the ports they made Active,
and when one is not in time, apply the remedy themselves, say so, and wait again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clusterforge.lab.errors import CommandError, LabError
from clusterforge.lab.lab import ssh_command, wait_hcas_active
from clusterforge.lab.proc import run
from clusterforge.lab.spec import SM_ROLE
from clusterforge.lab.state import LabState

SM_WEDGE = ("in the lab, an OpenSM that was querying an SM stopped at that moment waits for the answer forever: "
            "umad2sim has no MAD timeouts (docs/lab.md)")

FIRST_WAIT_S = 60.0
"""How long a plugged or healed port may take to turn Active (a sweep) before the remedy."""
AFTER_RESTART_WAIT_S = 90.0
"""How long after the master's OpenSM restarted (its heavy sweep of the plane)."""

_RESTART = ("[ -d /run/systemd/system ] || exit 0; "
            "units=$(systemctl list-units --type=service --state=active --plain --no-legend 'opensm*' "
            "| awk '{print $1}'); [ -n \"$units\" ] || exit 0; systemctl restart $units && echo $units")
"""Fixed text (no inventory value in it): restart every active OpenSM unit of the host (opensm, or
opensm-plane@<P> per rail plane) and print their names; nothing on a host without systemd."""


def has_subnet_manager(state: LabState) -> bool:
    """The lab runs a subnet manager: its own OpenSM, or SM nodes."""
    return bool(state.opensm_host) or state.opensm is not None or any(
        rec.role == SM_ROLE for rec in state.hosts.values())


def master_sm_node(state: LabState, sm_nodes: Sequence[tuple[str, int]]) -> str | None:
    """The highest-priority SM node (name, priority from the inventory's `opensm.sm_nodes`) that runs in the lab."""
    running = [(prio, name) for name, prio in sm_nodes if name in state.hosts]
    return max(running)[1] if running else None


def restart_opensm(state: LabState, host: str) -> list[str]:
    """Restart every active OpenSM unit on the lab host `host`; the units restarted ([] when none or no systemd)."""
    try:
        res = run(ssh_command(state, host, ["sh", "-c", _RESTART]), timeout=120, check=False)
    except CommandError as exc:
        raise LabError(f"restarting {host}'s OpenSM: {exc}") from exc
    if res.returncode != 0:
        raise LabError(f"restarting {host}'s OpenSM failed: {(res.stderr or res.stdout).strip()[-300:]}")
    return [unit.removesuffix(".service") for unit in res.stdout.split()]


def wait_active_or_restart_master(state: LabState, sim_hosts: set[str], master: str | None,
                                  say: Callable[[str], None], first_wait_s: float = FIRST_WAIT_S) -> None:
    """Wait until the HCAs among `sim_hosts` (ibsim node ids) read their ports Active; past `first_wait_s`,
    restart `master`'s OpenSM (said through `say`) and wait again. A LabError when they still are not, or when
    there is no master to restart (the message says why a lab SM can stop sweeping)."""
    try:
        wait_hcas_active(state, sim_hosts, first_wait_s)
        return
    except LabError as exc:
        first = exc
    units = restart_opensm(state, master) if master else []
    if not units:
        raise LabError(f"{first}: is its plane's subnet manager running and sweeping? ({SM_WEDGE}; restart that "
                       "plane's master OpenSM)")
    say(f"not Active after {first_wait_s:g} s ({first}); restarted {master}'s {', '.join(units)} (the plane's "
        f"master: {SM_WEDGE})")
    try:
        wait_hcas_active(state, sim_hosts, AFTER_RESTART_WAIT_S)
    except LabError as exc:
        raise LabError(f"{exc}, even after {master}'s OpenSM restarted") from exc
