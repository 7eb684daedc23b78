"""What the overlapped data-parallel collectives of a ZeRO 0-2 step cost the compute beside them.

Megatron's DDP and distributed optimizer (``overlap_grad_reduce``) reduce gradient buckets
while the step's last backward runs, and (``overlap_param_gather``) gather the updated
weights one bucket ahead of the next step's first forward (Megatron-Core
``DistributedOptimizer``: the first bucket launched by ``zero_grad``, each next one by the
forward pre-hook of the previous). NCCL runs each collective on ``c`` CTAs that do not share
an SM with compute kernels (nccl#689), so for as long as a collective runs beside compute,
the compute has ``SMs - c`` SMs (:mod:`simulator.cost.nccl_sms`). A pass of ``C`` seconds of
compute beside ``R`` seconds of collective therefore takes

    C + f min(R, C / (1 - f)),     f = c / SMs,

with ``f`` raised where the collective's HBM draw slows the pass's memory-bound kernels more
than the SMs do (:mod:`simulator.engine.dp_beside`, :mod:`simulator.cost.hbm_contention`):
the rule ZeRO-3 units are priced by (:func:`simulator.cost.nccl_sms.overlap_slowed`). Here ``C``
is the stage's last backward task (the reduction starts with it:
:func:`simulator.engine.analytical.gradient_sync_start`) and its first forward (the gathers
after the first bucket, which waits in full:
:func:`simulator.engine.gradient_sync.first_param_bucket_time`). Under the chunk-ahead launch
(``param_gather_launch: chunk``) the walk of the interleaved task graph that makes each
chunk's first forward wait for its gather also slows every task that runs beside a gather
(:mod:`simulator.workload.chunk_gathers`, ``share``), so that part is exact on the graph.

Pipeline stages pass these tasks down a chain (the warm-up's first forwards from stage 0 to
``p - 1``, the cool-down's last backwards back), so the step loses the sum of every stage's
slowdown: the forward side adds ``sum_s`` of it to the step; the backward side shifts each
stage's clock by the slowdowns of the stages after it, and a stage's reduction still ends no
earlier than its last bucket's after its own slowed backward. The engines keep the pipeline
clocks without the slowdown and report it with the exposed data-parallel time, where it
belongs: it is what the data-parallel collectives cost the step beyond their own time.
"""

from __future__ import annotations

import numpy as np

from simulator.cost.nccl_sms import overlap_slowed
from simulator.engine.context import Context
from simulator.engine.dp_beside import stage_gather_shares, stage_reduce_shares
from simulator.engine.gradient_sync import rest_gather_seconds
from simulator.engine.pipeline_fsdp import reduces_deferred


def reduction_slowdowns(ctx: Context, reduce: np.ndarray, last_backward: np.ndarray,
                        shares: np.ndarray | None = None) -> np.ndarray:
    """Per stage, seconds its last backward task (``last_backward``, s) loses to the gradient
    reduction beside it, ``f min(R, C / (1 - f))`` with ``R`` = ``reduce``, the reduction's
    seconds (:func:`~simulator.engine.gradient_sync.overlapped_reduce_seconds`); zeros
    without ``overlap_grad_reduce`` or where the runtime defers the reduction. ``shares``:
    :func:`~simulator.engine.dp_beside.stage_reduce_shares`, where the caller has them."""
    if not reduction_overlaps(ctx):
        return np.zeros(ctx.layout.pp)
    return slowdowns(last_backward, reduce, stage_reduce_shares(ctx) if shares is None else shares)


def reduction_overlaps(ctx: Context) -> bool:
    """Whether the gradient reduction runs beside the last backward (``overlap_grad_reduce``,
    not deferred by the runtime, more than one data-parallel rank)."""
    return (ctx.layout.gradient_ranks > 1 and ctx.scenario.parallelism.overlap_grad_reduce
            and not reduces_deferred(ctx))


def slowdowns(compute: np.ndarray, comm: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Seconds ``compute`` loses to ``comm`` seconds of collective beside it holding
    ``shares`` of the SMs (elementwise; :func:`simulator.cost.nccl_sms.overlap_slowed`)."""
    return overlap_slowed(compute, comm, shares) - compute


def cooldown_delays(slowdowns: np.ndarray) -> np.ndarray:
    """Per stage (last axis), seconds its last backward starts late: stage ``s`` waits for
    stage ``s + 1``'s last backward, so for the slowdowns of every stage after it (s)."""
    after = np.cumsum(slowdowns[..., ::-1], axis=-1)[..., ::-1]
    return np.concatenate([after[..., 1:], np.zeros_like(after[..., :1])], axis=-1)


def synced_clocks(start: np.ndarray, finish: np.ndarray, sync: np.ndarray, tail: np.ndarray,
                  slowdowns: np.ndarray) -> np.ndarray:
    """When each stage's gradient synchronisation ends (s; arrays over stages on the last
    axis): it starts at ``start`` (the clocks without the slowdowns) late by the cool-down
    delay (:func:`cooldown_delays`) and runs ``sync`` seconds; it ends no earlier than the
    last bucket's ``tail`` after the stage's own slowed last backward. The step's end is the
    latest of these and of the pipeline's ``finish`` (the engines add the difference to the
    exposed data-parallel time)."""
    after = cooldown_delays(slowdowns)
    return np.maximum(start + after + sync, finish + after + slowdowns + tail)


def gather_slowdown(ctx: Context, first_forward: np.ndarray, shares: np.ndarray | None = None) -> float:
    """Seconds the step loses to the weight all-gathers beside the first forwards, summed
    over the stages (module docstring); ``first_forward`` is per stage one microbatch's
    forward over all its chunks (s). 0 for the chunk-ahead gathers, whose slowdown the
    task-graph walk prices task by task (:mod:`simulator.workload.chunk_gathers`)."""
    gathers = rest_gather_seconds(ctx)
    if gathers is None:
        return 0.0
    shares = stage_gather_shares(ctx) if shares is None else shares
    return float(slowdowns(first_forward, gathers, shares).sum())


def gather_slowdown_inputs(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Per stage, (seconds of the weight all-gathers beside the first forwards, NCCL's SM
    share meanwhile) as :func:`gather_slowdown` reads them; zeros without such gathers
    (their slowdowns are then exactly 0: ``C + 0 min(0, C) - C``)."""
    gathers = rest_gather_seconds(ctx)
    if gathers is None:
        zeros = np.zeros(ctx.layout.pp)
        return zeros, zeros
    return gathers, stage_gather_shares(ctx)


def gather_slowdowns(first_forward: np.ndarray, gathers: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """:func:`gather_slowdown` of many steps at once (arrays (steps, stages), from
    :func:`gather_slowdown_inputs`): the same operations, each row summed as its stages'
    array is."""
    return slowdowns(first_forward, gathers, shares).sum(axis=1)

