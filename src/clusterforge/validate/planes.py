"""Rail planes in validation: which planes the fabric has, and what an uncollected plane means.

Each rail plane (`fabric.planes`) is its own subnet, discovered through the SM node's port in it
(`ibnetdiscover-plane<P>`). A plane with no discovery output is one finding of its own
(FAB-PLANE-NO-DATA, "plane 1 not collected: ..."), not a missing-device finding for each of its
switches: nothing was looked at there, so nothing in it is reported missing.
"""

from __future__ import annotations

from ..model.index import Index
from .findings import Finding


def switch_plane(index: Index) -> dict[str, int]:
    """Rail planes: switch -> its plane; {} without two planes or more (`Index.switch_planes`)."""
    return index.switch_planes


def uncollected(index: Index, findings: list[Finding], missing: list[int], failed: list[int],
                where: str) -> list[Finding]:
    """`findings` of the collected planes' diff without what only the absence of `missing` and `failed`
    planes explains (their switches and ports unseen), and one FAB-PLANE-NO-DATA per missing plane
    (a failed one already has its PARSE finding)."""
    gone = set(missing) | set(failed)
    if not gone:
        return findings
    planes = switch_plane(index)
    # a missing switch, or a link whose switch end is in a plane not looked at (its `switch`: a host port's link
    # names the leaf it reaches, a leaf-spine link its first switch, both in one plane)
    kept = [f for f in findings if not (f.rule in ("FAB-DEVICE-MISSING", "FAB-MISSING", "FAB-PORT-DOWN")
                                        and f.switch is not None and planes.get(f.switch) in gone)]
    for plane in missing:
        switches = sorted(s for s, p in planes.items() if p == plane)
        kept.append(Finding(
            "FAB-PLANE-NO-DATA", "error", f"plane {plane}",
            f"plane {plane} not collected: no host with a port in it answered (no ibnetdiscover-plane{plane}"
            f"{where}); its {len(switches)} switches ({', '.join(switches[:3])}{', ...' if len(switches) > 3 else ''})"
            " and their links were not checked",
            expected=f"ibnetdiscover-plane{plane}", observed="nothing",
            action=f"check the SM node's port in plane {plane} (ibstat) and re-run validate, or save that "
                   f"port's `ibnetdiscover -C HCA -P PORT` as fabric/ibnetdiscover-plane{plane}.txt"))
    return kept
