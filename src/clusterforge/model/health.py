"""The node health check's settings (docs/health.md): Slurm's HealthCheckProgram, rendered from the model.

The check (`cf-nodecheck`, templates/slurm/cf-nodecheck.py.j2) compares a node with what the inventory
declares for it (GPU count and driver, NVLink up, each HCA port Active at its declared rate, the Lustre
mounts), drains it through Slurm with a reason naming the part, and resumes it after a clean run only
when the drain was its own (the reason starts with `reason_prefix`): a node a person drained stays drained.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model

NodeState = Literal["ANY", "IDLE", "ALLOC", "MIXED", "NONDRAINED_IDLE", "CYCLE", "START_ONLY"]
Check = Literal["gpus", "driver", "nvlink", "hca", "mounts"]


def _default_state() -> list[NodeState]:
    return ["ANY", "CYCLE"]


def _all_checks() -> list[Check]:
    return ["gpus", "driver", "nvlink", "hca", "mounts"]


class HealthCheck(Model):
    enabled: bool = Field(default=False,
                          description="render the check and Slurm's HealthCheck* lines; it drains and re-admits "
                                      "through deploy.reboot.drain / .resume, which must then be declared "
                                      "(INV-HEALTH)")
    interval_s: int = Field(default=300, ge=30, le=86400,
                            description="Slurm's HealthCheckInterval: seconds between two runs on a node")
    node_state: list[NodeState] = Field(
        default_factory=_default_state,
        description="Slurm's HealthCheckNodeState: which nodes run it (CYCLE spreads the runs over the "
                    "interval instead of every node at once)")
    checks: list[Check] = Field(default_factory=_all_checks,
                                description="what is checked, each against the node's declaration")
    reason_prefix: str = Field(default="cf-health", pattern=r"^[a-z][a-z0-9-]{1,30}$",
                               description="the start of every drain reason the check sets; it resumes only "
                                           "nodes drained with this prefix (never a person's drain)")
    slurmd_port: int = Field(default=6818, ge=1, le=65535,
                             description="the site's SlurmdPort (slurm.conf; Slurm's default 6818): what firewalld "
                                         "opens for slurmd on a host of a family with a firewall (EL9)")
    tool_timeout_s: int = Field(default=15, ge=1, le=50,
                                description="the most one tool may take (slurmd kills the whole check after "
                                            "60 s)")
