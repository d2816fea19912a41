"""The deploy per OS family: the lab inventory with gpu01 declared Ubuntu 22.04 and gpu02 Rocky 9, each with its
family's package names (catalog/os.yaml), source (apt list or dnf .repo), pins (apt preferences + hold, or dnf's
versionlock) and commands; a converged host needs nothing, a pin bump moves the lock with the package."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cf_os_families import declare_os
from clusterforge.api import load_checked
from clusterforge.deploy.changes import component_changes, reboot_needed
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import DNF_REPO_FILE, host_plans
from clusterforge.deploy.facts import HostFacts, PackageFact, parse_state, state_script
from clusterforge.deploy.options import DeployOptions, DnfRepo, Mirror, mirrors_of_inventory
from clusterforge.deploy.pkgmgr import DNF_MANAGER, parse_versionlock
from clusterforge.deploy.runner import probe_args

ROOT = Path(__file__).resolve().parents[3]
EL9_MIRROR = "https://mirror.example.org/el9/x86_64 gpgkey=https://mirror.example.org/el9/RPM-GPG-KEY-site"
UBUNTU_MIRROR = "https://mirror.example.org/ubuntu jammy main"


def _env(tmp_path: Path, driver: str = "550.90.07") -> Path:
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    declare_os(env, {"gpu01": "ubuntu2204", "gpu02": "rocky9"})
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("nvidia_driver: 550.90.07", f"nvidia_driver: {driver}")
                        .replace("deploy:\n", f"deploy:\n  package_mirror: https://mirror.example.org/debian "
                                 f"bookworm main\n  package_mirrors:\n    ubuntu: {UBUNTU_MIRROR}\n"
                                 f"    el9: {EL9_MIRROR}\n", 1))
    return env


def _plans(env: Path) -> dict[str, HostPlan]:
    index = load_checked(env).index
    opts = DeployOptions("lab", repo=Mirror.of_inventory(index.inv), mirrors=mirrors_of_inventory(index.inv))
    return host_plans(index, opts)


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostPlan]:
    return _plans(_env(tmp_path_factory.mktemp("families")))


def _pins(plan: HostPlan, component: str) -> list[tuple[str, str]]:
    comp = plan.component(component)
    assert comp is not None, component
    return [(p.package, p.version) for p in comp.pins]


def test_each_host_gets_its_familys_names_and_manager(plans: dict[str, HostPlan]) -> None:
    deb, ubu, el = plans["gpu03"], plans["gpu01"], plans["gpu02"]
    assert (deb.package_manager, ubu.package_manager, el.package_manager) == ("apt", "apt", "dnf")
    assert _pins(deb, "nvidia") == [("nvidia-driver-550", "550.90.07-1"), ("nvidia-fabricmanager-550", "550.90.07-1")]
    assert _pins(ubu, "nvidia") == [("nvidia-driver-pinning-550", "550.90.07-1"), ("nvidia-open", "550.90.07-1"),
                                    ("nvidia-fabricmanager-550", "550.90.07-1")]
    assert _pins(el, "nvidia") == [("nvidia-open", "550.90.07-1"), ("nvidia-fabric-manager", "550.90.07-1")]
    # Fabric Manager at exactly the driver's version in every family; the driver's own package marked
    for plan in (deb, ubu, el):
        nvidia = plan.component("nvidia")
        assert nvidia is not None and len({p.version for p in nvidia.pins}) == 1
        assert [p.package for p in nvidia.pins if p.driver] == [("nvidia-driver-550" if plan is deb else "nvidia-open")]
    el_nvidia = el.component("nvidia")
    assert el_nvidia is not None and el_nvidia.streams == ("nvidia-driver:550-open",)
    assert [p for p, _ in _pins(el, "nccl")][:2] == ["libnccl", "libnccl-devel"]
    assert [p for p, _ in _pins(ubu, "nccl")][:2] == ["libnccl2", "libnccl-dev"]
    assert {c.package_manager for c in el.components} == {"dnf"}
    assert {c.package_manager for c in ubu.components} == {"apt"}


def test_node_exporter_runs_under_each_familys_names(plans: dict[str, HostPlan]) -> None:
    """EL9's node_exporter is EPEL's: its package and unit names, the arguments in /etc/sysconfig/node_exporter and a
    drop-in that runs the binary with them; Debian and Ubuntu keep Debian's package and /etc/default file."""
    def mon(host: str) -> tuple[dict[str, str], set[str], tuple[str, ...], tuple[str, ...], dict[str, str]]:
        comp = plans[host].component("monitoring")
        assert comp is not None and not comp.problems, (host, comp and comp.problems)
        files = {f.dest: f.content for f in comp.files}
        return files, set(comp.packages), comp.services, comp.problems, {f.dest: f.unit for f in comp.files}

    el_files, el_pkgs, el_units, _, el_unit_of = mon("gpu02")
    dropin = "/etc/systemd/system/node_exporter.service.d/clusterforge.conf"
    assert "/etc/default/prometheus-node-exporter" not in el_files
    assert el_pkgs >= {"golang-github-prometheus-node-exporter"} and "prometheus-node-exporter" not in el_pkgs
    assert "node_exporter" in el_units and "prometheus-node-exporter" not in el_units
    assert el_unit_of["/etc/sysconfig/node_exporter"] == el_unit_of[dropin] == "node_exporter"
    assert "\nEnvironmentFile=\nEnvironmentFile=/etc/sysconfig/node_exporter\n" in el_files[dropin]
    assert "\nExecStart=\nExecStart=/usr/bin/node_exporter $ARGS\n" in el_files[dropin]
    for host in ("gpu01", "gpu03"):
        files, pkgs, units, _, unit_of = mon(host)
        assert not any("node_exporter" in d for d in files), host
        assert "prometheus-node-exporter" in pkgs and "prometheus-node-exporter" in units
        assert unit_of["/etc/default/prometheus-node-exporter"] == "prometheus-node-exporter"
        # the same arguments on every family
        def args(text: str) -> list[str]:
            return [line for line in text.splitlines() if line.startswith("ARGS=")]
        deb_args = args(files["/etc/default/prometheus-node-exporter"])
        assert deb_args == args(el_files["/etc/sysconfig/node_exporter"]) and "--collector.infiniband" in deb_args[0]


