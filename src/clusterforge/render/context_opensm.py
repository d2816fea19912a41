"""OpenSM: opensm.conf per SM node, the routing GUID files, partitions and node-name-map.

Each SM node gets a complete /etc/opensm directory (`opensm/<sm-node>/`): the files are
the same for every SM except opensm.conf (its `sm_priority` and bound port `guid`).
"""

from __future__ import annotations

from typing import Any

from ..model.services import OpenSm, Partition, SmNode
from .fabric import Ca, FabricView, rail_key
from .guids import fmt
from .spec import FileSpec

OPENSM_DIR = "/etc/opensm"
FILES = {
    "root_guid_file": "root-guids.conf",
    "cn_guid_file": "cn-guids.conf",
    "io_guid_file": "io-guids.conf",
    "partition_config_file": "partitions.conf",
    "node_name_map_name": "node-name-map",
}
DEFAULT_PKEY = 0x7FFF
_KEYWORDS = {"ALL", "ALL_CAS", "ALL_SWITCHES", "SELF"}


def rail_order(cas: list[Ca]) -> list[Ca]:
    """HCAs before DPUs, then by rail (unrailed last), then by name (mlx5_2 before mlx5_10)."""
    return sorted(cas, key=rail_key)


def cabled_ports(fab: FabricView, node: str) -> list[tuple[Ca, int]]:
    """The node's CA ports that have a cable, in rail order."""
    cabled = fab.cabled
    return [(ca, p) for ca in fab.rail_ordered[node] for p in ca.ports if (node, ca.name, p) in cabled]


def _port_entries(fab: FabricView, nodes: list[str]) -> tuple[list[dict[str, str]], list[str]]:
    entries: list[dict[str, str]] = []
    labels: list[str] = []
    ports = fab.guids.ca_ports
    for node in nodes:
        for ca, p in cabled_ports(fab, node):
            label = f"{node}/{ca.name}/{p}"
            entries.append({"guid": f"0x{ports[(node, ca.name, p)]:016x}", "name": label})
            labels.append(label)
    return entries, labels


def root_guids(fab: FabricView) -> tuple[dict[str, Any], list[str]]:
    role = fab.top_role
    names = [s.name for s in fab.switches_of(role)] if role else []
    entries = [{"guid": fmt(fab.guids.switch(n)), "name": n} for n in names]
    title = f"root switches for routing: the {role} tier" if role else "no switches in the inventory"
    return {"title": title, "entries": entries}, names


def cn_guids(fab: FabricView) -> tuple[dict[str, Any], list[str]]:
    nodes = [n.name for n in fab.nodes_of("compute")]
    entries, labels = _port_entries(fab, nodes)
    return {"title": "compute node port GUIDs (ftree / dfsssp compute nodes)", "entries": entries}, labels


def io_nodes(fab: FabricView) -> list[str]:
    """Storage nodes and every Lustre server, in inventory order."""
    servers = {s for fs in fab.index.inv.lustre for s in fs.servers}
    return [n.name for n in fab.index.inv.nodes if n.role == "storage" or n.name in servers]


def io_guids(fab: FabricView) -> tuple[dict[str, Any], list[str]]:
    entries, labels = _port_entries(fab, io_nodes(fab))
    return {"title": "I/O node port GUIDs: storage and Lustre servers", "entries": entries}, labels


def node_name_map(fab: FabricView) -> tuple[dict[str, Any], list[str]]:
    switches = [{"guid": fmt(fab.guids.switch(s.name)), "name": s.name} for s in fab.index.inv.switches]
    nodes = fab.guids.ca_nodes
    cas = [{"guid": f"0x{nodes[(c.node, c.name)]:016x}", "name": f"{c.node} {c.name}"} for c in fab.cas]
    labels = [s.name for s in fab.index.inv.switches] + [f"{c.node}/{c.name}" for c in fab.cas]
    return {"switches": switches, "cas": cas}, labels


def _members(fab: FabricView, part: Partition) -> tuple[list[dict[str, str]], list[str]]:
    out: list[dict[str, str]] = []
    labels: list[str] = []
    for m in part.members:
        if m.device in _KEYWORDS:
            out.append({"spec": f"{m.device}={m.membership}", "comment": ""})
        elif m.device in fab.index.switches:
            out.append({"spec": f"{fmt(fab.guids.switch(m.device))}={m.membership}", "comment": m.device})
            labels.append(m.device)
        else:
            for ca in fab.rail_ordered.get(m.device, []):
                for p in ca.ports:
                    guid = fmt(fab.guids.port(ca.node, ca.name, p))
                    out.append({"spec": f"{guid}={m.membership}", "comment": f"{ca.label}/{p}"})
                    labels.append(f"{ca.label}/{p}")
    return out, labels


