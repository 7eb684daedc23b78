"""Per-microbatch cost of one transformer layer on one GPU: compute, recompute, and the
tensor-, context- and expert-parallel communication left on its critical path.

Compute prices the kernels of :mod:`simulator.workload.transformer` with
:mod:`simulator.cost.compute`; under fp8 each linear layer also casts its input, weight
and output gradient to fp8 (:mod:`simulator.cost.fp8_casts`).

Tensor-parallel communication follows the stack profile (``tensor_parallel``):
:mod:`simulator.cost.tp_exposure` says which collectives are in line, overlapped or
chunk-pipelined with their GEMMs, and what layout copies and fp8 gathers they carry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulator.collectives import Group
from simulator.config.hybrid import Block
from simulator.config.scenario import Recompute, RecomputeModule, Scenario
from simulator.config.stack import SelectiveRecompute, StackProfile
from simulator.cost.amax_reduction import sp_amax_seconds
from simulator.cost.collective import CollectiveModel
from simulator.cost.compute import ComputeModel
from simulator.cost.context_parallel import attention_recomputed, cp_cost, cp_seconds
from simulator.cost.dispatcher_sms import dispatcher_sm_share
from simulator.cost.ep_overlap import LayerNodes, exposed_seconds, lone_pass_share
from simulator.cost.fp8_casts import fp8_cast_times, recast_seconds
from simulator.cost.in_layer import ep_collective, ep_tp_collectives, tp_collectives, tp_site_count
from simulator.cost.nccl_sms import nccl_sm_share
from simulator.cost.tp_exposure import TpSite, regathered, rerun_fused_gathers, tp_exposed, tp_site
from simulator.memo import remembered
from simulator.workload.expert_passes import expert_pass_kernels
from simulator.workload.head_kernels import embedding_forward, logits_backward, logits_forward
from simulator.workload.layer_shape import Attention, Kernels, LayerShape
from simulator.workload.layout import Layout
from simulator.workload.mlp_kernels import expert_block, fused_away_casts
from simulator.workload.recompute_modules import (
    recompute_forward,
    requantized_elements,
    reruns_dispatch,
    reruns_mlp_collectives,
)
from simulator.workload.transformer import layer_forward, unfused_core_kernels


@dataclass(frozen=True)
class LayerCost:
    """Seconds for one layer and one microbatch on one GPU (communication: exposed part)."""

    forward: float
    backward: float
    recompute: float
    tp_forward: float
    tp_backward: float
    cp: float
    ep: float
    tp_recompute: float = 0.0
    forward_memory: float = 0.0
    """Seconds of :attr:`forward` in memory-bound kernels (fp8 casts included)."""
    backward_memory: float = 0.0
    """Seconds of :attr:`backward` in memory-bound kernels (fp8 casts included)."""

    def memory_shares(self) -> tuple[float, float]:
        """(forward, backward) shares of the compute time in memory-bound kernels, the
        backward's with its recompute, taken at the forward's share
        (:mod:`simulator.cost.hbm_contention`)."""
        forward = self.forward_memory / self.forward if self.forward > 0 else 0.0
        backward = self.backward + self.recompute
        memory = self.backward_memory + forward * self.recompute
        return forward, memory / backward if backward > 0 else 0.0


def kernels_time(compute: ComputeModel, kernels: Kernels) -> float:
    """Seconds of all of ``kernels`` run one after another on one GPU."""
    return _total(compute, kernels, _gemm_times(compute, kernels))


def _total(compute: ComputeModel, kernels: Kernels, gemm_times: np.ndarray) -> float:
    """Seconds of ``kernels`` given their GEMMs' seconds."""
    return float(gemm_times.sum() + compute.memory_time(kernels.memory_bytes).sum()
                 + compute.kernels_attention_time(kernels))


def _gemm_times(compute: ComputeModel, kernels: Kernels) -> np.ndarray:
    g = kernels.gemms
    if not len(g):
        return np.zeros(0)
    return compute.gemm_time(g[:, 0], g[:, 1], g[:, 2], g[:, 3], kernels.linear_mask, kernels.scan_mask)


