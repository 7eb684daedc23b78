"""Parameter sharding (ZeRO-3, PyTorch FSDP/FSDP2): the weight all-gathers and gradient
reduce-scatters of one pipeline stage, and how much of them compute hides.

Each unit (a transformer block, or one weight tensor with ``unit: parameter``) is
all-gathered over the data- and context-parallel ranks of its tensor-parallel rank before
its forward, again before its backward when ``reshard_after_forward`` freed it (and once
more for the recompute when ``regather_for_recompute``), and its gradients are
reduce-scattered after its backward (Rajbhandari et al. 2020, ZeRO sec. 5.3; Zhao et al.
2023, "PyTorch FSDP", VLDB, sec. 3.3-3.4). The gather runs in ``param_gather_dtype``, the
reduction in ``grad_reduce_dtype``. With ``list_collectives`` (tensor-list collectives of
PyTorch 1.x, DeepSpeed ZeRO-3 of 2021) each collective also runs one copy per rank, issued by
the host one after the other, after a Python loop over the ranks that builds the list
(:class:`_ListCopies`).

Overlap follows the stack's ``prefetch`` depth. With ``prefetch: 0`` every collective waits
for the device and compute waits for it (DeepSpeed ZeRO-3 of 2021): ``L c`` exposed per
pass of ``L`` units with ``c`` communication each. With ``prefetch >= 1`` the next unit's
gather runs on its own stream during the current unit's compute ``C``, so a pass takes
``c_first + (L - 1) t + C + c_last``: the first gather and, in backward, the last
unit's reduce-scatter cannot hide (FSDP's two-stream pipeline; the forward gathers of unit
``i+1`` overlap the forward of unit ``i``, the backward gather of unit ``i-1`` and the
reduce-scatter of unit ``i+1`` overlap the backward of unit ``i``). While a unit's
collectives run, NCCL's kernels hold a share ``f`` of the SMs (:mod:`simulator.cost.nccl_sms`),
and their bytes a share of the HBM bandwidth that the memory-bound kernels beside them feel
(:mod:`simulator.cost.hbm_contention`; ``f`` is then the one share of the pass's pace both
take, :meth:`UnitComm.pass_share`), so the compute beside them runs at ``1 - f`` of its pace:
``t = max(c, C + f min(c, C / (1 - f)))`` (``t = max(C, c)`` for ``f = 0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import accumulate

from simulator.collectives import Op
from simulator.collectives.group import Group
from simulator.config.hardware import Dtype
from simulator.config.scenario import Scenario
from simulator.config.stack import GatherUnit, GradCopyIn, StackProfile
from simulator.cost.collective import CollectiveModel
from simulator.cost.compute import ComputeModel
from simulator.cost.forced import forced_algorithm
from simulator.cost.hbm_contention import beside_share, hbm_draw_share, ring_sent_bytes
from simulator.cost.nccl_sms import nccl_sm_share
from simulator.workload.layout import Layout
from simulator.workload.memory import shard_group_size
from simulator.workload.params import layer_tensor_sizes, mlp_tensor_sizes
from simulator.workload.stage_layers import stage_layer_models
from simulator.workload.unsharded import local_experts_gathered


@dataclass(frozen=True)
class UnitComm:
    """Seconds of one unit's collectives (uncontended; all the stage's groups at once) and
    the share of the SMs NCCL holds while they run."""

    gather: float
    reduce: float
    sm_share: float = 0.0
    recompute_regather: float = 0.0
    """Seconds of the tensors gathered once more for backward after their recompute's gather
    (``sharding.max_reuse_distance_params``), per fully recomputed unit."""
    per_step_gather: float = 0.0
    """Seconds of the persistent tensors' one gather per step
    (``sharding.persistence_threshold_params``)."""
    gather_hbm: float = 0.0
    """Share of the GPU's HBM bandwidth the gathers draw while they run
    (:func:`simulator.cost.hbm_contention.hbm_draw_share`)."""
    reduce_hbm: float = 0.0
    """The same for the gradient reductions."""

    @staticmethod
    def mean(parts: list[tuple[UnitComm, float]]) -> UnitComm:
        """The units of ``parts`` weighted by their shares (summing to 1), field by field, with
        the first unit's SM share (every unit runs on the same groups)."""
        def mix(name: str) -> float:
            return sum(share * getattr(unit, name) for unit, share in parts)
        return UnitComm(mix("gather"), mix("reduce"), parts[0][0].sm_share, mix("recompute_regather"),
                        mix("per_step_gather"), mix("gather_hbm"), mix("reduce_hbm"))

    def pass_share(self, gather_s: float, reduce_s: float, memory_share: float) -> float:
        """The share of a pass's pace its ``gather_s`` of gathers and ``reduce_s`` of reductions
        take (:func:`simulator.cost.hbm_contention.beside_share`: the SM share, and the HBM share
        the two draw, weighted by their seconds, on the pass's ``memory_share``)."""
        comm = gather_s + reduce_s
        hbm = (gather_s * self.gather_hbm + reduce_s * self.reduce_hbm) / comm if comm > 0 else 0.0
        return beside_share(self.sm_share, hbm, memory_share)


