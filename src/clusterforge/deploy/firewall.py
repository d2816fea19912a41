"""The `firewall` component of an EL host (catalog/os.yaml `families.el9.firewall`): firewalld opens exactly the
ports the host's other components listen on, from the model, and nothing else is touched.

Each component says what it listens on (`Component.ports`: node_exporter, dcgm-exporter, the monitoring store and
Alertmanager, slurmd for the health check). The host gets one firewalld service, `/etc/firewalld/services/
clusterforge.xml`, listing them, added to the default zone when the file changes: with firewalld running,
`firewall-cmd --reload` (it learns the service), `--permanent --add-service`, `--reload`; with firewalld
installed and stopped, `firewall-offline-cmd --add-service`; without firewalld, nothing (no firewall to open).
The service name and commands are constants: no inventory value reaches a shell. The service file is never
retired (deploy/retire.py keeps /etc/firewalld/): a zone naming a missing service stops firewalld loading it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..render import file_context, render_text
from .component import Component, ManagedFile

SERVICE = "clusterforge"
SERVICE_FILE = f"/etc/firewalld/services/{SERVICE}.xml"
TEMPLATE = "firewalld/clusterforge.xml.j2"
HANDLER = "firewalld-service"
OPEN_SCRIPT = (
    f"if firewall-cmd --state >/dev/null 2>&1; then firewall-cmd -q --reload && "
    f"firewall-cmd -q --permanent --add-service={SERVICE} && firewall-cmd -q --reload; "
    f"elif command -v firewall-offline-cmd >/dev/null 2>&1; then "
    f"firewall-offline-cmd -q --query-service={SERVICE} || firewall-offline-cmd -q --add-service={SERVICE}; "
    "else echo 'firewalld is not installed: no firewall to open'; fi")
"""Adds the service to the default zone (the handler of a changed service file; idempotent)."""


@dataclass(frozen=True, order=True)
class Port:
    port: int
    protocol: str
    why: str

    def text(self) -> str:
        return f"{self.port}/{self.protocol}"


def ports_of(components: Iterable[Component]) -> list[Port]:
    """Every port the components listen on, once each, in port order (`9100/tcp node_exporter`)."""
    seen: dict[tuple[int, str], Port] = {}
    for comp in components:
        for spec, why in comp.ports:
            number, _, protocol = spec.partition("/")
            key = (int(number), protocol or "tcp")
            seen.setdefault(key, Port(key[0], key[1], why))
    return sorted(seen.values())


def firewall_component(components: Sequence[Component], env_name: str, root: str, *,
                       render: bool = True) -> Component:
    """The host's `firewall` component: its service lists the components' ports, none when nothing listens (the
    service stays, empty: a zone that names it keeps loading, and what was opened is closed)."""
    ports = ports_of(components)
    context: Mapping[str, Any] = {
        **{"service": SERVICE, "ports": [{"port": p.port, "protocol": p.protocol} for p in ports],
           "why": [f"{p.text()} {p.why}" for p in ports]},
        **file_context({}, env_name)}
    text = render_text(TEMPLATE, context) if render else ""
    dest = f"{root.rstrip('/')}{SERVICE_FILE}"
    return Component("firewall", (ManagedFile(dest, TEMPLATE, context, text, 0o644),), handler=HANDLER)
