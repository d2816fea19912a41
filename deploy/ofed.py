"""The ofed component only (pyinfra CLI entry point)."""

from pyinfra import host

from clusterforge.deploy.ops import converge

converge(host.data.cf_plan, "ofed", name="clusterforge ofed")
