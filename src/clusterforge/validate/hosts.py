"""Per-host checks from ibstat: each declared HCA port present, Active at its rate, GUID locked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..model.index import Index
from ..model.place_text import device_floor, port_text
from ..parse.ibstat import IbstatCa
from .findings import Finding, ids


def check_host(index: Index, host: str, cas: Sequence[IbstatCa]) -> list[Finding]:
    """`cas`: the CAs the host reports, named as declared (see collect for the lab mapping)."""
    out: list[Finding] = []
    by_name: Mapping[str, IbstatCa] = {ca.ca: ca for ca in cas}
    locks = index.port_guid_locks  # built once, not per host
    floor = device_floor(index, host)
    for hca in index.hardware[host].hcas:
        ca = by_name.get(hca.name)
        if ca is None:
            out.append(
                Finding(
                    "HOST-HCA-MISSING",
                    "error",
                    f"{host} {hca.name}",
                    f"{host} does not show {hca.name} ({hca.model})",
                    expected=hca.name,
                    observed=", ".join(sorted(by_name)) or "no CA",
                    action="check the card is seated and the driver loaded (`ibstat`, `lspci | grep Mellanox`, "
                    "`dmesg | grep mlx5`)",
                    floor=floor,
                    host=host,
                )
            )
            continue
        ports = {p.port: p for p in ca.ports}
        for hp in hca.ports:
            key = (host, hca.name, hp.port)
            subject = port_text(key)  # as the fabric findings name it (run.py matches them)
            at = ids(key, cable=index.cable_at.get(key))
            port = ports.get(hp.port)
            if port is None:
                out.append(
                    Finding(
                        "HOST-HCA-MISSING",
                        "error",
                        subject,
                        f"{subject} is absent",
                        expected=f"port {hp.port}",
                        observed=f"ports {sorted(ports)}",
                        action="check the HCA model and firmware port configuration",
                        floor=floor,
                        **at,
                    )
                )
                continue
            if port.state != "Active" or port.physical_state != "LinkUp":
                out.append(
                    Finding(
                        "HOST-PORT-STATE",
                        "error",
                        subject,
                        f"{subject} is {port.state}/{port.physical_state}",
                        expected="Active/LinkUp",
                        observed=f"{port.state}/{port.physical_state}",
                        action=(
                            "Initializing/Armed: the subnet manager has not configured it, check OpenSM; "
                            "Polling: no peer, check the cable; Disabled: `ibportstate` enable"
                        ),
                        floor=floor,
                        **at,
                    )
                )
            want = index.cat.rates[hp.rate].gbps
            if port.state == "Active" and port.rate != want:
                out.append(
                    Finding(
                        "HOST-PORT-RATE",
                        "error",
                        subject,
                        f"{subject} runs at {port.rate} Gb/s, declared {hp.rate} ({want} Gb/s)",
                        expected=f"{want}",
                        observed=f"{port.rate}",
                        action="check the cable and the switch port speed configuration",
                        floor=floor,
                        **at,
                    )
                )
            if port.link_layer is not None and port.link_layer != hp.link_layer:
                out.append(
                    Finding(
                        "HOST-LINK-LAYER",
                        "error",
                        subject,
                        f"{subject} runs {port.link_layer}, declared {hp.link_layer}",
                        expected=hp.link_layer,
                        observed=port.link_layer,
                        action="set the port type with `mlxconfig -d <dev> set LINK_TYPE_P1=1` (IB) and reboot",
                        floor=floor,
                        **at,
                    )
                )
            locked = locks.get(key) or hp.guid
            if locked is not None and port.port_guid != locked:
                out.append(
                    Finding(
                        "HOST-GUID",
                        "error",
                        subject,
                        f"{subject} has port GUID {port.port_guid}, locked {locked}: the HCA was replaced",
                        expected=locked,
                        observed=port.port_guid,
                        action="confirm the replacement, then `clusterforge learn` to lock the new GUID",
                        floor=floor,
                        **at,
                    )
                )
    return out
