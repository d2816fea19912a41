"""OpenSM: opensm.conf per SM node, the routing GUID files, partitions and node-name-map.

Each SM node gets a complete /etc/opensm directory (`opensm/<sm-node>/`): the files are
the same for every SM except opensm.conf (its `sm_priority` and bound port `guid`).

Rail planes (`fabric.planes`, two or more planes cabled): each plane is its own subnet with its
own OpenSM instance, so each SM node gets `opensm/<sm-node>/plane<P>/` (installed as
/etc/opensm/plane<P>/) per plane: opensm.conf bound to the SM node's port in that plane, with
its own log file and dump directory, root / compute / I/O GUID files and partitions
holding only that plane's switches and ports, and standby.env (a standby's unit waits for a master through
its port in the plane before OpenSM starts, so the SM meant to be master wins a simultaneous start).
A port's plane is the plane of the switch its
cable reaches (a leaf: its rail's plane; a rail-plane spine: its group). Each SM node also gets the
unit `opensm/<sm-node>/systemd/opensm-plane@.service` (one instance per plane: opensm-plane@0, ...;
installed in /etc/systemd/system) and `opensm/<sm-node>/default/opensm` (/etc/default/opensm,
PORTS=NONE: the distribution's per-port opensm.service stays off). `install_path` says where each
rendered OpenSM file goes on its SM node.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..model.index import PortKey
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
PLANE_UNIT = "opensm-plane@.service"
"""The systemd template unit of the per-plane OpenSM instances (opensm-plane@<P>)."""
_INSTALL_DIRS = {"systemd": "/etc/systemd/system", "default": "/etc/default"}
DEFAULT_PKEY = 0x7FFF
_KEYWORDS = {"ALL", "ALL_CAS", "ALL_SWITCHES", "SELF"}


def install_path(path: str) -> tuple[str, str] | None:
    """A rendered `opensm/<sm-node>/...` file -> (SM node, absolute path there), else None:
    `opensm/sm01/opensm.conf` -> /etc/opensm/opensm.conf, `opensm/sm01/plane1/opensm.conf` ->
    /etc/opensm/plane1/opensm.conf, `opensm/sm01/systemd/X` -> /etc/systemd/system/X,
    `opensm/sm01/default/opensm` -> /etc/default/opensm."""
    parts = path.split("/")
    if parts[0] != "opensm" or len(parts) < 3:
        return None
    if len(parts) == 4 and parts[2] in _INSTALL_DIRS:
        return parts[1], f"{_INSTALL_DIRS[parts[2]]}/{parts[3]}"
    if len(parts) == 3 or (len(parts) == 4 and parts[2].startswith("plane")):
        return parts[1], f"{OPENSM_DIR}/{'/'.join(parts[2:])}"
    return None


def plane_services(paths: list[str]) -> tuple[str, ...]:
    """The OpenSM units of an SM node from its installed files: `opensm-plane@<P>` for each
    /etc/opensm/plane<P>/opensm.conf (rail planes), else the distribution's `opensm`."""
    planes = sorted(int(p.split("/")[3][len("plane"):]) for p in paths
                    if p.startswith(f"{OPENSM_DIR}/plane") and p.endswith("/opensm.conf"))
    return tuple(f"opensm-plane@{p}" for p in planes) or ("opensm",)


def rail_order(cas: list[Ca]) -> list[Ca]:
    """HCAs before DPUs, then by rail (unrailed last), then by name (mlx5_2 before mlx5_10)."""
    return sorted(cas, key=rail_key)


def cabled_ports(fab: FabricView, node: str) -> list[tuple[Ca, int]]:
    """The node's CA ports that have a cable, in rail order."""
    cabled = fab.cabled
    return [(ca, p) for ca in fab.rail_ordered[node] for p in ca.ports if (node, ca.name, p) in cabled]


