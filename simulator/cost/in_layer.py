"""Collectives inside a layer (tensor-, context-, expert-parallel) and pipeline sends: which
collective, on how many bytes, priced on which groups.

Megatron-LM runs tensor-parallel collectives in line with compute; with sequence
parallelism each all-reduce becomes an all-gather plus a reduce-scatter of the same
activation (Shoeybi et al. 2019; Korthikanti et al. 2022). Ring attention passes K and V
blocks around the context-parallel group; expert layers dispatch and combine tokens with
all-to-alls (Lepikhin et al. 2020). Groups that span servers are priced together with the
stage's other groups, since they run in lockstep and may share NICs and uplinks.
"""

from __future__ import annotations

from simulator.collectives import Group, Op
from simulator.config.hybrid import Block
from simulator.config.scenario import Scenario
from simulator.config.stack import EpDispatcher
from simulator.cost.collective import CollectiveModel, PricedCollective
from simulator.cost.ep_dedup import dedup_schedule
from simulator.cost.forced import bind, bound_algorithm, forced_algorithm
from simulator.cost.network import CostTerms
from simulator.workload.layer_shape import LayerShape
from simulator.workload.layout import Layout


def tp_collectives(scenario: Scenario, shape: LayerShape, collectives: CollectiveModel,
                   layout: Layout) -> list[PricedCollective]:
    """The tensor-parallel collectives a layer runs twice per pass (none with tp = 1).

    Records the scenario's ``collectives.algorithm`` on ``collectives`` (the context- and
    expert-parallel collectives and the pipeline sends read it there)."""
    bind(collectives, scenario)
    if layout.tp == 1:
        return []
    nbytes = shape.tokens * shape.model.hidden * shape.dtype_bytes
    ops = [Op.ALL_GATHER, Op.REDUCE_SCATTER] if scenario.parallelism.sequence_parallel else [Op.ALL_REDUCE]
    sizes = {Op.ALL_GATHER: nbytes * _gathered_width(shape, layout) / shape.model.hidden}
    groups = _stage_tp_groups(layout)
    return [PricedCollective(op, sizes.get(op, nbytes),
                             in_layer_terms(collectives, op, groups, layout.tp_group(), sizes.get(op, nbytes),
                                            ("tp", layout), forced_algorithm(scenario, op)))
            for op in ops]


def _gathered_width(shape: LayerShape, layout: Layout) -> float:
    """Elements per token a sequence-parallel all-gather carries, the mean over the layer's
    sites (:func:`tp_site_count`): the hidden size, except that latent attention's site
    gathers its latents, ``r_q + r_kv + d_r`` (``h + r_kv + d_r`` without a query rank:
    Megatron-Core core_v0.15 ``get_query_key_value_tensors``, the up projections' inputs and
    ``k_pos_emb``)."""
    mdl = shape.model
    if mdl.mla is None:
        return float(mdl.hidden)
    mla, count = mdl.mla, tp_site_count(shape, layout)
    attention = mla.latent_width + (0 if mla.q_lora_rank else mdl.hidden)
    return (attention + (count - 1) * mdl.hidden) / count


def _stage_expert_tp_groups(layout: Layout):
    """Stage 0's expert tensor-parallel groups, listed only on a cache miss of the cost model."""
    return lambda: layout.stage_expert_tp_groups(0)


def _stage_tp_groups(layout: Layout):
    """Stage 0's tensor-parallel groups, listed only on a cache miss of the cost model."""
    return lambda: [g for r in range(layout.dp) for g in layout.entity_tp_groups(r, 0)]


