"""The servers' target state (issue #23): `lctl get_param obdfilter.*.recovery_status mdt.*.recovery_status` parsed
(parse/lctl_recovery.py) and checked against the targets the model puts on each server (validate/lustre.
check_recovery, rule LUSTRE-TARGET-STATE).

No real capture of `recovery_status` is in the samples. Every text here is CONSTRUCTED from Lustre's source:
`lprocfs_recovery_status_seq_show` (lustre/obdclass/lprocfs_status_server.c) prints `status: S`, then per status
its `key: value` lines, under lctl's `param=` line (a one-line value, `status: INACTIVE`, on that line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets
from clusterforge.model.services import target_name
from clusterforge.parse import ParseError, lctl_recovery
from clusterforge.validate.lustre import check_recovery

ROOT = Path(__file__).resolve().parents[3]


def _complete(target: str, done: str = "2048/2048") -> str:
    kind = "mdt" if "-MDT" in target else "obdfilter"
    # CONSTRUCTED (see the module docstring)
    return (f"{kind}.{target}.recovery_status=\nstatus: COMPLETE\nrecovery_start: 1764594000\n"
            f"recovery_duration: 31\ncompleted_clients: {done}\nreplayed_requests: 0\nlast_transno: 4294967296\n"
            "VBR: DISABLED\nIR: ENABLED\n")


def _recovering(target: str) -> str:
    # CONSTRUCTED: the RECOVERING branch of the same function
    return (f"obdfilter.{target}.recovery_status=\nstatus: RECOVERING\nrecovery_start: 1764594000\n"
            "time_remaining: 140\nconnected_clients: 1900/2048\nreq_replay_clients: 12\nlock_repay_clients: 40\n"
            "completed_clients: 1860\nevicted_clients: 0\nreplayed_requests: 3\nqueued_requests: 0\n"
            "next_transno: 4294967301\n")


@pytest.fixture(scope="module")
def prod():  # type: ignore[no-untyped-def]
    return load_checked(ROOT / "inventories" / "prod")


def _own(prod, host: str) -> list[str]:  # type: ignore[no-untyped-def]
    fs = prod.inv.lustre[0]
    return [target_name(fs, t) for t in fs.targets if t.server == host]


def test_the_parser_reads_each_target_and_a_one_line_value() -> None:
    text = (_complete("lfs01-OST0000") + _recovering("lfs01-OST0002")
            + "mdt.lfs01-MDT0001.recovery_status=status: INACTIVE\n")
    ost0, ost2, mdt1 = lctl_recovery.parse(text)
    assert (ost0.target, ost0.fsname, ost0.status, ost0.clients("completed_clients")) == (
        "lfs01-OST0000", "lfs01", "COMPLETE", (2048, 2048))
    assert (ost2.status, ost2.fields["time_remaining"], ost2.clients("connected_clients")) == (
        "RECOVERING", "140", (1900, 2048))
    assert ost2.clients("completed_clients") is None  # a bare count while recovering
    assert (mdt1.target, mdt1.status, mdt1.fields) == ("lfs01-MDT0001", "INACTIVE", {})
    assert lctl_recovery.parse("") == ()


@pytest.mark.parametrize(("text", "line"), [
    ("status: COMPLETE\n", 1),  # no parameter line first
    ("obdfilter.lfs01-OST0000.recovery_status=\nstatus: DONE\n", 2),
    ("obdfilter.lfs01-OST0000.recovery_status=\nrecovery_start: 1\n", 1),  # no status line
    ("obdfilter.lfs01-OST0000.recovery_status=\n  ???\n", 2),
    (_complete("lfs01-OST0000") + _complete("lfs01-OST0000"), 10),  # a target twice
])
def test_garbage_is_a_parse_error_naming_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError) as info:
        lctl_recovery.parse(text)
    assert info.value.line_no == line


def test_a_server_serving_its_targets_recovered_is_quiet(prod) -> None:  # type: ignore[no-untyped-def]
    own = _own(prod, "lus03")
    assert own
    seen = lctl_recovery.parse("".join(_complete(t) for t in own))
    assert check_recovery(prod.index, "lus03", seen) == []


def test_a_target_missing_in_recovery_with_evictions_or_on_the_wrong_server(prod) -> None:  # type: ignore[no-untyped-def]
    own = _own(prod, "lus03")
    fs = prod.inv.lustre[0]
    stranger = next(target_name(fs, t) for t in fs.targets if t.server not in ("lus03", "lus04")
                    and t.failover not in ("lus03",) and t.kind == "ost")
    text = _recovering(own[0]) + _complete(own[1], "2040/2048") + _complete(stranger)
    found = check_recovery(prod.index, "lus03", lctl_recovery.parse(text))
    by = {(f.subject, f.severity): f.message for f in found}
    assert len(found) == 3, found
    assert by[(f"lus03 {own[0]}", "warning")].startswith(
        f"lus03 {own[0]} is in recovery (RECOVERING, 1900/2048 clients reconnected, 140 s left)")
    assert by[(f"lus03 {own[1]}", "warning")].startswith(f"lus03 {own[1]}: 2040 of 2048 clients recovered")
    home = next(t.server for t in fs.targets if target_name(fs, t) == stranger)
    assert by[(f"lus03 {stranger}", "error")].startswith(f"lus03 serves {stranger}, which the inventory puts on {home}")
    # nothing served: each own target is a warning naming where it may be
    missing = check_recovery(prod.index, "lus03", ())
    assert [(f.rule, f.severity) for f in missing] == [("LUSTRE-TARGET-STATE", "warning")] * len(own)
    assert all("failed over to lus04, or down" in f.message for f in missing)


def test_collected_on_the_servers_only(prod) -> None:  # type: ignore[no-untyped-def]
    index = prod.index
    hosts, _ = default_targets(index, {n: "192.0.2.1" for n in index.nodes})
    asked = {t.host for t in hosts if "lctl-recovery" in t.commands}
    assert asked == set(prod.inv.lustre[0].servers)
