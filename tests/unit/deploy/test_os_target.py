"""A host that is not the declared OS is refused before any change, by both engines, with one message.

The rule (os_target.py) over a table of os-release values; the probe's script run by a real shell over real
os-release files; the runner refusing before any component; and Ansible's roles/cf_os run by a real
ansible-playbook on this machine (connection local: it only reads /etc/os-release), giving the same verdict
and the same message as the Python rule.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.deploy.ansible import ansible_env, read_events
from clusterforge.deploy.component import Component, HostPlan
from clusterforge.deploy.facts import parse_state, state_script
from clusterforge.deploy.os_target import OS_RELEASE_SCRIPT, OsFound, matches, mismatch, os_target, parse_found
from clusterforge.deploy.runner import HostFailure, deploy_host

ROLES = Path(__file__).resolve().parents[3] / "roles"


@pytest.mark.parametrize(("release", "found", "ok"), [
    ("debian12", OsFound("debian", "12", "Debian GNU/Linux 12 (bookworm)"), True),
    ("debian12", OsFound("debian", "11"), False),
    ("debian12", OsFound("debian", "12.5"), True),  # a point release of 12 is a 12
    ("debian12", OsFound("debian", "123"), False),  # not a point release of 12
    ("debian12", OsFound("ubuntu", "12"), False),
    ("ubuntu2204", OsFound("ubuntu", "22.04"), True),
    ("ubuntu2204", OsFound("ubuntu", "24.04"), False),
    ("ubuntu2404", OsFound("ubuntu", "24.04"), True),
    ("rocky9", OsFound("rocky", "9.4"), True),
    ("rocky9", OsFound("rocky", "9"), True),
    ("rocky9", OsFound("almalinux", "9.4"), False),  # the same family, another release: not what was declared
    ("alma9", OsFound("almalinux", "9.5"), True),
    ("rhel9", OsFound("rhel", "9.6"), True),
    ("rhel9", OsFound("rhel", "8.10"), False),
    ("rocky9", OsFound(), False),  # no os-release at all
    ("rocky9", OsFound("rocky", ""), False),
])
def test_the_rule(release: str, found: OsFound, ok: bool) -> None:
    target = os_target(release)
    assert matches(target, found) is ok
    message = mismatch(target, found)
    assert (message is None) is ok
    if message is not None:
        assert message.startswith(f"os: the inventory declares {release} (")
        assert message.endswith("nothing on this host was changed")
        assert (f"ID={found.id}" in message) if found.id else "no readable /etc/os-release" in message


def _run_script(root: Path) -> OsFound:
    script = OS_RELEASE_SCRIPT.replace("/etc/os-release", str(root / "etc/os-release")).replace(
        "/usr/lib/os-release", str(root / "usr/lib/os-release"))
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10, check=True).stdout
    return parse_found(out.split("\n"))


def test_the_probe_sources_os_release_as_a_shell_would(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "usr/lib").mkdir(parents=True)
    # quoted, unquoted, comments, other keys: os-release(5)'s own forms (Rocky's file, abridged)
    (tmp_path / "usr/lib/os-release").write_text(
        'NAME="Rocky Linux"\nVERSION="9.4 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
        'VERSION_ID="9.4"\n# a comment\nPRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\n')
    assert _run_script(tmp_path) == OsFound("rocky", "9.4", "Rocky Linux 9.4 (Blue Onyx)")  # the fallback file
    (tmp_path / "etc/os-release").write_text("ID=debian\nVERSION_ID=12\n")
    assert _run_script(tmp_path) == OsFound("debian", "12", "")  # /etc first; no PRETTY_NAME: empty
    (tmp_path / "etc/os-release").unlink()
    (tmp_path / "usr/lib/os-release").unlink()
    assert _run_script(tmp_path) == OsFound()  # neither: three empty lines, never the caller's variables


def test_the_probe_carries_it_and_an_empty_version_keeps_its_place() -> None:
    facts = parse_state(["@@cf kernel", "6.1.0", "@@cf os", "rocky", "", "Rocky Linux", "@@cf systemd", "yes"])
    assert facts.os == OsFound("rocky", "", "Rocky Linux") and facts.systemd
    script = state_script((), (), (), (), (), (), ())
    assert "@@cf os'" in script and OS_RELEASE_SCRIPT in script
    here = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30, check=False)
    found = parse_state(here.stdout.splitlines()).os
    assert found is not None and found.id  # this machine's own os-release, read through the whole probe


class _Session:
    """The runner's session seam, answering the probe with a given os-release and recording commands."""

    def __init__(self, found: OsFound) -> None:
        self.found = found
        self.commands: list[str] = []

    def connect(self) -> None:
        pass

    def facts(self, plan: HostPlan) -> object:
        lines = ["@@cf systemd", "yes", "@@cf os", self.found.id, self.found.version_id, self.found.pretty_name]
        return parse_state(lines)

    def run(self, script: str, what: str, timeout: int = 0) -> str:
        self.commands.append(what)
        return ""


