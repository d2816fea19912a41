"""Reading the JSON state files clusterforge writes (plan file, apply journal, deploy record and history,
validate's declared-fabric cache): garbage in them is a ValueError, never a traceback.

`read_bytes` reads a regular file only (a FIFO or `/dev/zero` given as a plan file is refused at once, not
read forever) and at most MAX_BYTES; `loads` refuses a document nested deeper than MAX_DEPTH (100,000 levels
of `[` made json.loads raise RecursionError, and a document just under Python's limit would make the code
that walks it raise one). Stdlib only: the declared-fabric fast path reads its cache with it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects accepted (clusterforge writes at most 8 levels)."""

MAX_BYTES = 256 * 1024 * 1024
"""The largest state file read (a 2,048-node plan file is a few MB)."""


class StateFileError(ValueError):
    """A state file that is not one clusterforge wrote: not a regular file, too large, nested too deeply."""


def read_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file `path` (OSError when it cannot be opened; StateFileError when it is not a
    regular file or is larger than `max_bytes`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StateFileError("not a regular file (a FIFO, device or directory)")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise StateFileError(f"larger than {max_bytes // (1024 * 1024)} MB")
    return data


def loads(text: str | bytes) -> Any:
    """`json.loads`, refusing (StateFileError) a document nested deeper than MAX_DEPTH before it is parsed;
    ValueError for any other text that is not JSON (UnicodeDecodeError included)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if depth(data) > MAX_DEPTH:
        raise StateFileError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(data)
    except RecursionError:  # not reached after the depth check; kept so no input can raise it
        raise StateFileError(f"nested deeper than {MAX_DEPTH} levels") from None


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_OTHERS = bytes(b for b in range(256) if b not in b"[{]}")


def depth(data: bytes) -> int:
    """The deepest nesting of `[` and `{` in the JSON text `data`, strings skipped (C-speed passes: a regex, a
    translate, an accumulate; the text of a malformed document may count deeper than it is)."""
    marks = _STRING.sub(b"", data).translate(_BRACKETS, _OTHERS)
    return max(accumulate(memoryview(marks).cast("b")), default=0)
