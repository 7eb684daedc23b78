"""Steps completed as columns: the headline results of many layouts that share a task graph,
from their clocks, with numpy arrays over the layouts instead of one result object each.

:func:`complete_columns` does, array for array, the operations of
:func:`~simulator.engine.analytical.complete_step` and of the invariants' plain pass
(:func:`~simulator.results.invariants.check_result`) in the same floating-point order, so
every value is bit for bit the single-scenario engine's (``tests/test_search_batch.py``).
A layout the plain pass refuses, or one with training what-ifs or documents (their steps
have more parts), is completed by :func:`~simulator.engine.analytical.complete_step`
itself: the same result, or the same error naming what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulator.engine import training_what_ifs as what_ifs
from simulator.engine.analytical import (
    StagedStep,
    dp_sync_extra_seconds,
    fixed_seconds,
    flops,
    gather_wait,
    gradient_sync_parts,
    send_counts,
    sharding_totals,
)
from simulator.engine.context import exposed_send_seconds
from simulator.engine.dp_beside import stage_reduce_shares
from simulator.engine.dp_overlap_sms import (
    gather_slowdown_inputs,
    gather_slowdowns,
    reduction_overlaps,
    slowdowns,
    synced_clocks,
)
from simulator.results.invariants import _SLACK as SLACK

HEADLINE = ("step_time_s", "tokens_per_s", "model_flops_per_gpu", "hardware_flops_per_gpu", "mfu",
            "bubble_fraction", "comm_exposed_s", "memory_per_gpu_bytes", "fits_in_memory",
            "pipeline_s", "bubble_s", "dp_comm_s", "dp_comm_exposed_s", "optimizer_s", "microbatches",
            "exposed_by_dimension", "memory_capacity_bytes")
"""The :class:`~simulator.results.StepResult` fields a headline gives (the exposed
communication per dimension as a dict, ``tp``, ``pp``, ``dp``, ``cp``, ``ep``)."""
_DIMENSIONS = ("tp", "pp", "dp", "cp", "ep")
_FLOAT_COLUMNS = ("step_time_s", "tokens_per_s", "model_flops_per_gpu", "hardware_flops_per_gpu",
                  "mfu", "bubble_fraction", "comm_exposed_s", "pipeline_s", "bubble_s", "dp_comm_s",
                  "dp_comm_exposed_s", "optimizer_s")


def plain(staged: StagedStep) -> bool:
    """Whether a step is completed by the columns: no training what-if, no documents, one
    pipeline schedule a step."""
    ctx = staged.ctx
    return ctx.scenario.training.documents is None and not what_ifs.active(ctx) and ctx.flushes == 1


def complete_columns(staged: Sequence[StagedStep], finish: np.ndarray, last_start: np.ndarray
                     ) -> list[dict | None]:
    """The headline of each of ``staged`` (:data:`HEADLINE`), or None for a step the
    invariants' plain pass refuses (complete it one by one to know why).

    Parameters
    ----------
    staged : sequence of StagedStep
        Plain steps (:func:`plain`) of one task graph (same schedule, pp, microbatches and
        virtual stages).
    finish, last_start : ndarray, shape (n, p)
        Their clocks (:func:`~simulator.workload.wavefront.batch_stage_clocks`).
    """
    inputs = _inputs(staged)
    with np.errstate(all="ignore"):          # non-finite rows fail the checks below
        cols, busiest = _columns(inputs, finish, last_start)
        ok = _plausible(cols, busiest)
    return _headlines(cols, inputs, ok)


_NUMBERS = ("sync", "tail", "reduce", "shares", "wait", "gathers", "gather_shares", "fixed",
            "model_flops", "hardware_flops", "peak", "tokens", "gpus", "overlap", "tp", "cp", "ep",
            "sharding_comm", "sharding_exposed", "amax", "dp_extra")
"""The per-step inputs :func:`_gather` gives as numbers (in its order), made columns."""


@dataclass(frozen=True)
class _Inputs:
    """What the columns need of each step (arrays over the steps; ``sync``, ``tail``,
    ``reduce``, ``shares``, ``gathers`` and ``gather_shares`` (steps, stages)), and what all
    share: microbatches ``m``, stages ``pp``, virtual stages ``v`` and each stage's sends per
    step."""

    m: int
    pp: int
    v: int
    sends: np.ndarray
    forward: np.ndarray
    backward: np.ndarray
    held: np.ndarray
    sends_exposed: np.ndarray
    memory: list
    capacity: list
    sync: np.ndarray
    tail: np.ndarray
    reduce: np.ndarray
    shares: np.ndarray
    wait: np.ndarray
    gathers: np.ndarray
    gather_shares: np.ndarray
    fixed: np.ndarray
    model_flops: np.ndarray
    hardware_flops: np.ndarray
    peak: np.ndarray
    tokens: np.ndarray
    gpus: np.ndarray
    overlap: np.ndarray
    tp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    sharding_comm: np.ndarray
    sharding_exposed: np.ndarray
    amax: np.ndarray
    dp_extra: np.ndarray


def _inputs(staged: Sequence[StagedStep]) -> _Inputs:
    """The columns' inputs, gathered step by step (the prices are memoised: look-ups)."""
    first = staged[0].ctx
    rows = [_gather(s) for s in staged]
    numbers = zip(_NUMBERS, zip(*(r[0] for r in rows), strict=True), strict=True)
    par = first.scenario.parallelism
    return _Inputs(first.microbatches, par.pp, par.virtual_stages, send_counts(first),
                   np.array([s.forward for s in staged]), np.array([s.backward for s in staged]),
                   np.array([s.sends[0] for s in staged]),
                   np.array([exposed_send_seconds(s.ctx, s.p2p) for s in staged]),
                   [r[1] for r in rows], [r[2] for r in rows],
                   **{name: np.array(column) for name, column in numbers})