@dataclass(frozen=True)
class _LinearTimes:
    """Seconds of the layer's linear GEMMs (QKV, proj, fc1, fc2): forward, data gradient,
    weight gradient; and, for a stack whose async TP fuses them with their collectives
    (``tensor_parallel.fused_pairs``), the forward and data-gradient GEMMs as the fused ops
    run them (``chunked``: ``t`` matmuls of ``M/t`` rows, :func:`_chunked_linears`)."""

    forward: np.ndarray
    dgrad: np.ndarray
    wgrad: np.ndarray
    chunked: tuple[np.ndarray, np.ndarray] | None = None
    site_count: int = 2
    """Tensor-parallel sites whose GEMMs count (2, or the attention block's alone:
    :func:`~simulator.cost.in_layer.tp_site_count`)."""

    @staticmethod
    def of(fwd: Kernels, fwd_times: np.ndarray, bwd_times: np.ndarray) -> _LinearTimes:
        rows = np.flatnonzero(fwd.linear_mask)     # backward: dgrad rows, then wgrad rows
        return _LinearTimes(fwd_times[rows], bwd_times[rows], bwd_times[len(fwd.gemms) + rows])

    def sites(self, backward: bool) -> tuple[float, ...]:
        """GEMM seconds of the attention block's and the MLP's linears in one pass (the
        first :attr:`site_count` of them; a one-block layer's linears are its site's)."""
        t = self.dgrad + self.wgrad if backward else self.forward
        return tuple(float(t[2 * i] + t[2 * i + 1]) for i in range(self.site_count))

    def pairs(self, backward: bool) -> tuple[tuple[float, float], ...]:
        """Per site (the first :attr:`site_count`), the GEMM seconds a fused all-gather and a
        fused reduce-scatter pipeline with (``tensor_parallel.fused_pairs``): forward (QKV or
        fc1, proj or fc2); backward (the data gradient of proj or fc2, none); chunked when
        :attr:`chunked` is set."""
        forward, dgrad = self.chunked or (self.forward, self.dgrad)
        if backward:
            return tuple((float(dgrad[2 * i + 1]), 0.0) for i in range(self.site_count))
        return tuple((float(forward[2 * i]), float(forward[2 * i + 1])) for i in range(self.site_count))

    def chunk_excess(self, backward: bool) -> float:
        """Seconds the fused ops' chunked GEMMs take over the whole GEMMs in one pass: every
        forward linear of the counted sites; in backward the data gradients of proj and fc2
        (0 unchunked)."""
        if self.chunked is None:
            return 0.0
        if backward:
            rows = [1, 3][:self.site_count]
            return float(self.chunked[1][rows].sum() - self.dgrad[rows].sum())
        rows = slice(0, 2 * self.site_count)
        return float(self.chunked[0][rows].sum() - self.forward[rows].sum())


@dataclass(frozen=True)
class _LayerKernels:
    """One layer's kernels (the busiest expert rank's) and the seconds of their compute, fp8
    casts aside: what every layout of one layer shape shares."""

    forward: Kernels
    backward: Kernels
    forward_s: float
    backward_s: float
    linears: _LinearTimes
    forward_memory_s: float = 0.0
    """Seconds of :attr:`forward_s` in memory-bound kernels."""
    backward_memory_s: float = 0.0


def _layer_kernels(shape: LayerShape, compute: ComputeModel) -> _LayerKernels:
    """:class:`_LayerKernels` of ``shape`` on ``compute``."""
    fwd_k = layer_forward(shape, shape.model.expert_load)      # the busiest expert rank's
    bwd_k = fwd_k.backward()
    fwd_g, bwd_g = _gemm_times(compute, fwd_k), _gemm_times(compute, bwd_k)
    passes = expert_pass_seconds(shape, compute)
    memory = [float(compute.memory_time(k.memory_bytes).sum()) + p
              for k, p in zip((fwd_k, bwd_k), passes, strict=True)]
    return _LayerKernels(fwd_k, bwd_k, _total(compute, fwd_k, fwd_g) + passes[0],
                         _total(compute, bwd_k, bwd_g) + passes[1], _LinearTimes.of(fwd_k, fwd_g, bwd_g),
                         memory[0], memory[1])


