"""The nvidia component only (pyinfra CLI entry point)."""

from pyinfra import host

from clusterforge.deploy.ops import converge

converge(host.data.cf_plan, "nvidia", name="clusterforge nvidia")
