"""Parsers for the text that cluster tools print (pure functions: text in, typed records out).

``PARSERS[tool](text)`` returns typed, immutable records (frozen slotted dataclasses);
``to_jsonable(tool, records)`` turns them into the documented JSON shape
(docs/parsers.md).  Anything that is not complete, well-formed output of the tool
raises :class:`ParseError` (``str(err) == "line N: ..."``).  Parsers do no I/O,
no logging and never return None.

``ibnetdiscover -p`` (ports report) is available as
:func:`clusterforge.parse.ibnetdiscover_ports.parse` and ``to_jsonable("ibnetdiscover-p", ...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusterforge.parse import (
    dpkg_query,
    ibdev2netdev,
    iblinkinfo,
    ibnetdiscover,
    ibnetdiscover_ports,
    ibstat,
    ibstat_p,
    ibstatus,
    ibv_devinfo,
    lctl_list_nids,
    lnetctl_net_show,
    nccl_tests,
    nvidia_smi_nvlink,
    nvidia_smi_q,
    nvidia_smi_query_gpu,
    nvidia_smi_topo,
    ofed_info,
)
from clusterforge.parse.errors import ParseError

__all__ = ["PARSERS", "ParseError", "to_jsonable"]

PARSERS: dict[str, Callable[[str], object]] = {
    "ibstat": ibstat.parse,
    "ibstat-p": ibstat_p.parse,
    "ibstatus": ibstatus.parse,
    "ibnetdiscover": ibnetdiscover.parse,
    "ibv-devinfo": ibv_devinfo.parse,
    "iblinkinfo": iblinkinfo.parse,
    "nvidia-smi-topo": nvidia_smi_topo.parse,
    "nvidia-smi-nvlink": nvidia_smi_nvlink.parse,
    "nvidia-smi-query-gpu": nvidia_smi_query_gpu.parse,
    "nvidia-smi-q": nvidia_smi_q.parse,
    "ibdev2netdev": ibdev2netdev.parse,
    "lnetctl-net-show": lnetctl_net_show.parse,
    "lctl-list-nids": lctl_list_nids.parse,
    "nccl-tests": nccl_tests.parse,
    "ofed-info": ofed_info.parse,
    "dpkg-query": dpkg_query.parse,
}

# tool -> (record type the parser returns, element type for tuple results, encoder)
_ENCODERS: dict[str, tuple[type, type | None, Callable[[Any], Any]]] = {
    "ibstat": (tuple, ibstat.IbstatCa, ibstat.to_json),
    "ibstat-p": (tuple, str, ibstat_p.to_json),
    "ibstatus": (tuple, ibstatus.IbstatusPort, ibstatus.to_json),
    "ibnetdiscover": (ibnetdiscover.IbTopology, None, ibnetdiscover.to_json),
    "ibnetdiscover-p": (ibnetdiscover_ports.IbPortsReport, None, ibnetdiscover_ports.to_json),
    "ibv-devinfo": (tuple, ibv_devinfo.IbvDevice, ibv_devinfo.to_json),
    "iblinkinfo": (iblinkinfo.IblinkinfoReport, None, iblinkinfo.to_json),
    "nvidia-smi-topo": (nvidia_smi_topo.NvidiaSmiTopo, None, nvidia_smi_topo.to_json),
    "nvidia-smi-nvlink": (nvidia_smi_nvlink.NvlinkStatus, None, nvidia_smi_nvlink.to_json),
    "nvidia-smi-query-gpu": (nvidia_smi_query_gpu.QueryGpuResult, None,
                             nvidia_smi_query_gpu.to_json),
    "nvidia-smi-q": (nvidia_smi_q.NvidiaSmiQ, None, nvidia_smi_q.to_json),
    "ibdev2netdev": (tuple, ibdev2netdev.Ibdev2netdevEntry, ibdev2netdev.to_json),
    "lnetctl-net-show": (lnetctl_net_show.LnetNetShow, None, lnetctl_net_show.to_json),
    "lctl-list-nids": (tuple, lctl_list_nids.LnetNid, lctl_list_nids.to_json),
    "nccl-tests": (nccl_tests.NcclResult, None, nccl_tests.to_json),
    "ofed-info": (ofed_info.OfedInfo, None, ofed_info.to_json),
    "dpkg-query": (dict, None, dpkg_query.to_json),
}


def to_jsonable(tool: str, records: object) -> Any:
    """JSON-ready form (dict/list/str/int/float/bool/None only) of ``PARSERS[tool]``'s result.

    Also accepts ``"ibnetdiscover-p"``.  Raises ``KeyError`` for an unknown tool and
    ``TypeError`` when ``records`` is not what that tool's parser returns.
    """
    try:
        kind, element, encode = _ENCODERS[tool]
    except KeyError:
        raise KeyError(f"unknown tool {tool!r}; expected one of {sorted(_ENCODERS)}") from None
    ok = isinstance(records, kind)
    if ok and element is not None:
        assert isinstance(records, tuple)
        ok = all(isinstance(r, element) for r in records)
    if not ok:
        raise TypeError(f"{tool}: expected the result of the {tool} parser, "
                        f"got {type(records).__name__}")
    return encode(records)
