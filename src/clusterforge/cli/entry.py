"""The `clusterforge` console script: `validate ENV --from DIR --fabric-only` on a proven-clean fabric is
answered before typer, rich or the models are imported (validate/quick.py); everything else is the typer
application of cli/main.py, which imports each command's module when it runs."""

from __future__ import annotations

import sys


def _pyinfra_deploy(argv: list[str]) -> bool:
    """`deploy` with the pyinfra engine (its default): the one command whose hosts run as greenlets."""
    if argv[:1] != ["deploy"]:
        return False
    for i, arg in enumerate(argv):
        if arg == "--engine" and i + 1 < len(argv):
            return argv[i + 1] == "pyinfra"
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1] == "pyinfra"
    return True


def main() -> None:
    argv = sys.argv[1:]
    if _pyinfra_deploy(argv):
        # pyinfra's hosts are greenlets: paramiko's sockets, locks and threads must yield to the gevent hub, or
        # every host's connect and every channel read blocks them all (pyinfra's own CLI patches the same way,
        # first thing). Before anything else is imported (docs/scale.md).
        from gevent import monkey  # type: ignore[import-untyped]

        monkey.patch_all()
    if argv[:1] == ["validate"]:
        from ..validate.quick import fast_validate

        code = fast_validate(argv)
        if code is not None:
            sys.exit(code)
    from .main import app

    app()