@dataclass(frozen=True)
class ShardingCost:
    """Per-microbatch exposed seconds of a stage's passes, and the communication per step."""

    forward_exposed: float
    backward_exposed: float
    comm_per_step: float


NO_SHARDING = ShardingCost(0.0, 0.0, 0.0)


def shards_parameters(scenario: Scenario, layout: Layout) -> bool:
    """Whether the layout's stages are ZeRO-3 sharded over more than one GPU (``zero_stage``
    3 and ``dp cp > 1``): the layouts this module prices."""
    return scenario.parallelism.zero_stage >= 3 and layout.dp * layout.cp > 1


def unit_comm(scenario: Scenario, stack: StackProfile, collectives: CollectiveModel,
              layout: Layout, stage: int) -> UnitComm:
    """Gather and gradient-reduction seconds of one layer's parameters on ``stage``'s groups.

    With ``unit: parameter`` each weight tensor is its own collective, so each pays the
    collective's latency; with ``unit: layer`` the layer is one coalesced collective. With
    hybrid sharding (``parallelism.shard_size``) gathers and reduce-scatters stay inside
    the shard groups and each shard's gradients are then all-reduced across the groups
    (PyTorch FSDP ``HYBRID_SHARD``; Zhao et al. 2023 sec. 3.2.2). A mixture of experts
    gathers only this rank's ``E / ep`` experts (the others live on the other expert-parallel
    ranks), and none when their expert-data-parallel group has one rank
    (:func:`~simulator.workload.unsharded.local_experts_gathered`); without hybrid sharding
    they are gathered and reduced over their expert-data-parallel groups
    (:meth:`~simulator.workload.layout.Layout.stage_expert_dp_groups`), in collectives of
    their own; with it, on the dense weights' shard groups (an approximation in the
    collective's latency, not in its bytes).
    """
    shard = shard_group_size(scenario.parallelism, layout.dp)
    experts = local_experts_gathered(scenario.model, scenario.parallelism, shard)
    apart = scenario.model.experts > 1 and layout.ep > 1 and shard == layout.dp * layout.cp
    sizes = layer_tensor_sizes(scenario.model, 0 if apart else experts)
    expert_sizes = mlp_tensor_sizes(scenario.model, experts) if apart else []
    if stack.sharding.unit == GatherUnit.LAYER:
        sizes, expert_sizes = [sum(sizes)], [sum(expert_sizes)] if expert_sizes else []
    dtype = Dtype(scenario.training.dtype)
    gather_bytes = stack.sharding.param_gather_dtype.nbytes(dtype) / layout.tp
    reduce_bytes = stack.sharding.grad_reduce_dtype.nbytes(dtype) / layout.tp
    stage = collectives.canonical_stage(layout, stage)      # the same prices (a symmetry)
    shards = _Priced(collectives, lambda: layout.stage_shard_groups(stage, shard),
                     ("shard", layout, stage, shard), scenario)
    edp = _Priced(collectives, lambda: layout.stage_expert_dp_groups(stage), ("edp-stage", layout, stage),
                  scenario)
    unit = _UnitCollectives(sizes, expert_sizes, layout.tp / layout.expert_tp, shards, edp,
                            shard, layout.expert_dp)
    gathers = unit.each(Op.ALL_GATHER, gather_bytes)
    reduces = unit.each(Op.REDUCE_SCATTER, reduce_bytes)
    if stack.sharding.list_collectives:
        copies = _ListCopies.of(stack, ComputeModel(collectives.cluster.hw.gpu, dtype),
                                stack.sharding.grad_reduce_dtype.nbytes(dtype))
        gather_each = [copies.gather_seconds(*one) for one in gathers]
        reduce = sum(copies.reduce_seconds(*one) for one in reduces)
    else:
        gather_each, reduce = [one[2] for one in gathers], sum(one[2] for one in reduces)
    kept = _KeptTensors.of(stack, [n / layout.tp for n in sizes], len(expert_sizes))
    replica_s, replica_sent = _replica_all_reduces(scenario, collectives, layout, stage, shard,
                                                   [n * reduce_bytes for n in sizes])
    reduce += replica_s
    first = layout.stage_shard_groups(stage, shard)[0]
    share = nccl_sm_share(Group(collectives.cluster, first)) if len(first) > 1 else 0.0
    gpu = collectives.cluster.hw.gpu
    gather_hbm = hbm_draw_share(gpu, _sent(Op.ALL_GATHER, gathers), sum(one[2] for one in gathers))
    reduce_hbm = hbm_draw_share(gpu, _sent(Op.REDUCE_SCATTER, reduces) + replica_sent, reduce)
    return UnitComm(kept.per_pass(gather_each), reduce, share, kept.regathered(gather_each),
                    kept.per_step(gather_each), gather_hbm, reduce_hbm)


