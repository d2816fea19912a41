"""Deploy's output at 2,000 hosts (issue #26, item 3): hosts with one outcome fold into one node-set line
(`gpu[0001-2048] (2,048 hosts): 47 changes`), each group's change lines once, failed hosts once in the summary;
every host in full in the plan file and `--junit`; a progress bar on a terminal only; `--quiet` and
`--format json` stay machine-readable."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import clusterforge.deploy.api as api
from clusterforge.cli import console
from clusterforge.cli import progress as cli_progress
from clusterforge.cli.main import app
from clusterforge.deploy.changes import Change
from clusterforge.deploy.reboot import RebootOutcome
from clusterforge.deploy.report import fold_reboots, fold_results, format_changes, summary_rows, to_junit
from clusterforge.deploy.runner import HostResult

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"
GPUS = [f"gpu{i:04d}" for i in range(1, 2049)]
COMPONENTS = ("repo", "base", "ofed", "nvidia", "nccl", "lustre", "ipoib", "monitoring")


def changes(n: int = 47, diff: Callable[[int], str] | None = None) -> list[Change]:
    """`n` changes as a first deploy has them: files (with a diff when `diff` says one), packages, holds."""
    out = []
    for i in range(n):
        comp = COMPONENTS[i % len(COMPONENTS)]
        if i % 3 == 0:
            out.append(Change(comp, "file", f"/etc/{comp}/{i}.conf", "create (mode 644)",
                              diff=diff(i) if diff else ""))
        elif i % 3 == 1:
            out.append(Change(comp, "package", f"pkg{i}", "install 1.0-1"))
        else:
            out.append(Change(comp, "hold", f"pkg{i - 1}", "hold at pinned version"))
    return out


def identical(names: list[str] = GPUS, n: int = 47) -> list[HostResult]:
    return [HostResult(name, "changed", changes(n), seconds=1.0 + i / 1000) for i, name in enumerate(names)]


def mixed() -> list[HostResult]:
    """2,048 GPU nodes: 1,000 changed, 1,000 already fine, 30 failed one way, 18 another; and sm01/sm02."""
    out = []
    for i, name in enumerate(GPUS, start=1):
        if i <= 1000:
            out.append(HostResult(name, "changed", changes()))
        elif i <= 2000:
            out.append(HostResult(name, "ok"))
        elif i % 2:
            out.append(HostResult(name, "failed", error="nvidia preflight: kernel headers linux-headers-6.1.0-18 "
                                  "are neither installed nor available"))
        else:
            out.append(HostResult(name, "unreachable", error="cannot connect: timed out"))
    return out + [HostResult(n, "changed", changes(12)) for n in ("sm01", "sm02")]


def printed(results: list[HostResult], *, diffs: bool = False) -> list[str]:
    """What the CLI prints on stdout for these results: the folded changes, then the summary."""
    from clusterforge.cli.deploy import print_summary

    with console.out.capture() as cap:
        console.out.print(format_changes(results, diffs=diffs), markup=False)
        print_summary(results)
    return cap.get().splitlines()


# -- folding -------------------------------------------------------------------------------------


def test_2048_identical_hosts_fold_into_at_most_100_lines() -> None:
    lines = printed(identical())
    assert len(lines) <= 100, len(lines)
    assert lines[0] == "== gpu[0001-2048] (2,048 hosts): 47 changes"
    assert lines[1] == "  [repo] file /etc/repo/0.conf: create (mode 644)"
    assert sum(line.startswith("  [") for line in lines) == 47  # each change once, not once per host
    row = next(line for line in lines if line.startswith("gpu["))
    assert row.split() == ["gpu[0001-2048]", "(2,048", "hosts)", "changed", "47", "1.00-3.05"]
    assert lines[-1] == "2,048 host(s), 96,256 change(s): changed 2,048"
    assert len(lines) == 1 + 47 + 2 + 1  # header, changes, table head and row, totals


def test_the_output_of_2048_identical_hosts_is_the_output_of_one() -> None:
    """Diffs included: what a host's changes print does not grow with the number of hosts like it."""
    same = lambda i: f"--- /dev/null\n+++ /etc/x/{i}.conf (inventory)\n@@ -0,0 +1 @@\n+line {i}\n"  # noqa: E731
    one = [HostResult("gpu0001", "changed", changes(diff=same))]
    many = [HostResult(n, "changed", changes(diff=same)) for n in GPUS]
    a, b = printed(one, diffs=True), printed(many, diffs=True)
    assert len(a) == len(b) and sum(line == "    +line 0" for line in b) == 1
    assert b[0] == "== gpu[0001-2048] (2,048 hosts): 47 changes" and a[0] == "== gpu0001: 47 changes"
    assert a[1:-3] == b[1:-3]


