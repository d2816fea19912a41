"""Findings carry ids (#38): every finding names the host, switch, cable and port it is about as fields, not
only inside its text, and `--format json` (validate's, accept's) carries them, so a tool or a page reading the
JSON can tell which cable a finding is about.

One case per rule of `validate.findings.RULES`, each triggering its finding through the builder validate or
accept runs (an injected fault in the simulated lab fabric, a real capture with one value changed, a missing
output) and holding the ids in the JSON; a rule that names no device (FAB-NO-DATA) holds them null. A rule
added without a case fails `test_every_rule_has_a_case`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cf_accept_runs import nccl, run_dir
from cf_lab_inventory import LAB, index_of, lab_data, lab_index
from cf_routes import around
from cf_routes import tables as routes_of
from clusterforge.accept.judge import judge
from clusterforge.accept.locate import rates_along
from clusterforge.accept.plan import HostPort, accept_plan
from clusterforge.accept.route_plan import routed_plan
from clusterforge.api import Checked, load_checked
from clusterforge.cli.main import app
from clusterforge.collect.store import Observations, save_dir
from clusterforge.lab.accept_standins import outputs as standin_outputs
from clusterforge.model.index import Index
from clusterforge.parse import (
    flint_q,
    ibnetdiscover,
    ibroute,
    ibstat,
    lctl_hsm,
    lctl_list_nids,
    lctl_pcc,
    lfs_df,
    mlxfwmanager,
    mlxlink,
    nvidia_smi_nvlink,
    nvidia_smi_topo,
    ofed_info,
)
from clusterforge.parse.iblinkinfo import IblinkinfoNode, IblinkinfoPort, IblinkinfoReport
from clusterforge.sim.ibnetdiscover import SimFabric, SimLink, from_index, render
from clusterforge.validate.coverage import coverage_findings, expected_outputs
from clusterforge.validate.fabric import diff_fabric
from clusterforge.validate.findings import RULES, Finding
from clusterforge.validate.firmware import check_firmware
from clusterforge.validate.gpus import check_nvlink, check_topo
from clusterforge.validate.hosts import check_host
from clusterforge.validate.link_health import check_link_health
from clusterforge.validate.lustre import check_hsm, check_lfs_df, check_pcc, check_recovery
from clusterforge.validate.report import to_json
from clusterforge.validate.run import Report, validate
from clusterforge.validate.software import check_nids, check_ofed
from clusterforge.validate.switch_firmware import check_switch_firmware
from clusterforge.validate.unrouted import unrouted

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"
Ids = tuple[str | None, str | None, str | None, str | None]  # host, switch, cable, port: as the JSON has them
NONE: Ids = (None, None, None, None)


@dataclasses.dataclass
class Ctx:
    lab: Index
    prod: Checked
    tmp: Path


Case = Callable[[Ctx], tuple[list[Finding], list[Ids]]]
CASES: dict[str, Case] = {}


def case(rule: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        assert rule in RULES and rule not in CASES, rule
        CASES[rule] = fn
        return fn
    return register


def fabric(index: Index, fab: SimFabric, linkinfo: IblinkinfoReport | None = None) -> list[Finding]:
    return diff_fabric(index, ibnetdiscover.parse(render(index, fab)), linkinfo)


def link(host: str, hca: str, switch: str, cable: str) -> Ids:
    """A host port's link to its leaf: the finding's ids as `validate.findings.ids` gives them."""
    return (host, switch, cable, f"{host} {hca}/1")


# -- the fabric -------------------------------------------------------------------------------------------------


@case("FAB-MISSING")
def _missing(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.remove("C-00010")
    fab.remove("C-00020")  # leaf-su01-r0/21 - spine01/1: no host end
    return fabric(c.lab, fab), [link("gpu05", "mlx5_1", "leaf-su02-r1", "C-00010"),
                                (None, "leaf-su01-r0", "C-00020", "leaf-su01-r0/21")]


@case("FAB-DEVICE-MISSING")
def _device_missing(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.links = [lk for lk in fab.links if not {"spine01", "gpu05"} & {lk.a[0], lk.b[0]}]
    return fabric(c.lab, fab), [(None, "spine01", None, None), ("gpu05", None, None, None)]


@case("FAB-PORT-DOWN")
def _port_down(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.remove("C-00005")
    port = IblinkinfoPort(3, 7, None, None, None, None, "Down", "Polling", None, (), 1)
    info = IblinkinfoReport((IblinkinfoNode("Switch", fab.guid[("leaf-su01-r0", None)], "leaf-su01-r0", (port,)),), ())
    return fabric(c.lab, fab, info), [link("gpu03", "mlx5_0", "leaf-su01-r0", "C-00005")]


@case("FAB-MISWIRED")
def _miswired(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.swap("C-00001", "C-00003")  # at the leaf: the subject names the hosts' ports, gpu02's first
    fab.by_cable("C-00009").b = ("leaf-su02-r0", None, 15)  # gpu05's cable moved to a free port
    return fabric(c.lab, fab), [link("gpu02", "mlx5_0", "leaf-su01-r0", "C-00003"),
                                link("gpu05", "mlx5_0", "leaf-su02-r0", "C-00009")]


@case("FAB-UNEXPECTED")
def _unexpected(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.links.append(SimLink(("leaf-infra01", None, 31), ("spine01", None, 31), "4x", "HDR", "X2"))
    return fabric(c.lab, fab), [(None, "leaf-infra01", None, "leaf-infra01/31")]  # no cable is declared there


@case("FAB-DEGRADED")
def _degraded(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.degrade("C-00020", width="1x")
    fab.degrade("C-00005", width="4x", speed="EDR")
    return fabric(c.lab, fab), [(None, "leaf-su01-r0", "C-00020", "leaf-su01-r0/21"),
                                link("gpu03", "mlx5_0", "leaf-su01-r0", "C-00005")]


@case("FAB-UNKNOWN-DEVICE")
def _unknown_device(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.guid[("mystery", None)] = "0x0002c90300ffff01"
    fab.desc[("mystery", None)] = "sw-5a1b"
    for port, at in ((1, ("leaf-su01-r0", None, 21)), (2, ("leaf-su01-r0", None, 22))):
        fab.links = [lk for lk in fab.links if at not in (lk.a, lk.b)]
        fab.links.append(SimLink(("mystery", None, port), at, "4x", "HDR", f"X{port}"))
    # the first declared port it is plugged into, and the cable expected there
    return fabric(c.lab, fab), [(None, "leaf-su01-r0", "C-00020", "leaf-su01-r0/21")]


@case("FAB-GUID-MISMATCH")
def _guid_mismatch(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    data = lab_data()
    data["guid_locks"]["switches"]["spine01"] = "0x0002c90300000a01"
    data["guid_locks"]["hcas"]["gpu02/mlx5_1"] = "0x0002c90300000a02"
    index = index_of(data)
    fab = from_index(index)
    fab.replace("spine01", None, "0x0002c90300abcdef")
    fab.replace("gpu02", "mlx5_1", "0x0002c90300abcdee")
    return fabric(index, fab), [(None, "spine01", None, None), ("gpu02", None, None, None)]


@case("FAB-DUP-DESC")
def _dup_desc(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    fab = from_index(c.lab)
    fab.desc[("gpu02", "mlx5_0")] = "gpu01 mlx5_0"  # gpu02's card carries gpu01's name: gpu02's to fix
    return fabric(c.lab, fab), [("gpu02", None, None, None)]


@case("FAB-RAIL")
def _rail(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    data = lab_data()
    data["cables"][0]["b"] = "leaf-su01-r1/10"  # C-00001, gpu01's rail-0 HCA, declared on a rail-1 leaf
    index = index_of(data)
    return fabric(index, from_index(index)), [link("gpu01", "mlx5_0", "leaf-su01-r1", "C-00001")]


def _planes(tmp: Path) -> Index:
    """staging with rail planes, as tests/unit/plan/test_planes_validate.py builds it."""
    env = tmp / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    (env / "cabling.generated.yaml").unlink()
    fab = env / "fabric.yaml"
    fab.write_text(fab.read_text().replace("  rails: 2\n", "  rails: 2\n  planes: rail\n"))
    one = "      - {name: mlx5_0, model: ConnectX-6, netdev: ib0, rail: 0, ports: [{port: 1, rate: HDR}]}\n"
    two = one + "      - {name: mlx5_1, model: ConnectX-6, netdev: ib1, rail: 1, ports: [{port: 1, rate: HDR}]}\n"
    hw = env / "hardware.yaml"
    text = hw.read_text()
    at = text.index(one, text.index("  - name: sm-node"))
    hw.write_text(text[:at] + two + text[at + len(one):])
    return load_checked(env).index


@case("FAB-PLANE")
def _plane(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    index = _planes(c.tmp)
    fab = from_index(index)
    cable = index.cable_at[("gpu0001", "mlx5_1", 1)]  # rail 1: plane 1's leaf-su01-r1
    fab.by_cable(cable.id).b = ("leaf-su01-r0", None, 40)  # into plane 0
    return fabric(index, fab), [link("gpu0001", "mlx5_1", "leaf-su01-r1", cable.id)]  # the cable's declared leaf


@case("FAB-PLANE-NO-DATA")
def _plane_no_data(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    index = _planes(c.tmp)
    fab = from_index(index)
    plane0 = {s.name for s in index.inv.switches if (s.rail if s.role == "leaf" else s.group) == 0}
    fab.links = [lk for lk in fab.links if lk.a[0] in plane0 or lk.b[0] in plane0]
    report = validate(index, Observations(fabric={"ibnetdiscover-plane0": render(index, fab)}), fabric_only=True)
    return report.findings, [NONE]


@case("FAB-NO-DATA")
def _no_fabric(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return coverage_findings(c.lab, Observations(), hosts=False), [NONE]


# -- coverage, reachability, parsing ------------------------------------------------------------------------------


@case("HOST-NO-DATA")
def _host_no_data(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    found = coverage_findings(c.lab, Observations(fabric={"ibnetdiscover": ""}))
    return found, [(h, None, None, None) for h in expected_outputs(c.lab)]


@case("HOST-UNKNOWN")
def _host_unknown(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    found = coverage_findings(c.lab, Observations(hosts={"gpu99": {"ibstat": ""}}), hosts=False)
    return found, [("gpu99", None, None, None)]  # the name it was saved under: no node of the inventory


@case("HOST-UNREACHABLE")
def _unreachable(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    report = validate(c.lab, Observations(unreachable={"gpu03": "ssh: no route to host"}), fabric_only=True)
    return report.findings, [("gpu03", None, None, None)]


@case("PARSE")
def _parse(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    obs = Observations(hosts={"gpu01": {"ibstat": "CA 'mlx5_0'\n\tCA type: MT4123\n\tgarbage here\n"}},
                       fabric={"ibnetdiscover": "Switch 36 garbage\n"})
    return validate(c.lab, obs).findings, [("gpu01", None, None, None), NONE]  # the fabric's: no device


# -- a host's HCAs, GPUs, software -------------------------------------------------------------------------------


def _ibstat(**port: Any) -> list[ibstat.IbstatCa]:
    """gpu01's mlx5_0 as the real ConnectX-6 capture shows it (one port), with `port` fields changed; no
    mlx5_1."""
    (ca,) = ibstat.parse((FIX / "ibstat" / "sharp-blog-cx6-hdr-mt4123.txt").read_text())
    (p,) = ca.ports
    return [dataclasses.replace(ca, ca="mlx5_0", ports=(dataclasses.replace(p, **port),))]


def _locked() -> Index:
    data = lab_data()
    data["guid_locks"]["ports"]["gpu01/mlx5_0/1"] = "0xb8cef60300025b91"  # not the capture's port GUID
    return index_of(data)


GPU01_PORT = link("gpu01", "mlx5_0", "leaf-su01-r0", "C-00001")


@case("HOST-HCA-MISSING")
def _hca_missing(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_host(c.lab, "gpu01", _ibstat()), [("gpu01", None, None, None)]  # mlx5_1: the card, no port


@case("HOST-PORT-STATE")
def _port_state(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_host(c.lab, "gpu01", _ibstat(state="Down", physical_state="Polling")), [GPU01_PORT]


@case("HOST-PORT-RATE")
def _port_rate(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_host(c.lab, "gpu01", _ibstat(rate=100)), [GPU01_PORT]


@case("HOST-LINK-LAYER")
def _link_layer(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_host(c.lab, "gpu01", _ibstat(link_layer="Ethernet")), [GPU01_PORT]


@case("HOST-GUID")
def _host_guid(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_host(_locked(), "gpu01", _ibstat()), [GPU01_PORT]


def _topo() -> nvidia_smi_topo.NvidiaSmiTopo:
    return nvidia_smi_topo.parse((FIX / "nvidia-smi-topo" / "litgpt-dgx-a100-nv12-10nic-tabs.txt").read_text())


def _host_only(found: list[Finding], rule: str, host: str) -> tuple[list[Finding], list[Ids]]:
    """Findings about a host as a whole (or its card): the host alone, however many the builder gives."""
    return found, [(host, None, None, None)] * sum(1 for f in found if f.rule == rule)


@case("GPU-COUNT")
def _gpu_count(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    topo = _topo()
    return _host_only(check_topo(c.lab, "gpu01", dataclasses.replace(topo, gpus=topo.gpus[:4])), "GPU-COUNT", "gpu01")


@case("GPU-NVLINK")
def _gpu_nvlink(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    topo = _topo()
    matrix = {g: {h: ("PIX" if v.startswith("NV") else v) for h, v in row.items()} for g, row in topo.matrix.items()}
    found = check_topo(c.lab, "gpu01", dataclasses.replace(topo, matrix=matrix))
    return _host_only(found, "GPU-NVLINK", "gpu01")


@case("GPU-NVLINK-DOWN")
def _gpu_nvlink_down(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    text = (FIX / "nvidia-smi-nvlink-status" / "nvutil-rtx2080s-595.71.05-links-inactive.txt").read_text()
    return [*check_nvlink(c.lab, "gpu01", nvidia_smi_nvlink.parse(text))], [("gpu01", None, None, None)]


@case("GPU-HCA-AFFINITY")
def _gpu_affinity(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    # in the DGX A100 capture NIC0 (mlx5_0) is SYS from GPU0, which the lab pairs it with
    return _host_only(check_topo(c.lab, "gpu01", _topo()), "GPU-HCA-AFFINITY", "gpu01")


@case("GPU-DPU-ROOT-COMPLEX")
def _gpu_dpu(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    data = lab_data()
    gpu01 = next(n for n in data["nodes"] if n["name"] == "gpu01")
    gpu01["dpus"] = [{"name": "mlx5_2", "model": "BlueField-3", "ports": [{"port": 1, "rate": "NDR"}]}]
    found = check_topo(index_of(data), "gpu01", _topo())  # NIC2 (mlx5_2) is PXB to GPU0 and GPU1
    return _host_only(found, "GPU-DPU-ROOT-COMPLEX", "gpu01")


@case("SW-VERSION")
def _sw_version(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_ofed(c.lab, "gpu01", ofed_info.parse("MLNX_OFED_LINUX-5.8-1.0.1.1:")), [("gpu01", None, None, None)]


@case("LNET-NID")
def _lnet_nid(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_nids(c.lab, "gpu01", lctl_list_nids.parse("10.0.0.10@tcp\n")), [("gpu01", None, None, None)]


# -- Lustre (prod: its file system declares its targets, an archive and a cache tier) -------------------------


def _lfs_df(checked: Checked, drop: tuple[str, int] | None = None, extra: tuple[str, int] | None = None) -> str:
    """CONSTRUCTED, as tests/unit/storage/test_lustre_validate.py writes it: prod's lfs01 in `lfs df -h`."""
    (fs,) = checked.index.inv.lustre
    keys = [(t.kind.upper(), t.index) for t in fs.targets if t.kind in ("mdt", "ost")] + ([extra] if extra else [])
    lines = [f"{fs.name}-{kind}{i:04X}_UUID  14.0T  1.0T  13.0T   7% {fs.mount}[{kind}:{i}]"
             for kind, i in keys if (kind, i) != drop]
    return ("UUID                       bytes        Used   Available Use% Mounted on\n" + "\n".join(lines)
            + f"\nfilesystem_summary:  500.0T  30.0T  470.0T   6% {fs.mount}\n")


