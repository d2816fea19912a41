"""Synthetic ibnetdiscover text for scale/fuzz tests (clearly synthetic, not a capture).

Builds a two-level fat tree in the plain ``ibnetdiscover`` layout: ``leaves`` leaf
switches with ``hosts_per_leaf`` CAs each and one uplink per spine.
"""

from __future__ import annotations


def _sw_guid(i: int) -> int:
    return 0x2C5EAB0300000000 + i * 0x40


def _ca_guid(i: int) -> int:
    return 0xE09D730300000000 + i * 0x8


def synth_ibnetdiscover(leaves: int = 256, hosts_per_leaf: int = 32, spines: int = 32) -> str:
    """A complete, symmetric topology: ``leaves * hosts_per_leaf`` CAs."""
    out = ["#", "# Topology file: generated on Thu Jan  1 00:00:00 1970", "#",
           "# Initiated from node 0000000000000001 port 0000000000000001"]
    nports = hosts_per_leaf + spines
    spine_ids = list(range(leaves, leaves + spines))
    spine_ports = max(leaves, 1)
    lid = {i: 10 + i for i in range(leaves + spines)}

    def sw_desc(i: int) -> str:
        if i < leaves:
            return f"MF0;L{i:04d}-IBLEAF # rack {i // 8}:MQM9701/U1"
        return f"MF0;S{i - leaves:04d}-IBSPINE:MQM9701/U1"

    for i in range(leaves + spines):
        g = _sw_guid(i)
        is_leaf = i < leaves
        out += ["", "vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{g:x}",
                f"switchguid=0x{g:x}({g:x})",
                f'Switch\t{nports if is_leaf else spine_ports} "S-{g:016x}"\t\t# "{sw_desc(i)}" '
                f"enhanced port 0 lid {lid[i]} lmc 0"]
        if is_leaf:
            for h in range(hosts_per_leaf):
                ca = i * hosts_per_leaf + h
                cg = _ca_guid(ca)
                out.append(f'[{h + 1}]\t"H-{cg:016x}"[1]({cg:x}) \t\t# "node{ca:05d} mlx5_{h % 8}" '
                           f"lid {1000 + ca} 4xNDR")
            for s_idx, s in enumerate(spine_ids):
                out.append(f'[{hosts_per_leaf + s_idx + 1}]\t"S-{_sw_guid(s):016x}"[{i + 1}]'
                           f'\t\t# "{sw_desc(s)}" lid {lid[s]} 4xNDR')
        else:
            s_idx = i - leaves
            for leaf in range(leaves):
                out.append(f'[{leaf + 1}]\t"S-{_sw_guid(leaf):016x}"[{hosts_per_leaf + s_idx + 1}]'
                           f'\t\t# "{sw_desc(leaf)}" lid {lid[leaf]} 4xNDR')
    for ca in range(leaves * hosts_per_leaf):
        cg = _ca_guid(ca)
        leaf, h = divmod(ca, hosts_per_leaf)
        out += ["", "vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{cg:x}", f"caguid=0x{cg:x}",
                f'Ca\t1 "H-{cg:016x}"\t\t# "node{ca:05d} mlx5_{h % 8}"',
                f'[1]({cg:x}) \t"S-{_sw_guid(leaf):016x}"[{h + 1}]\t\t# lid {1000 + ca} lmc 0 '
                f'"{sw_desc(leaf)}" lid {lid[leaf]} 4xNDR']
    return "\n".join(out) + "\n"
