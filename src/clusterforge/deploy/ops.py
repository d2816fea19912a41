"""pyinfra operations over the pure layers, for the pyinfra CLI (`deploy/site.py`).

`converge(component)` reads the `HostState` fact and yields exactly the commands
`changes.component_changes` says are still needed (nothing: pyinfra reports no change).
`clusterforge deploy` drives the same functions through pyinfra's API with per-host isolation.
"""

from __future__ import annotations

from collections.abc import Generator

from pyinfra.api.operation import operation
from pyinfra.context import host

from .changes import change_lines, component_changes
from .desired import Component, HostPlan
from .facts import HostFacts, HostState
from .runner import probe_args


def change_commands(component: Component, facts: HostFacts) -> list[str]:
    """Facts in -> shell commands out (uploads inline as base64, like the runner's apply script)."""
    return [line for ch in component_changes(component, facts) for line in change_lines(ch)]


@operation()
def converge(plan: HostPlan, component: str) -> Generator[str, None, None]:
    """Bring one component of this host to the plan."""
    comp = plan.component(component)
    if comp is None:
        return
    if comp.problems:
        raise ValueError(f"{component} preflight: " + "; ".join(comp.problems))
    facts: HostFacts = host.get_fact(HostState, **probe_args(plan))
    yield from change_commands(comp, facts)
