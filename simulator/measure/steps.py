"""Per-step breakdown of GPU time by interval arithmetic over all streams.

Step windows
------------
Step N's window on the device timeline follows PyTorch's TensorBoard plugin (pytorch/kineto,
tb_plugin/torch_tb_profiler/profiler/event_parser.py, ``StepParser._update_steps_duration``):
it starts at the later of the ``ProfilerStep#N`` annotation's start and the previous window's
end, and ends at the later of the annotation's end and the end of the last GPU operation
launched inside the annotation. Windows therefore follow one another without overlap, and
a step whose kernels run after the CPU has moved on keeps them.

Partition of a window
---------------------
Let C be the union, over every stream, of the intervals of compute operations (every class
but ``nccl``) and M the union of NCCL kernel intervals, both clipped to the window W. Then

    compute_only = |C - M|,  comm_overlapped = |C & M|,  comm_exposed = |M - C|,
    idle = |W| - |C | M|,

so ``compute_only + comm_overlapped + comm_exposed + idle = wall`` exactly;
``compute = |C|`` and ``comm = |M|``. Exposed communication is communication that no
compute operation on any stream overlaps. ``compute`` is split among the compute classes:
where k classes are active at once on different streams, each is charged 1/k of that time,
so ``gemm + attention + memory + other = compute`` and the classes plus ``comm_exposed``
plus ``idle`` also add up to the wall time.

Host wait
---------
``host_wait`` (:func:`host_wait`) is the part of ``idle`` in which nothing was queued either:
no operation ran, none had been launched and not yet started, and the next one to start was
launched after that moment, so the device waited for the host.
"""

from __future__ import annotations

import numpy as np

from simulator.measure.classify import CLASSES


def step_windows(host_start: np.ndarray, host_end: np.ndarray, op_step: np.ndarray,
                 op_start: np.ndarray, op_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Device-side [start, end) of each step (module docstring); ``op_step`` is the index of
    the step that launched each GPU operation, -1 for none."""
    count = len(host_start)
    first = np.full(count, np.inf)
    last = np.full(count, -np.inf)
    matched = op_step >= 0
    np.minimum.at(first, op_step[matched], op_start[matched])
    np.maximum.at(last, op_step[matched], op_end[matched])
    previous = float(host_start[0])
    if np.isfinite(first[0]):   # work launched before the first step that ends before it
        before = ~matched & (op_end < first[0])
        previous = max(previous, float(op_end[before].max(initial=previous)))
    starts, ends = np.empty(count), np.empty(count)
    for i in range(count):
        starts[i] = max(previous, float(host_start[i]))
        ends[i] = max(float(host_end[i]), float(last[i]), starts[i])
        previous = ends[i]
    return starts, ends


def partition(win_start: np.ndarray, win_end: np.ndarray, op_start: np.ndarray,
              op_end: np.ndarray, op_class: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds of each part of each window (module docstring), one array per column.

    ``op_class`` holds an index into ``CLASSES`` for compute operations and ``len(CLASSES)``
    for NCCL kernels. Times are in one unit (the caller's); results are in the same unit.
    """
    lo, hi = float(win_start[0]), float(win_end[-1])
    keep = (op_end > lo) & (op_start < hi)
    start, end = np.clip(op_start[keep], lo, hi), np.clip(op_end[keep], lo, hi)
    bounds = np.unique(np.concatenate([start, end, win_start, win_end]))
    active = _coverage(bounds, start, end, op_class[keep], len(CLASSES) + 1)
    length = np.diff(bounds)
    window, inside = _windows(bounds, win_start, win_end)
    return _sums(active[:, inside], length[inside], window[inside], len(win_start))


def _windows(bounds: np.ndarray, win_start: np.ndarray,
             win_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each segment ``[bounds[k], bounds[k+1])``: the index of the window it starts in,
    and whether it is inside one at all."""
    window = np.searchsorted(win_start, bounds[:-1], side="right") - 1
    inside = window >= 0
    inside[inside] &= bounds[:-1][inside] < win_end[window[inside]]
    return window, inside


def _coverage(bounds: np.ndarray, start: np.ndarray, end: np.ndarray, cls: np.ndarray,
              classes: int) -> np.ndarray:
    """active[c, k]: some operation of class c runs during [bounds[k], bounds[k+1])."""
    first = np.searchsorted(bounds, start)
    after = np.searchsorted(bounds, end)
    size = len(bounds)
    active = np.empty((classes, size - 1), dtype=bool)
    for c in range(classes):
        mine = cls == c
        delta = (np.bincount(first[mine], minlength=size)
                 - np.bincount(after[mine], minlength=size))
        active[c] = np.cumsum(delta)[:-1] > 0
    return active


def _sums(active: np.ndarray, length: np.ndarray, window: np.ndarray,
          windows: int) -> dict[str, np.ndarray]:
    compute_classes, comm = active[:-1], active[-1]
    running = compute_classes.sum(axis=0)
    busy = running > 0

    def total(mask: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
        values = length * mask if weight is None else length * mask * weight
        return np.bincount(window, weights=values, minlength=windows)

    parts = {"compute_s": total(busy), "comm_s": total(comm),
             "compute_only_s": total(busy & ~comm), "comm_overlapped_s": total(busy & comm),
             "comm_exposed_s": total(~busy & comm), "idle_s": total(~busy & ~comm)}
    share = 1.0 / np.maximum(running, 1)
    for c, name in enumerate(CLASSES):
        parts[f"{name}_s"] = total(compute_classes[c], share)
    return parts


def host_wait(win_start: np.ndarray, win_end: np.ndarray, op_start: np.ndarray,
              op_end: np.ndarray, op_launch: np.ndarray) -> np.ndarray:
    """Seconds of each window in which the device waited for the host to launch work: times
    ``t`` when no operation ran, none was queued (no ``[launch, start)`` interval over ``t``)
    and the next operation to start had been launched after ``t``. Idle time with work
    queued is the device waiting on a dependency (an event, a peer), not on the host. An
    operation whose launch call is not in the trace proves nothing: it queues nothing, and
    idle time that it ends is not charged. Part of ``idle_s``."""
    lo, hi = float(win_start[0]), float(win_end[-1])
    known = ~np.isnan(op_launch)
    queued_from = np.minimum(np.where(known, op_launch, op_start), op_start)
    bounds = np.unique(np.clip(np.concatenate([op_start, op_end, queued_from, win_start,
                                               win_end]), lo, hi))
    zero = np.zeros(len(op_start), dtype=np.int64)
    busy = _coverage(bounds, np.clip(op_start, lo, hi), np.clip(op_end, lo, hi), zero, 1)[0]
    queued = _coverage(bounds, np.clip(queued_from, lo, hi), np.clip(op_start, lo, hi),
                       zero, 1)[0]
    length = np.diff(bounds) * (~busy & ~queued & _ended_by_known(bounds, op_start, known))
    window, inside = _windows(bounds, win_start, win_end)
    return np.bincount(window[inside], weights=length[inside], minlength=len(win_start))


def _ended_by_known(bounds: np.ndarray, op_start: np.ndarray, known: np.ndarray) -> np.ndarray:
    """For each segment: the first operation to start at or after its end has a known launch."""
    order = np.argsort(op_start, kind="stable")
    following = np.searchsorted(op_start[order], bounds[1:], side="left")
    ended = np.zeros(len(bounds) - 1, dtype=bool)
    has_next = following < len(order)
    ended[has_next] = known[order[following[has_next]]]
    return ended
