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

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clusterforge.parse.errors import ParseError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["PARSERS", "ParseError", "to_jsonable"]

# The parser modules are imported when first used (`from clusterforge.parse import ibnetdiscover` imports
# that one): importing all sixteen took 0.15 s (PyYAML for lnetctl among them), which `validate --from`
# paid for the one or two it reads.
_MODULES = {
    "ibstat": "ibstat", "ibstat-p": "ibstat_p", "ibstatus": "ibstatus", "ibnetdiscover": "ibnetdiscover",
    "ibnetdiscover-p": "ibnetdiscover_ports", "ibv-devinfo": "ibv_devinfo", "iblinkinfo": "iblinkinfo",
    "nvidia-smi-topo": "nvidia_smi_topo", "nvidia-smi-nvlink": "nvidia_smi_nvlink",
    "nvidia-smi-query-gpu": "nvidia_smi_query_gpu", "nvidia-smi-q": "nvidia_smi_q", "ibdev2netdev": "ibdev2netdev",
    "lnetctl-net-show": "lnetctl_net_show", "lctl-list-nids": "lctl_list_nids", "nccl-tests": "nccl_tests",
    "ofed-info": "ofed_info", "dpkg-query": "dpkg_query", "rpm-query": "rpm_query", "lustre-state": "lustre_state",
    "mstlink": "mstlink", "mlxlink": "mlxlink", "perftest": "perftest", "dcgmi-diag": "dcgmi_diag",
    "dcgmi-diag-json": "dcgmi_diag",
    "mlxfwmanager": "mlxfwmanager", "mlxfwmanager-xml": "mlxfwmanager", "flint-q": "flint_q", "lfs-df": "lfs_df",
    "lctl-hsm": "lctl_hsm", "lctl-pcc": "lctl_pcc",
    "lctl-recovery": "lctl_recovery", "ibroute": "ibroute", "sinfo-reasons": "sinfo_reasons",
}

PARSERS: dict[str, Callable[[str], object]]
"""tool -> its parser (every tool but `ibnetdiscover-p`); built, and the modules imported, on first use."""


def _module(tool: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{_MODULES[tool]}")


def __getattr__(name: str) -> Any:
    if name == "PARSERS":
        parsers = {tool: _module(tool).parse for tool in _MODULES
                   if tool not in ("ibnetdiscover-p", "dcgmi-diag-json", "mlxfwmanager-xml")}
        parsers["dcgmi-diag-json"] = _module("dcgmi-diag-json").parse_json
        parsers["mlxfwmanager-xml"] = _module("mlxfwmanager-xml").parse_xml
        globals()["PARSERS"] = parsers
        return parsers
    if name in _MODULES.values():  # `parse.ibstat` without importing it first
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# tool -> (record type the parser returns, element type for tuple results), by attribute name
_RECORDS: dict[str, tuple[str, str | None]] = {
    "ibstat": ("tuple", "IbstatCa"),
    "ibstat-p": ("tuple", "str"),
    "ibstatus": ("tuple", "IbstatusPort"),
    "ibnetdiscover": ("IbTopology", None),
    "ibnetdiscover-p": ("IbPortsReport", None),
    "ibv-devinfo": ("tuple", "IbvDevice"),
    "iblinkinfo": ("IblinkinfoReport", None),
    "nvidia-smi-topo": ("NvidiaSmiTopo", None),
    "nvidia-smi-nvlink": ("NvlinkStatus", None),
    "nvidia-smi-query-gpu": ("QueryGpuResult", None),
    "nvidia-smi-q": ("NvidiaSmiQ", None),
    "ibdev2netdev": ("tuple", "Ibdev2netdevEntry"),
    "lnetctl-net-show": ("LnetNetShow", None),
    "lctl-list-nids": ("tuple", "LnetNid"),
    "nccl-tests": ("NcclResult", None),
    "ofed-info": ("OfedInfo", None),
    "dpkg-query": ("dict", None),
    "rpm-query": ("dict", None),
    "lustre-state": ("tuple", "LustreImport"),
    "mstlink": ("MstlinkBer", None),
    "mlxlink": ("MlxlinkReport", None),
    "perftest": ("PerftestResult", None),
    "dcgmi-diag": ("DcgmDiag", None),
    "dcgmi-diag-json": ("DcgmDiag", None),
    "mlxfwmanager": ("tuple", "FwDevice"),
    "mlxfwmanager-xml": ("tuple", "FwDevice"),
    "flint-q": ("FlintQuery", None),
    "lfs-df": ("tuple", "LfsFilesystem"),
    "lctl-hsm": ("tuple", "MdtHsm"),
    "lctl-pcc": ("tuple", "PccMount"),
    "lctl-recovery": ("tuple", "TargetRecovery"),
    "ibroute": ("tuple", "SwitchLft"),
    "sinfo-reasons": ("tuple", "SinfoReason"),
}
_BUILTIN: dict[str, type] = {"tuple": tuple, "dict": dict, "str": str}


def _encoder(tool: str) -> tuple[type, type | None, Callable[[Any], Any]]:
    module = _module(tool)
    kind, element = _RECORDS[tool]
    return (_BUILTIN.get(kind) or getattr(module, kind),
            None if element is None else _BUILTIN.get(element) or getattr(module, element), module.to_json)


def to_jsonable(tool: str, records: object) -> Any:
    """JSON-ready form (dict/list/str/int/float/bool/None only) of ``PARSERS[tool]``'s result.

    Also accepts ``"ibnetdiscover-p"``.  Raises ``KeyError`` for an unknown tool and
    ``TypeError`` when ``records`` is not what that tool's parser returns.
    """
    if tool not in _RECORDS:
        raise KeyError(f"unknown tool {tool!r}; expected one of {sorted(_RECORDS)}")
    kind, element, encode = _encoder(tool)
    ok = isinstance(records, kind)
    if ok and element is not None:
        assert isinstance(records, tuple)
        ok = all(isinstance(r, element) for r in records)
    if not ok:
        raise TypeError(f"{tool}: expected the result of the {tool} parser, "
                        f"got {type(records).__name__}")
    return encode(records)
