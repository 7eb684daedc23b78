"""Pipeline schedules: step time and bubble of GPipe, 1F1B and interleaved 1F1B.

With per-microbatch work ``W_i`` (forward + backward) on stage i, m microbatches and
v model chunks per stage, the critical path of a flushed pipeline is

    T = m max_i W_i + (sum_i W_i - max_i W_i) / v

which for uniform stages is (m + (p-1)/v) W: the bubble (p-1) W / v takes the
fraction (p-1)/(v m + p - 1) of the step; for GPipe and 1F1B (v = 1) this is
(p-1)/(m+p-1) (Huang et al. 2019; Narayanan et al. SC21, eq. 1 and sec. 2.2.2).
GPipe and 1F1B take the same time and differ in memory (microbatches in flight).
:func:`replay_1f1b` replays the per-stage task order step by step and is the
oracle the closed form is tested against.
"""

from __future__ import annotations

import numpy as np


def pipeline_time(stage_work, microbatches: int, chunks: int = 1) -> tuple[float, float]:
    """(step time, bubble time of the busiest stage) for per-stage work ``stage_work`` (s)."""
    work = np.asarray(stage_work, dtype=np.float64)
    busiest = float(work.max())
    total = microbatches * busiest + (float(work.sum()) - busiest) / chunks
    return total, total - microbatches * busiest


def bubble_fraction(stages: int, microbatches: int, chunks: int = 1) -> float:
    """Closed form for uniform stages: (p-1) / (v m + p - 1)."""
    return (stages - 1) / (chunks * microbatches + stages - 1)


def replay_1f1b(forward, backward, microbatches: int) -> float:
    """Finish time of 1F1B from its dependency graph (no closed form used).

    Stage i runs ``p - i - 1`` warm-up forwards, then alternates one forward and one
    backward, then drains its backwards. Forward j on stage i needs forward j on i-1;
    backward j on stage i needs backward j on i+1 and forward j on i.
    """
    f, b = np.asarray(forward, float), np.asarray(backward, float)
    p, m = len(f), microbatches
    f_end = np.full((p, m), np.nan)
    b_end = np.full((p, m), np.nan)
    orders = [_one_f_one_b_order(p, i, m) for i in range(p)]
    clock, cursor = np.zeros(p), [0] * p
    while any(cursor[i] < len(orders[i]) for i in range(p)):
        progressed = False
        for i in range(p):
            while cursor[i] < len(orders[i]):
                kind, j = orders[i][cursor[i]]
                ready = _ready(kind, i, j, p, f_end, b_end)
                if ready is None:
                    break
                start = max(clock[i], ready)
                clock[i] = start + (f[i] if kind == "F" else b[i])
                (f_end if kind == "F" else b_end)[i, j] = clock[i]
                cursor[i] += 1
                progressed = True
        if not progressed:
            raise RuntimeError("1F1B replay deadlocked")
    return float(clock.max())


def _one_f_one_b_order(p: int, stage: int, m: int) -> list[tuple[str, int]]:
    warmup = min(p - stage - 1, m)
    order = [("F", j) for j in range(warmup)]
    for j in range(m - warmup):
        order += [("F", warmup + j), ("B", j)]
    order += [("B", j) for j in range(m - warmup, m)]
    return order


def _ready(kind: str, i: int, j: int, p: int, f_end, b_end) -> float | None:
    if kind == "F":
        dep = 0.0 if i == 0 else f_end[i - 1, j]
    else:
        dep = f_end[i, j] if i == p - 1 else b_end[i + 1, j]
    return None if np.isnan(dep) else float(dep)
