"""Seconds of a gradient compressor's compute on one GPU (docs/what_ifs.md).

A :class:`simulator.workload.compression.Compression` lists memory-bound kernels (bytes,
count) and GEMMs (m, n, k, count); each is priced by the one compute model
(:class:`simulator.cost.compute.ComputeModel`):

    t = sum_kernels count x (bytes / (B_hbm f_mem) + overhead)
      + sum_gemms count x gemm_time(m, n, k)

The compressor's GEMMs run in the gradient's 16-bit (or fp32) precision, never in fp8.
"""

from __future__ import annotations

import numpy as np

from simulator.cost.compute import ComputeModel
from simulator.workload.compression import Compression


def compression_seconds(plan: Compression, compute: ComputeModel) -> float:
    """Seconds of ``plan``'s kernels and GEMMs on the GPU of ``compute``."""
    seconds = 0.0
    if plan.kernels:
        nbytes, counts = np.array(plan.kernels, dtype=np.float64).T
        seconds += float((compute.memory_time(nbytes) * counts).sum())
    if plan.gemms:
        m, n, k, counts = np.array(plan.gemms, dtype=np.float64).T
        seconds += float((compute.gemm_time(m, n, k) * counts).sum())
    return seconds
