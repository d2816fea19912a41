"""The acceptance run's settings (docs/accept.md): what `clusterforge accept` expects of a built cluster.

Every threshold is a fraction of a figure the model already has (the link rate of the catalog, the GPU's
NVLink bandwidth, the node's rail count), with a default and the reason for it in its description.
"""

from __future__ import annotations

from pydantic import Field

from .base import FiniteFloat, Model


class Acceptance(Model):
    dcgm_level: int = Field(default=2, ge=1, le=4,
                            description="dcgmi diag run level per node: 1 quick (s), 2 medium (minutes, the "
                                        "bring-up default), 3 and 4 long stress runs (a burn-in)")
    link_efficiency: FiniteFloat = Field(
        default=0.90, gt=0, le=1,
        description="ib_write_bw between two HCA ports must reach this fraction of the link's data rate "
                    "(catalog rates: NDR 400 Gb/s). Healthy links measure 98 % (the real ConnectX-6 HDR and "
                    "ConnectX-7 NDR captures: 196.8 of 200 and 392.3 of 400 Gb/s); 90 % leaves room for a "
                    "busy host and still catches a link at half width or speed, or one retrying")
    nccl_efficiency: FiniteFloat = Field(
        default=0.80, gt=0, le=1,
        description="multi-node all_reduce_perf bus bandwidth (GB/s) must reach this fraction of a node's "
                    "network bandwidth: rails x link rate / 8 (nccl-tests' busbw is defined to approach the "
                    "slowest hardware link; NCCL reaches about 90 % of NDR on healthy clusters)")
    nvlink_efficiency: FiniteFloat = Field(
        default=0.65, gt=0, le=1,
        description="single-node all_reduce_perf -g <GPUs> bus bandwidth must reach this fraction of one "
                    "GPU's NVLink bandwidth per direction (catalog: links x GB/s per link; H100 18 x 26.6 = "
                    "478 GB/s); a GPU with NVLinks down or a PCIe-only path falls far below")
    link_pairs_per_round: int = Field(default=0, ge=0,
                                      description="cap on ib_write_bw pairs run at once (0: as many as the "
                                                  "round's matching allows, no port used twice)")