def _replica_all_reduces(scenario: Scenario, collectives: CollectiveModel, layout: Layout, stage: int,
                         shard: int, reduced: list[float]) -> tuple[float, float]:
    """(seconds, bytes one GPU sends) of the all-reduces across the shard groups' replicas of
    each unit tensor's reduced shard (hybrid sharding, ``shard`` < ``dp cp``; ``reduced``: the
    tensors' bytes in the reduce dtype); (0, 0) without hybrid sharding."""
    if shard >= layout.dp * layout.cp:
        return 0.0, 0.0
    replicas = _Priced(collectives, lambda: layout.stage_replica_groups(stage, shard),
                       ("replicas", layout, stage, shard), scenario)
    across = layout.dp * layout.cp // shard
    seconds = sum(replicas.time(Op.ALL_REDUCE, n / shard) for n in reduced)
    return seconds, sum(ring_sent_bytes(Op.ALL_REDUCE, n / shard, across) for n in reduced)


def _sent(op: Op, collectives: list[tuple[float, int, float]]) -> float:
    """Bytes one GPU sends in the ring collectives ``op`` given as (bytes, ranks, seconds)
    (:func:`~simulator.cost.hbm_contention.ring_sent_bytes`)."""
    return sum(ring_sent_bytes(op, nbytes, ranks) for nbytes, ranks, _ in collectives)


@dataclass(frozen=True)
class _KeptTensors:
    """Which of a unit's per-tensor gathers DeepSpeed's ZeRO-3 skips or repeats
    (``unit: parameter``; deepspeed/runtime/zero/stage3.py, v0.4.0; partitioned_param_coordinator.py
    later): tensors of fewer than ``persistence_threshold_params`` elements persist (gathered
    once per step after the optimizer step, ``_post_step``), and under full recompute a
    tensor is kept from its recompute to its backward only when the parameters used in
    between, ``2 sum_{k > i} n_k`` over the layer's later tensors (each recomputed, then
    back-propagated; ``get_reuse_distance_in_numel``), are fewer than
    ``max_reuse_distance_params``; the others are gathered once more."""

    persistent: tuple[bool, ...]
    regathered_mask: tuple[bool, ...]

    @classmethod
    def of(cls, stack: StackProfile, dense: list[float], experts: int) -> _KeptTensors:
        """The masks over ``dense`` (elements per tensor on this rank, in the layer's order)
        and ``experts`` expert tensors (never persistent, always kept)."""
        prof = stack.sharding
        per_tensor = prof.unit == GatherUnit.PARAMETER
        limit = prof.max_reuse_distance_params if per_tensor else None
        total = sum(dense)
        after = [2.0 * (total - done) for done in accumulate(dense)]   # 2 sum_{k > i} n_k
        persistent = [per_tensor and n < prof.persistence_threshold_params for n in dense]
        again = [limit is not None and not held and d >= limit
                 for d, held in zip(after, persistent, strict=True)]
        return cls(tuple(persistent + [False] * experts), tuple(again + [False] * experts))

    def per_pass(self, seconds: list[float]) -> float:
        return sum((t for t, p in zip(seconds, self.persistent, strict=True) if not p), 0.0)

    def per_step(self, seconds: list[float]) -> float:
        return sum((t for t, p in zip(seconds, self.persistent, strict=True) if p), 0.0)

    def regathered(self, seconds: list[float]) -> float:
        return sum((t for t, r in zip(seconds, self.regathered_mask, strict=True) if r), 0.0)


