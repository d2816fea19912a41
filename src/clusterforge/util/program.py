"""A hook's argv run as this clusterforge: `clusterforge ...` in an inventory's hook (the lab's drain, resume
and reasons hooks) is the `clusterforge` beside the running Python where there is one, so a hook runs the
version that read the inventory, whatever PATH says."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def clusterforge() -> str:
    """This clusterforge's program: the one next to the running Python, else PATH's."""
    here = Path(sys.executable).parent / "clusterforge"
    return str(here) if here.is_file() else shutil.which("clusterforge") or "clusterforge"


def own(argv: Sequence[str]) -> list[str]:
    """`argv` with a leading `clusterforge` made this one's."""
    return [clusterforge(), *argv[1:]] if argv and argv[0] == "clusterforge" else list(argv)
