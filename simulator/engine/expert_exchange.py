"""Expert-parallel all-to-alls that leave the server, for the discrete-event engine.

Each MoE layer sends every token's ``top_k`` copies to their experts and back: a
dispatch and a combine all-to-all per pass (Lepikhin et al. 2020, GShard; Megatron-LM
``token_dispatcher``), over the expert-parallel group, i.e. ``ep`` consecutive
data-parallel replicas (:class:`simulator.workload.layout.Layout`). Inside a server they
ride NVLink, which carries no other traffic, and keep the cost model's duration; across
servers they share NICs and uplinks with everything else, so the DES replays them as
flows, in step with the peer replicas that exchange tokens with this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives import Group, Op
from simulator.cost.network import CostTerms
from simulator.engine.context import Context
from simulator.engine.gradient_sync import PricedCollective
from simulator.workload.memory import layer_split


@dataclass(frozen=True)
class ExpertExchange:
    """The all-to-alls of one task (chunk and pass) of a stage.

    ``per_task`` all-to-alls of ``priced.size_bytes`` each, ``priced.time_s`` each when
    alone; the rest of the task's duration is compute.
    """

    per_task: int
    priced: PricedCollective


def expert_exchange(ctx: Context, stage: int) -> ExpertExchange | None:
    """The cross-server all-to-alls of ``stage``'s tasks, or None if there are none."""
    layout, model = ctx.layout, ctx.scenario.model
    if model.experts == 1 or layout.ep == 1:
        return None
    group = expert_group(ctx, block=0, stage=stage, tp_rank=0)
    per_node = ctx.collectives.cluster.hw.gpus_per_node
    if len({gpu // per_node for gpu in group}) == 1:
        return None
    nbytes = ctx.shape.tokens * model.top_k * model.hidden * ctx.shape.dtype_bytes
    terms = _cheapest(ctx.collectives.terms(Op.ALL_TO_ALL, None, Group(ctx.collectives.cluster, group)),
                      nbytes)
    par = ctx.scenario.parallelism
    layers = layer_split(model.layers, par.pp, par.virtual_stages)[stage] / par.virtual_stages
    return ExpertExchange(max(1, round(2 * layers)), PricedCollective(Op.ALL_TO_ALL, nbytes, terms))


def expert_group(ctx: Context, block: int, stage: int, tp_rank: int) -> tuple[int, ...]:
    """GPUs of the expert-parallel group ``block`` (replicas ``block*ep ..``) of a stage."""
    lay = ctx.layout
    return tuple(lay.gpu(tp_rank, 0, block * lay.ep + i, stage) for i in range(lay.ep))


def _cheapest(terms: list[CostTerms], nbytes: float) -> CostTerms:
    return min(terms, key=lambda t: float(t.time(nbytes)))
