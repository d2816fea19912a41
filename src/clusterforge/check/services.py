"""OpenSM (SM nodes, partitions), Lustre and fabric-spec references."""

from __future__ import annotations

from netaddr import AddrFormatError, IPAddress

from ..model.index import Index
from ..util.errors import InventoryIssue

_SPECIAL = {"ALL", "ALL_CAS", "ALL_SWITCHES", "SELF"}


def check(index: Index) -> list[InventoryIssue]:
    return _opensm(index) + _sm_planes(index) + _lustre(index) + _fabric(index)


def _sm_planes(index: Index) -> list[InventoryIssue]:
    """Rail planes (`fabric.planes`) are separate subnets, one OpenSM instance each: every SM node
    needs an InfiniBand port on a rail of every plane."""
    spec, sm = index.inv.fabric, index.inv.opensm
    rpp = spec.rails_per_plane if spec is not None else None
    if spec is None or rpp is None or sm is None:
        return []
    from ..plan.endpoints import rail_ports  # only with rail planes: check stays light to import

    roles = set(spec.roles) - set(spec.infra_roles)
    rails = spec.rails or max((r + 1 for n in index.inv.nodes if n.role in roles and n.name in index.hardware
                               for r, _ in rail_ports(index.hardware[n.name])), default=0)
    planes = rails // rpp if rpp and rails % rpp == 0 else 0
    out: list[InventoryIssue] = []
    for i, smn in enumerate(sm.sm_nodes):
        if smn.node not in index.hardware or planes < 2:
            continue
        mine = {r // rpp for r, _ in rail_ports(index.hardware[smn.node])}
        missing = [p for p in range(planes) if p not in mine]
        if missing:
            out.append(InventoryIssue(
                ("opensm", "sm_nodes", i, "node"),
                f"SM node {smn.node} has no port in rail plane(s) {', '.join(map(str, missing))} of {planes} "
                f"(fabric.planes: {spec.planes}): each plane is its own subnet with its own OpenSM instance, "
                f"so an SM node needs an InfiniBand port on a rail of every plane "
                f"(rails {', '.join(str(p * rpp) for p in missing[:4])}{', ...' if len(missing) > 4 else ''})",
                rule="INV-SM"))
    return out


def _opensm(index: Index) -> list[InventoryIssue]:
    sm = index.inv.opensm
    if sm is None:
        return []
    out: list[InventoryIssue] = []
    for i, smn in enumerate(sm.sm_nodes):
        path = ("opensm", "sm_nodes", i, "node")
        if smn.node not in index.nodes:
            out.append(InventoryIssue(path, f"SM node {smn.node!r} is not a declared node", rule="INV-REF"))
            continue
        hw = index.hardware[smn.node]
        cabled = any((smn.node, name, port) in index.cable_at
                     for name, port in [(h.name, p.port) for h in hw.hcas for p in h.ports]
                     + [(d.name, p.port) for d in hw.dpus for p in d.ports])
        if not cabled and index.inv.fabric is None:
            out.append(
                InventoryIssue(
                    path, f"SM node {smn.node} has no cabled fabric port: OpenSM could not reach the fabric",
                    rule="INV-SM",
                )
            )
        elif not index.hardware[smn.node].hcas:
            out.append(InventoryIssue(path, f"SM node {smn.node} has no HCA", rule="INV-SM"))
    top = max((s.priority for s in sm.sm_nodes), default=0)
    masters = [s.node for s in sm.sm_nodes if s.priority == top]
    if len(masters) > 1:
        out.append(
            InventoryIssue(
                ("opensm", "sm_nodes"),
                f"{' and '.join(masters)} share the top priority {top}: "
                f"give the intended master a higher sm_priority",
                rule="INV-SM",
            )
        )
    pkeys: dict[int, str] = {}
    for i, part in enumerate(sm.partitions):
        other = pkeys.setdefault(part.pkey, part.name)
        if other != part.name:
            out.append(
                InventoryIssue(
                    ("opensm", "partitions", i, "pkey"), f"P_Key {part.pkey:#06x} is also used by {other}",
                    rule="INV-DUP",
                )
            )
        for j, member in enumerate(part.members):
            if (
                member.device not in _SPECIAL
                and member.device not in index.nodes
                and member.device not in index.switches
            ):
                out.append(
                    InventoryIssue(
                        ("opensm", "partitions", i, "members", j, "device"),
                        f"partition member {member.device!r} is not a declared node or switch",
                        rule="INV-REF",
                    )
                )
    return out


def _lustre(index: Index) -> list[InventoryIssue]:
    out: list[InventoryIssue] = []
    ifnames = {ib.name for ib in index.inv.addressing.ipoib}
    for i, fs in enumerate(index.inv.lustre):
        for j, server in enumerate(fs.servers):
            if server not in index.nodes:
                out.append(
                    InventoryIssue(
                        ("lustre", i, "servers", j), f"Lustre server {server!r} is not a declared node",
                        rule="INV-REF",
                    )
                )
        if fs.lnet.startswith("o2ib"):
            for j, ifname in enumerate(fs.interfaces):
                if ifname not in ifnames:
                    out.append(
                        InventoryIssue(
                            ("lustre", i, "interfaces", j),
                            f"{ifname} is not an IPoIB interface of the address plan "
                            f"({', '.join(sorted(ifnames)) or 'none declared'})",
                            rule="INV-REF",
                        )
                    )
            for j, nid in enumerate(fs.mgs_nids):
                net = nid.split("@", 1)[1]
                if net.rstrip("0123456789") != "o2ib":
                    out.append(
                        InventoryIssue(
                            ("lustre", i, "mgs_nids", j), f"MGS NID {nid} is not on LNet network {fs.lnet}",
                            rule="INV-LNET",
                        )
                    )
            out += _mgs_on_a_server(index, i)
        out += _failover_pairs(index, i)
    return out


def _failover_pairs(index: Index, i: int) -> list[InventoryIssue]:
    """Both servers of a failover pair serve this file system; a server is in one pair at most."""
    fs = index.inv.lustre[i]
    servers = set(fs.servers)
    paired: dict[str, int] = {}
    out: list[InventoryIssue] = []
    for j, pair in enumerate(fs.failover_pairs):
        if pair[0] == pair[1]:
            out.append(InventoryIssue(
                ("lustre", i, "failover_pairs", j), f"failover pair {pair[0]} + {pair[1]} names one server twice",
                rule="INV-LUSTRE",
            ))
            continue
        for k, name in enumerate(pair):
            path = ("lustre", i, "failover_pairs", j, k)
            if name not in servers:
                out.append(InventoryIssue(
                    path, f"{name} is not a server of {fs.name} ({', '.join(fs.servers) or 'none declared'})",
                    rule="INV-LUSTRE",
                ))
            elif name in paired:
                out.append(InventoryIssue(
                    path, f"{name} is already in failover pair {paired[name]} of {fs.name}: a server fails "
                    f"over to one partner",
                    rule="INV-LUSTRE",
                ))
            else:
                paired[name] = j
    return out


def _mgs_on_a_server(index: Index, i: int) -> list[InventoryIssue]:
    """An o2ib MGS NID written as an address must be the IPoIB address of one of the file system's
    servers (after a `--renumber` it may point at another node, or at nobody). A NID that names
    its server (`lus01@o2ib0`) follows it and is checked in check/addressing.py.
    """
    fs = index.inv.lustre[i]
    addrs = index.addresses
    servers = [s for s in fs.servers if s in index.nodes]
    if not servers:
        return []
    mine = {addrs.ipoib[(s, f)] for s in servers for f in fs.interfaces if (s, f) in addrs.ipoib}
    out: list[InventoryIssue] = []
    for j, nid in enumerate(fs.mgs_nids):
        try:
            ip = int(IPAddress(nid.split("@", 1)[0]))
        except (AddrFormatError, ValueError):
            continue  # the model validated the NID's form
        if ip in mine:
            continue
        who = next((node for (node, _ifname), x in addrs.ipoib.items() if x == ip), None)  # errors only
        where = f"it is {who}'s IPoIB address" if who else "no node has that IPoIB address"
        out.append(InventoryIssue(
            ("lustre", i, "mgs_nids", j),
            f"MGS NID {nid} is not the {'/'.join(fs.interfaces)} address of a server of {fs.name} "
            f"({', '.join(servers)}): {where}; the servers have "
            + (", ".join(sorted(f"{addrs.text(x)}@{fs.lnet}" for x in mine)) or "no IPoIB address"),
            rule="INV-LNET",
        ))
    return out


def _fabric(index: Index) -> list[InventoryIssue]:
    spec = index.inv.fabric
    if spec is None:
        return []
    out: list[InventoryIssue] = []
    for field in ("leaf_model", "spine_model", "core_model"):
        model = getattr(spec, field)
        if model is not None and model not in index.cat.switches:
            out.append(
                InventoryIssue(
                    ("fabric", field),
                    f"unknown switch model {model!r} (catalog: {', '.join(sorted(index.cat.switches))})",
                    rule="INV-HW",
                )
            )
    if spec.switch_row is not None and spec.switch_row not in {r.name for r in index.inv.site.rows}:
        out.append(InventoryIssue(("fabric", "switch_row"), f"unknown row {spec.switch_row!r}", rule="INV-REF"))
    return out
