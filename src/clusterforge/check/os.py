"""The operating systems the nodes run (profiles[].os, nodes[].os): a release the catalog knows (os.yaml),
and pins its family can install (INV-OS)."""

from __future__ import annotations

from ..model.index import Index
from ..util.errors import InventoryIssue
from ..util.hostlist import compress


def check(index: Index) -> list[InventoryIssue]:
    releases = index.cat.os.releases
    known = ", ".join(releases)
    out: list[InventoryIssue] = []
    declared: list[tuple[tuple[str | int, ...], str | None]] = [
        (("profiles", i, "os"), p.os) for i, p in enumerate(index.inv.profiles)]
    declared += [(("nodes", i, "os"), n.os) for i, n in enumerate(index.inv.nodes)]
    for path, release in declared:
        if release is not None and release not in releases:
            out.append(InventoryIssue(path, f"unknown operating system {release!r}: known are {known} (the "
                                      "catalog's os.yaml)", rule="INV-OS"))
    out += _driver_branch(index)
    return out


def _driver_branch(index: Index) -> list[InventoryIssue]:
    """A driver pin the family's repository cannot install: on EL9 the driver comes only as a dnf module stream
    `nvidia-driver:<branch>-open`, and a branch older than the open kernel modules has none."""
    pin = index.inv.software.nvidia_driver
    if pin is None:
        return []
    try:
        branch = int(pin.split(".", 1)[0])
    except ValueError:
        return []
    out: list[InventoryIssue] = []
    for release in index.cat.os.releases:
        family = index.cat.os.family_of(release)
        least = family.driver_min_branch if family is not None else None
        if least is None or branch >= least:
            continue
        nodes = [n.name for n in index.inv.nodes if index.hardware[n.name].os == release
                 and (gpus := index.hardware[n.name].gpus) is not None and gpus.count]
        if nodes:
            source = family.driver_min_branch_source if family is not None else None
            why = f" ({source})" if source else ""
            out.append(InventoryIssue(("software", "nvidia_driver"),
                                      f"driver {pin} (branch {branch}) cannot be installed on {compress(nodes)} "
                                      f"({release}): its repository has no stream for it{why}; pin branch {least} "
                                      "or later (an open-kernel-module driver)", rule="INV-OS"))
    return out
