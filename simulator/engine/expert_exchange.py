"""Expert-parallel all-to-alls that leave the server, for the discrete-event engine.

Each MoE layer sends every token's ``top_k`` copies to their experts and back: a
dispatch and a combine all-to-all per pass (Lepikhin et al. 2020, GShard; Megatron-LM
``token_dispatcher``), over the expert-parallel group, i.e. ``ep`` consecutive
data-parallel replicas (:class:`simulator.workload.layout.Layout`). Inside a server they
ride NVLink, which carries no other traffic, and keep the cost model's duration; across
servers they share NICs and uplinks with the other groups' all-to-alls (priced together by
the cost model) and with everything else (only the DES sees that), so the DES replays
them as flows, in step with the peer replicas that exchange tokens with this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives import Op
from simulator.engine.context import Context
from simulator.engine.gradient_sync import PricedCollective
from simulator.engine.stage_cost import expert_all_to_all, expert_bytes
from simulator.workload.memory import layer_split


@dataclass(frozen=True)
class ExpertExchange:
    """The all-to-alls of one task (chunk and pass) of a stage.

    ``per_task`` all-to-alls of ``priced.size_bytes`` each, ``priced.time_s`` each with every
    group of the stage exchanging at once and nothing else on the links (the cost model's
    price); the rest of the task's duration is compute.
    """

    per_task: int
    priced: PricedCollective


def expert_exchange(ctx: Context, stage: int) -> ExpertExchange | None:
    """The cross-server all-to-alls of ``stage``'s tasks, or None if there are none."""
    layout, model, par = ctx.layout, ctx.scenario.model, ctx.scenario.parallelism
    if model.experts == 1 or layout.ep == 1:
        return None
    per_node = ctx.collectives.cluster.hw.gpus_per_node
    if len({gpu // per_node for gpu in layout.expert_group(0, stage)}) == 1:
        return None
    terms = expert_all_to_all(ctx.shape, ctx.collectives, layout)   # as the stage cost prices it
    layers = layer_split(model.layers, par.pp, par.virtual_stages)[stage] / par.virtual_stages
    priced = PricedCollective(Op.ALL_TO_ALL, expert_bytes(ctx.shape), terms)
    return ExpertExchange(max(1, round(2 * layers)), priced)
