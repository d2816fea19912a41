"""Judge an acceptance run's saved outputs against the model (docs/accept.md): findings that name the slow part.

The outputs live under one directory, as `accept --plan` names them:

    DIR/nodes/<node>/dcgmi-diag (or dcgmi-diag.json), nvidia-smi-q, nvidia-smi-nvlink, nccl-single
    DIR/links/<client node>_<hca>_<port>--<server node>_<hca>_<port>   (ib_write_bw, the client's output)
    DIR/nccl/<cluster | suNN | planeP>                                   (all_reduce_perf over mpirun)

A test the plan has and the directory lacks is ACC-NO-DATA (never "passed"). A slow ib_write_bw test
does not by itself say which of its two ports is slow: every port is in two tests or more (its leaf's
round and a cross-leaf round), so the port slow in all of its tests while its partners are fast
elsewhere is the slow part, and the finding names its cable, leaf and leaf port. A slow multi-node
all_reduce gets a bisection plan (accept/bisect.py) instead of a guess, unless a slow port found by the
link tests is among its nodes: then it is a warning that names that port (fix it first).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..collect.store import OutputTooLarge, read_capture
from ..model.index import Index
from ..parse import ParseError, dcgmi_diag, nccl_tests, nvidia_smi_nvlink, nvidia_smi_q, perftest
from ..util.echo import one_line
from ..validate.findings import Finding, Ids
from ..validate.routes import Routes
from .bisect import halves_plan
from .expect import Expect, expect
from .judge_routes import routed_links
from .link_findings import NEVER, gbps_text, least, port_finding, port_ids
from .plan import AcceptPlan, HostPort, LinkTest, accept_plan

T = TypeVar("T")


@dataclass
class Judged:
    findings: list[Finding] = field(default_factory=list)
    tests_run: int = 0
    tests_planned: int = 0
    tests_extra: int = 0
    """Link outputs read beyond the plan (extra_tests: a finding's next round), counted in tests_run too."""


def _read(path: Path, root: Path) -> str | None:
    """A planned output of the run directory `root`, or None when absent; refused (ValueError naming it) when it
    is no regular file inside `root` (a link out of it, to /etc/passwd say, would be quoted in a finding)."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return read_capture(path, root)
    except OSError as exc:  # one line naming the file once: not OSError's "[Errno 0] why: 'path'"
        raise ValueError(f"{one_line(str(path))}: {exc.strerror or exc}") from None
    except OutputTooLarge as exc:
        raise ValueError(f"{one_line(str(path))}: {exc}") from None


def judge(index: Index, directory: Path, plan: AcceptPlan | None = None, routes: Routes | None = None) -> Judged:
    """The findings of a run directory: `routes` (the SM's tables, validate/routes.py) follow each link test's
    flow, so that a slow uplink is named by its cable (accept/locate.py) and not as the path between leaves."""
    plan = plan or accept_plan(index)
    exp = expect(index)
    out = Judged()
    out.tests_planned = len(plan.nodes) * 4 + len(plan.links) + len(plan.fabric)
    for test in plan.nodes:
        _node(index, exp, directory / "nodes" / test.node, test.node, out)
    slow_ports = _links(index, exp, plan, directory / "links", out, routes)
    for ft in plan.fabric:
        missing = Finding("ACC-NO-DATA", "error", f"nccl {ft.name}",
                          f"no all_reduce_perf output for {ft.name} ({len(ft.nodes)} nodes)",
                          action=f"run it: {' '.join(ft.argv())}; save its output as nccl/{ft.name}")
        res = _parsed(directory, f"nccl/{ft.name}", nccl_tests.parse, missing, out, Ids())
        if res is None:
            continue
        least = exp.fabric_busbw_gbs(ft.nodes, index.inv.acceptance.nccl_efficiency)
        if res.status != "ok" or res.avg_busbw is None or res.avg_busbw < least:
            seen = "no result" if res.avg_busbw is None else f"{res.avg_busbw:g} GB/s ({res.status})"
            known = [p.label for p in slow_ports if p.node in ft.nodes]
            if known:  # NCCL rides every rail evenly: a slow port found above slows the whole collective
                out.findings.append(Finding(
                    "ACC-NCCL-FABRIC", "warning", f"nccl {ft.name}",
                    f"all_reduce over {len(ft.nodes)} nodes below the model's bound, explained by the slow "
                    f"link(s) found: {', '.join(known)}",
                    expected=f">= {least:g} GB/s bus bandwidth", observed=seen,
                    action="fix those links first (ACC-LINK), then run this all_reduce again; bisect only if it "
                           "stays below the bound"))
                continue
            rounds = halves_plan(list(ft.nodes))
            out.findings.append(Finding(
                "ACC-NCCL-FABRIC", "error", f"nccl {ft.name}",
                f"all_reduce over {len(ft.nodes)} nodes below the model's bound",
                expected=f">= {least:g} GB/s bus bandwidth", observed=seen,
                action="find the slow member by halves (each round runs both halves at once): "
                       + "; ".join(f"round {i + 1}: {len(r[0])} + {len(r[1])} nodes" for i, r in enumerate(rounds))
                       + "; the half below the bound holds it",
                details=tuple(f"round 1 half {j + 1}: {','.join(h)}" for j, h in enumerate(rounds[0]))
                if rounds else ()))
    return out


def _parsed(directory: Path, rel: str, parser: Callable[[str], T], missing: Finding, out: Judged,
            at: Ids) -> T | None:
    """One planned output: its records, or None with the finding that says why (missing, or not parsed; `at`:
    what the output is about, by id)."""
    text = _read(directory / rel, directory.resolve())
    if text is None:
        out.findings.append(missing)
        return None
    try:
        records = parser(text)
    except ParseError as exc:
        out.findings.append(_parse_finding(rel, exc, at))
        return None
    out.tests_run += 1  # read: an output that does not parse is no test run (its ACC-PARSE says so)
    return records


def _parse_finding(where: str, exc: ParseError, at: Ids) -> Finding:
    return Finding("ACC-PARSE", "error", where, f"{where}:{exc.line_no}: {exc.message}",
                   observed=exc.line, action="save the tool's whole output again", **at)


def _node(index: Index, exp: Expect, d: Path, node: str, out: Judged) -> None:
    files = {"dcgmi-diag": d / "dcgmi-diag", "nvidia-smi-q": d / "nvidia-smi-q",
             "nvidia-smi-nvlink": d / "nvidia-smi-nvlink", "nccl-single": d / "nccl-single"}
    root = d.parents[1].resolve()  # the run directory: DIR/nodes/<node>
    texts = {k: _read(p, root) for k, p in files.items()}
    if texts["dcgmi-diag"] is None and (j := _read(d / "dcgmi-diag.json", root)) is not None:
        texts["dcgmi-diag"] = j
    missing = sorted(k for k, t in texts.items() if t is None)
    if missing:
        out.findings.append(Finding("ACC-NO-DATA", "error", node, f"no {', '.join(missing)} output: not checked",
                                    action=f"run `clusterforge accept --plan` for the commands; save them under "
                                           f"nodes/{node}/", host=node))
    for name, text in texts.items():
        if text is None:
            continue
        try:
            if name == "dcgmi-diag":
                diag = (dcgmi_diag.parse_json(text) if text.lstrip().startswith(("{", "WARNING"))
                        else dcgmi_diag.parse(text))
                _dcgm(node, diag, out)
            elif name == "nvidia-smi-q":
                _pcie(node, exp, nvidia_smi_q.parse(text), out)
            elif name == "nvidia-smi-nvlink":
                hw = index.hardware[node].gpus
                _nvlink(node, nvidia_smi_nvlink.parse(text), hw.count if hw is not None else 0, out)
            else:
                _single(node, exp, nccl_tests.parse(text), out)
        except ParseError as exc:
            out.findings.append(_parse_finding(f"nodes/{node}/{name}", exc, Ids(host=node)))
            continue
        out.tests_run += 1


def _dcgm(node: str, diag: dcgmi_diag.DcgmDiag, out: Judged) -> None:
    for t in diag.tests:
        if t.result not in ("fail", "warn"):
            continue
        gpus = sorted(g for g, r in t.gpus.items() if r == t.result)
        which = f" (GPU {', '.join(map(str, gpus))})" if gpus else ""
        text = "; ".join(m for _, m in t.messages)
        out.findings.append(Finding(
            "ACC-DCGM", "error" if t.result == "fail" else "warning", node,
            f"dcgmi diag {t.category or ''} {t.name}: {t.result}{which}".replace("  ", " "),
            observed=text or None,
            action="fix what DCGM names (persistence mode, cooling, a GPU with memory errors: RMA), then run "
                   "the diagnostic again", host=node))


def _pcie(node: str, exp: Expect, q: nvidia_smi_q.NvidiaSmiQ, out: Judged) -> None:
    want = exp.pcie_gen.get(node)
    for g in q.gpus:
        if g.pcie is None:
            continue
        short = []
        if want is not None and g.pcie.gen_max is not None and g.pcie.gen_max < want:
            short.append(f"PCIe Gen{g.pcie.gen_max} at most (the GPU runs Gen{want})")
        if g.pcie.gen_current is not None and g.pcie.gen_max is not None and g.pcie.gen_current < g.pcie.gen_max:
            short.append(f"running at Gen{g.pcie.gen_current} of Gen{g.pcie.gen_max} under load")
        if g.pcie.width_current is not None and g.pcie.width_current < (g.pcie.width_max or 16):
            short.append(f"x{g.pcie.width_current} of x{g.pcie.width_max}")
        if short:
            out.findings.append(Finding(
                "ACC-PCIE", "error", f"{node} GPU {g.bus_id}", "; ".join(short),
                expected=f"Gen{want or g.pcie.gen_max} x{g.pcie.width_max or 16}",
                observed=f"Gen{g.pcie.gen_current} x{g.pcie.width_current}",
                action="reseat the GPU (or its riser/baseboard cable), check the slot's BIOS link setting; "
                       "nvidia-smi -q was read under load: an idle GPU lowers its link on purpose", host=node))


def _nvlink(node: str, st: nvidia_smi_nvlink.NvlinkStatus, gpus: int, out: Judged) -> None:
    if len(st.gpus) < gpus:  # an empty output lists no link down: it must not read as "every link up"
        seen = ", ".join(str(g.index) for g in st.gpus) or "none"
        out.findings.append(Finding(
            "ACC-NVLINK", "error", node, f"nvidia-smi nvlink --status lists {len(st.gpus)} of the {gpus} GPUs declared "
                                         f"(GPUs listed: {seen}): their links were not seen",
            expected=f"{gpus} GPUs", observed=str(len(st.gpus)),
            action="check the GPUs are seen (`nvidia-smi -L`) and Fabric Manager runs; save the whole output again",
            host=node))
    for g in st.gpus:
        down = [link.link for link in g.links if not link.active] if g.status == "ok" else []
        if down or g.status == "inactive":
            out.findings.append(Finding(
                "ACC-NVLINK", "error", f"{node} GPU {g.index}",
                f"NVLink links down: {', '.join(map(str, down)) or 'all'}",
                action="reseat the GPU on its baseboard / check the NVSwitch tray; run nvidia-smi nvlink -e "
                       "for the error counters", host=node))


def _single(node: str, exp: Expect, res: nccl_tests.NcclResult, out: Judged) -> None:
    least = exp.nvlink_busbw_gbs.get(node)
    if least is None:
        return
    if res.status != "ok" or res.avg_busbw is None or res.avg_busbw < least:
        seen = "no result" if res.avg_busbw is None else f"{res.avg_busbw:g} GB/s ({res.status})"
        out.findings.append(Finding(
            "ACC-NCCL-NODE", "error", node, "single-node all_reduce below the NVLink bound",
            expected=f">= {least:g} GB/s bus bandwidth", observed=seen,
            action="check nvidia-smi nvlink --status and topo -m on this node (a GPU off NVLink falls back to PCIe)",
            host=node))


def extra_tests(plan: AcceptPlan, d: Path) -> list[LinkTest]:
    """Link outputs in `d` the plan does not have whose names are two of its ports (`<client>--<server>`, as a
    finding's next round names them): tests run after the plan, to split the cables a finding left open."""
    if not d.is_dir():
        return []
    planned = {t.name for t in plan.links}
    by_stem = {f"{p.node}_{p.hca}_{p.port}": p for p in plan.ports}
    out = []
    for f in sorted(d.iterdir()):
        client, sep, server = f.name.partition("--")
        if sep and f.name not in planned and client in by_stem and server in by_stem and client != server:
            out.append(LinkTest(0, by_stem[server], by_stem[client]))
    return out


def _links(index: Index, exp: Expect, plan: AcceptPlan, d: Path, out: Judged,
           routes: Routes | None) -> list[HostPort]:
    """ACC-NO-DATA / ACC-LINK / ACC-UPLINK findings of the link tests; the ports found slow."""
    results: dict[LinkTest, float | None] = {}
    for t in plan.links:
        missing = Finding("ACC-NO-DATA", "error", f"{t.client.label} -> {t.server.label}",
                          f"no ib_write_bw output for round {t.round}",
                          action=f"save the client's output as links/{t.name}", **port_ids(t.client))
        r = _parsed(d.parent, f"links/{t.name}", perftest.parse, missing, out, port_ids(t.client))
        if r is not None:
            results[t] = r.bw_avg_gbps if r.status == "ok" else None
    for t in extra_tests(plan, d):
        r = _parsed(d.parent, f"links/{t.name}", perftest.parse, NEVER, out, port_ids(t.client))
        if r is not None:
            out.tests_extra += 1
            results[t] = r.bw_avg_gbps if r.status == "ok" else None
    if routes is not None:
        return routed_links(index, exp, plan, routes, results, out.findings)
    slow_in: dict[HostPort, list[LinkTest]] = defaultdict(list)
    tests_of: dict[HostPort, list[LinkTest]] = defaultdict(list)
    for t, gbps in results.items():
        bound = least(exp, t)
        for p in (t.client, t.server):
            tests_of[p].append(t)
            if gbps is None or gbps < bound:
                slow_in[p].append(t)
    blamed: set[LinkTest] = set()
    slow_ports: list[HostPort] = []
    for port, slow in sorted(slow_in.items()):
        if len(slow) < len(tests_of[port]) or len(tests_of[port]) < 2:
            continue  # fast somewhere, or seen once: not proven to be this port
        partners_fast = all(any(x not in slow_in.get(_other(t, port), []) for x in tests_of[_other(t, port)])
                            for t in slow)
        if not partners_fast:
            continue
        blamed |= set(slow)
        slow_ports.append(port)
        out.findings.append(port_finding(
            exp, port, f"ib_write_bw slow in all {len(slow)} of its tests while each partner is fast elsewhere: "
                       "the slow part is this port's link", ", ".join(gbps_text(results[t]) for t in slow)))
    for t, gbps in results.items():
        bound = least(exp, t)
        if t in blamed or (gbps is not None and gbps >= bound):
            continue
        path = (f"leaf {t.client.leaf} up to the spines and down to {t.server.leaf}" if t.cross_leaf
                else f"within leaf {t.client.leaf}")
        out.findings.append(Finding(
            "ACC-LINK", "error", f"{t.client.label} -> {t.server.label}",
            f"ib_write_bw slow ({path}); both ports are fast in their other tests",
            expected=f">= {bound:g} Gb/s", observed=gbps_text(gbps),
            floor=f"cables {t.client.cable}, {t.server.cable}",
            action=("the path between the leaves is suspect: ibtracert between the two ports names the spine and "
                    "the two uplinks it takes; check those cables" if t.cross_leaf
                    else "run the test again; a repeat means the leaf's ports or their cables"), **port_ids(t.client)))
    return slow_ports


def _other(t: LinkTest, port: HostPort) -> HostPort:
    return t.server if t.client == port else t.client