def expert_pass_seconds(shape: LayerShape, compute: ComputeModel) -> tuple[float, float]:
    """(forward, backward) seconds of the memory-bound passes around the busiest rank's grouped
    experts, one streaming kernel each (:func:`~simulator.workload.expert_passes.expert_pass_kernels`:
    the fp8 padding copies and the eager expert bias); (0, 0) without them."""
    forward, backward = expert_pass_kernels(shape, shape.model.expert_load)
    if not forward and not backward:
        return 0.0, 0.0
    return float(compute.memory_time(forward).sum()), float(compute.memory_time(backward).sum())


def layer_cost(scenario: Scenario, stack: StackProfile, shape: LayerShape, compute: ComputeModel,
               collectives: CollectiveModel, layout: Layout, memo: dict | None = None) -> LayerCost:
    """Compute and exposed communication of one layer (see the module docstring); ``memo``
    (:mod:`simulator.memo`) shares the kernels' seconds with the layouts of the same layer
    shape."""
    kernels = remembered(memo, ("layer_kernels", shape.micro_batch, shape.tp, shape.cp, shape.ep,
                                shape.sequence_parallel, shape.etp, compute.speedup),
                         lambda: _layer_kernels(shape, compute))
    fwd_k = kernels.forward
    casts = fp8_cast_times(scenario, stack, compute, fwd_k, layout, fused_away_casts(shape))
    forward = kernels.forward_s + casts[0]
    backward = kernels.backward_s + casts[1]
    count = tp_site_count(shape, layout)
    linears = replace(kernels.linears, site_count=count)
    if _fuses_pairs(stack, layout):
        linears = replace(linears, chunked=_chunked_linears(compute, fwd_k, kernels.backward, layout.tp))
    found = tp_collectives(scenario, shape, collectives, layout) if count else []
    site = tp_site(stack, compute, found, shape.micro_batch, layout.tp, row_input_bytes(shape), count,
                   _tp_nccl_share(collectives, layout))
    tp_fwd, tp_bwd = tp_exposed(stack, site, layout.tp, linears.sites,
                                tuple(linears.wgrad[2 * i] for i in range(count)), linears.pairs,
                                linears.chunk_excess)
    amax = sp_amax_seconds(scenario, stack, shape, collectives, layout)   # in line, each pass
    tp_fwd, tp_bwd = tp_fwd + amax, tp_bwd + amax
    recompute, tp_re = _recompute(scenario, stack, shape, compute, fwd_k, forward, tp_fwd, site)
    cp = _cp_comm(scenario, stack, shape, compute, collectives, layout)
    cost = LayerCost(forward, backward, recompute, tp_fwd, tp_bwd, cp, 0.0, tp_re,
                     kernels.forward_memory_s + casts[0], kernels.backward_memory_s + casts[1])
    ep = _ep_comm(scenario, stack, shape, compute, collectives, layout, (cost, linears, casts))
    modules = scenario.parallelism.recomputed_modules
    if ep and modules is not None and reruns_dispatch(shape.model, modules):
        ep *= 1.5                      # the forward's dispatch and combine again (not overlapped)
    return replace(cost, ep=ep) if ep else cost


def _tp_nccl_share(collectives: CollectiveModel, layout: Layout) -> float:
    """Share of the SMs a tensor-parallel collective's NCCL kernels hold (0 without tp)."""
    return nccl_sm_share(Group(collectives.cluster, layout.tp_group())) if layout.tp > 1 else 0.0


def _fuses_pairs(stack: StackProfile, layout: Layout) -> bool:
    """Whether the stack's async TP runs the linears as fused chunked ops (``fused_pairs``)."""
    tp = stack.tensor_parallel
    return layout.tp > 1 and tp.comm_overlap and tp.fused_pairs


def _chunked_linears(compute: ComputeModel, fwd: Kernels, bwd: Kernels,
                     tp: int) -> tuple[np.ndarray, np.ndarray]:
    """(forward, data-gradient) seconds of the linear GEMMs run as ``tp`` matmuls of ``M/tp``
    rows each, ``tp T(M/tp, N, K)``: what PyTorch's fused async-TP ops do
    (``_pipelined_multi_all_gather_and_consume`` calls the matmul once per gathered shard,
    ``_pipelined_produce_and_all2all`` once per destination chunk; torch 2.6
    ``torch/distributed/_symmetric_memory``), priced by the same tile- and wave-quantised
    GEMM model, so kernel overheads and smaller waves show."""
    rows = np.flatnonzero(fwd.linear_mask)
    times = []
    for g in (fwd.gemms[rows], bwd.gemms[rows]):
        times.append(tp * compute.gemm_time(g[:, 0] / tp, g[:, 1], g[:, 2], g[:, 3], True))
    return times[0], times[1]


