"""Helpers shared by the deploy unit tests (data files captured from lab containers)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def data(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()
