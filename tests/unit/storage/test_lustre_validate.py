"""validate's Lustre client check (validate/lustre.py) over `lfs df` texts: real captures where they fit, and
prod's file system written in lfs df's own format (constructed, marked as such) where the check needs prod's
fsname, mount and targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import Checked, load_checked
from clusterforge.collect.plan import default_targets
from clusterforge.parse import lfs_df
from clusterforge.validate.lustre import check_lfs_df

ROOT = Path(__file__).resolve().parents[3]
HEAD = "UUID                       bytes        Used   Available Use% Mounted on\n"


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


def _lfs_df(checked: Checked, down: dict[tuple[str, int], str] | None = None, drop: tuple[str, int] | None = None,
            extra: tuple[str, int] | None = None) -> str:
    """Constructed: what `lfs df -h` prints for prod's lfs01 (every declared MDT and OST, 14.0T each)."""
    (fs,) = checked.index.inv.lustre
    keys = [(t.kind.upper(), t.index) for t in fs.targets if t.kind in ("mdt", "ost")] + ([extra] if extra else [])
    lines = []
    for kind, i in keys:
        if (kind, i) == drop:
            continue
        if down and (kind, i) in down:
            lines.append(f"{kind}{i:04X}             : {down[(kind, i)]}")
        else:
            lines.append(f"{fs.name}-{kind}{i:04X}_UUID  14.0T  1.0T  13.0T   7% {fs.mount}[{kind}:{i}]")
    return HEAD + "\n".join(lines) + f"\nfilesystem_summary:  500.0T  30.0T  470.0T   6% {fs.mount}\n"


def _gpu(checked: Checked) -> str:
    return next(n.name for n in checked.index.inv.nodes if n.role == "compute")


def test_a_healthy_client_is_clean(prod: Checked) -> None:
    assert check_lfs_df(prod.index, _gpu(prod), lfs_df.parse(_lfs_df(prod))) == []


def test_clients_are_asked_and_servers_are_not(prod: Checked) -> None:
    hosts, _ = default_targets(prod.index, dict.fromkeys(prod.index.addresses.mgmt, "x"))
    asked = {t.host for t in hosts if "lfs-df" in t.commands}
    (fs,) = prod.index.inv.lustre
    assert _gpu(prod) in asked and not asked & set(fs.servers)


def test_an_inactive_ost_names_its_server_and_failover(prod: Checked) -> None:
    (fs,) = prod.index.inv.lustre
    ost = next(t for t in fs.targets if t.kind == "ost" and t.index == 3)
    found = check_lfs_df(prod.index, _gpu(prod), lfs_df.parse(_lfs_df(prod, down={("OST", 3): "inactive device"})))
    assert [(f.rule, f.subject.split()[1]) for f in found] == [("LUSTRE-TARGET", "lfs01-OST0003")]
    assert f"served by {ost.server}, failover " in found[0].message and "inactive device" in found[0].message
    assert "fail the target over to" in found[0].action


def test_a_missing_mdt_and_an_undeclared_ost(prod: Checked) -> None:
    found = check_lfs_df(prod.index, _gpu(prod), lfs_df.parse(_lfs_df(prod, drop=("MDT", 1), extra=("OST", 999))))
    assert sorted((f.rule, f.severity, f.subject.split()[1]) for f in found) == [
        ("LUSTRE-TARGET", "error", "lfs01-MDT0001"), ("LUSTRE-UNDECLARED", "warning", "lfs01-OST03e7")]


def test_not_mounted_on_a_real_capture_of_another_file_system(prod: Checked) -> None:
    text = (ROOT / "tests/fixtures/lfs-df/rk94-tfs1-3mdt-4ost-dne-filesystem_summary.txt").read_text()
    found = check_lfs_df(prod.index, _gpu(prod), lfs_df.parse(text))
    assert [(f.rule, f.severity) for f in found] == [("LUSTRE-NOT-MOUNTED", "error")]
    assert "/mnt/lustre/tfs1" in found[0].message
    found = check_lfs_df(prod.index, _gpu(prod), lfs_df.parse(""))  # no Lustre mounted at all
    assert [f.rule for f in found] == ["LUSTRE-NOT-MOUNTED"] and "no Lustre file system" in found[0].message
