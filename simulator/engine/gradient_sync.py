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

from dataclasses import dataclass

from simulator.collectives import Op
from simulator.cost.network import CostTerms
from simulator.engine.context import Context
from simulator.workload.memory import BYTES, layer_split, stage_parameters


@dataclass(frozen=True)
class PricedCollective:
    """One collective of a stage's gradient synchronisation and its chosen cost terms."""

    op: Op
    size_bytes: float
    terms: CostTerms

    @property
    def time_s(self) -> float:
        return float(self.terms.time(self.size_bytes))


def stage_gradient_bytes(ctx: Context, stage: int) -> float:
    """Gradient bytes one GPU of ``stage`` holds (dense + expert parameters x dtype bytes)."""
    par = ctx.scenario.parallelism
    layers = layer_split(ctx.scenario.model.layers, par.pp, par.virtual_stages)[stage]
    params = stage_parameters(ctx.scenario.model, par, layers, stage == 0, stage == par.pp - 1)
    return sum(params) * BYTES[ctx.scenario.training.dtype]


def gradient_collectives(ctx: Context, stage: int) -> list[PricedCollective]:
    """The collectives that synchronise ``stage``'s gradients, in order (see module doc)."""
    zero = ctx.scenario.parallelism.zero_stage
    if ctx.layout.dp == 1 or zero == 3:
        return []
    ops = [Op.ALL_REDUCE] if zero == 0 else [Op.REDUCE_SCATTER, Op.ALL_GATHER]
    nbytes = stage_gradient_bytes(ctx, stage)
    layout = ctx.layout
    price = ctx.collectives.concurrent_terms
    return [PricedCollective(op, nbytes,
                             price(op, lambda: layout.stage_dp_groups(stage), nbytes,
                                   key=("dp-stage", layout, stage)))
            for op in ops]


def gradient_sync_time(ctx: Context, stage: int) -> float:
    """Seconds of ``stage``'s gradient synchronisation with no other traffic on its links."""
    return sum(c.time_s for c in gradient_collectives(ctx, stage))