def _port_entries(fab: FabricView, nodes: list[str], only: set[PortKey] | None = None
                  ) -> tuple[list[dict[str, str]], list[str]]:
    entries: list[dict[str, str]] = []
    labels: list[str] = []
    ports = fab.guids.ca_ports
    for node in nodes:
        for ca, p in cabled_ports(fab, node):
            if only is not None and (node, ca.name, p) not in only:
                continue
            label = f"{node}/{ca.name}/{p}"
            entries.append({"guid": fmt(ports[(node, ca.name, p)]), "name": label})
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
    cas = [{"guid": fmt(nodes[(c.node, c.name)]), "name": f"{c.node} {c.name}"} for c in fab.cas]
    labels = [s.name for s in fab.index.inv.switches] + [f"{c.node}/{c.name}" for c in fab.cas]
    return {"switches": switches, "cas": cas}, labels


def _members(fab: FabricView, part: Partition, only: set[PortKey] | None = None
             ) -> tuple[list[dict[str, str]], list[str]]:
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
                    if only is not None and (ca.node, ca.name, p) not in only:
                        continue
                    guid = fmt(fab.guids.port(ca.node, ca.name, p))
                    out.append({"spec": f"{guid}={m.membership}", "comment": f"{ca.label}/{p}"})
                    labels.append(f"{ca.label}/{p}")
    return out, labels


def partitions(fab: FabricView, sm: OpenSm, only: set[PortKey] | None = None) -> tuple[dict[str, Any], list[str]]:
    """OpenSM partitions.conf entries; the Default (0x7fff) partition is always written."""
    parts: list[dict[str, Any]] = []
    labels: list[str] = []
    declared = sorted(sm.partitions, key=lambda p: (p.pkey != DEFAULT_PKEY, p.pkey))
    if not any(p.pkey == DEFAULT_PKEY for p in declared):
        # What OpenSM does without a partitions file: every port a full member.
        parts.append({"name": "Default", "pkey": f"0x{DEFAULT_PKEY:04x}", "flags": ["ipoib", "defmember=full"],
                      "members": [{"spec": "ALL=full", "comment": ""}], "inline": True})
    for part in declared:
        members, used = _members(fab, part, only)
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


STANDBY_WAIT_S = 60
"""How long a standby's opensm-plane@<P> waits for a master before it starts anyway."""


def standby_env(smn: SmNode, top_priority: int, plane: int, port: tuple[Ca, int] | None) -> dict[str, Any]:
    """/etc/opensm/plane<P>/standby.env: a standby (priority below the highest of the SM nodes) waits for a
    master through its port in the plane before OpenSM starts; the SM meant to be master starts at once."""
    if port is None:
        return {"plane": plane, "wait_s": 0, "hca": "", "port": "",
                "why": f"no port in rail plane {plane}: nothing to wait through"}
    ca, p = port
    if smn.priority >= top_priority:
        return {"plane": plane, "wait_s": 0, "hca": ca.name, "port": p,
                "why": f"priority {smn.priority}, the highest: the master, started at once"}
    return {"plane": plane, "wait_s": STANDBY_WAIT_S, "hca": ca.name, "port": p,
            "why": f"priority {smn.priority} < {top_priority}: a standby, started once a master answers "
                   f"through {ca.name} port {p} (at most {STANDBY_WAIT_S} s)"}


def switch_planes(fab: FabricView) -> dict[str, int]:
    """Rail planes: switch -> plane (leaves by rail, spines by group); {} without two planes or more."""
    return fab.index.switch_planes


def port_planes(fab: FabricView, planes: dict[str, int]) -> dict[PortKey, int]:
    """Each cabled CA port -> the plane of the switch its cable reaches."""
    out: dict[PortKey, int] = {}
    for key, (far, _) in fab.peer.items():
        if far[0] in planes and key[0] not in planes:
            out[key] = planes[far[0]]
    return out