def test_a_monitoring_server_off_debian_fails_its_preflight(tmp_path: Path) -> None:
    """The store and Alertmanager are Debian's packages: a monitoring node declared Rocky fails its monitoring
    preflight saying so (nothing of it changes), its other components and the other hosts go on."""
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    index = load_checked(env).index
    mon = index.inv.monitoring
    assert mon is not None
    server = (mon.servers or [n.name for n in index.inv.nodes if n.role == mon.server_role])[0]
    declare_os(env, {server: "rocky9"})
    plans = _plans(env)
    comp = plans[server].component("monitoring")
    assert comp is not None and len(comp.problems) == 1
    assert comp.problems[0].startswith("a monitoring server runs Debian 12 here") and "el9" in comp.problems[0]
    assert all(not c.problems for c in plans[server].components if c.name != "monitoring")
    assert all(not c.problems for h, p in plans.items() if h != server for c in p.components)


def test_a_component_a_family_does_not_get_fails_its_preflight(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """catalog/os.yaml `not_deployed` (none today): such a component fails its preflight with the reason."""
    from clusterforge.catalog import catalog

    env = _env(tmp_path)
    index = load_checked(env).index
    el9 = index.cat.os.families["el9"]
    monkeypatch.setitem(catalog().os.families, "el9", el9.model_copy(update={"not_deployed": {"nccl": "why"}}))
    plans = host_plans(load_checked(env).index, DeployOptions("lab", mirrors=mirrors_of_inventory(index.inv)))
    nccl = plans["gpu02"].component("nccl")
    assert nccl is not None and nccl.problems == ("not deployed on rocky9 yet: why",)
    assert all(not c.problems for c in plans["gpu02"].components if c.name != "nccl")


def test_the_sources_are_the_familys_own(plans: dict[str, HostPlan]) -> None:
    def files(plan: HostPlan) -> dict[str, str]:
        repo = plan.component("repo")
        assert repo is not None
        return {f.dest: f.content for f in repo.files}

    el = files(plans["gpu02"])
    assert set(el) == {DNF_REPO_FILE}  # no apt file on an EL host; its pins are versionlock's
    repo = el[DNF_REPO_FILE]
    assert "[clusterforge]\n" in repo and "baseurl=https://mirror.example.org/el9/x86_64\n" in repo
    assert "gpgcheck=1\n" in repo and "gpgkey=https://mirror.example.org/el9/RPM-GPG-KEY-site\n" in repo
    ubu = files(plans["gpu01"])
    assert "deb https://mirror.example.org/ubuntu jammy main\n" in ubu["/etc/apt/sources.list.d/clusterforge.list"]
    assert "Package: nvidia-open\nPin: version 550.90.07-1\n" in ubu["/etc/apt/preferences.d/clusterforge.pref"]
    deb = files(plans["gpu03"])
    assert "deb https://mirror.example.org/debian bookworm main\n" in deb["/etc/apt/sources.list.d/clusterforge.list"]
    assert DnfRepo.parse("file:///srv/repo gpgcheck=0") == DnfRepo("file:///srv/repo", "", False)


def test_a_staged_run_never_points_a_family_at_the_sites_mirror(tmp_path: Path) -> None:
    from clusterforge.deploy.api import DeployRequest, plans_for

    env = _env(tmp_path)
    index = load_checked(env).index
    staged = plans_for(env, DeployRequest(), Mirror("http://198.19.77.1:8765/", "lab", ("main",), "trusted=yes"),
                       index)
    contents = " ".join(f.content for p in staged.values() for f in p.files)
    assert "mirror.example.org" not in contents


def _fresh(plan: HostPlan) -> HostFacts:
    return HostFacts(systemd=True)


def test_a_fresh_el9_host_enables_the_stream_installs_and_locks(plans: dict[str, HostPlan]) -> None:
    nvidia = plans["gpu02"].component("nvidia")
    assert nvidia is not None
    changes = component_changes(nvidia, _fresh(plans["gpu02"]))
    commands = [c for ch in changes for c in ch.commands]
    assert commands[0] == "dnf -q -y module enable nvidia-driver:550-open"
    assert commands[1] == ("{ dnf versionlock delete nvidia-open nvidia-fabric-manager >/dev/null 2>&1 || true; } && "
                           "dnf -q -y install nvidia-open-550.90.07-1 nvidia-fabric-manager-550.90.07-1")
    assert commands[2] == "dnf versionlock add nvidia-open-550.90.07-1 nvidia-fabric-manager-550.90.07-1"
    assert [c for c in commands if c.startswith("systemctl")] == [
        "systemctl enable --now nvidia-persistenced", "systemctl enable --now nvidia-fabricmanager"]
    assert not any("apt" in c for c in commands)


def _converged(plan: HostPlan) -> HostFacts:
    """What the probe reads on an EL9 host with every pin installed (a dist tag on each) and locked."""
    versions = {p: "1.0-1" for c in plan.components for p in c.packages}  # the unpinned ones at any version
    versions |= {p.package: p.version for c in plan.components for p in c.pins}
    pkgs = sorted(versions)
    lines = ["@@cf systemd", "no", "@@cf rpm", *(f"{n}\t{versions[n]}.el9\tii " for n in pkgs),
             "@@cf versionlock", "# Added lock on Mon Dec  7 00:00:00 2026",
             *(f"{n}-0:{versions[n]}.el9.*" for n in pkgs)]
    return parse_state(lines)


def test_a_converged_el9_host_needs_nothing_and_a_bump_moves_the_lock(tmp_path: Path,
                                                                      plans: dict[str, HostPlan]) -> None:
    el = plans["gpu02"]
    facts = _converged(el)
    assert all(facts.packages[p.package].held for p in el.pins)
    assert [ch for c in el.components for ch in component_changes(c, facts) if ch.kind in ("package", "hold")] == []
    bumped = _plans(_env(tmp_path, driver="550.127.05"))["gpu02"]
    nvidia = bumped.component("nvidia")
    assert nvidia is not None
    changes = component_changes(nvidia, facts)
    kinds = [(ch.kind, ch.target, ch.detail) for ch in changes if ch.kind in ("package", "hold")]
    assert kinds == [("package", "nvidia-open", "550.90.07-1.el9 -> 550.127.05-1"),
                     ("package", "nvidia-fabric-manager", "550.90.07-1.el9 -> 550.127.05-1"),
                     ("hold", "nvidia-open", "hold at pinned version"),
                     ("hold", "nvidia-fabric-manager", "hold at pinned version")]
    commands = [c for ch in changes for c in ch.commands]
    assert "dnf versionlock delete nvidia-open nvidia-fabric-manager" in commands[1]
    assert commands[2] == "dnf versionlock add nvidia-open-550.127.05-1 nvidia-fabric-manager-550.127.05-1"


def test_on_el_every_written_file_gets_its_selinux_context_and_nothing_turns_selinux_off(
        plans: dict[str, HostPlan]) -> None:
    el, deb = plans["gpu02"], plans["gpu03"]
    fresh = HostFacts(systemd=True)
    el_files = [ch for c in el.components for ch in component_changes(c, fresh) if ch.kind == "file"]
    assert el_files and all(ch.commands[-1] == f"restorecon -F {ch.target}" for ch in el_files)
    deb_cmds = [x for c in deb.components for ch in component_changes(c, fresh) for x in ch.commands]
    assert not any("restorecon" in x for x in deb_cmds)
    everything = [x for c in el.components for ch in component_changes(c, fresh) for x in ch.commands]
    roles = "\n".join(p.read_text() for p in (ROOT / "roles").rglob("*.yml"))
    for text in (*everything, roles):
        for off in ("setenforce", "SELINUX=disabled", "SELINUX=permissive", "selinux=0", "enforcing=0"):
            assert off not in text, off


def test_versions_match_before_a_dist_tag_only() -> None:
    assert DNF_MANAGER.matches("550.90.07-1", "550.90.07-1")
    assert DNF_MANAGER.matches("550.90.07-1", "550.90.07-1.el9")
    assert not DNF_MANAGER.matches("550.90.07-1", "550.90.07-10.el9")
    assert not DNF_MANAGER.matches("550.90.07-1", None)
    assert parse_versionlock(["# comment", "", "nvidia-open-3:550.90.07-1.el9.*", "!kernel-0:5.14.0-1.el9.*",
                              "libnccl-2.21.5-1+cuda12.4.*", "garbage"]) == {"nvidia-open", "libnccl"}


def test_the_probe_reads_rpm_and_the_locks_on_el9(plans: dict[str, HostPlan]) -> None:
    script = state_script(**probe_args(plans["gpu02"]))
    assert "rpm -q --qf" in script and "/etc/dnf/plugins/versionlock.list" in script and "dpkg-query" not in script
    deb = state_script(**probe_args(plans["gpu03"]))
    assert "dpkg-query" in deb and "rpm -q" not in deb
    facts = parse_state(["@@cf rpm", "nvidia-open\t550.90.07-1.el9\tii ", "@@cf versionlock",
                         "nvidia-open-3:550.90.07-1.el9.*", "telegraf-0:1.30.1-1.*"])
    assert facts.packages == {"nvidia-open": PackageFact("550.90.07-1.el9", "hi ")}  # a lock alone installs nothing


def test_reboot_is_judged_by_the_driver_package_of_the_family(plans: dict[str, HostPlan]) -> None:
    el = plans["gpu02"]
    facts = replace(_converged(el), nvidia_loaded="550.54.15")
    assert reboot_needed(el.pins, facts) == "nvidia module 550.54.15 loaded, 550.90.07 installed"


def test_the_runner_refreshes_and_checks_headers_with_dnf(plans: dict[str, HostPlan]) -> None:
    from clusterforge.deploy.os_target import OsFound
    from clusterforge.deploy.runner import deploy_host

    class Session:
        def __init__(self) -> None:
            self.ran: list[str] = []

        def connect(self) -> None:
            pass

        def facts(self, plan: HostPlan) -> HostFacts:
            return HostFacts(systemd=True, kernel="5.14.0-427.el9.x86_64", os=OsFound("rocky", "9.4"))

        def run(self, script: str, what: str, timeout: int = 0) -> str:
            self.ran.append(script)
            return {"ofed_info -s": "OFED-internal-24.04-0.7.0.0:"}.get(script, "installed" if "kernel-devel" in
                                                                          script else "")

    session = Session()
    el = plans["gpu02"]
    el = replace(el, components=tuple(c for c in el.components if c.name != "monitoring"))  # not on EL yet
    deploy_host(session, el, dry_run=False)  # type: ignore[arg-type]
    assert session.ran[1] == "dnf -q -y makecache"  # after the repo's .repo file went in
    headers = next(s for s in session.ran if "kernel-devel" in s)
    assert "rpm -q kernel-devel-5.14.0-427.el9.x86_64" in headers
    assert not any("apt-get" in s or "dpkg" in s for s in session.ran)
