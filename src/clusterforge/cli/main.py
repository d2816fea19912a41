"""The `clusterforge` command: one module per subcommand, imported only when that command runs.

Importing every command module (pydantic models, pyinfra, paramiko, Jinja2, ...) took 1.1 s, which
every invocation paid, `--help` included. Here the top-level group knows each command by name, module
and one line of help; `clusterforge --help` lists them from that table and imports nothing, and
`clusterforge check ...` imports cli/check.py alone (`tests/unit/test_cli_lazy.py` holds the table to
the modules' own help and checks that `--help` imports no command).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from .. import __version__


@dataclass(frozen=True)
class Entry:
    module: str  # clusterforge.cli.<module>
    attr: str  # a command function, or a typer.Typer of subcommands
    help: str  # the first sentence of its help, shown by `clusterforge --help`


COMMANDS: dict[str, Entry] = {
    "init": Entry("init", "init", "Scaffold a new environment that passes `check`."),
    "check": Entry("check", "check", "Check an inventory: structure, references, ports, reach, addresses, power."),
    "schema": Entry("schema", "schema", "Write the inventory JSON schema (for editors: yaml-language-server)."),
    "parse": Entry("parse", "parse", "Parse saved tool output into typed records (the validator's input)."),
    "validate": Entry("validate", "validate", "Validate the built fabric and hosts against the inventory"),
    "accept": Entry("accept", "accept", "The acceptance tests the model implies (DCGM, PCIe, NVLink, ib_write_bw over "
                    "every cable and uplink, NCCL per unit and cluster) with the bound each must reach; --from "
                    "judges a run's outputs."),
    "learn": Entry("learn", "learn", "Bind discovered GUIDs to declared switches and HCA ports"),
    "render": Entry("render", "render", "Render configs, GUID files, topology, ibsim net, cabling CSVs and the fabric "
                    "diagram."),
    "deploy": Entry("deploy", "deploy_cmd", "Deploy the inventory (pyinfra or Ansible); hosts with one outcome fold "
                    "into one line"),
    "ansible-inventory": Entry("ansible_inventory", "ansible_inventory",
                               "Print hosts, groups by role and rack, and hostvars with every file rendered"),
    "diff": Entry("diff", "diff", "Devices, cables and hosts that change, and the ordered plan"),
    "apply": Entry("apply", "apply", "Run the plan's machine steps"),
    "firmware": Entry("firmware", "app", "Flash and activate HCA/DPU firmware on drained hosts, or an unmanaged "
                      "switch's through the fabric: the machine steps of a day-2 firmware bump (`diff` plans them; a "
                      "deploy never flashes)."),
    "alerts": Entry("alerts", "alerts", "List the active alerts with host, rack, U"),
    "floor": Entry("floor", "floor", "Serve the floor page: rows, racks and units, the fabric's leaves and spines, a "
                   "node's cables"),
    "lab": Entry("lab", "app", "The local lab: containers with sshd on a simulated InfiniBand fabric."),
    "plan": Entry("plan", "app", "Plan the fabric: generate, size, compare, BOM."),
    "export": Entry("export", "app", "Export an environment in another tool's format (NetBox CSV)."),
    "import": Entry("import_", "app", "Import another tool's data into an environment (NetBox CSV)."),
}


def load_command(name: str) -> Any:
    """The click command (or group) of `name`, its module imported now."""
    entry = COMMANDS[name]
    target = getattr(importlib.import_module(f"{__package__}.{entry.module}"), entry.attr)
    if isinstance(target, typer.Typer):
        command: Any = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """The top-level group: commands from COMMANDS, each module imported on first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False
        self._loaded: dict[str, Any] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        if self._listing:  # `clusterforge --help`: name and help only, nothing imported
            return TyperCommand(name=cmd_name, help=COMMANDS[cmd_name].help)
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = load_command(cmd_name)
        return self._loaded[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="clusterforge",
    cls=LazyGroup,
    help="Plan, render, deploy and validate GPU clusters with InfiniBand fabrics from one inventory.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"clusterforge {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    """Plan, render, deploy and validate GPU clusters with InfiniBand fabrics from one inventory."""


def main() -> None:  # pragma: no cover - console entry
    app()
