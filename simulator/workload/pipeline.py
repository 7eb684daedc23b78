"""Pipeline schedules: step time and bubble of GPipe, 1F1B and interleaved 1F1B.

With per-microbatch work ``W_i`` (forward + backward) on stage i, m microbatches and
v model chunks per stage, the critical path of a flushed pipeline is

    T = m max_i W_i + (sum_i W_i - max_i W_i) / v

which for uniform stages is (m + (p-1)/v) W: the bubble (p-1) W / v takes the
fraction (p-1)/(v m + p - 1) of the step; for GPipe and 1F1B (v = 1) this is
(p-1)/(m+p-1) (Huang et al. 2019; Narayanan et al. SC21, eq. 1 and sec. 2.2.2).
GPipe and 1F1B take the same time and differ in memory (microbatches in flight).
The exact critical path of the same schedules, for any stage costs, is
:func:`simulator.workload.taskgraph.critical_path`; the closed form is its checked
special case (and an upper bound when stages differ).
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
