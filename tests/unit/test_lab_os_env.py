"""inventories/lab-os: the lab with a node of each OS family (gpu07 Ubuntu 22.04, gpu08 Rocky 9), brought up whole by
`make deploy ENV=lab-os`. It is the lab and nothing else: these tests hold its files to inventories/lab's, apart
from the `os:` of two nodes and its own management and BMC networks (so both labs can be up at once)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from clusterforge.api import load_checked

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"
LAB_OS = ROOT / "inventories" / "lab-os"
# what lab-os's own files change, undone: its networks, the path its scheduler hooks name, two nodes' os:
UNDO = ((r"198\.18\.20\.", "198.18.10."), (r"198\.18\.21\.", "198.18.11."),
        (r"inventories/lab-os\b", "inventories/lab"), (r", os: (?:ubuntu2204|rocky9)\}", "}"))


def _undone(text: str) -> str:
    for pattern, repl in UNDO:
        text = re.sub(pattern, repl, text)
    return text


def test_lab_os_is_the_lab_but_for_os_and_networks() -> None:
    assert sorted(p.name for p in LAB_OS.iterdir()) == sorted(p.name for p in LAB.iterdir())
    for path in sorted(LAB_OS.iterdir()):
        ours = path.read_text(encoding="utf-8")
        if path.is_symlink():
            assert path.resolve() == (LAB / path.name).resolve(), path.name
            continue
        assert ours != (LAB / path.name).read_text(encoding="utf-8"), f"{path.name}: the same as lab's: link it"
        assert _undone(ours) == (LAB / path.name).read_text(encoding="utf-8"), path.name


def test_lab_os_has_a_node_of_each_family() -> None:
    checked = load_checked(LAB_OS)
    releases = {name: hw.os for name, hw in checked.index.hardware.items()}
    assert releases["gpu07"] == "ubuntu2204" and releases["gpu08"] == "rocky9"
    assert {r for n, r in releases.items() if n not in ("gpu07", "gpu08")} == {"debian12"}
    hooks = checked.index.inv.deploy.reboot
    assert hooks is not None and "inventories/lab-os" in hooks.drain and "inventories/lab-os" in hooks.resume


def test_lab_os_networks_are_not_the_labs() -> None:
    lab, ours = load_checked(LAB).index.inv.addressing, load_checked(LAB_OS).index.inv.addressing
    assert lab.management is not None and ours.management is not None
    assert not lab.management.cidr.overlaps(ours.management.cidr)  # type: ignore[union-attr]


def test_make_deploy_takes_lab_os_for_a_lab() -> None:
    """`make deploy ENV=lab-os` brings the lab up and deploys to it, as ENV=lab does (`make -n`: nothing runs)."""
    run = subprocess.run(["make", "-n", "-C", str(ROOT), "deploy", "ENV=lab-os"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert "lab up inventories/lab-os --systemd" in run.stdout
    assert "--lab .lab/lab-os/state" in run.stdout and "--no-lab" not in run.stdout
