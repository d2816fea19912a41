"""`check` over the storage tiers: each rule on a constructed inventory broken in one way (the base is clean),
and every fault at once."""

from __future__ import annotations

from typing import Any

from _storage_util import data, issues


def _fs(d: dict[str, Any]) -> dict[str, Any]:
    fs: dict[str, Any] = d["lustre"][0]
    return fs


def _storage_issues(d: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [i for i in issues(d) if i[0].startswith(("lustre", "storage_sizing"))]


def test_the_constructed_base_is_clean() -> None:
    assert issues(data()) == []


def test_an_ost_failing_over_outside_its_pair() -> None:
    d = data()
    d["nodes"].append({"name": "lus03", "rack": "core", "u": 14, "role": "storage", "profile": "oss"})
    d["cables"].append({"id": "C-100", "a": "lus03/mlx5_0/1", "b": "leaf01/4", "media": "AOC", "length_m": 20})
    _fs(d)["servers"].append("lus03")
    _fs(d)["targets"][2]["failover"] = "lus03"
    assert _storage_issues(d) == [(
        "lustre[0].targets[2].failover", "INV-STORAGE",
        "lfs01-OST0000 is on lus01 with failover lus03, outside lus01's failover pair (lus01 + lus02): lus03 "
        "cannot reach the target's devices")]


def test_a_target_on_a_node_that_is_not_a_storage_server() -> None:
    d = data()
    _fs(d)["targets"][3]["server"] = "gpu01"
    _fs(d)["targets"][4]["server"] = "nobody"
    got = _storage_issues(d)
    assert ("lustre[0].targets[3].server", "INV-STORAGE",
            "lfs01-OST0001's server gpu01 is a compute node, not a storage server: a target is served by a node of "
            "role storage") in got
    assert ("lustre[0].targets[4].server", "INV-REF", "lfs01-OST0002's server 'nobody' is not a declared node") in got


def test_duplicate_target_indices_and_mgs_count() -> None:
    d = data()
    _fs(d)["targets"][3]["index"] = 0
    _fs(d)["targets"][1]["mgs"] = True
    got = _storage_issues(d)
    assert ("lustre[0].targets[3].index", "INV-DUP", "lfs01-OST0000 is declared twice (also targets[2])") in got
    assert any(p == "lustre[0].targets" and "declares 2 MGS targets (lfs01-MDT0000, lfs01-MDT0001)" in m
               for p, _, m in got)


def test_no_mdt0_and_no_ost() -> None:
    d = data()
    _fs(d)["targets"] = [{"kind": "mgt", "server": "lus01", "devices": 2, "layout": "raid1"}]
    got = {m for _, _, m in _storage_issues(d)}
    assert got == {"lfs01 has no MDT0000 (it holds the root directory)", "lfs01 has no OST"}


def test_sizes_and_device_counts_that_do_not_fit() -> None:
    d = data()
    targets = _fs(d)["targets"]
    targets[2]["size_tb"] = 40  # 6 x 7.68 in raid6 = 30.72 TB
    targets[3]["devices"] = 7  # lus01 has 12 lustre-ost devices: 6 + 7 = 13
    targets[4]["layout"] = "raid10"
    targets[4]["devices"] = 5
    targets[0]["device_kind"] = "nvme"  # lus01 has ssd metadata devices only
    got = _storage_issues(d)
    assert ("lustre[0].targets[2].size_tb", "INV-STORAGE",
            "lfs01-OST0000: 40 TB does not fit 6 x 7.68 TB ssd in raid6 (30.72 TB usable)") in got
    assert ("lustre[0].targets[3].devices", "INV-STORAGE",
            "lfs01-OST0001: lus01's targets use 13 ssd devices of role lustre-ost, it has 12") in got
    assert ("lustre[0].targets[4].devices", "INV-STORAGE",
            "lfs01-OST0002: raid10 needs an even number of devices, 4 or more, 5 given") in got
    assert any(p == "lustre[0].targets[0].devices" and "lus01 has no nvme devices of role lustre-mdt" in m
               for p, _, m in got)


def test_a_server_without_a_nid_on_the_file_systems_rail() -> None:
    d = data()
    _fs(d)["interfaces"] = ["ib1"]  # the servers have one HCA, on rail 0
    _fs(d)["mgs_nids"] = ["gpu01@o2ib0"]  # keep the MGS NID rule out of it: it names no server
    got = [i for i in _storage_issues(d) if "no ib1 address" in i[2]]
    assert got and got[0] == ("lustre[0].targets[0].server", "INV-STORAGE",
                              "lus01 serves lfs01-MDT0000 but has no ib1 address (no HCA on rail 1): it would have "
                              "no NID on o2ib0 for the clients")


def test_the_mgs_nid_names_a_server_that_does_not_hold_the_mgs() -> None:
    d = data()
    d["nodes"].append({"name": "lus03", "rack": "core", "u": 14, "role": "storage", "profile": "oss"})
    d["cables"].append({"id": "C-100", "a": "lus03/mlx5_0/1", "b": "leaf01/4", "media": "AOC", "length_m": 20})
    _fs(d)["servers"].append("lus03")
    _fs(d)["mgs_nids"] = ["lus03@o2ib0"]
    assert _storage_issues(d) == [(
        "lustre[0].mgs_nids[0]", "INV-LNET",
        "MGS NID lus03@o2ib0 is lus03's, but lfs01-MDT0000 (the MGS) is served by lus01 or lus02")]


def test_a_failover_pair_on_one_leaf_is_an_ha_error() -> None:
    d = data()
    d["cables"][5]["b"] = "leaf01/4"  # lus02 beside lus01
    got = [i for i in issues(d) if i[1] == "INV-HA"]
    assert got == [("lustre[0].failover_pairs[0]", "INV-HA",
                    "lus01 and lus02 (lfs01 failover pair lus01 + lus02) are all cabled to leaf leaf01 only: it is a "
                    "single point of failure for the group; cable them to different leafs")]


def test_pcc_not_on_local_nvme_and_too_small() -> None:
    d = data()
    _fs(d)["pcc"]["device_kind"] = "ssd"
    got = _storage_issues(d)
    assert got[0][:2] == ("lustre[0].pcc.device_kind", "INV-STORAGE") and "must be local NVMe" in got[0][2]
    assert ("lustre[0].pcc.device_kind", "INV-STORAGE",
            "gpu[01-02] (2 node(s)) have no local ssd of role cache for the PCC") in got
    d = data()
    _fs(d)["pcc"]["size_tb"] = 4
    assert _storage_issues(d) == [("lustre[0].pcc.size_tb", "INV-STORAGE",
                                   "4 TB of PCC does not fit gpu[01-02] (2 node(s)): 3.84 TB of nvme cache each")]


def test_pcc_versions_and_ids() -> None:
    d = data()
    _fs(d)["pcc"]["mode"] = "readonly"
    _fs(d)["pcc"]["archive_id"] = 2  # the HSM archive's
    got = {(p, m) for p, _, m in _storage_issues(d)}
    assert ("lustre[0].pcc.mode", "readonly PCC needs Lustre 2.16 or later clients; software.lustre_client is "
            "2.15.5") in got
    assert any(p == "lustre[0].pcc.archive_id" for p, _ in got)


def test_hsm_without_an_agent_and_with_an_unknown_one() -> None:
    d = data()
    _fs(d)["hsm"]["agents"] = []
    assert [i[:2] for i in _storage_issues(d)] == [("lustre[0].hsm.agents", "INV-STORAGE")]
    _fs(d)["hsm"]["agents"] = ["mover01"]
    assert _storage_issues(d) == [("lustre[0].hsm.agents[0]", "INV-REF", "HSM agent 'mover01' is not a declared node")]


def test_hsm_without_lemur_or_the_lustre_client_pinned() -> None:
    d = data()
    del d["software"]["lemur"]
    assert _storage_issues(d) == [(
        "lustre[0].hsm", "INV-STORAGE",
        "lfs01's HSM archive runs Lemur's copytool on its agents, and software.lemur (lhsmd and its S3 mover: the "
        "packages lemur-hsm-agent and lemur-data-movers) is not pinned: the deploy would install nothing to run it")]
    del d["software"]["lustre_client"]
    (got,) = [m for p, _, m in _storage_issues(d) if p == "lustre[0].hsm"]
    assert "software.lemur (" in got and "and software.lustre_client (the Lustre client" in got and "are not" in got


def test_an_agent_serves_one_file_systems_archive() -> None:
    d = data()
    d["lustre"].append({"name": "lfs02", "mgs_nids": ["lus01@o2ib0"], "mount": "/lustre/lfs02", "interfaces": ["ib0"],
                        "hsm": {**_fs(d)["hsm"], "bucket": "lfs02-archive"}})
    assert ("lustre[1].hsm.agents[0]", "INV-STORAGE", "sm01 is already the HSM agent of lfs01: lhsmd serves one file "
            "system a node (one /etc/lhsmd/agent, one client_device)") in _storage_issues(d)


def test_sizing_profiles_must_exist() -> None:
    d = data(storage_sizing={"profiles": {"gpu-node": 1.0, "h100": 2.0}})
    assert _storage_issues(d) == [("storage_sizing.profiles.h100", "INV-REF", "'h100' is not a declared profile")]


def test_every_fault_at_once() -> None:
    d = data()
    _fs(d)["targets"][2]["size_tb"] = 40
    _fs(d)["targets"][3]["server"] = "gpu01"
    _fs(d)["pcc"]["device_kind"] = "hdd"
    _fs(d)["hsm"]["agents"] = []
    paths = {p for p, _, _ in _storage_issues(d)}
    assert {"lustre[0].targets[2].size_tb", "lustre[0].targets[3].server", "lustre[0].pcc.device_kind",
            "lustre[0].hsm.agents"} <= paths
