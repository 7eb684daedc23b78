"""Local SGD / DiLoCo: the data-parallel reduction once every ``K = training.sync_every``
steps (docs/what_ifs.md).

Between syncs each replica takes ``K`` inner optimizer steps on its own; every ``K``-th
step all-reduces the outer gradient (the change of the weights since the last sync, as
many bytes as the gradients) and runs the outer optimizer (Nesterov momentum; Douillard
et al. 2023, "DiLoCo", arXiv:2311.08105, Algorithm 1; Lin et al. 2020, "Don't Use Large
Mini-Batches, Use Local SGD", for ``K``-step local SGD). With ``T_local`` a step without
the reduction and ``T_sync`` one with it:

    T_sync = T_local + exposed reduction + outer optimizer
    mean step = T_local + (T_sync - T_local) / K,   DP bytes per step = bytes per sync / K

The outer optimizer is memory-bound: :data:`OUTER_TRAFFIC_BYTES_PER_PARAM` per parameter.
In the discrete-event engine step ``i`` (0-based) synchronises when ``(i + 1) % K == 0``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.engine.des_plan import StepPlan

OUTER_TRAFFIC_BYTES_PER_PARAM = 28.0
"""Outer step traffic per parameter: outer gradient ``anchor - theta`` (read 4 + 2, write 4),
momentum update (read and write 4 + 4), anchor update (read and write 4 + 4), the new bf16
weights written (2)."""


def sync_steps(first: int, count: int, every: int) -> np.ndarray:
    """Mask (count,) of the steps ``first .. first + count - 1`` that synchronise."""
    return (np.arange(first, first + count) + 1) % every == 0


def local_plan(plan: StepPlan, outer_share: float) -> StepPlan:
    """``plan`` without the gradient synchronisation (the steps between syncs); the
    analytical step's optimizer carries the outer optimizer's ``outer_share`` (its time over
    ``K``), which these steps do not run."""
    zero = np.zeros_like(plan.sync_s)
    return replace(plan, sync_s=zero, sync_replays=tuple(() for _ in plan.sync_replays),
                   sync_tail_s=None if plan.sync_tail_s is None else zero, sync_slow_s=None,
                   optimizer_s=plan.optimizer_s - outer_share)


def sync_plan(plan: StepPlan, outer_s: float, outer_share: float) -> StepPlan:
    """``plan`` with the whole outer optimizer, ``outer_s``, after the synchronisation."""
    return replace(plan, optimizer_s=plan.optimizer_s - outer_share + outer_s)


def mean_step(local_s: float, sync_s: float, every: int) -> float:
    """Mean step over a period: ``T_local + (T_sync - T_local) / K``."""
    return local_s + (sync_s - local_s) / every