def test_a_diff_that_differs_per_host_is_shown_once_and_said_so() -> None:
    """A per-host file (netplan's addresses) differs on every host: the hosts still fold, the first host's
    diff is shown under a line that says so, and every host's is in the plan file."""
    results = [HostResult(n, "changed", [Change("ipoib", "file", "/etc/netplan/60-ib.yaml", "create (mode 600)",
                                                diff=f"+addresses: [10.1.{i // 256}.{i % 256}/16]\n")])
               for i, n in enumerate(GPUS)]
    lines = printed(results, diffs=True)
    assert lines[:4] == ["== gpu[0001-2048] (2,048 hosts): 1 change",
                         "  [ipoib] file /etc/netplan/60-ib.yaml: create (mode 600)",
                         "    (the diff differs between these hosts, 2,048 variants: gpu0001's below; every host's is "
                         "in the plan file)",
                         "    +addresses: [10.1.0.0/16]"]


def test_mixed_outcomes_fold_by_outcome_and_failed_hosts_come_once_and_last() -> None:
    results = mixed()
    groups = [(g.nodeset, len(g.results), g.first.status) for g in fold_results(results)]
    assert groups == [("gpu[0001-1000]", 1000, "changed"), ("gpu[1001-2000]", 1000, "ok"),
                      ("sm[01-02]", 2, "changed"),
                      ("gpu[2001,2003,2005,2007,2009,2011,2013,2015,2017,2019,2021,2023,2025,2027,2029,2031,2033,"
                       "2035,2037,2039,2041,2043,2045,2047]", 24, "failed"),
                      ("gpu[2002,2004,2006,2008,2010,2012,2014,2016,2018,2020,2022,2024,2026,2028,2030,2032,2034,"
                       "2036,2038,2040,2042,2044,2046,2048]", 24, "unreachable")]
    lines = printed(results)
    assert len(lines) <= 100
    assert [line for line in lines if line.startswith("==")] == ["== gpu[0001-1000] (1,000 hosts): 47 changes",
                                                                  "== sm[01-02] (2 hosts): 12 changes"]
    failed = [line for line in lines if "kernel headers" in line]
    assert len(failed) == 1 and failed[0].split()[1:5] == ["(24", "hosts)", "failed", "0"]
    assert sum("cannot connect: timed out" in line for line in lines) == 1
    assert lines[-1] == "2,050 host(s), 47,024 change(s): changed 1,002, ok 1,000, failed 24, unreachable 24"


def test_two_errors_are_two_groups_and_notes_part_outcomes() -> None:
    results = [HostResult("gpu01", "failed", error="a"), HostResult("gpu02", "failed", error="b"),
               HostResult("gpu03", "failed", error="a"), HostResult("gpu04", "ok", notes=["no systemd on this host"]),
               HostResult("gpu05", "ok")]
    assert [(r[0], r[1], r[4]) for r in summary_rows(results)] == [
        ("gpu04", "ok", "no systemd on this host"), ("gpu05", "ok", ""),
        ("gpu[01,03] (2 hosts)", "failed", "a"), ("gpu02", "failed", "b")]


def test_reboots_fold_by_message() -> None:
    reboots = [RebootOutcome(n, False, "reboot needed; policy 'none': not rebooted") for n in GPUS[:512]]
    reboots.append(RebootOutcome("gpu0513", False, "did not come back before the reboot policy's timeout"))
    assert fold_reboots(reboots) == [
        "reboot gpu[0001-0512] (512 hosts): reboot needed; policy 'none': not rebooted",
        "reboot gpu0513: did not come back before the reboot policy's timeout"]


# -- JUnit -----------------------------------------------------------------------------------------


def test_junit_has_one_case_per_host_and_reads_back() -> None:
    results = [*identical(GPUS[:3], n=2), HostResult("gpu0004", "failed", error="apt says\n\x1b[31mno\x00"),
               HostResult("gpu0005", "unreachable", error="cannot connect"), HostResult("gpu0006", "skipped")]
    root = ET.fromstring(to_junit(results, env="prod", engine="pyinfra", dry_run=False))
    suite = root.find("testsuite")
    assert suite is not None
    counts = (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped"))
    assert counts == ("6", "1", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [f"gpu000{i}" for i in range(1, 7)]
    assert cases[0].findtext("system-out") == ("status: changed\n[repo] file /etc/repo/0.conf: create (mode 644)\n"
                                               "[base] package pkg1: install 1.0-1\n")
    failure = cases[3].find("failure")
    assert failure is not None and failure.get("message") == "apt says\n\\x1b[31mno\\x00"
    assert cases[4].find("error") is not None and cases[5].find("skipped") is not None


# -- the command -----------------------------------------------------------------------------------


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[HostResult]], None]:
    """`deploy` runs with these results (reported one by one, as the runner does) and no host is touched."""
    def use(results: list[HostResult]) -> None:
        def deploy(env: Path, req: Any, progress: Callable[[HostResult], None] | None = None,
                   started: Callable[[int], None] | None = None) -> api.DeployOutcome:
            if started is not None:
                started(len(results))
            for r in results:
                if progress is not None:
                    progress(r)
            return api.DeployOutcome(list(results), seconds=12.5)

        monkeypatch.setattr(api, "deploy", deploy)
    return use


