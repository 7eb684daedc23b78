"""The share of a pass's pace the overlapped data-parallel collectives of a ZeRO 0-2 step take.

Beside the gradient reduction (the stage's last backward) and the weight gathers (its first
forward) the compute loses NCCL's SMs (:func:`~simulator.engine.gradient_sync.stage_sm_shares`)
and, in its memory-bound kernels, the HBM bandwidth the collectives draw
(:mod:`simulator.cost.hbm_contention`): per stage ``f' = beside_share(f, h, m)`` with ``h``
the reduction's draw (the bytes one GPU sends over its seconds; the gathers run on the same
rings at the same bus bandwidth, so they draw the same) and ``m`` the memory-bound share of the
model layer's backward beside the reduction and of its forward beside the gathers
(:meth:`simulator.cost.layer.LayerCost.memory_shares`). The engines price the slowdowns with
these shares (:mod:`simulator.engine.dp_overlap_sms`, :mod:`simulator.workload.chunk_gathers`).
"""

from __future__ import annotations

import numpy as np

from simulator.collectives import Op
from simulator.config.loader import scenario_stack
from simulator.cost.hbm_contention import beside_share, hbm_draw_share, ring_sent_bytes
from simulator.engine.context import Context, memoised
from simulator.engine.gradient_sync import (
    all_gradient_collectives,
    dp_key,
    stage_sm_shares,
)
from simulator.engine.layer_kinds import model_layer_cost
from simulator.workload.stage_layers import stage_kinds


def stage_reduce_shares(ctx: Context) -> np.ndarray:
    """Per stage, the share of its last backward's pace its gradient reduction takes (module
    docstring); zeros with one data-parallel rank."""
    return stage_beside_shares(ctx)[0]


def stage_gather_shares(ctx: Context) -> np.ndarray:
    """Per stage, the share of its first forward's pace its overlapped weight all-gathers take
    (module docstring); zeros with one data-parallel rank."""
    return stage_beside_shares(ctx)[1]


def stage_beside_shares(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`stage_reduce_shares`, :func:`stage_gather_shares`), memoised by what they read
    of a layout (:func:`~simulator.engine.gradient_sync.dp_key` and the model layer's fields)."""
    shares = stage_sm_shares(ctx)
    if not shares.any():
        return shares, shares
    par = ctx.scenario.parallelism
    key = ("dp-beside", *dp_key(ctx), ctx.shape.micro_batch, par.sequence_parallel, par.recompute,
           ctx.microbatches, par.recompute_modules, par.recompute_fraction)
    return memoised(ctx, key, lambda: _computed(ctx, shares))


def _computed(ctx: Context, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`stage_beside_shares` given NCCL's SM shares, each distinct stage priced once
    (the stages of one kind on alike groups have the same collectives). The weight gathers run
    on the reduction's rings at its bus bandwidth, so they draw what it draws; beside them the
    model layer's forward memory-bound share, beside the reduction its backward's."""
    forward, backward = model_layer_cost(ctx, scenario_stack(ctx.scenario)).memory_shares()
    gpu, syncs = ctx.collectives.cluster.hw.gpu, all_gradient_collectives(ctx)
    kinds = stage_kinds(ctx.scenario.model, ctx.scenario.parallelism)
    found: dict[tuple, tuple[float, float]] = {}
    out = []
    for stage, f in enumerate(shares.tolist()):
        key = (kinds[stage], ctx.collectives.canonical_stage(ctx.layout, stage))
        if key not in found:
            draw = hbm_draw_share(gpu, *_reduce_traffic(ctx, syncs[stage]))
            found[key] = (beside_share(f, draw, backward), beside_share(f, draw, forward))
        out.append(found[key])
    both = np.array(out)
    return both[:, 0], both[:, 1]


def _reduce_traffic(ctx: Context, collectives: list) -> tuple[float, float]:
    """(bytes one GPU sends, seconds) of a stage's gradient reduction proper among its
    ``collectives`` (the all-reduce or reduce-scatter beside the last backward; a trailing
    weight gather aside)."""
    reductions = [c for c in collectives if c.op != Op.ALL_GATHER]
    sent = sum(ring_sent_bytes(c.op, c.size_bytes, _ranks(ctx, c.expert)) for c in reductions)
    return sent, sum(c.time_s for c in reductions)


def _ranks(ctx: Context, expert: bool) -> int:
    """Ranks of a stage's data-parallel group, or of its expert-data-parallel group."""
    return ctx.layout.expert_dp if expert else ctx.layout.gradient_ranks