def row_input_bytes(shape: LayerShape) -> tuple[float, ...]:
    """Bytes of the row-parallel linears' inputs (proj, fc2) per microbatch on one GPU; a
    mixture of experts' MLP site is its shared experts' (:func:`~simulator.cost.in_layer.tp_site_count`);
    a one-block layer's, its block's (the Mamba mixer's out_proj reads ``d``)."""
    mdl, t = shape.model, shape.tp
    per_token = shape.tokens * shape.dtype_bytes / t
    width = mdl.shared_expert_ffn if mdl.experts > 1 else mdl.ffn_hidden
    block = mdl.block
    if block == Block.MAMBA:
        return (per_token * mdl.mamba.inner,)
    sites = (per_token * mdl.context_width,) if block.has_attention else ()
    return sites + ((per_token * width,) if block.has_mlp else ())


def _recompute(scenario, stack: StackProfile, shape: LayerShape, compute: ComputeModel,
               layer: Kernels, forward: float, tp_fwd: float,
               site: TpSite) -> tuple[float, float]:
    """(recompute compute seconds, its exposed TP seconds) of one layer in backward."""
    mode = scenario.parallelism.recompute
    if mode == Recompute.FULL:                  # a share of the layers (recompute_fraction)
        share = scenario.parallelism.full_recompute_share
        return share * forward, share * tp_fwd
    if mode != Recompute.SELECTIVE:
        return 0.0, 0.0
    modules = scenario.parallelism.recomputed_modules
    if modules is not None:
        return _modules_recompute(stack, shape, compute, layer, modules, tp_fwd, site.count)
    if stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL:
        return _op_sac_recompute(stack, shape, compute, layer, site)
    if shape.attention == Attention.FLASH:
        return compute.kernels_attention_time(layer), 0.0
    return kernels_time(compute, unfused_core_kernels(shape, layer)), 0.0


def _modules_recompute(stack: StackProfile, shape: LayerShape, compute: ComputeModel, layer: Kernels,
                       modules: frozenset[RecomputeModule], tp_fwd: float, sites: int) -> tuple[float, float]:
    """Megatron-Core's ``recompute_modules`` (:mod:`simulator.workload.recompute_modules`): the
    re-run kernels and their fp8 casts; the MLP site's share of the forward's exposed
    tensor-parallel seconds where the re-run MLP block holds its collectives."""
    kernels, casts = module_recompute_parts(stack, shape, compute, layer, modules)
    block = shape.model.block          # the MLP's site is there: one of two sites, or a lone MLP block's
    tp = tp_fwd / sites if sites == block.sites and reruns_mlp_collectives(shape.model, modules) else 0.0
    return kernels_time(compute, kernels) + casts, tp


def module_recompute_parts(stack: StackProfile, shape: LayerShape, compute: ComputeModel, layer: Kernels,
                           modules: frozenset[RecomputeModule]) -> tuple[Kernels, float]:
    """(the forward kernels ``modules`` re-run, seconds of their fp8 re-casts) for one layer of
    forward ``layer`` (:mod:`simulator.workload.recompute_modules`)."""
    load = shape.model.expert_load
    kernels = recompute_forward(shape, layer, modules, load)
    return kernels, recast_seconds(stack, compute, requantized_elements(shape, kernels, modules, load))


