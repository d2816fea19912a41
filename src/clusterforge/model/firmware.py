"""Firmware pins (docs/firmware.md): the version each HCA / DPU model and each switch model must run, the
PSIDs (board and OEM identities) allowed to carry it, and where the image comes from (a URL or a path:
images are never embedded in an inventory)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import FilePath, Model, ModelName, Url

FwVersion = Annotated[str, Field(pattern=r"^\d{1,3}\.\d{1,5}\.\d{1,5}$",
                                 description="firmware version as the card prints it, e.g. 28.42.1000")]
Psid = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]{2,31}$",
                            description="a PSID as flint and mlxfwmanager print it, e.g. MT_0000000838")]


class FirmwarePin(Model):
    model: ModelName = Field(description="catalog model: an HCA/DPU (ConnectX-7) or a switch (QM9700)")
    version: FwVersion
    psids: list[Psid] = Field(default_factory=list,
                              description="PSIDs allowed to run this pin (the board and its OEM); empty: any. A "
                                          "card with another PSID is another vendor's board: FW-PSID")
    image: Url | FilePath | None = Field(default=None,
                                         description="where the image is: an http(s) URL or a path relative to the "
                                                     "environment (never the image itself)")


class Firmware(Model):
    hcas: list[FirmwarePin] = Field(default_factory=list, description="HCA and DPU firmware, one pin per model")
    switches: list[FirmwarePin] = Field(default_factory=list, description="switch firmware, one pin per model")
    allow_downgrade: bool = Field(default=False,
                                  description="a flash to an older version is refused unless this is true")
