"""The nvidia component only (pyinfra CLI entry point): one named operation per action, e.g. `nvidia: files (...)`."""

from pyinfra import host

from clusterforge.deploy.ops import deploy_component

deploy_component(host.data.cf_plan, "nvidia")