def stage_unit_comm(scenario: Scenario, stack: StackProfile, collectives: CollectiveModel,
                    layout: Layout, stage: int) -> UnitComm:
    """:func:`unit_comm` of ``stage``'s mean layer: each unit gathers and reduces its own
    layer's weights, so where the stage's layers differ (dense layers among a mixture of
    experts', ``model.first_dense_layers``, the MTP layers of the MoE kind; a hybrid stage's
    Mamba, attention, MLP and MoE layers, each its own unit as FSDP wraps them) the stage's unit
    is the mean of its layers' units
    (:func:`~simulator.workload.stage_layers.stage_layer_models`), as the stage's compute per
    unit is their mean (:mod:`simulator.engine.layer_kinds`)."""
    parts = stage_layer_models(scenario.model, scenario.parallelism, stage)
    if len(parts) == 1 and parts[0][0] is scenario.model:
        return unit_comm(scenario, stack, collectives, layout, stage)
    return UnitComm.mean([(unit_comm(scenario.model_copy(update={"model": model}), stack, collectives,
                                     layout, stage), share) for model, share in parts])


@dataclass(frozen=True)
class _ListCopies:
    """The host and device work around tensor-list collectives (``sharding.list_collectives``;
    DeepSpeed 0.3-0.5 on PyTorch 1.x ``ProcessGroupNCCL::allgather`` / ``reduce_scatter`` with
    tensor lists). A collective over ``r`` ranks of ``n`` bytes (unsharded):

    - the host first builds its list in a Python loop over the ranks, ``b`` seconds
      (an all-gather: one ``narrow`` per rank, ``r v_n``; a reduce-scatter: ``view`` and
      ``narrow`` for each of the ``k = floor(N / ceil(N / r))`` ranks whose share of the
      ``N``-element gradient lies inside it and a ``torch.zeros`` for each of the others,
      ``k (v_v + v_n) + (r - k) z``; ``sharding.list_*_host_us``); an all-gather also
      zero-fills the flat tensor it gathers into (``f``, ``n`` bytes written at the sustained
      HBM rate, with ``sharding.gather_zero_fill``) behind a ``torch.cuda.synchronize()``,
      so neither overlaps anything;
    - then ``r`` copies of ``n / r`` bytes run on its stream, each ``g = t_k + 2 n / (r B)``
      seconds on the device (the kernel overhead ``t_k`` and the sustained HBM rate ``B``,
      :meth:`ComputeModel.memory_time`) and ``h`` on the host (``sharding.list_copy_host_us``),
      which issues them one after the other.

    So an all-gather ends at ``f + b + max(t_c + r g, r h)`` (NCCL's kernel is launched first
    and the copies are issued behind it) and a reduce-scatter at ``b + r max(g, h) + t_c``
    (the copies into the flat buffer go before NCCL's kernel).
    """

    compute: ComputeModel
    host_s: float
    narrow_s: float = 0.0
    view_s: float = 0.0
    zeros_s: float = 0.0
    zero_fill: bool = False
    reduce_element_bytes: float = 2.0

    @classmethod
    def of(cls, stack: StackProfile, compute: ComputeModel, reduce_element_bytes: float) -> _ListCopies:
        """The profile's host costs (microseconds in the profile, seconds here)."""
        sharding = stack.sharding
        return cls(compute, sharding.list_copy_host_us * 1e-6, sharding.list_narrow_host_us * 1e-6,
                   sharding.list_view_host_us * 1e-6, sharding.list_zeros_host_us * 1e-6,
                   sharding.gather_zero_fill, reduce_element_bytes)

    def _device(self, nbytes: float, ranks: int) -> float:
        return float(self.compute.memory_time(2.0 * nbytes / ranks))

    def gather_seconds(self, nbytes: float, ranks: int, comm_s: float) -> float:
        """``f + b + max(t_c + r g, r h)`` seconds of one list all-gather of ``nbytes``."""
        if ranks <= 1 or nbytes <= 0:
            return comm_s
        fill = float(self.compute.memory_time(nbytes)) if self.zero_fill else 0.0
        issued = max(comm_s + ranks * self._device(nbytes, ranks), ranks * self.host_s)
        return fill + ranks * self.narrow_s + issued

    def reduce_seconds(self, nbytes: float, ranks: int, comm_s: float) -> float:
        """``b + r max(g, h) + t_c`` seconds of one list reduce-scatter of ``nbytes``."""
        if ranks <= 1 or nbytes <= 0:
            return comm_s
        return self.reduce_list_seconds(nbytes, ranks) + comm_s + ranks * max(
            self._device(nbytes, ranks), self.host_s)

    def reduce_list_seconds(self, nbytes: float, ranks: int) -> float:
        """``k (v_v + v_n) + (r - k) z``: the host's loop building a reduce-scatter's list of
        ``nbytes`` over ``ranks``, ``k = floor(N / ceil(N / r))`` of them views into the
        gradient of ``N`` elements and the rest zeroed pads."""
        elements = nbytes / self.reduce_element_bytes
        inside = min(ranks, math.floor(elements / math.ceil(elements / ranks)))
        return inside * (self.view_s + self.narrow_s) + (ranks - inside) * self.zeros_s


