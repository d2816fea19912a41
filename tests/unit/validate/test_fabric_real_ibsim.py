"""The validator on real ibnetdiscover + iblinkinfo outputs of the lab fabric under ibsim, captured
after injecting faults with `clusterforge lab fault` (tests/fixtures/validate-lab/README.source):
each fault is exactly one finding, worded for the technician."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import Checked
from clusterforge.parse import iblinkinfo, ibnetdiscover
from clusterforge.validate.fabric import diff_fabric
from clusterforge.validate.findings import Finding

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "validate-lab"


def findings(lab: Checked, scenario: str) -> list[Finding]:
    topo = ibnetdiscover.parse((FIX / scenario / "ibnetdiscover.txt").read_text())
    links = iblinkinfo.parse((FIX / scenario / "iblinkinfo.txt").read_text())
    return diff_fabric(lab.index, topo, links)


def test_clean_capture_has_no_findings(lab: Checked) -> None:
    assert findings(lab, "clean") == []


@pytest.mark.parametrize(
    ("scenario", "rule", "subject", "says"),
    [
        ("spine", "FAB-DEVICE-MISSING", "spine02",
         "spine02 (rack lab-core01 U4) is not seen on the fabric: power, management, or the switch itself"),
        ("rotation", "FAB-MISWIRED", "spine01/2 / spine02/1 / spine01/1",
         "3 cables are rotated on leaf-su01-r0 ports 21/22/23"),
        ("hostswap", "FAB-MISWIRED", "gpu01 mlx5_0/1 and mlx5_1/1",
         "the two cables of gpu01 mlx5_0 and mlx5_1 are crossed"),
        ("down", "FAB-PORT-DOWN", "gpu03 mlx5_0/1 - leaf-su01-r0/3", "leaf-su01-r0/3 is Active/Disabled"),
        ("host", "FAB-DEVICE-MISSING", "gpu06", "gpu06 (rack lab-su02-r01 U6) is not seen on the fabric"),
        ("degrade", "FAB-DEGRADED", "leaf-su01-r0/21 - spine01/1", "runs 1x HDR, declared 4x HDR (lower width)"),
    ],
)
def test_each_captured_fault_is_one_finding(lab: Checked, scenario: str, rule: str, subject: str, says: str) -> None:
    (f,) = findings(lab, scenario)
    assert (f.rule, f.subject) == (rule, subject)
    assert says in f.message


def test_captured_details_name_labels_lids_and_links(lab: Checked) -> None:
    (spine,) = findings(lab, "spine")
    assert len(spine.details) == 10
    assert spine.details[0] == "spine02/1 - leaf-su01-r0/23 (rack lab-su01-net U2): cable C-00022"
    (rot,) = findings(lab, "rotation")
    assert rot.details[0] == (
        "at leaf-su01-r0/21: cable C-00021 (declared spine01/2 - leaf-su01-r0/22): move it to leaf-su01-r0/22"
    )
    (down,) = findings(lab, "down")
    # leaf-su01-r0 is `lid 18` in the capture (ibnetdiscover's switch record, iblinkinfo's port line)
    assert "`ibportstate 18 3 enable`" in down.action
    (swap,) = findings(lab, "hostswap")
    assert swap.action.startswith("swap the two cables at the host, gpu01 mlx5_0/1 and mlx5_1/1")
