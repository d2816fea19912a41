"""Inventory text reaches Ansible only as data: Jinja in a string comes out literally with both engines.

The model's patterns reject braces in every field that reaches a deploy template, so the hostile
strings here are put into the model past validation (`model_copy`): the second line of defence,
the hostvars marked unsafe and the roles copying content rendered in Python, is what is under
test. The real roles (the shared cf_common tasks) run through ansible-playbook on a local connection, with
every destination under a temporary root; the bytes Ansible writes must be the bytes the pyinfra
engine would write (ManagedFile.content, or /etc/hosts merged the way pyinfra merges it), and
nothing in the strings may run on the controller.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterforge.api import Checked
from clusterforge.deploy.ansible import (
    _static_inventory,
    ansible_env,
    inventory,
    plain,
    read_events,
    results_from_events,
)
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import COMPONENTS, host_plans, merge_block
from clusterforge.deploy.options import DeployOptions
from clusterforge.model.index import Index

HOSTS = ("gpu01",)  # the hostile strings reach its mount unit and /etc/hosts; one host keeps the run short
PLAYBOOK = """---
- name: Write every component's files with its role (shared tasks of cf_common)
  hosts: all
  gather_facts: false
  tasks:
    - name: Apply each component
      ansible.builtin.include_role:
        name: "cf_{{ cf_component }}"
      loop: "{{ cf_components }}"
      loop_control:
        loop_var: cf_component
    - name: Stop before handlers (apt update, re-sweep, netplan apply) touch this machine
      ansible.builtin.meta: end_host
"""


def _payloads(marker: Path) -> list[str]:
    return ["{{ 7*7 }}", "{% raw %}x{% endraw %}", f"{{{{ lookup('pipe', 'touch {marker}') }}}}",
            "{# c #}", "${HOME} $(id) `id`"]


def _hostile_plans(checked: Checked, root: Path, marker: Path) -> dict[str, HostPlan]:
    """Every host's plan from an inventory whose free strings carry Jinja (past the model's patterns)."""
    inv = checked.inv
    text = " ".join(_payloads(marker))
    lustre = [fs.model_copy(update={"options": f"defaults,_netdev,{text}"}) for fs in inv.lustre]
    addressing = inv.addressing.model_copy(update={"dns_domain": f"lab.{text}"})
    hostile = inv.model_copy(update={"lustre": lustre, "addressing": addressing})
    out: dict[str, HostPlan] = {}
    for host in HOSTS:
        opts = DeployOptions("lab", root=str(root / host))
        out[host] = host_plans(Index(hostile), opts)[host]
    return out


def _run(plans: dict[str, HostPlan], work: Path) -> subprocess.CompletedProcess[str]:
    static = _static_inventory(inventory(list(plans.values())))
    for hv in static["all"]["hosts"].values():
        hv |= {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        for comp in COMPONENTS:  # no packages, services or modules on this machine: files only
            hv |= {f"cf_{comp}_services": [], f"cf_{comp}_pins": [], f"cf_{comp}_modules": [],
                   f"cf_{comp}_packages": []}
        # cf_repo flushes its handler (apt-get update) mid-role: not on this machine; its files hold
        # no free text (pins and the mirror URL are pattern-checked)
        hv["cf_components"] = [c for c in plain(hv["cf_components"]) if c != "repo"]
    (work / "inventory.json").write_text(json.dumps(static))
    (work / "play.yml").write_text(PLAYBOOK)
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(work / "inventory.json"),
            str(work / "play.yml"), "--forks", "2"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=ansible_env(work / "events.jsonl"),
                          check=False)


@pytest.mark.skipif(shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) is None,
                    reason="ansible-core is not installed in this environment")
def test_jinja_in_inventory_strings_comes_out_literally_with_both_engines(checked: Checked, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    root = tmp_path / "root"
    plans = _hostile_plans(checked, root, marker)
    files = [f for p in plans.values() for c in p.components if c.name != "repo" for f in c.files]
    # the Python render (the pyinfra engine's bytes): every payload literally, in the mount unit and /etc/hosts
    mount = next(f for f in files if f.dest.endswith(".mount"))
    hosts = next(f for f in files if f.block)
    for payload in _payloads(marker):
        assert payload in mount.content and payload in hosts.content
    existing_hosts = "127.0.0.1\tlocalhost\n"
    for host in HOSTS:
        (root / host / "etc").mkdir(parents=True)
        (root / host / "etc" / "hosts").write_text(existing_hosts)
    result = _run(plans, tmp_path)
    # the results come from the clusterforge_events callback, as `deploy --engine ansible` reads them
    results = results_from_events(list(plans.values()), read_events(tmp_path / "events.jsonl"), result.stdout)
    assert result.returncode == 0, ([r.error for r in results], result.stdout[-2000:], result.stderr[-2000:])
    assert [(r.name, r.status) for r in results] == [("gpu01", "changed")]
    assert {"changed: nccl: Write configuration files", "changed: base: Manage clusterforge blocks in shared files",
            "changed: lustre: Write configuration files"} <= set(results[0].notes), results[0].notes
    assert not marker.exists(), "a lookup in inventory text ran on the controller"
    written = 0
    for f in files:
        on_disk = Path(f.dest).read_text()
        expected = merge_block(existing_hosts, f.content) if f.block else f.content
        assert on_disk == expected, f.dest
        written += 1
    assert written >= 6 and {Path(f.dest).name for f in files} >= {"hosts", "nccl.conf", "lnet.conf"}


def test_every_string_in_the_hostvars_is_marked_unsafe(plans: dict[str, HostPlan]) -> None:
    inv = inventory(list(plans.values()))
    bare: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            bare.append(path)
        elif isinstance(value, dict) and set(value) != {"__ansible_unsafe"}:
            for k, v in value.items():
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(inv["_meta"]["hostvars"], "hostvars")
    assert bare == []
    hv = plain(inv["_meta"]["hostvars"]["gpu01"])
    mount = next(f for f in hv["cf_lustre_files"] if f["dest"].endswith(".mount"))
    assert mount["content"] == next(f.content for f in plans["gpu01"].files if f.dest.endswith(".mount"))
    assert "template" not in mount and "context" not in mount