@dataclass(frozen=True)
class _UnitCollectives:
    """One unit's collectives: a dense tensor of ``n`` elements over the ``ranks`` of its
    shard group, an expert's over its ``expert_ranks`` (``split`` times an expert's share)."""

    sizes: list
    expert_sizes: list
    split: float
    shards: _Priced
    experts: _Priced
    ranks: int
    expert_ranks: int

    def each(self, op: Op, bytes_per: float) -> list[tuple[float, int, float]]:
        """(bytes, ranks, seconds) of each of the unit's ``op`` collectives."""
        dense = [(n * bytes_per, self.ranks, self.shards) for n in self.sizes]
        expert = [(n * bytes_per * self.split, self.expert_ranks, self.experts) for n in self.expert_sizes]
        return [(nbytes, ranks, priced.time(op, nbytes)) for nbytes, ranks, priced in dense + expert]


@dataclass(frozen=True)
class _Priced:
    """Collectives run by all of a stage's groups at once (``groups`` listed on a cache miss)."""

    collectives: CollectiveModel
    groups: object
    key: tuple
    scenario: Scenario   # for its forced collective algorithm

    def time(self, op: Op, nbytes: float) -> float:
        if nbytes <= 0:
            return 0.0
        terms = self.collectives.concurrent_terms(op, self.groups, nbytes,
                                                  forced_algorithm(self.scenario, op), key=self.key)
        return terms.seconds(nbytes)


def sharding_cost(scenario: Scenario, stack: StackProfile, comm: UnitComm, layers: float,
                  layer_forward_s: float, layer_backward_s: float, microbatches: int,
                  memory_shares: tuple[float, float] = (0.0, 0.0)) -> ShardingCost:
    """Exposed ZeRO-3 seconds per microbatch (averaged over the step's microbatches).

    ``layer_backward_s`` is a layer's backward compute including its recompute;
    ``memory_shares`` the (forward, backward) shares of that compute in memory-bound kernels
    (:meth:`simulator.cost.layer.LayerCost.memory_shares`), which the collectives' HBM draw
    slows (:meth:`UnitComm.pass_share`).
    """
    prof = stack.sharding
    forward_gathers, regathers = gather_counts(scenario, stack, microbatches)
    reduces = microbatches if prof.reduce_every_microbatch else 1
    again = backward_gather_seconds(scenario, stack, comm, regathers)
    m_f, m_b = memory_shares
    fwd = forward_gathers * _pass_exposed(layers, layer_forward_s, comm.gather, 0.0, prof.prefetch,
                                          comm.pass_share(comm.gather, 0.0, m_f))
    fwd += layers * comm.per_step_gather          # after the optimizer step, before the next step
    bwd = (microbatches - reduces) * _pass_exposed(layers, layer_backward_s, again, 0.0, prof.prefetch,
                                                   comm.pass_share(again, 0.0, m_b))
    bwd += reduces * _pass_exposed(layers, layer_backward_s, again, comm.reduce, prof.prefetch,
                                   comm.pass_share(again, comm.reduce, m_b))
    total = layers * (forward_gathers * comm.gather + microbatches * again + reduces * comm.reduce
                      + comm.per_step_gather)
    return ShardingCost(fwd / microbatches, bwd / microbatches, total)


