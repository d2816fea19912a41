"""validate's Lustre client check (validate/lustre.py) over `lfs df` texts: real captures where they fit, and
prod's file system written in lfs df's own format (constructed, marked as such) where the check needs prod's
fsname, mount and targets."""

from __future__ import annotations

from pathlib import Path

from _storage_util import data, index_of

from clusterforge.api import Checked
from clusterforge.collect.plan import default_targets
from clusterforge.parse import lfs_df
from clusterforge.validate.lustre import check_lfs_df

ROOT = Path(__file__).resolve().parents[3]
HEAD = "UUID                       bytes        Used   Available Use% Mounted on\n"


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


def _hsm(mdt: str, control: str, agents: list[str]) -> str:
    """Constructed in the real capture's format (tests/fixtures/lctl-get_param-hsm): prod's MDT, its agents."""
    return (f"mdt.{mdt}.hsm_control={control}\nmdt.{mdt}.hsm.max_requests=3\nmdt.{mdt}.hsm.agents=\n"
            + "".join(a + "\n" for a in agents))


def test_hsm_coordinator_and_agents(prod: Checked) -> None:
    from clusterforge.parse import lctl_hsm
    from clusterforge.validate.lustre import check_hsm, hsm_servers

    (fs,) = prod.index.inv.lustre
    assert fs.hsm is not None and hsm_servers(prod.index) == {"lus01", "lus02"}
    hosts, _ = default_targets(prod.index, dict.fromkeys(prod.index.addresses.mgmt, "x"))
    assert {t.host for t in hosts if "lctl-hsm" in t.commands} == {"lus01", "lus02"}
    arch = fs.hsm.archive_id
    ok = [f"uuid={u} archive_id={arch} requests=[current:0 ok:5 errors:0]" for u in ("u1", "u2")]
    assert check_hsm(prod.index, "lus01", lctl_hsm.parse(_hsm("lfs01-MDT0000", "enabled", ok))) == []
    # the real capture: another file system (fs00) is not prod's, nothing to say
    real = (ROOT / "tests/fixtures/lctl-get_param-hsm/cn-hsm-doc-mdt-hsm-params-agents-multiline.txt").read_text()
    assert check_hsm(prod.index, "lus01", lctl_hsm.parse(real)) == []
    found = check_hsm(prod.index, "lus01", lctl_hsm.parse(_hsm("lfs01-MDT0000", "disabled", [
        f"uuid=u9 archive_id={arch + 1} requests=[current:0 ok:0 errors:0]"])))
    assert [(f.rule, f.severity) for f in found] == [("LUSTRE-HSM", "error")] * 2
    assert "disabled" in found[0].message and "sm01, sm02" in found[1].action
    assert "`systemctl status lhsmd`" in found[1].action and "--limit sm01,sm02 --component hsm" in found[1].action
    found = check_hsm(prod.index, "lus02", lctl_hsm.parse(_hsm("lfs01-MDT0001", "enabled", [
        f"uuid=u1 archive_id={arch} requests=[current:1 ok:9 errors:4]"])))
    assert [(f.severity, "1 of the 2" in f.message or "4 failed" in f.message) for f in found] == [
        ("warning", True), ("warning", True)]


def test_an_hsm_agent_needs_its_nid_like_a_client() -> None:
    """lhsmd mounts the file system itself: its agent (the constructed base's sm01, no client) has a NID on the
    file system's net, or LNET-NID says so; a node that is neither client nor agent is not asked."""
    from clusterforge.parse import lctl_list_nids
    from clusterforge.validate.software import check_nids

    index = index_of(data())
    assert check_nids(index, "sm01", lctl_list_nids.parse("10.100.0.14@o2ib\n")) == []
    (f,) = check_nids(index, "sm01", lctl_list_nids.parse("10.0.0.14@tcp\n"))
    assert f.rule == "LNET-NID" and "sm01 has no NID on o2ib0 for Lustre lfs01" in f.message
    assert check_nids(index, "lus01", lctl_list_nids.parse("10.0.0.12@tcp\n")) == []
