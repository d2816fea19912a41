"""Pure-Python parts of the lab: no ibsim, no podman, no root needed (not marked lab)."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from clusterforge.lab.errors import LabSpecError, NetFileError
from clusterforge.lab.guest import ibwrap
from clusterforge.lab.ibsim import IbSim, LocalEndpoint, RemoteEndpoint, client_env
from clusterforge.lab.image import DEFAULT_PACKAGES, debian_mirror, image_tag, read_apt_sources
from clusterforge.lab.netfile import Endpoint, parse_netfile
from clusterforge.lab.observe import parse_iblinkinfo, parse_ibnetdiscover, parse_ibstat
from clusterforge.lab.proc import ProcessRecord
from clusterforge.lab.spec import LabHca, LabHost, LabSpec, validate_spec
from clusterforge.lab.sshkeys import known_hosts_line, ssh_argv
from clusterforge.lab.state import HostRecord, LabState, read_state, write_state

FIXTURE = Path(__file__).parents[1] / "fixtures" / "lab" / "fabric.net"


# -- net file ---------------------------------------------------------------------


def test_fixture_netfile_topology() -> None:
    net = parse_netfile(FIXTURE)
    assert sorted(n.node_id for n in net.switches()) == ["leaf01", "leaf02", "spine01"]
    assert sorted(n.desc for n in net.cas()) == [
        "gpu01 mlx5_0", "gpu01 mlx5_1", "gpu02 mlx5_0", "gpu02 mlx5_1",
        "sm01 mlx5_0", "stor01 mlx5_0",
    ]
    links = list(net.links())
    assert len(links) == 10
    assert {net.link_rate(a) for a, _ in links} == {("4X", "HDR")}
    assert net.peers[Endpoint("spine01", 3)] == Endpoint("leaf02", 7)
    assert net.resolve("gpu01 mlx5_1") == "gpu01-mlx5_1"
    assert net.resolve("leaf01") == "leaf01"


def test_netfile_per_port_options_and_connection_data(tmp_path: Path) -> None:
    f = tmp_path / "n.net"
    f.write_text(
        "width=3\nspeed=7\nextspeed=7\n"
        'Switch 4 "sw"\n'
        '[1] "a"[1] w=1\n'  # only one end narrowed: the link still trains to 1X
        '[2] "b"[1]  # "b" lid 3 4xEDR\n'
        '[3] "c"[1]\n'
        '\nHca 1 "a"\n[1] "sw"[1]\n'
        '\nHca 1 "b"\n[1] "sw"[2]  # lid 3 lmc 0 "sw" lid 1 4xEDR\n'
        '\nHca 1 "c"\n[1] "sw"[3] e=2\n'
    )
    net = parse_netfile(f)
    assert net.link_rate(Endpoint("sw", 1)) == ("1X", "HDR")
    assert net.link_rate(Endpoint("sw", 2)) == ("4X", "EDR")
    assert net.link_rate(Endpoint("sw", 3)) == ("4X", "EDR")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('Switch 2 "s"\n[1] "h"[1]\n\nHca 1 "h"\n[1] "s"[2]\n', "but"),
        ('Switch 2 "s"\n[1] "nope"[1]\n', "unknown node"),
        ('include "other.net"\n', "include"),
        ('Switch 2 "s"\n[3] "h"[1]\n', "outside"),
        ('Hca 1 "' + "x" * 32 + '"\n', "31 chars"),
    ],
)
def test_netfile_rejects(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.net"
    f.write_text(text)
    with pytest.raises(NetFileError, match=message):
        parse_netfile(f)


# -- diag parsers ---------------------------------------------------------------------

IBNETDISCOVER = """\
vendid=0x0
devid=0xd2f0
switchguid=0xc42a10300000101(c42a10300000101)
Switch\t8 "S-0c42a10300000101"\t\t# "leaf01" enhanced port 0 lid 2 lmc 0
[1]\t"H-0c42a10300001000"[1](c42a10300001001) \t\t# "gpu01 mlx5_0" lid 5 4xHDR
[7]\t"S-0c42a10300000100"[1]\t\t# "spine01" lid 1 1xEDR

switchguid=0xc42a10300000100(c42a10300000100)
Switch\t8 "S-0c42a10300000100"\t\t# "spine01" enhanced port 0 lid 1 lmc 0
[1]\t"S-0c42a10300000101"[7]\t\t# "leaf01" lid 2 1xEDR

caguid=0xc42a10300001000
Ca\t1 "H-0c42a10300001000"\t\t# "gpu01 mlx5_0"
[1](c42a10300001001) \t"S-0c42a10300000101"[1]\t\t# lid 5 lmc 0 "leaf01" lid 2 4xHDR
"""

IBLINKINFO = """\
CA: gpu01 mlx5_0:
      0x0c42a10300001001      5    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    1[  ] "leaf01" (Could be 12X )
