"""A file written onto a lab host over the lab's SSH (the rehearsal's preparation and its stand-ins share it)."""

from __future__ import annotations

from ..lab import LabState, ssh_command
from ..lab.proc import run

__all__ = ["put_file"]


def put_file(state: LabState, host: str, path: str, text: str, mode: str = "0644", timeout_s: float = 60) -> None:
    """Write `text` to `path` on a lab host atomically (temp file + rename), over the lab's SSH.
    A failure is a LabError (lab.proc's CommandError, with the stderr tail), as every lab command's."""
    script = 'mkdir -p "$(dirname "$1")" && cat > "$1.tmp" && chmod "$2" "$1.tmp" && mv "$1.tmp" "$1"'
    run(ssh_command(state, host, ["sh", "-c", script, "put", path, mode]), timeout=timeout_s, input_text=text)