def _op_sac_recompute(stack: StackProfile, shape: LayerShape, compute: ComputeModel, layer: Kernels,
                      site: TpSite) -> tuple[float, float]:
    """torchtitan's per-op selective checkpointing: outputs of ops in its save list (``aten.mm``,
    flash attention, ``reduce_scatter_tensor``, ``aten.max``) are kept, every other op of the
    block is recomputed, except that every second ``aten.mm`` is recomputed too: every second
    matmul, every memory-bound op (with, under fp8, the recomputed linears' input casts) and the
    tensor-parallel all-gathers (sequence parallel) or all-reduces, which the save list does
    not hold; reduce-scatters are kept.

    Float8 linears count as ``aten.mm``: torchao's ``Float8Linear`` calls ``torch.mm`` on
    ``Float8TrainingTensor`` arguments, and the policy's dispatch mode runs before the
    subclass's ``__torch_dispatch__`` turns it into ``torch._scaled_mm`` (under compile the
    decision tags every node the call decomposes into, ``fx_traceback.current_meta["recompute"]``).
    Async TP's fused all-gather-matmul and matmul-reduce-scatter are Inductor post-grad
    rewrites, made after the policy has tagged the plain ``aten.mm`` and collectives: the
    re-run all-gathers are fused again, each with the one recomputed matmul that consumes it
    (:func:`~simulator.cost.tp_exposure.rerun_fused_gathers`).
    Reference: pytorch/torchtitan ``_save_list`` / ``_get_custom_policy`` (9dec370, 820504e2);
    pytorch ``torch/utils/checkpoint.py`` ``_CachingTorchDispatchMode``; pytorch/ao
    ``torchao/float8/float8_linear.py`` ``matmul_with_hp_or_float8_args``;
    docs/research/stack_facts.md sections 2 and 53.
    """
    recomputed, casts = op_sac_recomputed(stack, shape, compute, layer)
    if stack.tensor_parallel.comm_overlap and site.forward:
        g = recomputed.gemms[[0, 2]]                                   # wk and w3 take the gathers
        comm = rerun_fused_gathers(site, shape.tp, compute.gemm_time(*g.T, linear=True)[:site.count])
    else:
        comm = site.count * regathered(site)
    return kernels_time(compute, recomputed) + casts, comm


def op_sac_recomputed(stack: StackProfile, shape: LayerShape, compute: ComputeModel,
                      layer: Kernels) -> tuple[Kernels, float]:
    """(the kernels torchtitan's per-op checkpointing re-runs in one layer, seconds of the
    re-run linears' fp8 input casts, 0 in 16 bit): :func:`_alternate_matmuls` of ``layer``;
    the casts' amax is not re-run (``aten.max`` is in the save list, "for low precision
    training")."""
    recomputed = _alternate_matmuls(shape, layer)
    g = recomputed.gemms
    return recomputed, recast_seconds(stack, compute, g[:, 0] * g[:, 2] * g[:, 3], amax_saved=True)


def _alternate_matmuls(shape: LayerShape, layer: Kernels) -> Kernels:
    """torchtitan's per-op selective checkpointing: the block's matmuls run as wq, wk, wv,
    wo, w1, w3, w2 and every second one (wk, wo, w3) is recomputed, with every memory-bound
    op (pytorch/torchtitan ``_get_custom_policy``, ``mm_count % 2``)."""
    mdl, t, d = shape.model, shape.tp, shape.head_dim
    tokens = shape.tokens
    gemms = np.array([(tokens, mdl.kv_heads * d / t, mdl.hidden, 1),
                      (tokens, mdl.hidden, mdl.context_width / t, 1),
                      (tokens, mdl.ffn_hidden / t, mdl.hidden, 1)], dtype=np.float64)
    return Kernels(gemms, layer.memory_bytes, np.ones(3, bool))


def _cp_comm(scenario: Scenario, stack: StackProfile, shape: LayerShape, compute: ComputeModel,
             collectives: CollectiveModel, layout: Layout) -> float:
    """Ring attention's exposed collectives and fp32 merges, per pass
    (:mod:`simulator.cost.context_parallel`)."""
    return cp_seconds(cp_cost(scenario, stack, shape, collectives, layout), compute)


def _ep_comm(scenario: Scenario, stack: StackProfile, shape: LayerShape, compute: ComputeModel,
             collectives: CollectiveModel, layout: Layout, priced: tuple) -> float:
    """Dispatch and combine all-to-alls of top_k token copies, forward and backward, and the
    tensor-parallel gather and reduce-scatter of the dispatched tokens around them (once
    each per pass) when the all-to-alls carry sequence shards: in line, or what another
    microbatch's compute leaves exposed under ``expert_parallel.a2a_overlap``
    (:mod:`simulator.cost.ep_overlap`; ``priced``: the layer's cost so far, its linears'
    seconds and its fp8 casts)."""
    found = ep_collective(shape, collectives, layout, stack.expert_parallel.dispatcher)
    if found is None:
        return 0.0
    around = [c.time_s for c in ep_tp_collectives(shape, collectives, layout)] or [0.0, 0.0]
    dispatch, combine = found.time_s + around[0], found.time_s + around[1]
    if not stack.expert_parallel.a2a_overlap:
        return 2 * (dispatch + combine)
    nodes = _layer_nodes(shape, compute, priced, dispatch, combine)
    par = scenario.parallelism
    chunk = max(1, round(scenario.model.layers / (par.pp * par.virtual_stages)))
    ep = stack.expert_parallel
    share = dispatcher_sm_share(Group(collectives.cluster, layout.expert_group()), ep.dispatcher,
                                ep.dispatcher_sms)
    return exposed_seconds(nodes, chunk, ep.delay_wgrad, share,
                           lone_pass_share(scenario, scenario.schedule_microbatches(layout.dp)))