Switch: 0x0c42a10300000101 leaf01:
           2    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       5    1[  ] "gpu01 mlx5_0" (Could be 12X )
           2    2[  ] ==( 4X        53.125 Gbps Initialize/Disabled)==>      "Port not available"
           2    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    7[  ] ==( 1X      25.78125 Gbps Active/  LinkUp)==>       1    1[  ] "spine01" (Could be 12X Could be 53.125 Gbps)
"""  # noqa: E501


def test_parse_ibnetdiscover() -> None:
    d = parse_ibnetdiscover(IBNETDISCOVER)
    assert set(d.nodes) == {"leaf01", "spine01", "gpu01 mlx5_0"}
    assert d.nodes["leaf01"].lid == 2
    assert d.port_lids[("gpu01 mlx5_0", 1)] == 5
    assert d.lid_of(("leaf01", 7)) == 2
    assert len(d.links) == 2
    assert d.rate(("spine01", 1)) == "1xEDR"
    assert d.peer(("gpu01 mlx5_0", 1)) == ("leaf01", 1)


def test_parse_iblinkinfo() -> None:
    li = parse_iblinkinfo(IBLINKINFO)
    assert li[("gpu01 mlx5_0", 1)].peer == ("leaf01", 1)
    assert li[("leaf01", 1)].rate == "4XHDR"
    assert (li[("leaf01", 2)].state, li[("leaf01", 2)].phys, li[("leaf01", 2)].peer) == (
        "Initialize", "Disabled", None)
    assert (li[("leaf01", 4)].state, li[("leaf01", 4)].width) == ("Down", None)
    assert (li[("leaf01", 7)].width, li[("leaf01", 7)].speed) == ("1X", "EDR")


# umad2sim's own ibstat (every CA "ibsim0", 4X HDR printed as 104), as the wrapper gets it: the first CA
# of tests/fixtures/ibstat/clusterforge-lab-umad2sim-2hca-hdr.txt before the wrapper's rewrite
IBSTAT_SIM = """\
CA 'ibsim0'
\tCA type: simulator
\tNumber of ports: 1
\tFirmware version: 1
\tHardware version: a1
\tNode GUID: 0x02cf48efff690da0
\tSystem image GUID: 0x02cf48efff690da0
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 104
\t\tBase lid: 5
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0x0050c048
\t\tPort GUID: 0x02cf48efff690da1
\t\tLink layer: IB
"""

PORTINFO = """\
# Port info: DR path slid 65535; dlid 65535; 0 port 1
LinkWidthActive:.................4X
LinkSpeedActive:.................10.0 Gbps
LinkSpeedExtActive:..............53.125 Gbps
"""


def test_guest_ibstat_rewrite_names_device_and_fixes_hdr_rate() -> None:
    assert ibwrap.rate_from_portinfo(PORTINFO) == "200"
    out = ibwrap.rewrite_ibstat(IBSTAT_SIM, "mlx5_1", {1: "200"})
    cas = parse_ibstat(out)
    assert [c.name for c in cas] == ["mlx5_1"]
    assert (cas[0].ports[0].state, cas[0].ports[0].rate, cas[0].ports[0].lid) == (
        "Active", "200", 5)
    edr_1x = PORTINFO.replace("4X", "1X").replace("53.125", "25.78125")
    assert ibwrap.rate_from_portinfo(edr_1x) == "25"
    qdr = "LinkWidthActive:....4X\nLinkSpeedActive:....10.0 Gbps\nLinkSpeedExtActive:...0\n"
    assert ibwrap.rate_from_portinfo(qdr) == "40"


def test_guest_device_selection(tmp_path: Path) -> None:
    conf = ibwrap.Conf("198.18.0.254", 7070, (ibwrap.Device("mlx5_0", "a"),
                                               ibwrap.Device("mlx5_1", "b")), 60)
    dev, args = ibwrap.select_device(conf, ["-C", "mlx5_1", "-P", "1"])
    assert (dev.sim_host, args) == ("b", ["-C", "ibsim0", "-P", "1"])
    dev, args = ibwrap.select_device(conf, ["--Ca=mlx5_0"])
    assert (dev.sim_host, args) == ("a", ["-C", "ibsim0"])
    dev, args = ibwrap.select_device(conf, ["-v"])
    assert (dev.sim_host, args) == ("a", ["-v"])
    with pytest.raises(SystemExit):
        ibwrap.select_device(conf, ["-C", "mlx5_9"])


# -- spec ---------------------------------------------------------------------------


def _spec(tmp_path: Path, **kw: object) -> LabSpec:
    base: dict[str, object] = {
        "name": "unit",
        "network_cidr": "198.18.7.0/24",
        "hosts": (
            LabHost("gpu01", "198.18.7.11", (LabHca("mlx5_0", "gpu01-mlx5_0"),)),
            LabHost("sm01", "198.18.7.14", (LabHca("mlx5_0", "sm01-mlx5_0"),),
                    role="subnet-manager"),
        ),
        "netfile": FIXTURE,
        "state_dir": tmp_path / "state",
    }
    base.update(kw)
    return LabSpec(**base)  # type: ignore[arg-type]


def test_spec_valid_and_derived_addresses(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    validate_spec(spec)
    assert (spec.gateway, spec.ibsim_address) == ("198.18.7.1", "198.18.7.254")
    assert [h.name for h in spec.sm_hosts] == ["sm01"]
    assert spec.host("gpu01").sim_hosts == ("gpu01-mlx5_0",)
    assert spec.digest() == _spec(tmp_path).digest()
    assert spec.digest() != _spec(tmp_path, network_cidr="198.18.8.0/24").digest()


def test_spec_reports_every_problem(tmp_path: Path) -> None:
    bad = _spec(
        tmp_path,
        name="Bad_Name",
        hosts=(
            LabHost("gpu01", "198.18.7.254", (LabHca("mlx5_0", 'x"y'),)),
            LabHost("gpu01", "10.0.0.1", (LabHca("bad dev", "gpu01-mlx5_1"),)),
        ),
    )
    with pytest.raises(LabSpecError) as exc:
        validate_spec(bad)
    text = "\n".join(exc.value.problems)
    for needle in ("lab name", "reserved", "used twice", "not a host address",
                   "sim_host", "device 'bad dev'"):
        assert needle in text


# -- environment, ssh, state, image ----------------------------------------------


@pytest.mark.skipif(not glob.glob("/usr/lib/*/umad2sim/libumad2sim.so"),
                    reason="libumad2sim0 not installed")
def test_client_env_local_and_remote() -> None:
    local = client_env(LocalEndpoint("cf-x"), "gpu01-mlx5_0", base={"PATH": "/usr/bin"})
    assert local["IBSIM_SOCKNAME"] == "cf-x" and "IBSIM_SERVER_NAME" not in local
    assert local["SIM_HOST"] == "gpu01-mlx5_0"
    assert local["LD_PRELOAD"].endswith("libumad2sim.so")
    remote = client_env(RemoteEndpoint("198.18.7.254", 7070), None, base={"SIM_HOST": "old"})
    assert (remote["IBSIM_SERVER_NAME"], remote["IBSIM_SERVER_PORT"]) == ("198.18.7.254", "7070")
    assert "SIM_HOST" not in remote and "IBSIM_SOCKNAME" not in remote


def test_ssh_argv_is_strict_and_quotes_the_command(tmp_path: Path) -> None:
    argv = ssh_argv(tmp_path / "k", tmp_path / "kh", "198.18.7.11", ["echo", "a b;c"])
    assert "StrictHostKeyChecking=yes" in argv
    assert f"UserKnownHostsFile={tmp_path / 'kh'}" in argv
    assert argv[-2:] == ["root@198.18.7.11", "echo 'a b;c'"]
    line = known_hosts_line(["gpu01", "198.18.7.11"], "ssh-ed25519 AAAAC3 root@gpu01")
    assert line == "gpu01,198.18.7.11 ssh-ed25519 AAAAC3"


def test_state_roundtrip_is_atomic(tmp_path: Path) -> None:
    st = LabState(
        lab="unit", mode="podman", state_dir=tmp_path, spec_digest="d",
        network_cidr="198.18.7.0/24", gateway="198.18.7.1", ibsim_address="198.18.7.254",
        netfile=FIXTURE, network="cf-lab-unit", bridge="podman3",
        ibsim=IbSim(ProcessRecord(123, 456, "ibsim"),
                    RemoteEndpoint("198.18.7.254", 7070, "cf-lab-unit-ibsim"),
                    tmp_path / "ibsim", FIXTURE),
        hosts={"gpu01": HostRecord("gpu01", "198.18.7.11", "compute",
                                   [("mlx5_0", "gpu01-mlx5_0")], "cf-lab-unit-gpu01", "abc")},
    )
    write_state(st)
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]  # no temp file left
    back = read_state(tmp_path)
    assert back is not None and back.to_json() == st.to_json()
    assert json.loads((tmp_path / "lab.json").read_text())["ibsim"]["process"]["pid"] == 123


def test_apt_sources_parsing_and_image_tag(tmp_path: Path) -> None:
    apt = tmp_path / "etc/apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text(
        "# comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main contrib\n")
    (apt / "sources.list.d/security.sources").write_text(
        "Types: deb\nURIs: http://sec.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n")
    (apt / "sources.list.d/x.list.disabled").write_text("deb http://nope/ bookworm main\n")
    srcs = read_apt_sources(tmp_path)
    assert [s.uri for s in srcs] == ["http://mirror.example/debian",
                                     "http://sec.example/debian-security"]
    assert debian_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    assert image_tag(DEFAULT_PACKAGES) == image_tag(tuple(reversed(DEFAULT_PACKAGES)))
    assert image_tag(DEFAULT_PACKAGES) != image_tag((*DEFAULT_PACKAGES, "vim"))


def test_lab_status_without_a_lab_is_a_message_not_a_traceback(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "labs"))
    result = CliRunner().invoke(app, ["lab", "status", str(tmp_path / "nolab")])
    assert result.exit_code == 1
    assert "no lab recorded" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
