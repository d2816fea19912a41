"""sinfo -R: the real capture (the default format, reasons cut at 20 characters), a wider format with the node
state (constructed, marked so), and what is not sinfo -R's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.parse import ParseError, to_jsonable
from clusterforge.parse.sinfo_reasons import parse

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "sinfo-R"
           / "unige-baobab-gres-core-mismatch-truncated-reasons.txt")


def test_the_real_default_format_expands_every_hostlist() -> None:
    rows = parse(FIXTURE.read_text())
    assert len(rows) == 10
    assert rows[0].nodes == ("cpu242",) and rows[0].reason == "issue-5894" and rows[0].user == "root"
    assert rows[0].since == "2025-04-02T16:01:38" and rows[0].state is None
    # a reason with spaces, cut by sinfo at its 20-character column, read whole up to the column
    assert rows[3].reason == "gres/gpu GRES core s" and rows[3].user == "slurm"
    assert rows[5].nodes == tuple(f"gpu{i:03d}" for i in range(4, 10))
    big = rows[8].nodes
    assert big[:5] == ("gpu013", "gpu014", "gpu015", "gpu016", "gpu017") and big[-1] == "gpu049"
    assert len(big) == 5 + 6 + 11 + 4
    assert sum(len(r.nodes) for r in rows) == 7 + 6 + 26 + 10
    assert to_jsonable("sinfo-reasons", rows)[5]["nodes"][0] == "gpu004"


# CONSTRUCTED (not a capture): `sinfo -R -o '%40E %9u %19H %6t %N'`, the wider format docs/floor.md suggests
WIDE = """\
REASON                                   USER      TIMESTAMP           STATE  NODELIST
cf-alert: level 3 HbmTemperatureHigh     slurm     2026-12-07T10:01:02 drain  gpu01
cf-health: hca mlx5_1 port 1 Down        root      2026-12-07T10:03:04 drng   gpu[02-03]
Not responding                           slurm     Unknown             down*  gpu04
"""


def test_a_wider_format_keeps_the_reason_whole_and_reads_the_state() -> None:
    rows = parse(WIDE)
    assert [r.reason for r in rows] == ["cf-alert: level 3 HbmTemperatureHigh", "cf-health: hca mlx5_1 port 1 Down",
                                        "Not responding"]
    assert [r.state for r in rows] == ["drain", "drng", "down*"]
    assert rows[1].nodes == ("gpu02", "gpu03") and rows[2].since == "Unknown"


def test_a_header_alone_is_no_node_out_of_service() -> None:
    assert parse("REASON               USER      TIMESTAMP           NODELIST\n") == ()


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "empty"),
    ("issue-5894           root      2025-04-02T16:01:38 cpu242\n", 1, "without a header"),
    ("REASON USER TIMESTAMP\nx root 2025-04-02T16:01:38\n", 1, "NODELIST"),
    ("REASON NODELIST USER\n", 1, "last column"),
    ("REASON               USER      TIMESTAMP           NODELIST\nissue-5894 root\n", 2, "ends before"),
    ("REASON               USER      TIMESTAMP           NODELIST\n"
     "a very long reason that runs on root      2025-04-02T16:01:38 cpu242\n", 2, "runs into"),
    ("REASON               USER      TIMESTAMP           NODELIST\n"
     "issue-5894           root      2025-04-02T16:01:38 gpu[09-02]\n", 2, "backwards"),
    ("REASON               USER      TIMESTAMP           NODELIST\n"
     "issue-5894           root      yesterday           cpu242\n", 2, "not a time"),
    ("REASON               USER      TIMESTAMP           NODELIST\n"
     "                     root      2025-04-02T16:01:38 cpu242\n", 2, "no REASON"),
    ("REASON               USER      TIMESTAMP           NODELIST\n"
     "issue-5894           root      2025-04-02T16:01:38 cpu242 cpu243\n", 2, "not one hostlist"),
    ("REASON\tUSER\tTIMESTAMP\tNODELIST\n", 1, "tab"),
])
def test_what_is_not_sinfo_r_is_a_parse_error_with_its_line(text: str, line: int, says: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.line_no == line and info.value.tool == "sinfo-reasons"
    assert says in str(info.value)


def test_a_hostlist_beyond_any_cluster_is_refused_before_it_is_built() -> None:
    with pytest.raises(ParseError, match="NODELIST"):
        parse("REASON NODELIST\nx      n[0000000-9999999]\n")
