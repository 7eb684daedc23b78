"""Tie GPU activity to the CPU: which API call launched it, in which step, for which
collective.

The CUPTI/roctracer correlation id (``args.correlation``) is shared by a kernel and the
``cudaLaunchKernel``-like runtime call that launched it. A kernel belongs to step N when
that call starts inside the ``ProfilerStep#N`` annotation, the rule of PyTorch's TensorBoard
plugin (pytorch/kineto, tb_plugin/torch_tb_profiler/profiler/event_parser.py,
``StepParser``). An NCCL kernel's collective call is the ``record_param_comms`` op or
``nccl:<op>`` annotation on the launching thread whose time range holds the launch.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict

import numpy as np

MAX_NESTING = 16
"""How many earlier ranges on a thread to look through for one that holds a launch."""


def launches(kernel_corr: np.ndarray, launch_corr: np.ndarray, launch_ts: np.ndarray,
             launch_tid: np.ndarray, launch_graph: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start time (NaN if unknown), thread id (-1) and whether it was a graph launch (False if
    unknown) of each kernel's launch call."""
    order = np.argsort(launch_corr, kind="stable")
    keys = launch_corr[order]
    where = np.searchsorted(keys, kernel_corr)
    inside = where < len(keys)
    found = np.zeros(len(kernel_corr), dtype=bool)
    found[inside] = (keys[where[inside]] == kernel_corr[inside]) & (kernel_corr[inside] >= 0)
    ts = np.full(len(kernel_corr), np.nan)
    tid = np.full(len(kernel_corr), -1, dtype=np.int64)
    graph = np.zeros(len(kernel_corr), dtype=bool)
    source = order[where[found]]
    ts[found], tid[found], graph[found] = launch_ts[source], launch_tid[source], launch_graph[source]
    return ts, tid, graph


def step_of(times: np.ndarray, step_start: np.ndarray, step_end: np.ndarray) -> np.ndarray:
    """Index of the step whose [start, end] holds each time, -1 for none (or NaN times).

    ``step_start`` is sorted and the steps do not overlap (one training loop thread).
    """
    index = np.searchsorted(step_start, times, side="right") - 1
    valid = (index >= 0) & ~np.isnan(times)
    valid[valid] &= times[valid] <= step_end[index[valid]]
    return np.where(valid, index, -1)


def comm_calls(ranges: list[tuple[int, float, float, str | None, float]],
               tids: np.ndarray, times: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    """Collective name and message bytes of the innermost ``record_param_comms`` /
    ``nccl:<op>`` range holding each (thread, time) launch; (None, NaN) where none does."""
    by_tid: dict[int, list[tuple[float, float, str | None, float]]] = defaultdict(list)
    for tid, start, end, name, nbytes in ranges:
        by_tid[tid].append((start, end, name, nbytes))
    starts = {}
    for tid, items in by_tid.items():
        items.sort(key=lambda item: item[0])
        starts[tid] = [item[0] for item in items]
    names: list[str | None] = []
    sizes = np.full(len(times), np.nan)
    for i, (tid, time) in enumerate(zip(tids.tolist(), times.tolist(), strict=True)):
        name, nbytes = _enclosing(by_tid.get(tid, []), starts.get(tid, []), time)
        names.append(name)
        sizes[i] = nbytes
    return names, sizes


def _enclosing(items: list[tuple[float, float, str | None, float]], starts: list[float],
               time: float) -> tuple[str | None, float]:
    """Innermost name and first known size among the ranges that hold ``time``."""
    name, nbytes = None, math.nan
    if math.isnan(time):
        return name, nbytes
    last = bisect.bisect_right(starts, time) - 1
    for j in range(last, max(last - MAX_NESTING, -1), -1):
        start, end, range_name, range_bytes = items[j]
        if start <= time <= end:
            name = name or range_name
            nbytes = range_bytes if math.isnan(nbytes) else nbytes
    return name, nbytes
