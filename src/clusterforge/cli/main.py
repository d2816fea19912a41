"""The `clusterforge` command: one module per subcommand."""

from __future__ import annotations

import typer

from . import alerts as alerts_cmd
from . import ansible_inventory as ansible_inventory_cmd
from . import apply as apply_cmd
from . import check as check_cmd
from . import deploy as deploy_cmd
from . import diff as diff_cmd
from . import lab as lab_cmd
from . import learn as learn_cmd
from . import parse as parse_cmd
from . import plan as plan_cmd
from . import render as render_cmd
from . import schema as schema_cmd
from . import validate as validate_cmd

app = typer.Typer(
    name="clusterforge",
    help="Plan, render, deploy and validate GPU clusters with InfiniBand fabrics from one inventory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("check")(check_cmd.check)
app.command("schema")(schema_cmd.schema)
app.command("parse")(parse_cmd.parse)
app.command("validate")(validate_cmd.validate)
app.command("learn")(learn_cmd.learn)
app.add_typer(lab_cmd.app, name="lab")
app.add_typer(plan_cmd.app, name="plan")
app.command("render")(render_cmd.render)
app.command("deploy")(deploy_cmd.deploy_cmd)
app.command("ansible-inventory")(ansible_inventory_cmd.ansible_inventory)
app.command("diff")(diff_cmd.diff)
app.command("apply")(apply_cmd.apply)
app.command("alerts")(alerts_cmd.alerts)


def main() -> None:  # pragma: no cover - console entry
    app()
