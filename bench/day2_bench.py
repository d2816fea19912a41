"""Day-2 figures: diff + change plan + verification of two generated inventories, for each scenario kind
of issue #10 (2,048 nodes), and the pin bump at 256 .. 2,048 nodes for the growth.

Both inventories are loaded once (not timed: `make bench`'s load figures cover that); each variant is
the generated inventory edited as data. Timed: `change_plan` (inventory diff, every host's desired
state on both sides, units, waves, steps) and `verify` (the replay), best of two, GC paused as the
CLI runs them.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from clusterforge.day2 import change_plan
from clusterforge.day2.verify import verify
from clusterforge.model import Inventory
from clusterforge.model.index import Index
from clusterforge.util.gcpause import gc_paused

Data = dict[str, Any]


def _dev(end: Any) -> str:
    return str(end["device"] if isinstance(end, dict) else end.split("/")[0])


def _racks(data: Data) -> list[str]:
    """Compute racks in list order."""
    return list(dict.fromkeys(n["rack"] for n in data["nodes"] if n.get("role", "compute") == "compute"))


def _nodes_of(data: Data, rack: str) -> list[Data]:
    return [n for n in data["nodes"] if n["rack"] == rack]


def _drop_rack(data: Data, rack: str) -> None:
    gone = {n["name"] for n in _nodes_of(data, rack)}
    data["nodes"] = [n for n in data["nodes"] if n["name"] not in gone]
    data["cables"] = [c for c in data["cables"] if _dev(c["a"]) not in gone and _dev(c["b"]) not in gone]
    data["racks"] = [r for r in data["racks"] if r["name"] != rack]


def pins(old: Data) -> Data:
    new = copy.deepcopy(old)
    new["software"].update(nvidia_driver="550.127.05", doca_ofed="23.10-2.1.3.1", nccl="2.22.3-1")
    return new


def nccl(old: Data) -> Data:
    """The NCCL pin alone: applied in place (no drain), every GPU node in one wave-wide deploy."""
    new = copy.deepcopy(old)
    new["software"].update(nccl="2.22.3-1")
    return new


def firmware(version: str) -> Callable[[Data], Data]:
    """The generated nodes' ConnectX-7 pinned at `version` (a fleet-wide firmware bump: both sides pinned)."""
    def pin(old: Data) -> Data:
        new = copy.deepcopy(old)
        new["firmware"] = {"hcas": [{"model": "ConnectX-7", "version": version,
                                     "image": f"firmware/fw-ConnectX7-rel-{version.replace('.', '_')}.bin"}]}
        return new
    return pin