def _deploy(tmp_path: Path, *extra: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, ["deploy", str(LAB), "--no-lab", "--yes", "--plan-file",
                                      str(tmp_path / "result.json"), *extra])
    assert result.exit_code == code, result.output
    return result


def test_the_command_prints_2048_identical_hosts_in_under_100_lines(
        tmp_path: Path, fake_run: Callable[[list[HostResult]], None]) -> None:
    fake_run(identical())
    result = _deploy(tmp_path, "--junit", str(tmp_path / "deploy.xml"))
    lines = result.stdout.splitlines()
    assert len(lines) <= 100 and lines[0] == "== gpu[0001-2048] (2,048 hosts): 47 changes"
    assert lines[-1].startswith(f"result written to {tmp_path / 'result.json'}, JUnit report to ")
    # piped stderr: no bar, and a line at each tenth of the hosts, never one per host
    progress = [line for line in result.stderr.splitlines() if line.startswith("deploy lab: ")]
    assert len(progress) == 10 and progress[-1] == "deploy lab: 2,048/2,048 host(s) done, 0 failed, 0 remaining"
    assert "\x1b[" not in result.stderr
    doc = json.loads((tmp_path / "result.json").read_text())
    assert len(doc["hosts"]) == 2048 and len(doc["hosts"]["gpu2048"]["changes"]) == 47  # every host in full
    assert doc["groups"] == [{"hosts": "gpu[0001-2048]", "count": 2048, "status": "changed", "changes": 47,
                              "error": ""}]
    assert len(ET.parse(tmp_path / "deploy.xml").getroot().findall("testsuite/testcase")) == 2048


def test_format_json_is_the_plan_file_with_the_same_keys_and_no_progress(
        tmp_path: Path, fake_run: Callable[[list[HostResult]], None]) -> None:
    fake_run(mixed())
    result = _deploy(tmp_path, "--format", "json", code=5)
    doc = json.loads(result.stdout)
    assert doc == json.loads((tmp_path / "result.json").read_text())
    assert set(doc) == {"environment", "engine", "dry_run", "hosts", "totals", "groups", "reboots", "seconds"}
    assert set(doc["hosts"]["gpu0001"]) == {"status", "error", "notes", "reboot", "seconds", "changes"}
    assert doc["totals"] == {"hosts": 2050, "changes": 47024, "changed": 1002, "ok": 1000, "failed": 24,
                             "unreachable": 24}
    assert [(g["hosts"], g["count"], g["status"]) for g in doc["groups"]][:3] == [
        ("gpu[0001-1000]", 1000, "changed"), ("gpu[1001-2000]", 1000, "ok"), ("sm[01-02]", 2, "changed")]
    assert "host(s) done" not in result.stderr


def test_quiet_prints_the_summary_only(tmp_path: Path, fake_run: Callable[[list[HostResult]], None]) -> None:
    fake_run(mixed())
    result = _deploy(tmp_path, "--quiet", code=5)
    assert result.stdout.splitlines()[0].split() == ["HOST", "STATUS", "CHANGES", "SECONDS", "DETAIL"]
    assert len(result.stdout.splitlines()) == 1 + 5 + 1  # head, a line per group, totals
    assert result.stderr == ""


def test_the_bar_shows_on_a_terminal_only(tmp_path: Path, fake_run: Callable[[list[HostResult]], None],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fake_run(mixed())
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=160))
    result = _deploy(tmp_path, code=5)
    shown = tty.getvalue()
    assert "\x1b[" in shown and "deploy lab" in shown
    assert "2,050/2,050 host(s) done, 48 failed, 0 remaining" in shown and "ETA" in shown
    assert "host(s) done" not in result.stdout and "\x1b[" not in result.stdout
    quiet = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=quiet, force_terminal=True, width=160))
    _deploy(tmp_path, "--quiet", code=5)
    assert quiet.getvalue() == ""


def test_host_progress_counts_done_failed_and_remaining(monkeypatch: pytest.MonkeyPatch) -> None:
    piped = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=piped, force_terminal=False, width=200))
    with cli_progress.host_progress("deploy prod") as bar:
        bar.start(11)
        for i in range(11):
            bar.done(failed=i in (3, 7))
    assert piped.getvalue().splitlines() == [
        f"deploy prod: {n}/11 host(s) done, {f} failed, {11 - n} remaining"
        for n, f in ((2, 0), (4, 1), (6, 1), (8, 2), (10, 2), (11, 2))]
