"""What `clusterforge firmware flash|activate` does on each host (docs/firmware.md, "The bump"): the machine steps
of a day-2 firmware bump, never run by a deploy.

Flash, per host: `mlxfwmanager --query` first; the cards of the pinned model (by `Device Type`, the catalog's
`fw_device_type`) are checked before anything is written: a card whose PSID is not in the pin's list is refused
(never cross-flashed), a card already at the version is skipped (unless `--reflash`), an older version is
refused unless `--allow-downgrade`; one refused card refuses the host (no half-flashed host). Then, per card,
`mlxfwmanager -d <card> -u -i <image> -y` (`--force` for a downgrade or a re-flash: mlxfwmanager otherwise skips
an image that is not newer). The image must be staged on the host first, at `<image dir>/<the pin image's file
name>` (the pin's `image` is a URL or a controller path: nothing is copied); a missing one fails the host.

Activate, per host: `mlxfwreset -d <card> -y reset` for each card of the model whose flashed image is not the
one running (mlxfwmanager's `FW (Running)` row), then a query proves it runs the flash; or a reboot
(`systemctl reboot`), waited for until SSH answers, then a query proves no card has a reset pending.

Every command is an argv list; `Runner` runs one on a host (over SSH: collect/ssh.py's SshConfig, host keys
verified, the remote command one shlex-quoted string). A failed host never stops the others.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..collect.ssh import SshConfig
from ..parse.errors import ParseError
from ..parse.mlxfwmanager import FwDevice, parse
from .images import DEFAULT_IMAGE_DIR, staged_path, version_key

__all__ = ["DEFAULT_IMAGE_DIR", "FlashJob", "HostReport", "Ran", "Runner", "each", "flash_host", "reboot_host",
           "reset_host", "ssh_runner", "staged_path"]

QUERY = ("mlxfwmanager", "--query")


@dataclass(frozen=True)
class Ran:
    rc: int
    out: str
    err: str = ""

    def why(self) -> str:
        text = (self.err or self.out).strip()
        return text.splitlines()[-1] if text else f"exit {self.rc}"


Runner = Callable[[str, tuple[str, ...]], Ran]
"""(host, argv) -> what it printed and its exit code (255: ssh itself failed)."""


@dataclass
class HostReport:
    host: str
    ok: bool = True
    lines: list[str] = field(default_factory=list)

    def fail(self, why: str) -> HostReport:
        self.ok = False
        self.lines.append(why)
        return self


@dataclass(frozen=True)
class FlashJob:
    model: str  # catalog model (ConnectX-7)
    device_type: str  # what mlxfwmanager prints (ConnectX7)
    version: str
    image: str  # the staged image's path on the host
    psids: tuple[str, ...] = ()
    allow_downgrade: bool = False
    reflash: bool = False

    def commands(self, card: str, older: bool) -> tuple[str, ...]:
        force = ("--force",) if older or self.reflash else ()
        return ("mlxfwmanager", "-d", card, "-u", "-i", self.image, "-y", *force)


def _query(host: str, run: Runner, report: HostReport) -> tuple[FwDevice, ...] | None:
    ran = run(host, QUERY)
    if ran.rc != 0:
        report.fail(f"{host}: {'unreachable' if ran.rc == 255 else 'mlxfwmanager --query failed'}: {ran.why()}")
        return None
    try:
        return parse(ran.out)
    except ParseError as exc:
        report.fail(f"{host}: mlxfwmanager --query printed what is not a query report: {exc}")
        return None


def flash_host(host: str, job: FlashJob, run: Runner) -> HostReport:
    report = HostReport(host)
    devices = _query(host, run, report)
    if devices is None:
        return report
    cards = [d for d in devices if d.device_type == job.device_type]
    if not cards:
        seen = ", ".join(sorted({d.device_type for d in devices}))
        return report.fail(f"{host}: no {job.model} ({job.device_type}) card (mlxfwmanager shows: {seen})")
    todo: list[tuple[FwDevice, bool]] = []
    refused = False
    for d in cards:
        name = f"{host} {d.pci or f'device #{d.index}'} ({d.psid or 'no PSID'}, {d.fw})"
        if job.psids and d.psid not in job.psids:
            report.fail(f"{name}: PSID {d.psid or 'none'} is not one the pin allows ({', '.join(job.psids)}): "
                        "never cross-flashed")
            refused = True
            continue
        if d.fw == job.version and not job.reflash:
            pending = f"; it runs {d.fw_running} until activated" if d.reset_pending else ""
            report.lines.append(f"{name}: already at {job.version}, skipped{pending}")
            continue
        older = version_key(job.version) < version_key(d.fw)
        if older and not job.allow_downgrade:
            report.fail(f"{name}: {d.fw} -> {job.version} is a downgrade: refused without --allow-downgrade")
            refused = True
            continue
        if d.pci is None:
            report.fail(f"{name}: mlxfwmanager names no device (PCI Device Name) to flash")
            refused = True
            continue
        todo.append((d, older))
    if refused:
        report.lines.append(f"{host}: nothing flashed (a card was refused)")
        return report
    if not todo:
        return report
    staged = run(host, ("test", "-f", job.image))
    if staged.rc != 0:
        return report.fail(f"{host}: the image is not staged at {job.image}"
                           + ("" if staged.rc == 1 else f" ({staged.why()})"))
    for d, older in todo:
        ran = run(host, job.commands(d.pci or "", older))
        if ran.rc != 0:
            report.fail(f"{host} {d.pci}: flash failed: {ran.why()}")
            break
        why = _burn_problem(ran.out, d, job.version)
        if why is not None:
            report.fail(f"{host} {d.pci}: {why}")
            break
        report.lines.append(f"{host} {d.pci}: flashed {d.fw} -> {job.version}{' (downgrade)' if older else ''}")
    return report


def _same_pci(a: str | None, b: str | None) -> bool:
    """One device, however mlxfwmanager names it: `0000:8e:00.0` is `8e:00.0` (PCI domain 0)."""
    return a is not None and b is not None and a.removeprefix("0000:") == b.removeprefix("0000:")


def _burn_problem(out: str, card: FwDevice, version: str) -> str | None:
    """What is wrong with a flash by mlxfwmanager's own account (its query of the image, then its update log),
    or None: the card's log ends in Done and the image it burned is the pin's version. An exit code 0 alone is
    not taken for a flash (a staged image of another version would otherwise pass as the pin)."""
    try:
        devices = parse(out)
    except ParseError as exc:
        return f"the flash printed what is not mlxfwmanager's update report ({exc}): not taken for a flash"
    mine = [x for x in devices if _same_pci(x.pci, card.pci)]
    if not mine:
        return f"the flash's report names no device {card.pci}"
    burned = mine[0]
    if burned.burn != "done":
        return f"mlxfwmanager did not report the burn done ({burned.burn or 'no update log for it'})"
    if burned.fw_flashed != version:
        return (f"the staged image is {burned.fw_flashed}, not the pin's {version}: the card now holds that image; "
                "stage the pin's image and flash again")
    return None


def reset_host(host: str, device_type: str, run: Runner) -> HostReport:
    """mlxfwreset every card of the type whose flash is not what runs; a query then proves it runs."""
    report = HostReport(host)
    devices = _query(host, run, report)
    if devices is None:
        return report
    pending = [d for d in devices if d.device_type == device_type and d.reset_pending]
    if not pending:
        report.lines.append(f"{host}: no {device_type} card with a reset pending")
        return report
    for d in pending:
        ran = run(host, ("mlxfwreset", "-d", d.pci or "", "-y", "reset"))
        if ran.rc != 0:
            return report.fail(f"{host} {d.pci}: mlxfwreset failed: {ran.why()}")
    after = _query(host, run, report)
    if after is None:
        return report
    still = [d for d in after if d.device_type == device_type and d.reset_pending]
    if still:
        return report.fail(f"{host}: still running the old image after mlxfwreset: "
                           + ", ".join(f"{d.pci} runs {d.fw_running}, flashed {d.fw}" for d in still))
    report.lines += [f"{host} {d.pci}: runs {d.fw}" for d in pending]
    return report


def reboot_host(host: str, run: Runner, timeout_s: float, *, sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] = time.monotonic, poll_s: float = 10.0) -> HostReport:
    """Reboot, wait for SSH to answer again (up to `timeout_s`), then prove no card has a reset pending."""
    report = HostReport(host)
    ran = run(host, ("systemctl", "reboot"))
    if ran.rc not in (0, 255):  # 255: the connection dropped as the host went down
        return report.fail(f"{host}: reboot failed: {ran.why()}")
    deadline = clock() + timeout_s
    sleep(poll_s)  # let it go down before asking whether it is back
    while run(host, ("true",)).rc != 0:
        if clock() >= deadline:
            return report.fail(f"{host}: not back {timeout_s:g} s after the reboot")
        sleep(poll_s)
    devices = _query(host, run, report)
    if devices is None:
        return report
    still = [d for d in devices if d.reset_pending]
    if still:
        return report.fail(f"{host}: a card runs another image than its flash after the reboot: "
                           + ", ".join(f"{d.pci} runs {d.fw_running}, flashed {d.fw}" for d in still))
    report.lines.append(f"{host}: rebooted; every card runs its flashed image")
    return report


def ssh_runner(cfg: SshConfig, addresses: dict[str, str], timeout_s: float = 600.0) -> Runner:
    """Run an argv on a host over SSH (StrictHostKeyChecking=yes, the environment's known_hosts)."""

    def run(host: str, argv: tuple[str, ...]) -> Ran:
        try:
            proc = subprocess.run(cfg.argv(addresses[host], argv), capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return Ran(124, "", f"timed out after {timeout_s:g} s")
        except OSError as exc:
            return Ran(255, "", str(exc))
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    return run


def each(hosts: Sequence[str], work: Callable[[str], HostReport], parallel: int) -> list[HostReport]:
    """`work` on every host, `parallel` at a time; an exception is that host's failure, never the others'."""
    from concurrent.futures import ThreadPoolExecutor

    def guarded(host: str) -> HostReport:
        try:
            return work(host)
        except Exception as exc:  # one host's bug or error is its own failure, never the others'
            return HostReport(host).fail(f"{host}: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(hosts) or 1))) as pool:
        return list(pool.map(guarded, hosts))