def backward_gather_seconds(scenario: Scenario, stack: StackProfile, comm: UnitComm,
                            regathers: float) -> float:
    """Gather seconds of one unit's backward pass: ``regathers`` whole gathers
    (:func:`gather_counts`) and, on the fully recomputed share of the units without
    ``regather_for_recompute``, the tensors gathered again after their recompute
    (:attr:`UnitComm.recompute_regather`)."""
    extra = 0.0 if stack.sharding.regather_for_recompute else scenario.parallelism.full_recompute_share
    return regathers * comm.gather + extra * comm.recompute_regather


def gather_counts(scenario: Scenario, stack: StackProfile, microbatches: int) -> tuple[int, float]:
    """(forward all-gathers per step, backward re-gathers per microbatch) of one unit: every
    microbatch's forward gathers it when ``reshard_after_forward`` frees it after use (else
    the step's first), and its backward gathers it again then, once more for a full
    recompute with ``regather_for_recompute`` (on the recomputed share of the units)."""
    prof = stack.sharding
    recomputed = scenario.parallelism.full_recompute_share if prof.regather_for_recompute else 0.0
    return (microbatches if prof.reshard_after_forward else 1), int(prof.reshard_after_forward) + recomputed


def _pass_exposed(layers: float, compute: float, gather: float, reduce: float, prefetch: int,
                  sm_share: float = 0.0) -> float:
    """Exposed seconds of one pass over ``layers`` units (module docstring): the ends, and per
    overlapped unit ``t - C`` with ``t = max(c, C + f min(c, C / (1 - f)))``."""
    comm = gather + reduce
    if comm <= 0.0 or layers <= 0:
        return 0.0
    if prefetch == 0:
        return layers * comm
    slowed = compute + sm_share * min(comm, compute / (1.0 - sm_share))
    return gather + reduce + max(layers - 1, 0.0) * max(0.0, max(comm, slowed) - compute)


def autograd_gradient_bytes(scenario: Scenario) -> float:
    """Bytes per parameter of a gradient as autograd makes it: 4 under fp32 training, else 2
    (fp8 linears produce bf16 weight gradients)."""
    return 4.0 if Dtype(scenario.training.dtype) == Dtype.FP32 else 2.0


def gradient_dtype_bytes(scenario: Scenario, stack: StackProfile) -> tuple[float, float]:
    """(g, r): bytes per parameter of a gradient as autograd makes it
    (:func:`autograd_gradient_bytes`) and in the stack's reduce dtype."""
    dtype = Dtype(scenario.training.dtype)
    return autograd_gradient_bytes(scenario), float(stack.sharding.grad_reduce_dtype.nbytes(dtype))


def copy_in_bytes_per_param(stack: StackProfile, grad: float, reduce: float) -> float:
    """Bytes per parameter the kernels before one unit's reduce-scatter move (read + write).

    ``flat_cat`` (PyTorch FSDP1, torch 2.1-2.6 ``_runtime_utils._post_backward_hook``): the
    module's parameters are views of the unit's FlatParameter, so autograd's backward of the
    split concatenates their gradients into one flat gradient (``2 g``), which FSDP casts to
    the reduce dtype when it differs (``g + r``). ``chunk_cat`` (FSDP2
    ``foreach_reduce_scatter_copy_in``): one ``torch._chunk_cat`` into the reduce-scatter
    input, cast included (``g + r``). ``predivide`` (FSDP1 ``_div_if_needed`` with
    ``_gradient_predivide_factor``, 2 or more for any world size above 1): ``2 r`` more.
    FSDP1 with bf16 parameters and an fp32 reduction: 4 + 6 + 8 = 18 B per parameter.
    The cast and division run on FSDP1's post-backward stream, beside the next unit's
    backward; as memory-bound kernels they take the GPU's HBM and SMs all the same, so their
    time is added to the backward (an upper bound of their cost).
    """
    prof = stack.sharding
    if prof.grad_copy_in == GradCopyIn.FLAT_CAT:
        moved = 2.0 * grad + (grad + reduce if reduce != grad else 0.0)
    elif prof.grad_copy_in == GradCopyIn.CHUNK_CAT:
        moved = grad + reduce
    else:
        moved = 0.0
    return moved + (2.0 * reduce if prof.predivide else 0.0)