def spans_servers(collectives: CollectiveModel, gpus: tuple[int, ...]) -> bool:
    """Whether the GPUs ``gpus`` sit in more than one server (``Group.servers > 1``, without
    listing the group's vertices)."""
    per_node = collectives.cluster.hw.gpus_per_node
    return len({gpu // per_node for gpu in gpus}) > 1


def in_layer_terms(collectives: CollectiveModel, op: Op, groups, group: tuple[int, ...],
                   nbytes: float, key, algorithm=None) -> CostTerms:
    """Chosen terms of ``op`` on ``group``; if the group spans servers, priced with all the
    stage's ``groups`` at once (they run in lockstep and may share NICs and uplinks).
    ``algorithm`` forces one (None: the fastest).

    Groups inside one server ride NVLink, which no other group shares, so one is priced alone.
    """
    if spans_servers(collectives, group):
        return collectives.concurrent_terms(op, groups, nbytes, algorithm, key=key)
    terms = collectives.terms(op, algorithm, Group(collectives.cluster, group))
    return min(terms, key=lambda t: t.seconds(nbytes))


def ep_collective(shape: LayerShape, collectives: CollectiveModel, layout: Layout,
                  dispatcher: EpDispatcher = EpDispatcher.ALLTOALL) -> PricedCollective | None:
    """The expert-parallel all-to-all: ``b s top_k h / t`` activations per GPU under sequence
    parallelism with t > 1, else ``b s top_k h`` (None without experts). Every
    expert-parallel group of a stage exchanges at once.

    Megatron-Core's all-to-all dispatcher sends each rank's own sequence shard and gathers
    the dispatched tokens over the tensor-parallel group only after the all-to-all
    (``MoEAlltoAllTokenDispatcher.token_permutation``: ``all_to_all`` over the expert group,
    then ``gather_from_sequence_parallel_region``; the combine reduce-scatters first:
    megatron/core/transformer/moe/token_dispatcher.py at core_v0.10.0); see
    :func:`ep_tp_collectives`. The flex dispatcher's DeepEP and HybridEP kernels (``dispatcher``
    deepep or hybridep) move the same tokens deduplicated (:mod:`simulator.cost.ep_dedup`); the
    collective keeps the all-to-all's size, ``n``, and their time."""
    mdl = shape.model
    if mdl.experts == 1 or layout.ep == 1:
        return None
    nbytes = _dispatched_bytes(shape) / shape.sequence_shards
    found = _deduplicated(shape, collectives, layout) if dispatcher != EpDispatcher.ALLTOALL else []
    if found:
        return PricedCollective(Op.ALL_TO_ALL, nbytes, min(found, key=lambda t: t.seconds(nbytes)))
    return PricedCollective(Op.ALL_TO_ALL, nbytes, in_layer_terms(
        collectives, Op.ALL_TO_ALL, layout.stage_expert_groups, layout.expert_group(), nbytes,
        ("ep", layout), bound_algorithm(collectives, Op.ALL_TO_ALL)))


def _deduplicated(shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> list[CostTerms]:
    """Cost terms of the stage's deduplicated dispatch (:mod:`simulator.cost.ep_dedup`), one
    per protocol; empty where no such schedule exists (uneven groups)."""
    mdl = shape.model
    groups = layout.stage_expert_groups
    key = ("ep-dedup", layout, mdl.experts, mdl.top_k, mdl.router_groups, mdl.router_group_topk)
    return collectives.schedule_terms(key, lambda: dedup_schedule(collectives.cluster, groups(0), mdl))


def ep_tp_collectives(shape: LayerShape, collectives: CollectiveModel,
                      layout: Layout) -> list[PricedCollective]:
    """The expert tensor-parallel all-gather of the dispatched tokens after the expert
    all-to-all and the reduce-scatter before the combining one (``etp b s top_k h / t`` bytes
    gathered: ``b s top_k h`` with ``etp = t``), when the all-to-all carried sequence shards
    (:func:`ep_collective`) and the experts are split over ``etp > 1`` ranks; empty
    otherwise (Megatron-Core's dispatcher gathers over its ``tp_group``, the expert
    tensor-parallel group since core_v0.10.0)."""
    if not ep_tp_collectives_apply(shape, layout):
        return []
    nbytes = _dispatched_bytes(shape, shape.expert_tokens)
    groups = _stage_expert_tp_groups(layout)
    return [PricedCollective(op, nbytes, in_layer_terms(collectives, op, groups, layout.expert_tp_group(),
                                                         nbytes, ("ep-tp", layout),
                                                         bound_algorithm(collectives, op)))
            for op in (Op.ALL_GATHER, Op.REDUCE_SCATTER)]


def tp_site_count(shape: LayerShape, layout: Layout) -> int:
    """Tensor-parallel sites of one layer: 2 (attention and MLP), or 1 in a mixture of
    experts whose dispatcher gathers the dispatched tokens over the tensor-parallel group
    (:func:`ep_tp_collectives`): its MLP block receives the sequence shard and runs no
    collective of its own (Megatron-Core ``MoELayer.forward``: router, ``token_permutation``,
    experts, ``token_unpermutation``; the experts' linears are ``is_expert`` and communicate
    nothing; core_v0.10.0 ``megatron/core/transformer/moe/moe_layer.py``). Shared experts
    (``model.shared_expert_ffn``) restore the MLP's site: ``SharedExpertMLP`` is an ``MLP``
    whose linears gather and scatter the sequence as a dense layer's (core_v0.15
    ``moe/shared_experts.py``). A layer of one block (:mod:`simulator.config.hybrid`) has that
    block's site alone: attention's, the Mamba mixer's (in_proj gathers, out_proj scatters), or
    the MLP's (none when its dispatcher takes the shards)."""
    block = shape.model.block
    mlp = 0 if _dispatches_shards(shape, layout) and not shape.model.shared_expert_ffn else 1
    if block == Block.FULL:
        return 1 + mlp
    return mlp if block == Block.MLP else 1


def _dispatches_shards(shape: LayerShape, layout: Layout) -> bool:
    """Whether the MoE block dispatches each rank's sequence shard: experts with ``ep > 1``
    under sequence parallelism with ``t > 1``."""
    return shape.model.experts > 1 and layout.ep > 1 and shape.sequence_shards > 1


def ep_tp_collectives_apply(shape: LayerShape, layout: Layout) -> bool:
    """Whether the expert dispatch gathers over the expert tensor-parallel group: sequence
    shards dispatched (:func:`tp_site_count`) to experts split over ``etp > 1`` ranks."""
    return _dispatches_shards(shape, layout) and shape.expert_tp > 1


def _dispatched_bytes(shape: LayerShape, tokens: float | None = None) -> float:
    """Bytes of the ``top_k`` copies of ``tokens`` (default: the microbatch's ``b s``, what a
    tensor-parallel group dispatches per layer) as the busiest expert-parallel rank receives
    them (times ``model.expert_load``)."""
    mdl = shape.model
    rows = shape.tokens if tokens is None else tokens
    return rows * mdl.top_k * mdl.expert_width * shape.dtype_bytes * mdl.expert_load


def p2p_time(shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> float:
    """One activation send between adjacent stages (scatter-gather: b s h / t per GPU)."""
    if layout.pp == 1:
        return 0.0
    nbytes = shape.tokens * shape.model.hidden * shape.dtype_bytes / shape.tp
    group = Group(collectives.cluster, layout.pp_pair(0))
    algorithm = bound_algorithm(collectives, Op.SENDRECV)
    return float(collectives.sweep(Op.SENDRECV, algorithm, group, [nbytes]).time_s[0])