def _gather(staged: StagedStep) -> tuple[tuple, float, float]:
    """(numeric inputs, memory per GPU, capacity) of one step, as ``complete_step`` has them."""
    ctx, stages = staged.ctx, staged.stages
    sc, first = ctx.scenario, stages[0]
    sync, tail, reduce = gradient_sync_parts(ctx)
    # zero shares where the reduction runs beside nothing: its slowdown is then exactly 0
    shares = stage_reduce_shares(ctx) if reduction_overlaps(ctx) else np.zeros(ctx.layout.pp)
    wait, (gathers, gather_shares) = gather_wait(staged), gather_slowdown_inputs(ctx)
    model_flops, hardware_flops = flops(ctx, (1.0, 1.0))
    comm, exposed = sharding_totals(ctx, staged.kind_sharded)
    numbers = (sync, tail, reduce, shares, wait, gathers, gather_shares,
               fixed_seconds(ctx, stages), model_flops, hardware_flops,
               ctx.compute.peak_flops, sc.training.global_batch * sc.model.seq_len * 1.0,
               ctx.layout.gpus, sc.parallelism.overlap_grad_reduce, first["tp_comm_s"],
               first["cp_comm_s"], first["ep_comm_s"], comm, exposed, first["amax_comm_s"],
               dp_sync_extra_seconds(ctx))
    memory = max(s["memory_bytes"] for s in staged.kind_stages)     # the stages' maximum
    return numbers, memory, ctx.compute.gpu.hbm_capacity_bytes


