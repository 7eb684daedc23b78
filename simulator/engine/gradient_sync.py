"""Data-parallel gradient synchronisation of one pipeline stage: which collectives, on how
many bytes, at what price.

Each stage reduces its gradients over its data-parallel groups, one per tensor- (and
context-) parallel rank; the groups of a stage run at once and share their NICs, so they
are priced together (:meth:`simulator.cost.CollectiveModel.concurrent_terms`). Stages
start their reduction at different times (the pipeline drains stage by stage), so stages
are priced separately; where they still collide, the discrete-event engine finds it.

- ZeRO 0: all-reduce of the gradients (bf16/fp16: ``2 * params`` bytes per GPU).
- ZeRO 1 and 2: reduce-scatter of the gradients, then all-gather of the updated weights
  (Rajbhandari et al. 2020, sec. 5).
- ZeRO 3: nothing here; gradients are reduce-scattered layer by layer during backward
  (:mod:`simulator.engine.stage_cost`).
"""

from __future__ import annotations

from simulator.collectives import Op
from simulator.cost.collective import PricedCollective
from simulator.engine.context import Context
from simulator.workload.memory import BYTES, layer_split, stage_parameters


def all_gradient_collectives(ctx: Context) -> list[list[PricedCollective]]:
    """Per stage, the collectives that synchronise its gradients, in order."""
    par, layout = ctx.scenario.parallelism, ctx.layout
    if layout.dp == 1 or par.zero_stage == 3:
        return [[] for _ in range(layout.pp)]
    ops = [Op.ALL_REDUCE] if par.zero_stage == 0 else [Op.REDUCE_SCATTER, Op.ALL_GATHER]
    split = layer_split(ctx.scenario.model.layers, par.pp, par.virtual_stages)
    price = ctx.collectives.concurrent_terms
    out, sizes, dtype_bytes = [], {}, BYTES[ctx.scenario.training.dtype]
    for stage, layers in enumerate(split):
        kind = (layers, stage == 0, stage == par.pp - 1)
        if kind not in sizes:
            sizes[kind] = sum(stage_parameters(ctx.scenario.model, par, *kind)) * dtype_bytes
        nbytes = sizes[kind]
        groups = _stage_groups(layout, stage)
        out.append([PricedCollective(op, nbytes, price(op, groups, nbytes, key=("dp-stage", layout, stage)))
                    for op in ops])
    return out


def _stage_groups(layout, stage: int):
    """The stage's data-parallel groups, listed only on a cache miss of the cost model."""
    return lambda: layout.stage_dp_groups(stage)


def gradient_sync_times(ctx: Context) -> list[float]:
    """Seconds of each stage's gradient synchronisation with no other traffic on its links."""
    return [sum(c.time_s for c in stage) for stage in all_gradient_collectives(ctx)]
