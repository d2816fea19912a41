"""Run every check over a set of observations: parse (pure) then diff against the model."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..collect.plan import mlxlink_port
from ..collect.store import Observations, OutputTooLarge, read_lines
from ..model.index import Index
from ..model.place_text import port_text
from ..parse import (
    ParseError,
    dpkg_query,
    flint_q,
    iblinkinfo,
    ibnetdiscover,
    ibroute,
    ibstat,
    lctl_hsm,
    lctl_list_nids,
    lctl_pcc,
    lctl_recovery,
    lfs_df,
    mlxfwmanager,
    mlxlink,
    nvidia_smi_nvlink,
    nvidia_smi_query_gpu,
    nvidia_smi_topo,
    ofed_info,
    rpm_query,
)
from ..parse.ibstat import IbstatCa
from ..parse.mlxlink import MlxlinkReport
from ..util.echo import clip, one_line
from ..util.gcpause import gc_paused
from . import planes
from .coverage import coverage_findings
from .fabric import diff_fabric
from .findings import Finding, sort_key
from .firmware import check_firmware
from .gpus import check_nvlink, check_topo
from .hosts import check_host
from .link_health import check_link_health
from .lustre import check_hsm, check_lfs_df, check_pcc, check_recovery
from .software import check_driver, check_nids, check_ofed, check_packages
from .switch_firmware import check_switch_firmware, pinned_switches, saved_queries
from .unrouted import unrouted

T = TypeVar("T")
S = TypeVar("S")


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    hosts_checked: list[str] = field(default_factory=list)
    fabric_checked: bool = False

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def unreachable(self) -> int:
        return sum(1 for f in self.findings if f.rule == "HOST-UNREACHABLE")


def validate(index: Index, obs: Observations, *, fabric_only: bool = False, switch: str | None = None) -> Report:
    """Findings for `obs` against the Index; missing data is a finding (validate.coverage).

    `fabric_only`: host outputs are neither expected nor checked. `switch`: a switch's firmware wave (a day-2
    bump): only that switch's firmware is checked against its pin (the others are bumped in their own waves)."""
    with gc_paused():  # 10^5 expected links and findings, acyclic: collector passes would cost ~10%
        return _validate(index, obs, fabric_only, switch)


def _validate(index: Index, obs: Observations, fabric_only: bool = False, switch: str | None = None) -> Report:
    report = Report()
    report.findings += coverage_findings(index, obs, hosts=not fabric_only)
    _fabric(index, obs, report)
    _switch_firmware(index, obs, report, switch)
    for host, reason in sorted(obs.unreachable.items()):
        name = one_line(host)  # a capture's directory name and the text of its UNREACHABLE: onto one line
        report.findings.append(
            Finding(
                "HOST-UNREACHABLE",
                "error",
                name,
                f"{name} could not be reached: {one_line(reason)}",
                action="check the host is up and reachable over SSH (and its host key is known)",
                host=name,
            )
        )
    for host, texts in sorted(obs.hosts.items()):
        if host not in index.nodes or fabric_only:
            continue  # an unknown host is a HOST-UNKNOWN finding (coverage)
        report.hosts_checked.append(host)
        _host(index, obs, host, texts, report)
    report.findings = _one_finding_per_fault(index, report.findings)
    report.findings.sort(key=sort_key)
    return report


_LINK_RULES = {"FAB-MISSING", "FAB-PORT-DOWN", "FAB-DEGRADED", "FAB-MISWIRED"}
_ECHO_RULES = {"HOST-PORT-STATE", "HOST-PORT-RATE"}


def _one_finding_per_fault(index: Index, findings: list[Finding]) -> list[Finding]:
    """A broken link shows on the fabric and again in the host's ibstat: keep the fabric finding
    (it names the cable and the repair) and drop the host's echo of the same port."""
    covered: set[str] = set()
    for f in findings:
        covered.update(f.covers)  # the ports a fabric finding explains (a missing switch's links, a swap's)
        cable = index.cables.get(f.cable) if f.rule in _LINK_RULES and f.cable is not None else None
        if cable is not None:  # by its id: the ports of the cable the finding is about
            covered.update(port_text(ref.key) for ref in (cable.a, cable.b))
    kept = [f for f in findings if not (f.rule in _ECHO_RULES and f.port in covered)]
    return _down_hosts(kept)