def _columns(x: _Inputs, finish: np.ndarray, last_start: np.ndarray) -> tuple[dict, np.ndarray]:
    """The result fields as columns, and the busiest stage's work of each step: the
    operations of ``complete_step`` and ``_result``, in their order."""
    m = x.m
    pipe = finish.max(axis=1)
    work = m * (x.forward + x.backward)
    busy = work + x.held[:, None] * x.sends
    bubble = np.maximum(0.0, pipe - busy.max(axis=1))
    start = np.where(x.overlap[:, None], last_start, finish)
    last_backward = x.backward / x.v
    synced = synced_clocks(start, finish, x.sync, x.tail, slowdowns(last_backward, x.reduce, x.shares))
    first_bucket = x.wait + gather_slowdowns(x.forward, x.gathers, x.gather_shares)
    dp_exposed = np.maximum(0.0, synced.max(axis=1) - pipe) + first_bucket
    step = pipe + dp_exposed + x.fixed
    dp_total = 0 + dp_exposed + x.sharding_exposed
    exposed = {"tp": m * x.tp, "pp": x.sends_exposed, "dp": dp_total + m * x.amax,
               "cp": m * x.cp, "ep": m * x.ep}
    comm = 0 + exposed["tp"] + exposed["pp"] + exposed["dp"] + exposed["cp"] + exposed["ep"]
    cols = {"step_time_s": step, "tokens_per_s": x.tokens / step,
            "model_flops_per_gpu": x.model_flops / step / x.gpus,
            "hardware_flops_per_gpu": x.hardware_flops / step / x.gpus,
            "mfu": x.model_flops / step / x.gpus / x.peak, "bubble_fraction": bubble / step,
            "comm_exposed_s": comm, "pipeline_s": pipe, "bubble_s": bubble,
            "dp_comm_s": x.sync.max(axis=1) + x.dp_extra + x.sharding_comm, "dp_comm_exposed_s": dp_total,
            "optimizer_s": x.fixed, "exposed": exposed}
    return cols, work.max(axis=1)


def _plausible(cols: dict, busiest: np.ndarray) -> np.ndarray:
    """Per step, whether it passes every invariant (:mod:`simulator.results.invariants`)."""
    finite = np.isfinite
    ok = np.ones(len(busiest), bool)
    for name in ("step_time_s", "tokens_per_s", "model_flops_per_gpu", "hardware_flops_per_gpu", "mfu"):
        ok &= finite(cols[name]) & (cols[name] > 0)
    for name in ("bubble_fraction", "comm_exposed_s", "pipeline_s", "bubble_s", "dp_comm_s",
                 "dp_comm_exposed_s", "optimizer_s", *(f"exposed.{d}" for d in _DIMENSIONS)):
        value = cols["exposed"][name[8:]] if name.startswith("exposed.") else cols[name]
        ok &= finite(value) & (value >= 0)
    mfu = cols["mfu"]
    hfu = mfu * cols["hardware_flops_per_gpu"] / cols["model_flops_per_gpu"]
    ok &= (mfu <= 1 + SLACK) & finite(hfu) & (hfu <= 1 + SLACK) & (cols["bubble_fraction"] < 1)
    pipe = cols["pipeline_s"]
    return ok & (pipe >= busiest * (1 - SLACK)) & (cols["step_time_s"] >= pipe * (1 - SLACK))


def _headlines(cols: dict, x: _Inputs, ok: np.ndarray) -> list[dict | None]:
    """One headline dict per step (Python floats, in :data:`HEADLINE`'s names), None where
    ``ok`` is false or the memory figures are not finite and non-negative."""
    floats = zip(*(cols[name].tolist() for name in _FLOAT_COLUMNS), strict=True)     # row by row
    exposed = zip(*(cols["exposed"][d].tolist() for d in _DIMENSIONS), strict=True)
    out: list[dict | None] = []
    steps = zip(ok.tolist(), x.memory, x.capacity, floats, exposed, strict=True)
    for good, memory, capacity, values, by_dimension in steps:
        if not (good and _non_negative(memory) and _non_negative(capacity)):
            out.append(None)
            continue
        row = dict(zip(_FLOAT_COLUMNS, values, strict=True))
        row.update(memory_per_gpu_bytes=memory, fits_in_memory=memory <= capacity,
                   microbatches=x.m, memory_capacity_bytes=capacity,
                   exposed_by_dimension=dict(zip(_DIMENSIONS, by_dimension, strict=True)))
        out.append(row)
    return out


def _non_negative(value) -> bool:
    """The invariants' test of a byte count: a finite number >= 0 (``math.isfinite``, as
    :mod:`simulator.results.invariants`)."""
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
