"""What `clusterforge firmware flash|activate --switch` does: an unmanaged switch (catalog `fw_tool:
mlxfwmanager-inband`) flashed through the fabric from the fabric node (the master SM node), never by a deploy.

Locate: the fabric node's discovery (`ibnetdiscover`, once per rail plane through its port there) gives the
switch's LID, bound to the inventory as validate binds it (validate/switch_firmware.py); its in-band device is
`lid-<LID>` (`lid-<LID>,<HCA>,<PORT>` with planes).

Flash: `flint -d DEV q` first; a PSID the pin does not list is refused (never cross-flashed), the version already
on the flash is skipped (unless `--reflash`), an older one refused unless `--allow-downgrade`; the image must be
staged on the fabric node (`test -f`); then `flint -d DEV -i IMAGE -y burn`, and a query proves the flash holds
the version. Activate: `flint -d DEV swreset` when the flash is not what runs (`FW Version(Running)`); the
switch restarts, its links drop and return, so the query that proves it runs the flash is retried (after a query
that got no answer the switch is located again, a whole discovery: its LID is the subnet manager's to give)
until `timeout_s`.

Every command is an argv list run by a `Runner` (firmware/flash.py) on the fabric node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..collect.store import Observations
from ..model.index import Index
from ..parse.errors import ParseError
from ..parse.flint_q import FlintQuery, parse
from ..validate.switch_firmware import STEM, query_commands
from .flash import HostReport, Runner
from .images import version_key


@dataclass(frozen=True)
class SwitchJob:
    switch: str
    version: str
    image: str  # the staged image's path on the fabric node
    psids: tuple[str, ...] = ()
    allow_downgrade: bool = False
    reflash: bool = False


def locate(node: str, switch: str, index: Index, via: Mapping[int, tuple[str, int]], run: Runner
           ) -> tuple[str | None, str]:
    """The switch's in-band device name as the fabric node reaches it, or (None, why)."""
    texts: dict[str, str] = {}
    discoveries: list[tuple[str, tuple[str, ...]]] = [
        (f"ibnetdiscover-plane{plane}", ("ibnetdiscover", "-C", hca, "-P", str(port)))
        for plane, (hca, port) in sorted(via.items())] or [("ibnetdiscover", ("ibnetdiscover",))]
    for stem, argv in discoveries:
        ran = run(node, argv)
        if ran.rc != 0:
            return None, f"{node}: {' '.join(argv)} failed: {ran.why()}"
        texts[stem] = ran.out
    query = query_commands(index, Observations(fabric=texts), via).get(f"{STEM}{switch}")
    if query is None:
        return None, f"{switch} is not seen on the fabric from {node} (or its model is not pinned)"
    return query[2], ""


def _query(node: str, device: str, switch: str, run: Runner) -> tuple[FlintQuery | None, str]:
    ran = run(node, ("flint", "-d", device, "q"))
    if ran.rc != 0:
        return None, f"{switch}: flint -d {device} q failed on {node}: {ran.why()}"
    try:
        return parse(ran.out), ""
    except ParseError as exc:
        return None, f"{switch}: flint -d {device} q printed what is not a query: {exc}"


def flash_switch(node: str, device: str, job: SwitchJob, run: Runner) -> HostReport:
    report = HostReport(job.switch)
    q, why = _query(node, device, job.switch, run)
    if q is None:
        return report.fail(why)
    name = f"{job.switch} ({device}, {q.psid or 'no PSID'}, {q.fw_version})"
    if job.psids and q.psid not in job.psids:
        return report.fail(f"{name}: PSID {q.psid or 'none'} is not one the pin allows ({', '.join(job.psids)}): "
                           "never cross-flashed")
    if q.fw_version == job.version and not job.reflash:
        pending = f"; it runs {q.fw_running} until activated" if q.activation_pending else ""
        report.lines.append(f"{name}: already at {job.version}, skipped{pending}")
        return report
    older = version_key(job.version) < version_key(q.fw_version)
    if older and not job.allow_downgrade:
        return report.fail(f"{name}: {q.fw_version} -> {job.version} is a downgrade: refused without "
                           "--allow-downgrade")
    staged = run(node, ("test", "-f", job.image))
    if staged.rc != 0:
        return report.fail(f"{job.switch}: the image is not staged on {node} at {job.image}"
                           + ("" if staged.rc == 1 else f" ({staged.why()})"))
    ran = run(node, ("flint", "-d", device, "-i", job.image, "-y", "burn"))
    if ran.rc != 0:
        return report.fail(f"{job.switch}: flint burn failed: {ran.why()}")
    after, why = _query(node, device, job.switch, run)
    if after is None:
        return report.fail(why)
    if after.fw_version != job.version:
        return report.fail(f"{job.switch}: the flash holds {after.fw_version} after the burn, not {job.version}")
    report.lines.append(f"{job.switch}: flashed {q.fw_version} -> {job.version}{' (downgrade)' if older else ''}; "
                        f"it runs {after.fw_running} until activated (swreset)")
    return report


def reset_switch(node: str, device: str, switch: str, run: Runner, relocate: Callable[[], str | None],
                 timeout_s: float, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, poll_s: float = 5.0) -> HostReport:
    """swreset the switch when its flash is not what runs; then prove it runs the flash (retried while it
    restarts, located again after a query that got no answer)."""
    report = HostReport(switch)
    q, why = _query(node, device, switch, run)
    if q is None:
        return report.fail(why)
    if not q.activation_pending:
        report.lines.append(f"{switch}: runs {q.fw_running}, nothing to activate")
        return report
    ran = run(node, ("flint", "-d", device, "swreset"))
    if ran.rc != 0:
        return report.fail(f"{switch}: flint swreset failed: {ran.why()}")
    deadline = clock() + timeout_s
    while True:
        after, why = _query(node, device, switch, run)
        if after is not None and not after.activation_pending:
            report.lines.append(f"{switch}: runs {after.fw_running} (swreset)")
            return report
        if clock() >= deadline:
            still = why or f"runs {after.fw_running if after else '?'}, flashed {after.fw_version if after else '?'}"
            return report.fail(f"{switch}: not running its flash {timeout_s:g} s after swreset: {still}")
        sleep(poll_s)
        if after is None:  # no answer while it restarts: its LID may be another once the SM sweeps it again
            device = relocate() or device
