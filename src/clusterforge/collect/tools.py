"""The tools clusterforge runs on a host, one entry each: the command (argv, never a shell string) and the parser
that reads what it prints (a key of `parse.PARSERS`). collect (what validate reads), accept (what it runs and
judges) and the lab's stand-ins all take a tool's command from here, so one tool is spelled one way
(`nvidia-smi nvlink --status`, never `-s` in one place and `--status` in another). A command that takes a
host's arguments (a port, a DCGM level) is the entry's argv followed by them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    argv: tuple[str, ...]
    parser: str
    """The key of `parse.PARSERS` that reads its output."""


TOOLS: dict[str, Tool] = {
    # a host's own view (validate's host outputs)
    "ibstat": Tool(("ibstat",), "ibstat"),
    "nvidia-smi-topo": Tool(("nvidia-smi", "topo", "-m"), "nvidia-smi-topo"),
    "nvidia-smi-nvlink": Tool(("nvidia-smi", "nvlink", "--status"), "nvidia-smi-nvlink"),
    "nvidia-smi-query-gpu": Tool(("nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version", "--format=csv"),
                                 "nvidia-smi-query-gpu"),
    "lctl-list-nids": Tool(("lctl", "list_nids"), "lctl-list-nids"),
    "ofed-info": Tool(("ofed_info", "-s"), "ofed-info"),
    "mlxfwmanager": Tool(("mlxfwmanager", "--query"), "mlxfwmanager"),
    "lfs-df": Tool(("lfs", "df"), "lfs-df"),
    "lctl-hsm": Tool(("lctl", "get_param", "mdt.*.hsm_control", "mdt.*.hsm.agents"), "lctl-hsm"),
    "lctl-pcc": Tool(("lctl", "get_param", "llite.*.pcc"), "lctl-pcc"),
    "lctl-recovery": Tool(("lctl", "get_param", "obdfilter.*.recovery_status", "mdt.*.recovery_status"),
                          "lctl-recovery"),
    "mlxlink": Tool(("mlxlink",), "mlxlink"),  # + -d <hca> -p <port> -m -c
    "dpkg-query": Tool(("dpkg-query", "-W", "-f=${Package} ${Version}\n"), "dpkg-query"),  # + the packages
    "rpm-query": Tool(("rpm", "-q", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n"), "rpm-query"),  # + the packages
    # the fabric, from one node (the master SM's)
    "ibnetdiscover": Tool(("ibnetdiscover",), "ibnetdiscover"),
    "iblinkinfo": Tool(("iblinkinfo",), "iblinkinfo"),
    "dump_fts": Tool(("dump_fts",), "ibroute"),  # the unicast forwarding tables the SM programmed
    # acceptance's node tests
    "dcgmi-diag": Tool(("dcgmi", "diag", "-r"), "dcgmi-diag"),  # + the level
    "nvidia-smi-q": Tool(("nvidia-smi", "-q"), "nvidia-smi-q"),
}


def argv(stem: str, *args: str) -> tuple[str, ...]:
    """The command of tool `stem`, with a host's own arguments after it."""
    return (*TOOLS[stem].argv, *args)
