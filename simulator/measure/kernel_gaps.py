"""The GPU's own gap between back-to-back kernels of one stream, measured in a trace.

clustersim charges every kernel it prices a fixed ``compute.kernel_overhead_us`` (the GPU
spec's), the time a stream spends between one kernel's end and the next one's start when the
host has already queued the next (:meth:`simulator.cost.compute.ComputeModel.gemm_time`). A
Kineto trace measures it: for two consecutive kernels ``a, b`` of one stream, the gap
``start(b) - end(a)`` is the GPU's own when

- the API call that launched ``b`` started before ``a`` started (``b`` was waiting in the
  queue, so no host delay is in the gap);
- no GPU operation of the same device ended inside the gap (``b`` did not wait for work on
  another stream through an event);
- neither kernel is an NCCL kernel (whose start waits for the peers).

The summary is the median and the middle half of those gaps, in microseconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.measure.classify import compute_kernels
from simulator.units import US

MIN_PAIRS = 20
"""Queued pairs a trace needs before its gap is summarised."""


def queued_gaps(kernels: pd.DataFrame) -> np.ndarray:
    """Gaps (s) between the back-to-back kernels of a stream that the host had queued and
    nothing on another stream held (module docstring), from a
    :class:`~simulator.measure.kineto.KinetoTrace` ``kernels`` frame."""
    gaps = [_device_gaps(group) for _, group in kernels.groupby("device", sort=True)]
    return np.concatenate(gaps) if gaps else np.empty(0)


def _device_gaps(ops: pd.DataFrame) -> np.ndarray:
    """:func:`queued_gaps` of one device's operations."""
    ends = np.sort((ops["start_s"] + ops["dur_s"]).to_numpy())
    ordered = ops.sort_values(["stream", "start_s"], kind="stable")
    stream = ordered["stream"].to_numpy()
    start = ordered["start_s"].to_numpy()
    end = start + ordered["dur_s"].to_numpy()
    plain = compute_kernels(ordered)
    launch = ordered["launch_s"].to_numpy()
    pair = (stream[1:] == stream[:-1]) & plain[1:] & plain[:-1] & (launch[1:] < start[:-1])
    first, second = np.flatnonzero(pair), np.flatnonzero(pair) + 1
    inside = (np.searchsorted(ends, start[second], side="left")
              - np.searchsorted(ends, end[first], side="right"))
    return (start[second] - end[first])[inside <= 0]


def gap_summary(kernels: pd.DataFrame) -> dict[str, float] | None:
    """``pairs`` and the ``median_us``, ``p25_us`` and ``p75_us`` of :func:`queued_gaps`; None
    with fewer than :data:`MIN_PAIRS` pairs."""
    gaps = queued_gaps(kernels)
    return middle_summary(gaps, "pairs") if len(gaps) >= MIN_PAIRS else None


def middle_summary(seconds: np.ndarray, count: str) -> dict[str, float]:
    """``count`` (how many values) and the ``median_us``, ``p25_us`` and ``p75_us`` of
    ``seconds``."""
    p25, median, p75 = np.percentile(seconds, [25, 50, 75]) / US
    return {count: int(len(seconds)), "median_us": float(median), "p25_us": float(p25),
            "p75_us": float(p75)}
