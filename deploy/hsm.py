"""The hsm component only (pyinfra CLI entry point): Lemur's copytool on the HSM archive's agent nodes."""

from pyinfra import host

from clusterforge.deploy.ops import deploy_component

deploy_component(host.data.cf_plan, "hsm")
