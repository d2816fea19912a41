"""Shared building blocks: the strict base model, GUIDs, names, port references."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

_HEX16 = re.compile(r"^(?:0x)?([0-9a-fA-F]{16})$")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"


class Model(BaseModel):
    """Every inventory model: immutable, unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def normalize_guid(value: object) -> str:
    """Return a GUID as `0x` + 16 lower-case hex digits or raise ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < 2**64:
            return f"0x{value:016x}"
        raise ValueError(f"{value!r} does not fit in 64 bits")
    if isinstance(value, str):
        m = _HEX16.match(value.strip())
        if m:
            return "0x" + m.group(1).lower()
    raise ValueError(f"{value!r} is not a 16-hex-digit GUID")


Guid = Annotated[str, BeforeValidator(normalize_guid)]
FiniteFloat = Annotated[float, AllowInfNan(False)]
"""A float that is neither inf nor NaN (YAML `.inf` / `.nan` are rejected wherever a number is read)."""
Name = Annotated[str, Field(pattern=_NAME)]
HcaName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*\d+$")]
Rate = Literal["EDR", "HDR100", "HDR", "NDR200", "NDR", "XDR"]
CableId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")]


class PortRef(Model):
    """One end of a link: a switch port (`leaf01/17`) or an HCA port (`gpu01/mlx5_0/1`).

    Written in YAML as that string or as a mapping {device, hca, port}.
    """

    device: Name
    port: int = Field(ge=1, le=512)
    hca: HcaName | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = value.split("/")
            if len(parts) == 2:
                device, port = parts
                return {"device": device, "port": _port_number(port, value)}
            if len(parts) == 3:
                device, hca, port = parts
                return {"device": device, "hca": hca, "port": _port_number(port, value)}
            raise ValueError(f"{value!r} is not a port reference: write 'switch/PORT' or 'node/HCA/PORT'")
        return value

    def __str__(self) -> str:
        if self.hca is None:
            return f"{self.device}/{self.port}"
        return f"{self.device}/{self.hca}/{self.port}"

    @property
    def key(self) -> tuple[str, str | None, int]:
        return (self.device, self.hca, self.port)


def _port_number(text: str, whole: str) -> int:
    if not text.isdigit():
        raise ValueError(f"{whole!r}: port {text!r} is not a number")
    return int(text)