def _plan(release: str) -> HostPlan:
    comp = Component("base", services=("chronyd",))
    return HostPlan("gpu07", "198.18.0.7", "r1", "compute", (comp,), os=os_target(release))


@pytest.mark.parametrize("dry_run", [True, False])
def test_the_runner_refuses_before_any_component(dry_run: bool) -> None:
    session = _Session(OsFound("debian", "12", "Debian GNU/Linux 12 (bookworm)"))
    with pytest.raises(HostFailure, match=r"declares rocky9 \(Rocky Linux 9: ID=rocky VERSION_ID=9\), "
                                          r"/etc/os-release says ID=debian VERSION_ID=12 \(Debian"):
        deploy_host(session, _plan("rocky9"), dry_run=dry_run)  # type: ignore[arg-type]
    assert session.commands == []  # nothing ran on the host
    ok = deploy_host(_Session(OsFound("rocky", "9.4")), _plan("rocky9"), dry_run=True)  # type: ignore[arg-type]
    assert ok.status == "planned"


def _ansible_cf_os(tmp_path: Path, release: str) -> tuple[int, str]:
    """roles/cf_os run by ansible-playbook on this machine; (rc, the failed assert's message or '')."""
    target = os_target(release)
    cf_os = {"release": target.release, "name": target.name, "id": target.os_release_id,
             "version_id": target.version_id}
    playbook = tmp_path / "os.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [cf_os]\n")
    (tmp_path / "vars.json").write_text(json.dumps({"cf_os_declared": cf_os}))
    events = tmp_path / f"{release}.jsonl"
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,", "-c",
                           "local", "-e", f"@{tmp_path / 'vars.json'}", "-e",
                           f"ansible_python_interpreter={sys.executable}", str(playbook)],
                          capture_output=True, text=True, timeout=120, env=ansible_env(events), check=False)
    msgs = [str(ev.get("msg", "")) for ev in read_events(events) if ev.get("event") == "failed"]
    return proc.returncode, " ".join(msgs)


def _this_machine() -> OsFound:
    out = subprocess.run(["sh", "-c", OS_RELEASE_SCRIPT], capture_output=True, text=True, timeout=10, check=True)
    return parse_found(out.stdout.split("\n"))


def test_ansible_gives_the_same_verdict_and_message(tmp_path: Path) -> None:
    here = _this_machine()
    releases = [r for r in ("debian12", "ubuntu2204", "rocky9") if r]
    verdicts = {r: mismatch(os_target(r), here) for r in releases}
    assert any(v is not None for v in verdicts.values())  # at least one release is not this machine
    for release, expected in verdicts.items():
        rc, message = _ansible_cf_os(tmp_path, release)
        if expected is None:
            assert rc == 0 and message == "", (release, message)
        else:
            assert rc != 0 and message == expected, (release, message)
