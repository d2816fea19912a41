"""Local lab: one podman container per inventory node on a simulated InfiniBand fabric.

Public API (see docs/lab.md):

* ``LabSpec`` / ``LabHost`` / ``LabHca`` - what to start (``spec``);
* ``up(spec) -> LabState``, ``down(state_dir)``, ``status(state_dir)`` (``lab``);
* ``ssh_command(state, host, argv)``, ``fabric_client(state)``,
  ``fault_injector(state)`` for tests and deploy dry-runs;
* lower level: ``ibsim``, ``fabric_tools``, ``faults``, ``image``, ``containers``.
"""

from clusterforge.lab.errors import CommandError, FaultError, LabError, LabSpecError
from clusterforge.lab.faults import FaultInjector, PortRef
from clusterforge.lab.lab import (
    LabStatus,
    down,
    fabric_client,
    fault_injector,
    ssh_command,
    status,
    up,
)
from clusterforge.lab.spec import SM_ROLE, LabHca, LabHost, LabSpec, validate_spec
from clusterforge.lab.state import LabState, read_state

__all__ = [
    "SM_ROLE",
    "CommandError",
    "FaultError",
    "FaultInjector",
    "LabError",
    "LabHca",
    "LabHost",
    "LabSpec",
    "LabSpecError",
    "LabState",
    "LabStatus",
    "PortRef",
    "down",
    "fabric_client",
    "fault_injector",
    "read_state",
    "ssh_command",
    "status",
    "up",
    "validate_spec",
]
