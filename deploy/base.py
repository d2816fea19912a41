"""The base component only (pyinfra CLI entry point)."""

from pyinfra import host

from clusterforge.deploy.ops import converge

converge(host.data.cf_plan, "base", name="clusterforge base")
