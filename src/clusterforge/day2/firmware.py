"""Firmware bumps as day-2 work (docs/firmware.md, "The bump"). Pure.

A pin (`firmware.hcas[]`, `firmware.switches[]`) whose version or image differs between the two inventories is
a bump. Shared by the planner (day2/changeplan.py), which turns each into waves of work, and the verifier
(day2/verify.py, rule FIRMWARE), which proves the plan does it:

* an HCA/DPU pin: every host present in both inventories with a card of that model (`hardware.hcas` and
  `hardware.dpus`) is drained (within `deploy.max_drain`, in the waves of day2/waves.py), flashed
  (`clusterforge firmware flash ... --limit HOSTS`), its new firmware activated as the catalog says
  (`fw_activation`: `mlxfwreset` per card, or a reboot), validated, and resumed;
* a switch pin: every switch of that model, one at a time, the nodes cabled to it out of service first (a
  spine: none), flashed from its switch OS by a person (`fw_tool: switch-os`: a manual `upgrade` step) or
  through the fabric (`mlxfwmanager-inband`: machine `flash` and `activate --how swreset` steps: flint in-band
  from the fabric node, `flint -d lid-<LID> -i IMAGE -y burn`, then `swreset`), then validated.

A bump to an older version is refused unless the new inventory sets `firmware.allow_downgrade` (the flash then
carries `--allow-downgrade`). A pin only the new inventory has flashes nothing: what runs is unknown to the
old inventory (the plan warns; `validate` reports cards that differ, FW-DRIFT). A pin that goes is not flashed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..firmware.images import version_key
from ..model.firmware import FirmwarePin
from ..model.index import Index

Kind = Literal["hcas", "switches"]
Activation = Literal["mlxfwreset", "reboot", "swreset"]

FLASH = ("clusterforge", "firmware", "flash")
ACTIVATE = ("clusterforge", "firmware", "activate")


class FirmwareRefused(ValueError):
    """A bump the new inventory does not allow (a downgrade without `firmware.allow_downgrade`)."""

    def __init__(self, path: tuple[str | int, ...], message: str):
        self.path = path
        super().__init__(message)


@dataclass(frozen=True)
class Bump:
    kind: Kind
    at: int  # its index in the new inventory's firmware.<kind>
    model: str
    old: str
    new: str
    image: str | None
    targets: tuple[str, ...]  # hosts with a card of the model, or switches of the model, in inventory order
    target_set: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def downgrade(self) -> bool:
        return version_key(self.new) < version_key(self.old)

    @property
    def reflash(self) -> bool:
        """The same version from another image: every card is flashed again."""
        return self.new == self.old

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("firmware", self.kind, self.at, "version")

    def __str__(self) -> str:
        change = f"{self.old} -> {self.new}" if not self.reflash else f"{self.new} re-flashed from another image"
        return f"{self.model} {change}{' (downgrade)' if self.downgrade else ''}"


def card_models(index: Index, host: str) -> set[str]:
    """The catalog models of a node's HCAs and DPUs."""
    hw = index.hardware.get(host)
    if hw is None:
        return set()
    return {h.model for h in hw.hcas} | {d.model for d in hw.dpus}


def bumps(old: Index, new: Index) -> list[Bump]:
    """Every pin whose version or image changes, HCA/DPU pins first, in the new inventory's order."""
    fa, fb = old.inv.firmware, new.inv.firmware
    if fb is None or fa is None:
        return []
    out: list[Bump] = []
    sections: tuple[tuple[Kind, list[FirmwarePin], list[FirmwarePin]], ...] = (
        ("hcas", fa.hcas, fb.hcas), ("switches", fa.switches, fb.switches))
    for kind, before, after in sections:
        was = {p.model: p for p in before}
        for i, pin in enumerate(after):
            prev = was.get(pin.model)
            if prev is None or (prev.version == pin.version and prev.image == pin.image):
                continue
            targets = _targets(old, new, kind, pin)
            out.append(Bump(kind, i, pin.model, prev.version, pin.version,
                            str(pin.image) if pin.image is not None else None, targets, frozenset(targets)))
    return out


def _targets(old: Index, new: Index, kind: Kind, pin: FirmwarePin) -> tuple[str, ...]:
    if kind == "switches":
        return tuple(s.name for s in new.inv.switches if s.model == pin.model and s.name in old.switches)
    return tuple(n.name for n in new.inv.nodes if n.name in old.nodes and pin.model in card_models(new, n.name))


def new_pins(old: Index, new: Index) -> list[str]:
    """Models pinned by the new inventory only (nothing is flashed for them)."""
    fa, fb = old.inv.firmware, new.inv.firmware
    if fb is None:
        return []
    known = {p.model for p in fa.hcas} | {p.model for p in fa.switches} if fa is not None else set()
    return [p.model for p in (*fb.hcas, *fb.switches) if p.model not in known]


def refuse_downgrades(new: Index, found: list[Bump]) -> None:
    """FirmwareRefused for the first downgrade the new inventory does not allow."""
    allowed = new.inv.firmware is not None and new.inv.firmware.allow_downgrade
    for b in found:
        if b.downgrade and not allowed:
            raise FirmwareRefused(b.path, f"firmware.{b.kind}[{b.at}] ({b.model}): {b.old} -> {b.new} is a downgrade; "
                                          "set firmware.allow_downgrade: true in the new inventory to plan it")


def activation(index: Index, model: str) -> Activation:
    """How a flashed image of an HCA/DPU model starts running (catalog `fw_activation`)."""
    info = index.cat.hcas.get(model)
    return info.fw_activation if info is not None else "reboot"


def by_hand(index: Index, model: str) -> bool:
    """A switch model flashed from its own OS by a person (`fw_tool: switch-os`, or unknown)."""
    info = index.cat.switches.get(model)
    return info is None or info.fw_tool != "mlxfwmanager-inband"


def cabled_nodes(index: Index, switches: set[str]) -> dict[str, list[str]]:
    """The nodes with a cable to each switch, in cable order (each once)."""
    out: dict[str, dict[str, None]] = {s: {} for s in switches}
    if not switches:
        return {}
    nodes = index.nodes
    for c in index.inv.cables:
        for end, other in ((c.a.device, c.b.device), (c.b.device, c.a.device)):
            if end in out and other in nodes:
                out[end][other] = None
    return {s: list(v) for s, v in out.items()}


def flash_argv(env: str, b: Bump, *, hosts: str | None = None, switch: str | None = None) -> tuple[str, ...]:
    """`clusterforge firmware flash ENV --limit HOSTS|--switch NAME --model M --version V` (+ the image's
    re-flash and the downgrade policy)."""
    where = ("--limit", hosts) if hosts is not None else ("--switch", switch or "")
    return (*FLASH, env, *where, "--model", b.model, "--version", b.new,
            *(("--allow-downgrade",) if b.downgrade else ()), *(("--reflash",) if b.reflash else ()))


def activate_argv(env: str, how: Activation, *, hosts: str | None = None, switch: str | None = None,
                  model: str | None = None) -> tuple[str, ...]:
    where = ("--limit", hosts) if hosts is not None else ("--switch", switch or "")
    return (*ACTIVATE, env, *where, *(("--model", model) if model else ()), "--how", how)
