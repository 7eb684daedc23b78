"""The GPU's fixed time of a memory-bound kernel, measured in a trace.

clustersim prices a memory-bound kernel as its bytes over the sustained HBM rate, plus the
kernel's fixed in-kernel time ``compute.memory_fixed_us`` (the GPU spec's), plus the gap to the
next kernel (``compute.kernel_overhead_us``, :mod:`simulator.measure.kernel_gaps`)
(:meth:`simulator.cost.compute.ComputeModel.memory_time`). A Kineto trace measures the fixed
time directly: a memory-bound kernel launched as a single thread block (``args.grid`` [1, 1, 1])
moves at most a few kilobytes, so its duration is that fixed time: the grid's launch onto an
SM, its first loads and its drain. The summary is the median and the middle half of those
kernels' durations, in microseconds. Kineto writes durations in microseconds with three
decimals on recent builds; a trace that rounds them to whole microseconds reads up to 1 us high.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.measure.kernel_gaps import middle_summary

MIN_KERNELS = 20
"""One-block memory-bound kernels a trace needs before its floor is summarised."""


def one_block_memory_durations(kernels: pd.DataFrame) -> np.ndarray:
    """Durations (s) of the memory-bound kernels launched as one thread block, from a
    :class:`~simulator.measure.kineto.KinetoTrace` ``kernels`` frame."""
    one = (kernels["kind"] == "kernel") & (kernels["kernel_class"] == "memory") & (kernels["blocks"] == 1)
    return kernels.loc[one, "dur_s"].to_numpy()


def floor_summary(kernels: pd.DataFrame) -> dict[str, float] | None:
    """``kernels`` (how many) and the ``median_us``, ``p25_us`` and ``p75_us`` of
    :func:`one_block_memory_durations`; None with fewer than :data:`MIN_KERNELS`."""
    durations = one_block_memory_durations(kernels)
    return middle_summary(durations, "kernels") if len(durations) >= MIN_KERNELS else None
