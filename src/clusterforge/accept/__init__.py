"""Acceptance from the model: the tests a built cluster must pass (DCGM, PCIe, NVLink, ib_write_bw over every
cable and uplink, NCCL per unit and cluster), the bounds each must reach, and the judgement of a run's
saved outputs into findings that name the slow part (docs/accept.md)."""
