"""A port's physical layer from mlxlink (`-m -c`, inventory collect.link_health): its BER, flaps and module
readings against the catalog's link_health limits, each finding naming the cable, the port and the lane.

- LINK-BER error: the pre-FEC (raw) BER past what the FEC corrects (on a link without FEC: past the post-FEC
  limit), or the post-FEC BER (symbol BER on HDR/NDR, effective BER on EDR) past `effective_max`: the
  application sees errors. Warning: the raw BER past `raw_warn`, the margin is going (an optic decaying).
- LINK-FLAP warning: the link went down, or recovered from errors, since the counters were last cleared.
- LINK-MODULE warning: on a cable whose ends are modules (the catalog's module media: AOC, fiber), a lane's Rx
  or Tx power below its minimum (the module's own alarm range where mlxlink prints one) or the module above
  its temperature. A passive or active copper cable has no readings to judge.

Pure: parsed reports in, findings out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..catalog import LinkHealth
from ..model.index import Index
from ..model.place_text import cable_text, floor_of, port_text
from ..parse.mlxlink import MlxlinkReport
from .findings import Finding, Ids, ids


def _ber(value: float) -> str:
    return f"{value:.1e}".replace("e-0", "e-").replace("e+0", "e+")


def _worst_lane(errors: tuple[int, ...] | None) -> str:
    if not errors or not any(errors):
        return ""
    lane = max(range(len(errors)), key=lambda i: errors[i])
    return f"; lane {lane} has the most raw errors ({errors[lane]:,} of {sum(errors):,})"


def _has_fec(fec: str | None) -> bool:
    return fec is not None and fec.strip().lower() not in ("no fec", "n/a", "")


def check_link_health(index: Index, host: str, reports: Mapping[tuple[str, int], MlxlinkReport]) -> list[Finding]:
    """LINK-BER / LINK-FLAP / LINK-MODULE for each port's report (`(hca, port)` -> parsed mlxlink)."""
    limits = index.cat.link_health
    out: list[Finding] = []
    for (hca, port), r in sorted(reports.items()):
        key = (host, hca, port)
        subject = port_text(key)
        cable = index.cable_at.get(key)
        where = cable_text(index, cable) if cable is not None else "no cable declared"
        floor = floor_of(index, key) + (f", {where}" if cable is not None else "")
        at = _At(subject, where, floor, ("cables", index.cable_positions[cable.id]) if cable is not None else (),
                 ids(key, cable=cable))
        out += _ber_findings(limits, at, r)
        out += _flaps(at, r)
        if cable is not None and cable.media in limits.module.media and r.module is not None:
            out += _module(limits, at, r)
    return out


@dataclass(frozen=True, slots=True)
class _At:
    """The port a report is of: its text, its cable's words, its place, the cable's model path, its ids."""

    subject: str
    where: str
    floor: str
    path: tuple[str | int, ...]
    ids: Ids


def _ber_findings(limits: LinkHealth, at: _At, r: MlxlinkReport) -> list[Finding]:
    subject, where, floor, path = at.subject, at.where, at.floor, at.path
    ber = limits.ber
    fec = _has_fec(r.fec)
    post = r.symbol_ber if r.symbol_ber is not None else r.effective_ber if fec else r.raw_ber
    post_name = "symbol BER" if r.symbol_ber is not None else "effective BER" if fec else "BER (no FEC)"
    lane = _worst_lane(r.raw_errors_per_lane)
    out: list[Finding] = []
    replace = (f"clean both ends' connectors and reseat {where}; if it stays, replace the cable (or the module "
               "that the worst lane points to) and re-run validate")
    if post is not None and post > ber.effective_max:
        out.append(Finding("LINK-BER", "error", subject,
                           f"{subject} ({where}): {post_name} {_ber(post)} is past {_ber(ber.effective_max)}: the "
                           f"application sees errors{lane}", expected=f"<= {_ber(ber.effective_max)}",
                           observed=_ber(post), action=replace, floor=floor, inventory=path, **at.ids))
    if r.raw_ber is not None and fec and r.raw_ber > ber.raw_fec_limit:
        out.append(Finding("LINK-BER", "error", subject,
                           f"{subject} ({where}): raw BER {_ber(r.raw_ber)} is past what the FEC corrects "
                           f"({_ber(ber.raw_fec_limit)}){lane}", expected=f"<= {_ber(ber.raw_fec_limit)}",
                           observed=_ber(r.raw_ber), action=replace, floor=floor, inventory=path, **at.ids))
    elif r.raw_ber is not None and r.raw_ber > ber.raw_warn and not out:
        out.append(Finding("LINK-BER", "warning", subject,
                           f"{subject} ({where}): raw BER {_ber(r.raw_ber)} is past {_ber(ber.raw_warn)}: the FEC "
                           f"still corrects it, but the link has lost its margin (an optic or cable decaying){lane}",
                           expected=f"<= {_ber(ber.raw_warn)}", observed=_ber(r.raw_ber),
                           action="plan to clean or replace it in the next maintenance window; watch its BER "
                                  "alert (monitoring) meanwhile", floor=floor, inventory=path, **at.ids))
    return out


def _flaps(at: _At, r: MlxlinkReport) -> list[Finding]:
    subject, where, floor, path = at.subject, at.where, at.floor, at.path
    seen = [f"{n} link down" for n in (r.link_down,) if n] + [f"{n} error recoveries" for n in (r.link_recovery,) if n]
    if not seen:
        return []
    since = f" in the {r.time_since_clear_min:,.0f} min since the counters were cleared" \
        if r.time_since_clear_min is not None else " since the counters were last cleared"
    return [Finding("LINK-FLAP", "warning", subject, f"{subject} ({where}): {', '.join(seen)}{since}",
                    expected="0", observed=", ".join(seen),
                    action=f"reseat {where} and clear the counters (`mlxlink -d <hca> -p <port> -pc`); a link that "
                           "flaps again needs the cable replaced", floor=floor, inventory=path, **at.ids)]


def _module(limits: LinkHealth, at: _At, r: MlxlinkReport) -> list[Finding]:
    subject, where, floor, path = at.subject, at.where, at.floor, at.path
    m = r.module
    assert m is not None
    mod = limits.module
    low: list[str] = []
    for what, lanes, floor_dbm, own in (("Rx", m.rx_power_dbm, mod.rx_power_min_dbm, m.rx_power_range),
                                        ("Tx", m.tx_power_dbm, mod.tx_power_min_dbm, m.tx_power_range)):
        least = own[0] if own is not None and own[0] < own[1] else floor_dbm
        low += [f"lane {i} {what} {v:g} dBm (min {least:g})" for i, v in enumerate(lanes or ()) if v < least]
    hot_limit = m.temperature_range[1] if m.temperature_range and m.temperature_range[0] < m.temperature_range[1] \
        else mod.temperature_max_c
    hot = m.temperature_c is not None and m.temperature_c > hot_limit
    if not low and not hot:
        return []
    said = low + ([f"module at {m.temperature_c:g} °C (max {hot_limit:g})"] if hot else [])
    who = " ".join(x for x in (m.vendor, m.part_number, m.serial and f"s/n {m.serial}") if x)
    return [Finding("LINK-MODULE", "warning", subject,
                    f"{subject} ({where}){f', module {who}' if who else ''}: {'; '.join(said)}",
                    observed="; ".join(said),
                    action=f"clean the connectors of {where} and reseat the module; a lane still low, or a module "
                           "still hot (check the airflow), needs the module or cable replaced",
                    floor=floor, inventory=path, **at.ids)]