def retire_middle(old: Data) -> Data:
    new = copy.deepcopy(old)
    racks = _racks(old)
    _drop_rack(new, racks[len(racks) // 2])
    return new


def retire_last(old: Data) -> Data:
    new = copy.deepcopy(old)
    _drop_rack(new, _racks(old)[-1])
    return new


def move(old: Data) -> Data:
    """Two nodes of the first rack into the free slots of the last one (their cables stay on their ports)."""
    new = copy.deepcopy(old)
    last = _racks(old)[-1]
    top = max(n["u"] for n in _nodes_of(old, last))
    for i, n in enumerate(_nodes_of(new, _racks(old)[0])[:2]):
        n.update(rack=last, u=top + 8 * (i + 1))
    return new


def swap(old: Data) -> Data:
    """Two nodes of the first rack with two of the second (slots exchanged)."""
    new = copy.deepcopy(old)
    r1, r2 = _racks(old)[:2]
    for a, b in zip(_nodes_of(new, r1)[:2], _nodes_of(new, r2)[:2], strict=True):
        (a["rack"], a["u"]), (b["rack"], b["u"]) = (b["rack"], b["u"]), (a["rack"], a["u"])
    return new


def cooling(old: Data) -> Data:
    new = copy.deepcopy(old)
    rack = next(r for r in new["racks"] if r["name"] == _racks(old)[0])
    rack.update(cooling="immersion" if rack.get("cooling") == "cold-plate" else "cold-plate")
    return new


def _locked(old: Data, leaf: str) -> Data:
    locked = copy.deepcopy(old)
    locked.setdefault("guid_locks", {}).setdefault("switches", {})[leaf] = "0x0002c90300aa0001"
    return locked


def spine_out(old: Data) -> Data:
    """Oversubscription retuned: one spine and its links out (switch-to-switch only)."""
    new = copy.deepcopy(old)
    spine = next(s["name"] for s in old["switches"] if s["role"] == "spine")
    new["switches"] = [s for s in new["switches"] if s["name"] != spine]
    new["cables"] = [c for c in new["cables"] if spine not in (_dev(c["a"]), _dev(c["b"]))]
    return new


def _first_leaf(old: Data) -> str:
    return str(next(s["name"] for s in old["switches"] if s["role"] == "leaf"))


# kind -> (old, new) from the generated inventory's data
SCENARIOS: dict[str, Callable[[Data], tuple[Data, Data]]] = {
    "pin bump (driver, OFED, NCCL)": lambda d: (d, pins(d)),
    "NCCL pin bump (in place)": lambda d: (d, nccl(d)),
    "add a rack at the end": lambda d: (retire_last(d), d),
    "retire the last rack": lambda d: (d, retire_last(d)),
    "retire a middle rack": lambda d: (d, retire_middle(d)),
    "move 2 nodes between racks": lambda d: (d, move(d)),
    "swap 2 + 2 nodes between racks": lambda d: (d, swap(d)),
    "replace a failed leaf (new GUID)": lambda d: (_locked(d, _first_leaf(d)), d),
    "convert a rack's cooling": lambda d: (d, cooling(d)),
    "a spine and its links out": lambda d: (d, spine_out(d)),
    "firmware bump (ConnectX-7, every node)": lambda d: (firmware("28.43.1014")(d), firmware("28.44.1000")(d)),
}


def measure(old: Index, new: Index, runs: int = 2) -> tuple[float, float, float, Any]:
    """Best wall seconds of the plan and of the verification, best CPU seconds of both (on a shared
    machine the CPU time is the steadier figure), and the plan."""
    best_plan, best_verify, best_cpu, plan = 1e9, 1e9, 1e9, None
    for _ in range(runs):
        with gc_paused():
            c0, t0 = time.process_time(), time.perf_counter()
            plan = change_plan(old, new, "bench", "bench")
            t1 = time.perf_counter()
            violations = verify(plan, old, new)
            t2, c2 = time.perf_counter(), time.process_time()
        if violations:
            raise AssertionError(f"the verifier rejects the bench plan: {violations[:3]}")
        best_plan, best_verify = min(best_plan, t1 - t0), min(best_verify, t2 - t1)
        best_cpu = min(best_cpu, c2 - c0)
    return best_plan, best_verify, best_cpu, plan


def run(indexes: Callable[[int], Index], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []

    def row(kind: str, n: int, a: Index, b: Index) -> None:
        plan_s, verify_s, cpu_s, plan = measure(a, b)
        s = plan.summary()
        rows.append({"bench": "day2 diff+plan+verify", "scenario": kind, "nodes": n, "steps": s["steps"],
                     "drained": s["hosts_to_drain"], "hosts_to_deploy": s["hosts_to_deploy"],
                     "plan_s": round(plan_s, 3), "verify_s": round(verify_s, 3),
                     "seconds": round(plan_s + verify_s, 3), "cpu_s": round(cpu_s, 3)})

    for n in sizes[:-1]:
        base = _frozen(indexes(n))
        row("pin bump (driver, OFED, NCCL)", n, base, Index(Inventory.model_validate(pins(_data(base)))))
    n = sizes[-1]
    base = _frozen(indexes(n))
    data = _data(base)
    for kind, make in SCENARIOS.items():
        a, b = make(data)
        row(kind, n, base if a is data else _index(a), base if b is data else _index(b))
    return rows


def _frozen(index: Index) -> Index:
    """The inventory with its addresses frozen (addresses.generated.yaml, as `plan --write` or the first
    deploy leaves it), so that removing or inserting nodes renumbers no one."""
    addrs = index.addresses
    nodes: dict[str, Data] = {}
    for name in index.nodes:
        entry: Data = {"ipoib": {}}
        if name in addrs.mgmt:
            entry["mgmt"] = addrs.text(addrs.mgmt[name])
        if name in addrs.bmc:
            entry["bmc"] = addrs.text(addrs.bmc[name])
        nodes[name] = entry
    for (host, ifname), value in addrs.ipoib.items():
        nodes[host]["ipoib"][ifname] = addrs.text(value)
    data = _data(index)
    data["allocations"] = {"nodes": nodes}
    return _index(data)


def _data(index: Index) -> Data:
    out: Data = index.inv.model_dump(mode="json")
    return out


def _index(data: Data) -> Index:
    return Index(Inventory.model_validate(data))
