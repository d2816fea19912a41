"""Facts in -> changes and commands out, for every component kind."""

from __future__ import annotations

import hashlib
from pathlib import Path

from deploy_helpers import data

from clusterforge.deploy.changes import component_changes, file_change, package_changes, reboot_needed
from clusterforge.deploy.component import Component, HostPlan, ManagedFile
from clusterforge.deploy.facts import FileFact, HostFacts, PackageFact, parse_state
from clusterforge.deploy.packages import Pin


def _all(plan: HostPlan, facts: HostFacts) -> list[tuple[str, str, str]]:
    return [c.key for comp in plan.components for c in component_changes(comp, facts)]


def test_converged_hosts_need_nothing(plans: dict[str, HostPlan]) -> None:
    # captured before the monitoring and healthcheck components existed: their own convergence (a second run
    # changes nothing) is checked on the lab (tests/lab/test_monitoring_deploy.py, test_lab_validate.py)
    later = ("monitoring", "healthcheck")
    sm01 = parse_state(data("probe-sm01-converged.out"))
    assert [k for k in _all(plans["sm01"], sm01) if k[0] not in later] == []
    # a GPU node's pin file gains the dcgm-exporter pin, and nothing else
    gpu01 = parse_state(data("probe-gpu01-converged.out"))
    changes = [c for comp in plans["gpu01"].components for c in component_changes(comp, gpu01)
               if c.component not in later]
    fresh = sorted(c.key for c in component_changes(plans["gpu01"].component("healthcheck"), gpu01))  # type: ignore[arg-type]
    assert fresh == [("healthcheck", "file", p) for p in ("/etc/clusterforge/nodecheck.json",
                                                        "/etc/slurm/clusterforge-healthcheck.conf",
                                                        "/usr/local/lib/clusterforge/cf-nodecheck")]
    assert [c.key for c in changes] == [("repo", "file", "/etc/apt/preferences.d/clusterforge.pref")]
    added = [line for line in changes[0].diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+", "+Package: dcgm-exporter", "+Pin: version 3.3.9-1", "+Pin-Priority: 1001"]


def test_fresh_gpu_host_needs_every_file_package_and_hold(plans: dict[str, HostPlan]) -> None:
    keys = _all(plans["gpu01"], parse_state(data("probe-gpu01-fresh.out")))
    files = {t for c, k, t in keys if k == "file"}
    assert {"/etc/nccl.conf", "/etc/hosts", "/etc/lnet.conf", "/etc/apt/preferences.d/clusterforge.pref"} <= files
    pkgs = {t for c, k, t in keys if k == "package"}
    assert {"nvidia-driver-550", "nvidia-fabricmanager-550", "libnccl2", "doca-ofed", "lustre-client-utils"} <= pkgs
    pinned = {p.package for p in plans["gpu01"].pins}
    assert {t for c, k, t in keys if k == "hold"} == pinned == pkgs - {"prometheus-node-exporter"}


def test_one_apt_transaction_per_component_with_exact_versions() -> None:
    pins = (Pin("libnccl2", "2.21.5-1+cuda12.4"), Pin("libnccl-dev", "2.21.5-1+cuda12.4"))
    facts = HostFacts(packages={"libnccl2": PackageFact("2.19.3-1+cuda12.2", "hi ")})
    changes = package_changes("nccl", pins, facts)
    assert [c.detail for c in changes if c.kind == "package"] == ["2.19.3-1+cuda12.2 -> 2.21.5-1+cuda12.4",
                                                                  "install 2.21.5-1+cuda12.4"]
    cmd = changes[0].commands[0]
    assert "apt-get" in cmd and "--allow-downgrades" in cmd and "--allow-change-held-packages" in cmd
    assert "libnccl2=2.21.5-1+cuda12.4" in cmd and "libnccl-dev=2.21.5-1+cuda12.4" in cmd
    holds = [c for c in changes if c.kind == "hold"]
    assert [h.target for h in holds] == ["libnccl-dev"]  # libnccl2 is already held
    assert holds[0].commands == ("apt-mark hold libnccl-dev",)


def test_file_mode_drift_and_diff() -> None:
    f = ManagedFile("/etc/nccl.conf", "nccl/nccl.conf.j2", {}, "A=1\n", 0o644)
    same = hashlib.sha256(b"A=1\n").hexdigest()
    assert file_change("nccl", f, HostFacts(files={f.dest: FileFact(0o644, same, b"A=1\n")})) is None
    mode = file_change("nccl", f, HostFacts(files={f.dest: FileFact(0o600, same, b"A=1\n")}))
    assert mode is not None and mode.detail == "mode 600 -> 644" and mode.diff == ""
    content = file_change("nccl", f, HostFacts(files={f.dest: FileFact(0o644, "x", b"A=0\n")}))
    assert content is not None and "-A=0" in content.diff and "+A=1" in content.diff
    assert content.upload == b"A=1\n"


def test_secret_files_are_never_diffed() -> None:
    f = ManagedFile("/etc/apt/auth.conf.d/clusterforge.conf", "", {}, "machine x login u password s3cret\n",
                    0o600, secret=True)
    ch = file_change("repo", f, HostFacts())
    assert ch is not None and ch.diff == "" and "s3cret" not in ch.detail


def test_opensm_resweeps_with_sighup_only_when_its_files_change() -> None:
    f = ManagedFile("/etc/opensm/opensm.conf", "opensm/opensm.conf.j2", {}, "sm_priority 15\n")
    comp = Component("opensm", (f,), packages=("opensm",), handler="opensm-resweep")
    installed = {"opensm": PackageFact("3.3.23-2", "ii ")}
    changed = component_changes(comp, HostFacts(packages=installed, processes={"opensm": [42]}))
    assert changed[-1].kind == "handler" and changed[-1].commands == ("kill -HUP 42",)
    sha = hashlib.sha256(b"sm_priority 15\n").hexdigest()
    same = HostFacts(packages=installed, processes={"opensm": [42]},
                     files={f.dest: FileFact(0o644, sha, b"sm_priority 15\n")})
    assert component_changes(comp, same) == []


def test_services_only_with_systemd() -> None:
    comp = Component("nvidia", services=("nvidia-persistenced",))
    assert component_changes(comp, HostFacts(systemd=False)) == []
    changes = component_changes(comp, HostFacts(systemd=True, services={"nvidia-persistenced": ("disabled", "")}))
    assert changes[0].commands == ("systemctl enable --now nvidia-persistenced",)


def test_peermem_loaded_only_once_the_driver_is() -> None:
    comp = Component("ofed", modules=("nvidia-peermem",))
    assert component_changes(comp, HostFacts()) == []
    assert component_changes(comp, HostFacts(nvidia_loaded="550.90.07"))[0].commands == ("modprobe nvidia-peermem",)


def test_reboot_only_when_the_loaded_module_differs() -> None:
    pins = [Pin("nvidia-driver-550", "550.90.07-1", driver=True)]
    pkg = {"nvidia-driver-550": PackageFact("550.90.07-1", "hi ")}
    assert reboot_needed(pins, HostFacts(packages=pkg)) is None  # not loaded: loads on first use
    assert reboot_needed(pins, HostFacts(packages=pkg, nvidia_loaded="550.90.07")) is None
    why = reboot_needed(pins, HostFacts(packages=pkg, nvidia_loaded="550.54.15"))
    assert why == "nvidia module 550.54.15 loaded, 550.90.07 installed"


def test_apply_script_writes_a_file_whose_path_needs_quoting(tmp_path: Path) -> None:
    import subprocess

    from clusterforge.deploy.runner import apply_script

    dest = tmp_path / "it's here" / "a b.conf"
    f = ManagedFile(str(dest), "", {}, "x = 1\n", 0o600)
    change = file_change("base", f, HostFacts())
    assert change is not None
    subprocess.run(["sh", "-c", apply_script([change])], check=True, timeout=30)
    assert dest.read_text() == "x = 1\n"
    assert dest.stat().st_mode & 0o777 == 0o600
    assert not (dest.parent / "a b.conf.cf-new").exists()
