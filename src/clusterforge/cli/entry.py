"""The `clusterforge` console script: `validate ENV --from DIR --fabric-only` on a proven-clean fabric is
answered before typer, rich or the models are imported (validate/quick.py); everything else is the typer
application of cli/main.py, which imports each command's module when it runs."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["validate"]:
        from ..validate.quick import fast_validate

        code = fast_validate(argv)
        if code is not None:
            sys.exit(code)
    from .main import app

    app()