def _plane_files(fab: FabricView, sm: OpenSm, planes: dict[str, int],
                 nnm: tuple[dict[str, Any], tuple[str, ...]]) -> list[FileSpec]:
    ports = port_planes(fab, planes)
    top = fab.top_role
    top_priority = max(smn.priority for smn in sm.sm_nodes) if sm.sm_nodes else 0
    out: list[FileSpec] = []
    for plane in sorted(set(planes.values())):
        mine = {k for k, v in ports.items() if v == plane}
        d = f"{OPENSM_DIR}/plane{plane}"
        roots = [s.name for s in fab.switches_of(top or "") if planes.get(s.name) == plane]
        root_ctx = {"title": f"root switches of rail plane {plane}: its {top} tier",
                    "entries": [{"guid": fmt(fab.guids.switch(n)), "name": n} for n in roots]}
        cn, cn_labels = _port_entries(fab, [n.name for n in fab.nodes_of("compute")], mine)
        io, io_labels = _port_entries(fab, io_nodes(fab), mine)
        parts, part_labels = partitions(fab, sm, mine)
        shared = [
            (FILES["root_guid_file"], "opensm/guids.conf.j2", root_ctx, fab.guids.unknown(roots)),
            (FILES["cn_guid_file"], "opensm/guids.conf.j2",
             {"title": f"compute node port GUIDs of rail plane {plane}", "entries": cn}, fab.guids.unknown(cn_labels)),
            (FILES["io_guid_file"], "opensm/guids.conf.j2",
             {"title": f"I/O node port GUIDs of rail plane {plane}", "entries": io}, fab.guids.unknown(io_labels)),
            (FILES["partition_config_file"], "opensm/partitions.conf.j2", parts, fab.guids.unknown(part_labels)),
        ]
        if sm.node_name_map:
            shared.append((FILES["node_name_map_name"], "opensm/node-name-map.j2", nnm[0], nnm[1]))
        for smn in sm.sm_nodes:
            base = f"opensm/{smn.node}/plane{plane}"
            conf = opensm_conf(fab, sm, smn)
            own = [(ca, p) for ca, p in cabled_ports(fab, smn.node) if (smn.node, ca.name, p) in mine]
            if own:
                ca, p = own[0]
                label = f"{ca.label}/{p}"
                guid = None if label in fab.guids.placeholders else fmt(fab.guids.port(smn.node, ca.name, p))
                why = label if guid else f"{label}: port GUID not known yet"
            else:
                guid, why = None, f"no cabled InfiniBand port in rail plane {plane}"
            out.append(FileSpec(f"{base}/standby.env", "opensm/standby.env.j2",
                                standby_env(smn, top_priority, plane, own[0] if own else None)))
            conf.update(guid=guid, guid_comment=why, plane=plane,
                        files={k: f"{d}/{n}" for k, n in FILES.items() if k != "node_name_map_name"
                               or sm.node_name_map},
                        log_file=f"/var/log/opensm-plane{plane}.log", dump_files_dir=f"/var/log/opensm-plane{plane}")
            notes = () if guid else (f"opensm.conf for {smn.node} plane {plane}: guid 0 ({why})",)
            out.append(FileSpec(f"{base}/opensm.conf", "opensm/opensm.conf.j2", conf, notes=notes))
            out += [FileSpec(f"{base}/{name}", template, ctx, unknown) for name, template, ctx, unknown in shared]
    all_planes = sorted(set(planes.values()))
    for smn in sm.sm_nodes:
        out.append(FileSpec(f"opensm/{smn.node}/systemd/{PLANE_UNIT}", f"opensm/{PLANE_UNIT}.j2", {}))
        out.append(FileSpec(f"opensm/{smn.node}/default/opensm", "opensm/default-opensm.j2",
                            {"planes": [f"opensm-plane@{p}" for p in all_planes]}))
    return out


def opensm_files(fab: FabricView) -> list[FileSpec]:
    """The fabric's node-name map, and each SM node's OpenSM files, each with its SM node and its place there
    (`install_path`)."""
    return [_installed(s) for s in _opensm_files(fab)]


def _installed(spec: FileSpec) -> FileSpec:
    where = install_path(spec.path)
    return spec if where is None else replace(spec, host=where[0], dest=where[1])


def _opensm_files(fab: FabricView) -> list[FileSpec]:
    nnm_ctx, nnm_labels = node_name_map(fab)
    nnm_unknown = fab.guids.unknown(nnm_labels)
    # the map for the diags on any host (ibnetdiscover / iblinkinfo --node-name-map)
    out = [FileSpec("fabric/node-name-map", "opensm/node-name-map.j2", nnm_ctx, nnm_unknown)]
    sm = fab.index.inv.opensm
    if sm is None:
        return out
    planes = switch_planes(fab)
    if planes:
        return out + _plane_files(fab, sm, planes, (nnm_ctx, nnm_unknown))
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
