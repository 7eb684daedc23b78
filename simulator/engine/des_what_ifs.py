"""The training what-ifs in the discrete-event engine (docs/what_ifs.md).

- ``sync_every: K``: step ``i`` (0-based) synchronises its gradients and runs the outer
  optimizer when ``(i + 1) % K == 0`` (:mod:`simulator.engine.local_sgd`); the other steps
  run the plan without synchronisation, so the steps show the periodic spike.
- ``data_loader``: each replica's batch takes ``T_load`` (:mod:`simulator.workload.data_loader`)
  times the delay factor ``exp(|N(0, jitter_sigma)|)``, drawn per replica and batch from its own stream
  (``SeedSequence(seed).spawn(3)[2]``, so the other noise draws do not change); the
  prefetch queue (:class:`~simulator.workload.data_loader.LoaderQueue`) adds each step's
  wait. A step's own duration does not depend on when it starts, so the queue runs over
  the simulated steps.

- ``cluster.sites``: a synchronising step adds the WAN ring (``wan_s`` of the analytical
  step, :mod:`simulator.topology.multisite`) after its reduction, times the delay factor
  ``exp(|N(0, wan.jitter_sigma)|)`` per step from its own stream (child 3).

Both jitters are one-sided: ``T_load`` and the WAN ring are priced at the storage's and the
link's full rate, a ceiling no transfer beats, so jitter only delays. The factor is
lognormal folded at 1 (a half-normal in log space): its median is ``exp(0.674 sigma)``, its
mean ``2 exp(sigma^2 / 2) Phi(sigma)`` (1.29 at ``sigma = 0.3``). The GPU compute jitter
(:mod:`simulator.engine.noise`) stays two-sided: kernel times vary about their mean.

Gradient compression needs nothing here: the plan's synchronisation already carries it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.engine.context import Context
from simulator.engine.des_plan import StepPlan
from simulator.engine.local_sgd import local_plan, sync_plan, sync_steps
from simulator.results import StepResult
from simulator.workload.data_loader import LoaderQueue

LOADER_STREAM = 2
"""Child of ``SeedSequence(seed)`` the loader jitter draws from (0 and 1: fail-slow, pauses)."""
WAN_STREAM = 3
"""Child of ``SeedSequence(seed)`` the WAN jitter draws from."""


def step_times(ctx: Context, base: StepResult, plan: StepPlan, source, steps: int, run,
               fast: bool, seed: int) -> tuple[np.ndarray, dict[str, float]]:
    """Seconds of each simulated step with the what-ifs, and their figures.

    ``run(plan, block)`` evaluates a block of steps on one plan, or (event replay) on a
    list of plans, one per step.
    """
    every, notes = ctx.scenario.training.sync_every, dict(base.what_if)
    wan = notes.get("wan_s", 0.0)
    local = local_plan(plan, notes["outer_optimizer_s"] / every) if every > 1 else plan
    sync = sync_step_plan(base, plan, every)
    parts, first = [], 0
    for block in source.blocks(steps):
        mask = sync_steps(first, block.steps, every)
        if every == 1:
            parts.append(run(sync, block))
        else:
            parts.append(np.where(mask, run(sync, block), run(local, block)) if fast
                         else run([sync if m else local for m in mask], block))
        first += block.steps
    times = np.concatenate(parts)
    mask = sync_steps(0, times.size, every)
    jitter = ctx.scenario.cluster.sites.wan.jitter_sigma if wan > 0.0 else 0.0
    if jitter > 0.0:
        rng = _stream(seed, WAN_STREAM)
        times[mask] += wan * (delay_factors(rng, jitter, int(mask.sum())) - 1.0)
    if every > 1:
        if mask.any():
            notes["sync_step_time_s"] = float(times[mask].mean())
        notes["local_step_time_s"] = float(times[~mask].mean())
    if ctx.scenario.training.data_loader is not None:
        times = _with_stalls(ctx, base, times, seed, notes)
    return times, notes


def sync_step_plan(base: StepResult, plan: StepPlan, every: int) -> StepPlan:
    """``plan`` for a synchronising step: the whole outer optimizer (``sync_every > 1``)
    and the WAN ring between sites after the reduction (``cluster.sites``)."""
    sync = plan
    if every > 1:
        outer = base.what_if["outer_optimizer_s"]
        sync = sync_plan(plan, outer, outer / every)
    wan = base.what_if.get("wan_s", 0.0)
    return replace(sync, optimizer_s=sync.optimizer_s + wan) if wan > 0.0 else sync


def _stream(seed: int, child: int) -> np.random.Generator:
    """Generator of child ``child`` of ``SeedSequence(seed)``."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(child + 1)[child])


def delay_factors(rng: np.random.Generator, sigma: float, size) -> np.ndarray:
    """One-sided jitter of a transfer priced at its full rate: ``exp(|N(0, sigma)|)``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from (one normal per factor).
    sigma : float
        Standard deviation of the log of the factor before folding (``jitter_sigma``).
    size : int or tuple of int
        Shape of the draw.

    Returns
    -------
    numpy.ndarray
        Factors ``>= 1``: the rate is a ceiling, so a transfer is never faster than it.
    """
    return np.exp(np.abs(rng.normal(0.0, sigma, size=size)))


def _with_stalls(ctx: Context, base: StepResult, times: np.ndarray, seed: int, notes: dict) -> np.ndarray:
    """``times`` plus each step's wait for its batch; the stall figures into ``notes``."""
    cfg = ctx.scenario.training.data_loader
    load = base.what_if["input_load_s"]
    replicas = ctx.layout.dp if cfg.jitter_sigma > 0 else 1
    queue = LoaderQueue(cfg.prefetch_batches, replicas)
    rng = _stream(seed, LOADER_STREAM)
    stalls, chunk = [], max(1, 2**20 // replicas)
    for lo in range(0, times.size, chunk):
        block = times[lo:lo + chunk]
        loads = np.full((block.size, replicas), load)
        if cfg.jitter_sigma > 0:
            loads *= delay_factors(rng, cfg.jitter_sigma, loads.shape)
        stalls.append(queue.advance(block, loads))
    stall = np.concatenate(stalls)
    notes.update({"input_stall_mean_s": float(stall.mean()), "input_stalled_steps": float((stall > 0).mean()),
                  "input_stall_p99_s": float(np.percentile(stall, 99))})
    return times + stall