def _down_hosts(findings: list[Finding]) -> list[Finding]:
    """A host that SSH cannot reach and the fabric does not see is down: one finding (HOST-UNREACHABLE,
    which sets the exit code) with the fabric finding's rack/U, repair and links folded in."""
    unseen = {f.host: f for f in findings if f.rule == "FAB-DEVICE-MISSING" and f.host is not None}
    down = {f.host for f in findings if f.rule == "HOST-UNREACHABLE" and f.host in unseen}
    if not down:
        return findings
    out: list[Finding] = []
    for f in findings:
        if f.rule == "FAB-DEVICE-MISSING" and f.host in down:
            continue
        if f.rule == "HOST-UNREACHABLE" and f.host in down:
            fab = unseen[f.host]
            f = dataclasses.replace(
                f,
                message=f"{f.message}; nor is it seen on the fabric ({fab.floor}, {len(fab.details)} HCA "
                "link(s)): it is down (power, or hung)",
                action=fab.action,
                floor=fab.floor,
                inventory=fab.inventory,
                details=fab.details,
                covers=fab.covers,
            )
        out.append(f)
    return out


def _parse(
    obs: Observations, host: str | None, stem: str, text: S, fn: Callable[[S], T], report: Report
) -> T | None:
    try:
        return fn(text)
    except (OSError, OutputTooLarge) as exc:  # a stream read as it is parsed (`Observations.streams`)
        report.findings.append(Finding("PARSE", "error", host or "fabric", f"{obs.path_of(host, stem)}: {exc}",
                                       action="re-collect it as a regular file", host=host))
        return None
    except ParseError as exc:
        report.findings.append(
            Finding(
                "PARSE",
                "error",
                host or "fabric",
                f"{obs.path_of(host, stem)}:{exc.line_no}: {exc.message}",
                observed=clip(exc.line),  # the line, as the message quotes it: cut at MAX_ECHO
                action="re-collect; if the tool's output format changed, report it",
                host=host,
            )
        )
        return None


def _fabric(index: Index, obs: Observations, report: Report) -> None:
    text = obs.fabric.get("ibnetdiscover")
    if text is None:
        _planes(index, obs, report)  # rail planes: one discovery per plane; else FAB-NO-DATA (coverage)
        return
    topo = _parse(obs, None, "ibnetdiscover", text, ibnetdiscover.parse, report)
    if topo is None:
        return
    links = None
    if "iblinkinfo" in obs.fabric:
        links = _parse(obs, None, "iblinkinfo", obs.fabric["iblinkinfo"], iblinkinfo.parse, report)
    report.findings += diff_fabric(index, topo, links)
    report.fabric_checked = True
    _routes(index, obs, report, ["dump_fts"])


def _routes(index: Index, obs: Observations, report: Report, stems: list[str]) -> None:
    """The SM's forwarding tables where collected (`dump_fts`, per plane `dump_fts-plane<P>`): FAB-UNROUTED for
    an uplink no route uses that no finding so far names. Read a line at a time into a byte a LID (a 2,048-node
    fabric's are 2 GB of text): from the collected text, or from the saved file as a stream."""
    planes: list[ibroute.Tables] = []
    for stem in stems:
        if stem in obs.fabric:
            lines: Iterable[str] = (ln.rstrip("\r\n") for ln in io.StringIO(obs.fabric[stem]))
            parsed = _parse(obs, None, stem, lines, ibroute.read, report)
        elif stem in obs.streams:
            parsed = _parse(obs, None, stem, obs.streams[stem], _read_stream, report)
        else:
            continue
        if parsed is None:
            return  # its PARSE says so; a half-read input is not judged
        planes.append(parsed)
    named = {f.cable for f in report.findings if f.cable is not None}
    for tables in planes:  # each plane its own subnet: its own LIDs
        report.findings += unrouted(index, tables, named)


def _read_stream(path: Path) -> ibroute.Tables:
    return ibroute.read(read_lines(path))


