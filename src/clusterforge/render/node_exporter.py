"""node_exporter's settings on every node (the exporters path), per OS family: the same arguments, where each
family's package reads them (catalog/os.yaml `families.<f>.node_exporter`).

Debian and Ubuntu: `/etc/default/prometheus-node-exporter`, read by the package's own unit. EL9 (EPEL's
package): `/etc/sysconfig/node_exporter` and a drop-in `node_exporter.service.d/clusterforge.conf` that runs
`/usr/bin/node_exporter $ARGS` from it, so the deploy does not depend on what the packaged unit reads.
Only the families of the inventory's nodes get files.
"""

from __future__ import annotations

from .fabric import FabricView
from .spec import FileSpec

PORT = 9100
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
"""node_exporter's textfile collector directory (Debian's; the ib-health script creates it where it is missing)."""
DEBIAN_PATH = "monitoring/nodes/prometheus-node-exporter"


def dropin_path(unit: str) -> str:
    return f"/etc/systemd/system/{unit}.service.d/clusterforge.conf"


def node_exporter_specs(fab: FabricView) -> list[FileSpec]:
    """One settings file (and a drop-in where the family needs one) per way the nodes' families run node_exporter."""
    index = fab.index
    cat = index.cat.os
    present = sorted({cat.releases[index.hardware[n.name].os].family for n in index.inv.nodes})
    groups: dict[tuple[str, str, str | None], list[str]] = {}
    for family in present:
        ne = cat.families[family].node_exporter
        groups.setdefault((ne.unit, ne.settings, ne.binary), []).append(family)
    specs: list[FileSpec] = []
    for (unit, settings, binary), families in groups.items():
        fams = tuple(families)
        base = DEBIAN_PATH if binary is None else f"monitoring/nodes/{families[0]}/{settings.rsplit('/', 1)[1]}"
        reader = (f"the {unit}.service drop-in clusterforge.conf runs {binary} with" if binary is not None
                  else f"Debian's {unit}.service passes")
        specs.append(FileSpec(base, "monitoring/prometheus-node-exporter.default.j2",
                              {"textfile_dir": TEXTFILE_DIR, "port": PORT, "path": settings, "reader": reader},
                              dest=settings, families=fams))
        if binary is not None:
            dest = dropin_path(unit)
            specs.append(FileSpec(f"monitoring/nodes/{families[0]}/{unit}.service.d/clusterforge.conf",
                                  "monitoring/node-exporter.dropin.conf.j2",
                                  {"settings": settings, "binary": binary, "unit": unit},
                                  dest=dest, families=fams))
    return specs