def _layer_nodes(shape: LayerShape, compute: ComputeModel, priced: tuple, dispatch: float,
                 combine: float) -> LayerNodes:
    """The layer's nodes of Megatron-Core's combined 1F1B schedule (:mod:`simulator.cost.ep_overlap`):
    the expert block priced as the layer prices it (:func:`~simulator.workload.mlp_kernels.expert_block`,
    its share of the fp8 casts by its linears' seconds), the attention block the rest of each
    pass (tensor- and context-parallel time, recompute and casts included)."""
    cost, linears, casts = priced
    block = expert_block(shape, shape.model.expert_load)
    fwd, bwd = block.experts, block.experts.backward()
    fwd_g, bwd_g = _gemm_times(compute, fwd), _gemm_times(compute, bwd)
    rows = len(fwd.gemms)
    first = 2 * shape.model.block.has_attention       # the MLP's linears follow QKV and proj
    mlp = slice(first, first + rows)
    share_f = float(linears.forward[mlp].sum() / linears.forward.sum())
    share_b = float((linears.dgrad[mlp].sum() + linears.wgrad[mlp].sum())
                    / (linears.dgrad.sum() + linears.wgrad.sum()))
    expert_f = _total(compute, fwd, fwd_g) + share_f * casts[0]
    expert_d = float(bwd_g[:rows].sum() + compute.memory_time(bwd.memory_bytes).sum()) + share_b * casts[1]
    expert_w = float(bwd_g[rows:].sum())
    tail_f = float(compute.memory_time(block.combine_tail).sum())
    tail_b = float(compute.memory_time(block.combine_tail_backward).sum())
    attention_w = float(linears.wgrad[:first].sum())
    forward = cost.forward + cost.tp_forward + cost.cp
    backward = cost.backward + cost.tp_backward + cost.cp + cost.recompute + cost.tp_recompute
    return LayerNodes(max(forward - expert_f - tail_f, 0.0), expert_f, expert_d, expert_w,
                      max(backward - expert_d - expert_w - attention_w - tail_b, 0.0), attention_w,
                      dispatch, combine, tail_f, tail_b)


def head_costs(shape: LayerShape, compute: ComputeModel) -> tuple[float, float, float]:
    """(embedding forward, logits forward, logits backward) seconds per microbatch."""
    return (kernels_time(compute, embedding_forward(shape)), kernels_time(compute, logits_forward(shape)),
            kernels_time(compute, logits_backward(shape)))


def attention_seconds(scenario: Scenario, stack: StackProfile, shape: LayerShape,
                      compute: ComputeModel) -> tuple[float, float]:
    """(forward, backward with its recompute) seconds of one layer's attention core per
    microbatch: the part of the layer whose work grows with the square of a document's length
    (:mod:`simulator.workload.documents`). Flash: the fused kernel (backward 2.5x the FLOPs);
    unfused: the two score GEMMs (their softmax traffic stays with the per-token work).
    Recomputed with full recompute and Megatron's selective recompute (core attention); not
    with torchtitan's per-op checkpointing, which saves attention's output."""
    fwd_k = layer_forward(shape)
    if shape.attention == Attention.FLASH:
        forward = compute.kernels_attention_time(fwd_k)
        backward = compute.kernels_attention_time(fwd_k.backward())
    else:
        core = Kernels(fwd_k.gemms[1:3], np.zeros(0))
        forward, backward = kernels_time(compute, core), kernels_time(compute, core.backward())
    return forward, backward + forward * attention_recomputed(scenario, stack)
