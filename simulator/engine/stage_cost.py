"""Per-microbatch cost of each pipeline stage: compute, recompute and the communication on
its critical path (tensor-, context-, expert-parallel collectives and pipeline sends).

Megatron-LM (SC21) runs tensor-parallel collectives in line with compute, so they are
exposed; with sequence parallelism each all-reduce becomes an all-gather plus a
reduce-scatter of the same activation. Full recompute repeats each layer's forward,
collectives included, before its backward (Korthikanti et al. 2022, sec. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.collectives import Group, Op
from simulator.config.scenario import Recompute, Scenario
from simulator.cost import CollectiveModel
from simulator.cost.collective import PricedCollective
from simulator.cost.compute import ComputeModel
from simulator.cost.network import CostTerms
from simulator.workload.layout import Layout
from simulator.workload.params import layer_parameters
from simulator.workload.transformer import (
    Kernels,
    LayerShape,
    embedding_forward,
    layer_forward,
    logits_forward,
)


@dataclass(frozen=True)
class LayerCost:
    """Seconds for one layer and one microbatch on one GPU."""

    forward: float
    backward: float
    recompute: float
    tp_forward: float
    tp_backward: float
    cp: float
    ep: float
    zero3_forward: float = 0.0
    zero3_backward: float = 0.0


def kernels_time(compute: ComputeModel, kernels: Kernels) -> float:
    g = kernels.gemms
    gemm = compute.gemm_time(g[:, 0], g[:, 1], g[:, 2], g[:, 3]).sum() if len(g) else 0.0
    return float(gemm + compute.memory_time(kernels.memory_bytes).sum())


def layer_cost(scenario: Scenario, shape: LayerShape, compute: ComputeModel,
               collectives: CollectiveModel, layout: Layout) -> LayerCost:
    """Compute and collective time of one layer (see the module docstring)."""
    fwd_k = layer_forward(shape)
    forward, backward = kernels_time(compute, fwd_k), kernels_time(compute, fwd_k.backward())
    tp_fwd = _tp_comm(scenario, shape, collectives, layout)
    recompute = _recompute(scenario, shape, compute, forward, tp_fwd)
    cp = _cp_comm(shape, collectives, layout)
    ep = _ep_comm(shape, collectives, layout)
    z_fwd, z_bwd = _zero3_exposed(scenario, shape, collectives, layout, forward, backward)
    return LayerCost(forward, backward, recompute, tp_fwd, tp_fwd, cp, ep, z_fwd, z_bwd)


def _zero3_exposed(scenario, shape: LayerShape, collectives: CollectiveModel, layout: Layout,
                   forward: float, backward: float) -> tuple[float, float]:
    """ZeRO-3: gather each layer's weights before its forward and backward, reduce-scatter
    its gradients after backward (Rajbhandari et al. 2020, sec. 5.3), every microbatch.

    Prefetching overlaps a layer's collectives with the neighbouring layer's compute, so
    only ``max(0, comm - compute)`` is exposed. All data-parallel groups run at once.
    """
    if scenario.parallelism.zero_stage < 3 or layout.dp == 1:
        return 0.0, 0.0
    nbytes = layer_parameters(shape.model) / layout.tp * shape.dtype_bytes
    groups, key = layout.all_dp_groups, ("dp", layout)
    gather = collectives.concurrent_time(Op.ALL_GATHER, groups, nbytes, key=key)[0]
    scatter = collectives.concurrent_time(Op.REDUCE_SCATTER, groups, nbytes, key=key)[0]
    return max(0.0, gather - forward), max(0.0, gather + scatter - backward)


def _tp_comm(scenario, shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> float:
    """Two collectives per layer per pass: all-reduce, or all-gather + reduce-scatter with SP."""
    return 2 * sum(c.time_s for c in tp_collectives(scenario, shape, collectives, layout))


def tp_collectives(scenario, shape: LayerShape, collectives: CollectiveModel,
                   layout: Layout) -> list[PricedCollective]:
    """The tensor-parallel collectives a layer runs twice per pass (none with tp = 1)."""
    if layout.tp == 1:
        return []
    nbytes = shape.tokens * shape.model.hidden * shape.dtype_bytes
    ops = [Op.ALL_GATHER, Op.REDUCE_SCATTER] if scenario.parallelism.sequence_parallel else [Op.ALL_REDUCE]
    groups = lambda: [g for r in range(layout.dp) for g in layout.entity_tp_groups(r, 0)]  # noqa: E731
    return [PricedCollective(op, nbytes, in_layer_terms(collectives, op, groups, layout.tp_group(),
                                                         nbytes, ("tp", layout)))
            for op in ops]


def spans_servers(collectives: CollectiveModel, gpus: tuple[int, ...]) -> bool:
    """Whether the GPUs ``gpus`` sit in more than one server."""
    return Group(collectives.cluster, gpus).servers > 1


def in_layer_terms(collectives: CollectiveModel, op: Op, groups, group: tuple[int, ...],
                   nbytes: float, key) -> CostTerms:
    """Chosen terms of ``op`` on ``group``; if the group spans servers, priced with all the
    stage's ``groups`` at once (they run in lockstep and may share NICs and uplinks).

    Groups inside one server ride NVLink, which no other group shares, so one is priced alone.
    """
    if spans_servers(collectives, group):
        return collectives.concurrent_terms(op, groups, nbytes, key=key)
    terms = collectives.terms(op, None, Group(collectives.cluster, group))
    return min(terms, key=lambda t: t.latency_s + t.seconds_per_byte * nbytes)


def _recompute(scenario, shape, compute, forward: float, tp_fwd: float) -> float:
    mode = scenario.parallelism.recompute
    if mode == Recompute.FULL:
        return forward + tp_fwd
    if mode == Recompute.SELECTIVE:
        attention = Kernels(layer_forward(shape).gemms[1:3], np.zeros(0))
        return kernels_time(compute, attention)
    return 0.0


def _cp_comm(shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> float:
    """Ring attention: each rank passes its K and V blocks cp-1 times, three times per pass."""
    found = cp_collective(shape, collectives, layout)
    return 0.0 if found is None else 3 * found.time_s


def cp_collective(shape: LayerShape, collectives: CollectiveModel,
                  layout: Layout) -> PricedCollective | None:
    """The context-parallel all-gather of K and V blocks (None with cp = 1)."""
    if layout.cp == 1:
        return None
    mdl = shape.model
    kv = 2 * shape.tokens * mdl.kv_heads * shape.head_dim / shape.tp * shape.dtype_bytes
    nbytes = kv * layout.cp
    groups = lambda: [g for r in range(layout.dp) for g in layout.entity_cp_groups(r, 0)]  # noqa: E731
    return PricedCollective(Op.ALL_GATHER, nbytes, in_layer_terms(
        collectives, Op.ALL_GATHER, groups, layout.cp_group(), nbytes, ("cp", layout)))


def _ep_comm(shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> float:
    """Dispatch and combine all-to-alls of top_k token copies, forward and backward."""
    found = ep_collective(shape, collectives, layout)
    return 0.0 if found is None else 4 * found.time_s


def ep_collective(shape: LayerShape, collectives: CollectiveModel,
                  layout: Layout) -> PricedCollective | None:
    """The expert-parallel all-to-all: ``b s top_k h`` activations per GPU (None without
    experts). Every expert-parallel group of a stage exchanges at once."""
    mdl = shape.model
    if mdl.experts == 1 or layout.ep == 1:
        return None
    nbytes = shape.tokens * mdl.top_k * mdl.hidden * shape.dtype_bytes
    return PricedCollective(Op.ALL_TO_ALL, nbytes, in_layer_terms(
        collectives, Op.ALL_TO_ALL, layout.stage_expert_groups, layout.expert_group(), nbytes,
        ("ep", layout)))


def head_costs(shape: LayerShape, compute: ComputeModel) -> tuple[float, float, float]:
    """(embedding forward, logits forward, logits backward) seconds per microbatch."""
    logits = logits_forward(shape)
    return (kernels_time(compute, embedding_forward(shape)), kernels_time(compute, logits),
            kernels_time(compute, logits.backward()))


def p2p_time(shape: LayerShape, collectives: CollectiveModel, layout: Layout) -> float:
    """One activation send between adjacent stages (scatter-gather: b s h / t per GPU)."""
    if layout.pp == 1:
        return 0.0
    nbytes = shape.tokens * shape.model.hidden * shape.dtype_bytes / shape.tp
    group = Group(collectives.cluster, layout.pp_pair(0))
    return float(collectives.sweep(Op.SENDRECV, None, group, [nbytes]).time_s[0])
