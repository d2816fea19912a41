"""EXAMPLE prices for the bill of materials: illustrative round numbers, NOT a quote.

Used when neither the inventory (`prices:`) nor `--prices FILE` gives a table. Keys are
BOM item keys; a cable-like item costs `<key>` plus `<key>/per_m` x its length, unless
`<key>/<length>m` names an exact price (see bom.py).
"""

from __future__ import annotations

from ..model.inventory import PriceTable

EXAMPLE_PRICES = PriceTable(currency="USD", example=True, items={
    # switches
    "switch/QM8700": 17_000, "switch/QM8790": 15_000, "switch/QM9700": 33_000, "switch/QM9790": 30_000,
    "switch/Q3400": 110_000,
    # adapters and GPUs
    "hca/ConnectX-5": 700, "hca/ConnectX-6": 1_300, "hca/ConnectX-7": 2_200,
    "gpu/A30": 4_500, "gpu/A100-SXM": 12_000, "gpu/H100-SXM": 28_000, "gpu/H200-SXM": 32_000,
    "gpu/L40S": 8_000,
    # transceivers (per end): multimode SR, single-mode DR/FR
    "transceiver/EDR/MMF": 250, "transceiver/HDR100/MMF": 400, "transceiver/HDR/MMF": 550,
    "transceiver/NDR200/MMF": 800, "transceiver/NDR/MMF": 900, "transceiver/XDR/MMF": 1_600,
    "transceiver/EDR/SMF": 600, "transceiver/HDR100/SMF": 900, "transceiver/HDR/SMF": 1_100,
    "transceiver/NDR200/SMF": 1_400, "transceiver/NDR/SMF": 1_500, "transceiver/XDR/SMF": 2_600,
    # copper and active optical cables: base + per metre
    "cable/DAC/EDR": 60, "cable/DAC/EDR/per_m": 15, "cable/DAC/HDR100": 90, "cable/DAC/HDR100/per_m": 20,
    "cable/DAC/HDR": 110, "cable/DAC/HDR/per_m": 25, "cable/DAC/NDR200": 150, "cable/DAC/NDR200/per_m": 35,
    "cable/DAC/NDR": 180, "cable/DAC/NDR/per_m": 40, "cable/DAC/XDR": 300, "cable/DAC/XDR/per_m": 80,
    "cable/ACC/HDR": 350, "cable/ACC/HDR/per_m": 30, "cable/ACC/NDR200": 450, "cable/ACC/NDR200/per_m": 40,
    "cable/ACC/NDR": 500, "cable/ACC/NDR/per_m": 45, "cable/ACC/XDR": 900, "cable/ACC/XDR/per_m": 90,
    "cable/AOC/EDR": 350, "cable/AOC/EDR/per_m": 6, "cable/AOC/HDR100": 500, "cable/AOC/HDR100/per_m": 7,
    "cable/AOC/HDR": 700, "cable/AOC/HDR/per_m": 8, "cable/AOC/NDR200": 1_000, "cable/AOC/NDR200/per_m": 10,
    "cable/AOC/NDR": 1_100, "cable/AOC/NDR/per_m": 10,
    # passive fiber
    "fiber/OM3": 25, "fiber/OM3/per_m": 2, "fiber/OM4": 30, "fiber/OM4/per_m": 3, "fiber/OM5": 35,
    "fiber/OM5/per_m": 4, "fiber/OS2": 25, "fiber/OS2/per_m": 2,
    "jumper/OM3": 25, "jumper/OM4": 30, "jumper/OM5": 35, "jumper/OS2": 25,
    "jumper/OM3/per_m": 2, "jumper/OM4/per_m": 3, "jumper/OM5/per_m": 4, "jumper/OS2/per_m": 2,
    "trunk/OM3": 120, "trunk/OM3/per_m": 5, "trunk/OM4": 150, "trunk/OM4/per_m": 6, "trunk/OM5": 170,
    "trunk/OM5/per_m": 7, "trunk/OS2": 140, "trunk/OS2/per_m": 5,
    "patch_panel/mpo24": 450,
    # storage, per raw TB (plan storage): drives by kind; an object store's whole cost (servers, drives) a raw TB
    "storage/nvme/per_tb": 120, "storage/ssd/per_tb": 90, "storage/hdd/per_tb": 20,
    "storage/optane-pmem/per_tb": 4_000, "storage/object/per_tb": 60,
})