def partitions(fab: FabricView, sm: OpenSm) -> tuple[dict[str, Any], list[str]]:
    """OpenSM partitions.conf entries; the Default (0x7fff) partition is always written."""
    parts: list[dict[str, Any]] = []
    labels: list[str] = []
    declared = sorted(sm.partitions, key=lambda p: (p.pkey != DEFAULT_PKEY, p.pkey))
    if not any(p.pkey == DEFAULT_PKEY for p in declared):
        # What OpenSM does without a partitions file: every port a full member.
        parts.append({"name": "Default", "pkey": f"0x{DEFAULT_PKEY:04x}", "flags": ["ipoib", "defmember=full"],
                      "members": [{"spec": "ALL=full", "comment": ""}], "inline": True})
    for part in declared:
        members, used = _members(fab, part)
        labels += used
        flags: list[str] = []
        if part.ipoib:
            flags.append("ipoib")
            if part.mtu is not None:
                flags.append(f"mtu={part.mtu}")
        if all(m.membership == "full" for m in part.members):
            flags.append("defmember=full")
        name = "Default" if part.pkey == DEFAULT_PKEY else part.name
        inline = not any(m["comment"] for m in members)
        parts.append({"name": name, "pkey": f"0x{part.pkey:04x}", "flags": flags, "members": members,
                      "inline": inline})
    return {"partitions": parts}, labels


def sm_port_guid(fab: FabricView, node: str) -> tuple[str | None, str]:
    """The port OpenSM binds to on `node` (its first cabled port in rail order)."""
    ports = cabled_ports(fab, node)
    if not ports:
        return None, "no cabled InfiniBand port"
    ca, p = ports[0]
    label = f"{ca.label}/{p}"
    if label in fab.guids.placeholders:
        return None, f"{label}: port GUID not known yet"
    return fmt(fab.guids.port(node, ca.name, p)), label


def opensm_conf(fab: FabricView, sm: OpenSm, smn: SmNode) -> dict[str, Any]:
    guid, why = sm_port_guid(fab, smn.node)
    return {
        "sm_node": smn.node,
        "guid": guid,
        "guid_comment": why,
        "sm_priority": smn.priority,
        "routing_engine": sm.routing_engine,
        "lmc": sm.lmc,
        "sweep_interval": sm.sweep_interval_s,
        "files": {key: f"{OPENSM_DIR}/{name}" for key, name in FILES.items()
                  if key != "node_name_map_name" or sm.node_name_map},
    }


def opensm_files(fab: FabricView) -> list[FileSpec]:
    nnm_ctx, nnm_labels = node_name_map(fab)
    nnm_unknown = fab.guids.unknown(nnm_labels)
    # the map for the diags on any host (ibnetdiscover / iblinkinfo --node-name-map)
    out = [FileSpec("fabric/node-name-map", "opensm/node-name-map.j2", nnm_ctx, nnm_unknown)]
    sm = fab.index.inv.opensm
    if sm is None:
        return out
    shared: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = []
    for name, template, (ctx, labels) in (
        (FILES["root_guid_file"], "opensm/guids.conf.j2", root_guids(fab)),
        (FILES["cn_guid_file"], "opensm/guids.conf.j2", cn_guids(fab)),
        (FILES["io_guid_file"], "opensm/guids.conf.j2", io_guids(fab)),
        (FILES["partition_config_file"], "opensm/partitions.conf.j2", partitions(fab, sm)),
    ):
        shared.append((name, template, ctx, fab.guids.unknown(labels)))
    if sm.node_name_map:
        shared.append((FILES["node_name_map_name"], "opensm/node-name-map.j2", nnm_ctx, nnm_unknown))
    for smn in sm.sm_nodes:
        base = f"opensm/{smn.node}"
        conf = opensm_conf(fab, sm, smn)
        notes = () if conf["guid"] else (f"opensm.conf for {smn.node}: guid 0 ({conf['guid_comment']})",)
        out.append(FileSpec(f"{base}/opensm.conf", "opensm/opensm.conf.j2", conf, notes=notes))
        out += [FileSpec(f"{base}/{name}", template, ctx, unknown) for name, template, ctx, unknown in shared]
    return out