@case("LUSTRE-NOT-MOUNTED")
def _not_mounted(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return check_lfs_df(c.prod.index, "gpu0001", lfs_df.parse("")), [("gpu0001", None, None, None)]


@case("LUSTRE-TARGET")
def _target(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    found = check_lfs_df(c.prod.index, "gpu0001", lfs_df.parse(_lfs_df(c.prod, drop=("MDT", 1))))
    return found, [("gpu0001", None, None, None)]


@case("LUSTRE-UNDECLARED")
def _undeclared(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    found = check_lfs_df(c.prod.index, "gpu0001", lfs_df.parse(_lfs_df(c.prod, extra=("OST", 999))))
    return found, [("gpu0001", None, None, None)]


@case("LUSTRE-HSM")
def _hsm(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    text = ("mdt.lfs01-MDT0000.hsm_control=disabled\nmdt.lfs01-MDT0000.hsm.max_requests=3\n"
            "mdt.lfs01-MDT0000.hsm.agents=\n")
    return _host_only(check_hsm(c.prod.index, "lus01", lctl_hsm.parse(text)), "LUSTRE-HSM", "lus01")


@case("LUSTRE-PCC")
def _pcc(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    # CONSTRUCTED from Lustre's pcc_super_dump (see tests/unit/storage/test_lustre_pcc.py): another back-end
    text = ("llite.lfs01-ffff8f8c3a3b5000.pcc=\npcc:\n  -\n    pccpath: /mnt/other\n    hsmtool: lhsmtool_posix\n"
            "    rwid: 1\n    roid: 0\n    flags: 1e\n    autocache: projid={1000}\n")
    return check_pcc(c.prod.index, "gpu0001", lctl_pcc.parse(text)), [("gpu0001", None, None, None)]


@case("LUSTRE-TARGET-STATE")
def _target_state(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _host_only(check_recovery(c.prod.index, "lus03", ()), "LUSTRE-TARGET-STATE", "lus03")


# -- firmware ----------------------------------------------------------------------------------------------------


def _capture(name: str) -> str:
    (path,) = (FIX / "mlxfwmanager").glob(f"{name}-*.txt")
    return path.read_text(encoding="utf-8")


SPECTRUM = (FIX / "flint-query" / "mlxsw-doc-mstflint-spectrum-switch-asic-fw-issu.txt").read_text(encoding="utf-8")


def _firmware(c: Ctx) -> list[Finding]:
    """A host's two ConnectX-7 cards behind their pin, of another board (prod with ConnectX-7 HCAs, the real
    capture of two such cards), and leaf-su01-r0 the same (the lab's QM8700s pinned, the real Spectrum query);
    the lab's other pinned switches seen on the fabric but not read."""
    data = c.prod.inv.model_dump(mode="json")
    for p in data["profiles"]:
        for h in p.get("hcas") or ():
            h["model"] = h["model"].replace("ConnectX-6", "ConnectX-7")
    data["firmware"] = {"hcas": [{"model": "ConnectX-7", "version": "28.43.1014", "psids": ["MT_0000000838"]}]}
    query = mlxfwmanager.parse(_capture("aws-ec2-mlxup-4.30-2xcx7-mcx755106as-ndr200"))
    hosts = check_firmware(index_of(data), "gpu0001", query)
    lab = lab_data()
    lab["firmware"] = {"switches": [{"model": "QM8700", "version": "27.2010.1000", "psids": ["MT_0000000063"]}]}
    index = index_of(lab)
    obs = Observations(fabric={"ibnetdiscover": render(index, from_index(index))})
    return hosts + check_switch_firmware(index, obs, {"leaf-su01-r0": flint_q.parse(SPECTRUM)}, set())


# each of gpu0001's two cards (matched by model: which HCA it is, the capture does not say) names the host, the
# switch's names the switch
CARDS_AND_SWITCH = [("gpu0001", None, None, None)] * 2 + [(None, "leaf-su01-r0", None, None)]


@case("FW-DRIFT")
def _fw_drift(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _firmware(c), CARDS_AND_SWITCH


@case("FW-PSID")
def _fw_psid(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _firmware(c), CARDS_AND_SWITCH


@case("FW-NO-DATA")
def _fw_no_data(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _firmware(c), [NONE]  # the fabric node's reading: the switches it could not read are its details


# -- a port's physical layer (mlxlink) -----------------------------------------------------------------------------


CLEAN = next((FIX / "mlxlink").glob("bf3-mft4.30-m-c-*.txt")).read_text(encoding="utf-8")


def _with(text: str, label: str, value: str) -> str:
    """CONSTRUCTED from a real capture: one row's value replaced (as tests/unit/validate/test_link_health.py)."""
    lines = text.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith(label + " ") or ln.startswith(label + ":"))
    lines[i] = f"{lines[i].split(':', 1)[0]}: {value}"
    return "\n".join(lines)


def _mlxlink(c: Ctx, text: str) -> tuple[list[Finding], list[Ids]]:
    found = check_link_health(c.lab, "gpu01", {("mlx5_0", 1): mlxlink.parse(text)})
    return found, [GPU01_PORT] * len(found)


@case("LINK-BER")
def _ber(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _mlxlink(c, _with(CLEAN, "Raw Physical BER", "3E-4"))


@case("LINK-FLAP")
def _flap(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _mlxlink(c, _with(CLEAN, "Link Down Counter", "3"))


@case("LINK-MODULE")
def _module(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    return _mlxlink(c, _with(CLEAN, "Temperature [C]", "81"))


# -- acceptance (the lab's plan, run directories from real captures as tests/unit/accept/test_accept.py) --------


def port_of(p: HostPort) -> Ids:
    """A link test's port: its node, its leaf, its cable, the port in place_text's spelling."""
    return (p.node, p.leaf, p.cable, f"{p.node} {p.hca}/{p.port}")


@case("ACC-NO-DATA")
def _acc_no_data(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    (d / "nodes" / "gpu03" / "nvidia-smi-nvlink").unlink()
    (d / "links" / plan.links[0].name).unlink()
    shutil.rmtree(d / "nccl")  # a collective over many nodes: no device of its own
    return judge(c.lab, d, plan).findings, [("gpu03", None, None, None), port_of(plan.links[0].client),
                                            *[NONE] * len(plan.fabric)]


@case("ACC-PARSE")
def _acc_parse(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    (d / "nodes" / "gpu04" / "nvidia-smi-nvlink").write_text("GPU 0: garbage\n\tLink x: what\n")
    (d / "links" / plan.links[1].name).write_text("")
    return judge(c.lab, d, plan).findings, [("gpu04", None, None, None), port_of(plan.links[1].client)]


@case("ACC-DCGM")
def _acc_dcgm(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    shutil.copy(FIX / "dcgmi-diag" / "azure-nd-h200-v5-8xh200-dcgm3.1.8-r1-persistence-mode-fail-wrapped-error.txt",
                d / "nodes" / "gpu02" / "dcgmi-diag")
    return _host_only(judge(c.lab, d, plan).findings, "ACC-DCGM", "gpu02")


@case("ACC-PCIE")
def _acc_pcie(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    shutil.copy(FIX / "nvidia-smi-q" / "gpud-1xtitanv-560.35.03.txt", d / "nodes" / "gpu06" / "nvidia-smi-q")
    return _host_only(judge(c.lab, d, plan).findings, "ACC-PCIE", "gpu06")


@case("ACC-NVLINK")
def _acc_nvlink(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    shutil.copy(FIX / "nvidia-smi-nvlink-status" / "nvutil-rtx2080s-595.71.05-links-inactive.txt",
                d / "nodes" / "gpu05" / "nvidia-smi-nvlink")
    return _host_only(judge(c.lab, d, plan).findings, "ACC-NVLINK", "gpu05")


@case("ACC-NCCL-NODE")
def _acc_nccl_node(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    d = run_dir(c.tmp, plan)
    (d / "nodes" / "gpu07" / "nccl-single").write_text(
        nccl("gcm-1node-8xa100-80gb-allreduce-hostname-templated.txt", 12.5))
    return judge(c.lab, d, plan).findings, [("gpu07", None, None, None)]


@case("ACC-LINK")
def _acc_link(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    victim = plan.ports[3]
    return judge(c.lab, run_dir(c.tmp, plan, slow_cable=victim.cable), plan).findings, [port_of(victim)]


@case("FAB-UNROUTED")
def _fab_unrouted(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    """The lab's real minhop tables with every route out of uplink C-00020 (leaf-su01-r0/21 - spine01/1) moved
    off it: CONSTRUCTED."""
    return (unrouted(c.lab, around(c.lab, routes_of("minhop"), "C-00020"), set()),
            [(None, "leaf-su01-r0", "C-00020", "leaf-su01-r0/21")])


@case("ACC-UPLINK")
def _acc_uplink(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    """The lab's real minhop tables, the routed plan, the stand-in rating each test along its route, one uplink
    (leaf-su01-r0/21 - spine01/1) at a quarter of its rate: CONSTRUCTED outputs."""
    tables = ibroute.parse((FIX / "ibroute" / "lab-minhop" / "opensm-lfts.dump").read_text(encoding="utf-8"))
    plan, routes, _ = routed_plan(c.lab, accept_plan(c.lab), tables)
    slow = "C-00020"
    gbps: dict[str, float | None] = {cable.id: (50.0 if cable.id == slow else 200.0) for cable in c.lab.inv.cables}
    d = c.tmp / "run"
    for rel, text in standin_outputs(plan, dict.fromkeys((p.label for p in plan.ports), 200.0), None,
                                     rates_along(c.lab, routes, plan.links, gbps)).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text, encoding="utf-8")
    return judge(c.lab, d, plan, routes).findings, [(None, "leaf-su01-r0", slow, "leaf-su01-r0/21")]


@case("ACC-NCCL-FABRIC")
def _acc_nccl_fabric(c: Ctx) -> tuple[list[Finding], list[Ids]]:
    plan = accept_plan(c.lab)
    return judge(c.lab, run_dir(c.tmp, plan, fabric_busbw=12.5), plan).findings, [NONE] * len(plan.fabric)


# -- the tests -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


def test_every_rule_has_a_case() -> None:
    """A new rule needs its case here: what its finding names by id, in the JSON."""
    assert sorted(set(RULES) - set(CASES)) == []


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_json_of_each_rule_names_its_host_switch_cable_and_port(rule: str, prod: Checked,
                                                                    tmp_path: Path) -> None:
    found, want = CASES[rule](Ctx(lab_index(), prod, tmp_path))
    doc = to_json(Report(findings=found))  # what validate and accept print for --format json
    mine = [f for f in doc["findings"] if f["rule"] == rule]
    assert mine, f"the case of {rule} did not trigger it: {sorted({f.rule for f in found})}"
    got = sorted(((f["host"], f["switch"], f["cable"], f["port"]) for f in mine), key=repr)
    assert got == sorted(want, key=repr), [f["subject"] for f in mine]
    for f in mine:  # a port is on the host or the switch the finding names
        assert f["port"] is None or f["port"].split(" ")[0].split("/")[0] in (f["host"], f["switch"])


def _saved(tmp: Path, index: Index, fab: SimFabric) -> Path:
    saved = tmp / "saved"
    (saved / "fabric").mkdir(parents=True, exist_ok=True)
    (saved / "fabric" / "ibnetdiscover.txt").write_text(render(index, fab))
    return saved


def _json(args: list[str]) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, json.loads(result.stdout)


def test_validate_json_names_the_cable_and_limit_keeps_a_finding_by_its_host_and_switch(tmp_path: Path) -> None:
    index = lab_index()
    fab = from_index(index)
    fab.remove("C-00010")  # gpu05's second rail
    fab.degrade("C-00020", width="1x")  # leaf-su01-r0/21 - spine01/1: an uplink, no host end
    base = ["validate", str(LAB), "--from", str(_saved(tmp_path, index, fab)), "--fabric-only", "--format", "json"]
    code, doc = _json(base)
    assert code == 4
    by_cable = {f["cable"]: f for f in doc["findings"]}
    assert by_cable["C-00010"]["rule"] == "FAB-MISSING" and by_cable["C-00010"]["host"] == "gpu05"
    assert by_cable["C-00010"]["port"] == "gpu05 mlx5_1/1" and by_cable["C-00010"]["switch"] == "leaf-su02-r1"
    assert by_cable["C-00010"]["inventory"] == "cables[9]"  # the model path stays, for file:line
    assert by_cable["C-00010"]["where"].startswith(str(LAB / "fabric.yaml"))
    assert by_cable["C-00020"]["host"] is None and by_cable["C-00020"]["switch"] == "leaf-su01-r0"
    # --limit keeps what is about its hosts (by `host`), --switch what is about that switch (by `switch`)
    code, doc = _json([*base, "--limit", "gpu05"])
    assert code == 4 and [f["cable"] for f in doc["findings"]] == ["C-00010"]
    code, doc = _json([*base, "--limit", "gpu01"])
    assert code == 0 and doc["findings"] == []
    code, doc = _json([*base, "--limit", "gpu01", "--switch", "leaf-su01-r0"])
    assert code == 4 and [f["cable"] for f in doc["findings"]] == ["C-00020"]


def test_limit_keeps_a_plane_not_collected_and_drops_another_hosts_echo(tmp_path: Path) -> None:
    index = lab_index()
    obs = Observations(hosts={"gpu01": {}}, unreachable={"gpu03": "ssh: no route to host"})
    save_dir(tmp_path / "saved", obs)
    code, doc = _json(["validate", str(LAB), "--from", str(tmp_path / "saved"), "--limit", "gpu01",
                       "--format", "json"])
    assert code == 4
    assert sorted((f["rule"], f["host"]) for f in doc["findings"]) == [("FAB-NO-DATA", None),
                                                                       ("HOST-NO-DATA", "gpu01")]
    assert index.nodes["gpu03"]  # its HOST-UNREACHABLE is another host's business


def test_accept_json_names_the_slow_port_by_id(tmp_path: Path) -> None:
    index = lab_index()
    plan = accept_plan(index)
    victim = plan.ports[0]
    code, doc = _json(["accept", str(LAB), "--from", str(run_dir(tmp_path, plan, slow_cable=victim.cable)),
                       "--format", "json"])
    assert code == 4
    (f,) = doc["findings"]
    assert (f["rule"], f["host"], f["switch"], f["cable"], f["port"]) == ("ACC-LINK", *port_of(victim))
