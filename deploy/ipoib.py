"""The ipoib component only (pyinfra CLI entry point)."""

from pyinfra import host

from clusterforge.deploy.ops import converge

converge(host.data.cf_plan, "ipoib", name="clusterforge ipoib")