def _planes(index: Index, obs: Observations, report: Report) -> None:
    """Rail planes: `ibnetdiscover-plane<P>` (and `iblinkinfo-plane<P>`) per plane, read as one fabric:
    the planes are disjoint subnets, so their devices and links add up (a device seen in two planes,
    e.g. an SM node's second HCA port, is listed once)."""
    stems = sorted(k for k in obs.fabric if k.startswith("ibnetdiscover-plane"))
    if not stems:
        return
    parsed = {s: _parse(obs, None, s, obs.fabric[s], ibnetdiscover.parse, report) for s in stems}
    topos = [t for t in parsed.values() if t is not None]
    if not topos:
        return
    expected = sorted(set(planes.switch_plane(index).values()))
    missing = [p for p in expected if f"ibnetdiscover-plane{p}" not in obs.fabric]
    failed = [p for p in expected if parsed.get(f"ibnetdiscover-plane{p}", True) is None]
    parsed_infos = [_parse(obs, None, k, obs.fabric[k], iblinkinfo.parse, report)
                    for k in sorted(k for k in obs.fabric if k.startswith("iblinkinfo-plane"))]
    infos = [i for i in parsed_infos if i is not None]

    def once(items: list[Any]) -> tuple[Any, ...]:
        return tuple({id_key(x): x for x in items}.values())

    def id_key(x: Any) -> Any:
        return getattr(x, "guid", None) or x

    topo = ibnetdiscover.IbTopology(
        switches=once([n for t in topos for n in t.switches]), cas=once([n for t in topos for n in t.cas]),
        routers=once([n for t in topos for n in t.routers]), links=tuple(ln for t in topos for ln in t.links))
    links = None
    if infos and len(infos) == len(parsed_infos):
        links = iblinkinfo.IblinkinfoReport(nodes=tuple(n for i in infos for n in i.nodes),
                                            links=tuple(ln for i in infos for ln in i.links))
    where = f" in {one_line(str(obs.root))}/fabric" if obs.root is not None else ""
    report.findings += planes.uncollected(index, diff_fabric(index, topo, links), missing, failed, where)
    report.fabric_checked = True
    _routes(index, obs, report, sorted(k for k in (*obs.fabric, *obs.streams) if k.startswith("dump_fts-plane")))


def _switch_firmware(index: Index, obs: Observations, report: Report, only: str | None = None) -> None:
    """The pinned switches' in-band firmware queries (fabric/flint-q@<switch>.txt) against their pins (`only`:
    that switch's alone)."""
    if not pinned_switches(index):
        return
    queries = {}
    for name, (stem, text) in saved_queries(obs).items():
        if only is not None and name != only:
            continue
        parsed = _parse(obs, None, stem, text, flint_q.parse, report)
        if parsed is not None:
            queries[name] = parsed
    unseen = {f.switch for f in report.findings if f.rule == "FAB-DEVICE-MISSING" and f.switch is not None}
    report.findings += check_switch_firmware(index, obs, queries, unseen, only)


# saved output (file stem) -> its parser -> the check over the parsed records
HOST_CHECKS: tuple[tuple[str, Callable[[str], Any], Callable[[Index, str, Any], list[Finding]]], ...] = (
    ("nvidia-smi-topo", nvidia_smi_topo.parse, check_topo),
    ("nvidia-smi-nvlink", nvidia_smi_nvlink.parse, check_nvlink),
    ("nvidia-smi-query-gpu", nvidia_smi_query_gpu.parse, check_driver),
    ("ofed-info", ofed_info.parse, check_ofed),
    ("dpkg-query", dpkg_query.parse, check_packages),
    ("rpm-query", rpm_query.parse, check_packages),
    ("lctl-list-nids", lctl_list_nids.parse, check_nids),
    ("lfs-df", lfs_df.parse, check_lfs_df),
    ("lctl-hsm", lctl_hsm.parse, check_hsm),
    ("lctl-pcc", lctl_pcc.parse, check_pcc),
    ("lctl-recovery", lctl_recovery.parse, check_recovery),
    ("mlxfwmanager", mlxfwmanager.parse, check_firmware),
)


def _host(index: Index, obs: Observations, host: str, texts: dict[str, str], report: Report) -> None:
    cas: list[IbstatCa] = []
    for stem, text in texts.items():
        if stem == "ibstat" or stem.startswith("ibstat@"):
            parsed = _parse(obs, host, stem, text, ibstat.parse, report)
            if parsed is None:
                continue
            if stem.startswith("ibstat@"):
                name = stem.split("@", 1)[1]
                parsed = tuple(_renamed(ca, name) for ca in parsed)
            cas.extend(parsed)
    if any(s == "ibstat" or s.startswith("ibstat@") for s in texts):
        report.findings += check_host(index, host, cas)
    links: dict[tuple[str, int], MlxlinkReport] = {}
    for stem, text in texts.items():
        at = mlxlink_port(stem)
        if at is not None and (parsed_link := _parse(obs, host, stem, text, mlxlink.parse, report)) is not None:
            links[at] = parsed_link
    if links:
        report.findings += check_link_health(index, host, links)
    for stem, parser, check in HOST_CHECKS:
        if stem in texts:
            parsed = _parse(obs, host, stem, texts[stem], parser, report)
            if parsed is not None:
                report.findings += check(index, host, parsed)


def _renamed(ca: IbstatCa, name: str) -> IbstatCa:
    import dataclasses

    return dataclasses.replace(ca, ca=name)
