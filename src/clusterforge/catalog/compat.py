"""OFED / Lustre client compatibility: a small table kept as data (`compat.yaml`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("compat.yaml")


@cache
def _pairs(path: str) -> dict[str, tuple[str, ...]]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise ValueError(f"{path}: expected schema_version 1")
    pairs = data.get("pairs") or {}
    return {str(k): tuple(str(v) for v in vs) for k, vs in pairs.items()}


def lustre_ofed_problem(ofed: str | None, lustre: str | None, table: Path = TABLE) -> str | None:
    """Why the declared OFED/Lustre pair is not known to work, or None when it is (or moot)."""
    if lustre is None:
        return None
    if ofed is None:
        return f"software.lustre_client {lustre} is pinned but software.doca_ofed is not: o2ib needs OFED"
    known = _pairs(str(table)).get(ofed)
    if known is None:
        return f"software.doca_ofed {ofed} is not in the OFED/Lustre compatibility table ({table.name})"
    if lustre not in known:
        return (f"software.lustre_client {lustre} is not known to work with OFED {ofed} "
                f"(known: {', '.join(known)})")
    return None
