"""The predicted step of the busiest pipeline stage's GPU, split into the parts a profiler
trace measures: compute by kernel class, exposed communication, bubble and idle.

The analytical engine (:mod:`simulator.engine.analytical`) builds the step as

    step = pipeline + end-of-step gradient synchronisation not hidden + optimizer + host,
    pipeline = bubble + busiest stage's busy time,
    busy = m (forward + backward per microbatch) + held p2p x sends,

and each stage's per-microbatch forward and backward hold its compute and the tensor-,
context-, expert-parallel and ZeRO-3 communication left exposed. So, for the busiest stage
(the one whose busy time sets the pipeline; its GPU is the one described), with m
microbatches, the partition

=================  ======================================================================
part               predicted seconds per step
=================  ======================================================================
gemm               m x every GEMM of its layers (forward, data and weight gradients,
                   recompute) and of the output layer (logits) on the last stage
attention          m x fused attention, forward, backward (and recompute)
memory             m x memory-bound kernels (norms, activations, residuals, rotary,
                   unfused softmax, embedding, cross-entropy, fp8 casts, FSDP's gradient
                   copy-in and accumulation) + the Adam update
other              compute time of the cost model not attributed to a class above
                   (0 for every configuration the cost model prices today)
exposed tp/cp/ep   m x the stage's exposed tensor-/context-/expert-parallel seconds
exposed pp         held p2p x the stage's sends (the sends on its critical path; 0 where
                   they overlap the next pass, whose receivers' waits fall in the bubble)
exposed dp         m x ZeRO-3 exposure + end-of-step gradient synchronisation exposed
bubble             pipeline - busy
idle               the stack's fixed host cost per step (``step_overhead_ms``)
=================  ======================================================================

adds up to the predicted step exactly (up to rounding). The class split re-prices the
kernels of :mod:`simulator.workload.transformer` with :class:`~simulator.cost.compute.
ComputeModel` as :mod:`simulator.cost.layer` does, reading its functions, not changing them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.config.hybrid import pattern_counts
from simulator.config.loader import scenario_stack
from simulator.config.scenario import Recompute
from simulator.config.stack import SelectiveRecompute, StackProfile
from simulator.cost.compute import ComputeModel
from simulator.cost.fp8_casts import fp8_cast_times
from simulator.cost.in_layer import tp_collectives, tp_site_count
from simulator.cost.layer import (
    LayerCost,
    _gemm_times,
    expert_pass_seconds,
    layer_cost,
    module_recompute_parts,
    op_sac_recomputed,
    row_input_bytes,
)
from simulator.cost.tp_exposure import tp_site
from simulator.engine.context import Context, send_split
from simulator.engine.layer_kinds import dense_context, sublayer_context
from simulator.engine.pipeline_fsdp import gradient_kernel_seconds
from simulator.results import StepResult
from simulator.workload.head_kernels import embedding_forward, logits_backward, logits_forward, mtp_forward
from simulator.workload.layer_shape import Attention, Kernels
from simulator.workload.mlp_kernels import fused_away_casts
from simulator.workload.stage_layers import stage_kinds
from simulator.workload.taskgraph import stage_send_counts
from simulator.workload.transformer import layer_forward, unfused_core_kernels

DIMENSIONS = ("tp", "pp", "dp", "cp", "ep")


@dataclass(frozen=True)
class Classes:
    """Seconds of GEMM, fused-attention and memory-bound kernels."""

    gemm: float = 0.0
    attention: float = 0.0
    memory: float = 0.0

    def __add__(self, other: Classes) -> Classes:
        return Classes(self.gemm + other.gemm, self.attention + other.attention,
                       self.memory + other.memory)

    def __sub__(self, other: Classes) -> Classes:
        return self + other * -1.0

    def __mul__(self, factor: float) -> Classes:
        return Classes(self.gemm * factor, self.attention * factor, self.memory * factor)

    @property
    def total(self) -> float:
        return self.gemm + self.attention + self.memory


@dataclass(frozen=True)
class PredictedParts:
    """The busiest stage's GPU's step, per part (module docstring), seconds.

    Attributes
    ----------
    stage, stages, microbatches : int
        The busiest stage, the number of stages, microbatches per step.
    step_s : float
        The predicted step.
    compute : Classes
        GEMM, attention and memory-bound seconds per step (memory includes the optimizer).
    other_s : float
        Compute seconds of the cost model no class above holds.
    optimizer_s : float
        The Adam update, part of ``compute.memory``.
    exposed : dict
        Exposed communication per dimension (tp, pp, dp, cp, ep).
    comm : dict
        Communication per dimension, hidden or not (each collective's uncontended time).
    bubble_s, idle_s : float
        Pipeline bubble; fixed host cost per step (the GPU idles).
    """

    stage: int
    stages: int
    microbatches: int
    step_s: float
    compute: Classes
    other_s: float
    optimizer_s: float
    exposed: dict[str, float]
    comm: dict[str, float]
    bubble_s: float
    idle_s: float

    def partition(self) -> dict[str, float]:
        """The parts that add up to ``step_s``."""
        c = self.compute
        parts = {"gemm": c.gemm, "attention": c.attention, "memory": c.memory,
                 "other": self.other_s}
        parts.update({f"exposed_{d}": self.exposed[d] for d in DIMENSIONS})
        return {**parts, "bubble": self.bubble_s, "idle": self.idle_s}


def kernel_classes(compute: ComputeModel, kernels: Kernels) -> Classes:
    """Seconds of ``kernels`` by class, run one after another on one GPU (their sum is
    :func:`simulator.cost.layer.kernels_time`)."""
    return Classes(float(_gemm_times(compute, kernels).sum()),
                   compute.kernels_attention_time(kernels),
                   float(compute.memory_time(kernels.memory_bytes).sum()))


def layer_classes(ctx: Context, stack: StackProfile) -> tuple[Classes, Classes, Classes]:
    """(forward, backward, recompute) seconds by class of one layer and one microbatch,
    following :func:`simulator.cost.layer.layer_cost`."""
    fwd_k = layer_forward(ctx.shape, ctx.shape.model.expert_load)
    casts = fp8_cast_times(ctx.scenario, stack, ctx.compute, fwd_k, ctx.layout, fused_away_casts(ctx.shape))
    passes = expert_pass_seconds(ctx.shape, ctx.compute)
    forward = kernel_classes(ctx.compute, fwd_k) + Classes(memory=casts[0] + passes[0])
    backward = kernel_classes(ctx.compute, fwd_k.backward()) + Classes(memory=casts[1] + passes[1])
    return forward, backward, _recompute_classes(ctx, stack, fwd_k, forward)


def _recompute_classes(ctx: Context, stack: StackProfile, fwd_k: Kernels,
                       forward: Classes) -> Classes:
    """The recompute of :func:`simulator.cost.layer._recompute`, by class."""
    mode = ctx.scenario.parallelism.recompute
    if mode == Recompute.FULL:
        return forward * ctx.scenario.parallelism.full_recompute_share
    if mode != Recompute.SELECTIVE:
        return Classes()
    modules = ctx.scenario.parallelism.recomputed_modules
    if modules is not None:
        again, casts = module_recompute_parts(stack, ctx.shape, ctx.compute, fwd_k, modules)
        return kernel_classes(ctx.compute, again) + Classes(memory=casts)
    kept = Classes(attention=ctx.compute.kernels_attention_time(fwd_k))
    if stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL:
        again, casts = op_sac_recomputed(stack, ctx.shape, ctx.compute, fwd_k)
        return kernel_classes(ctx.compute, again) + Classes(memory=casts)
    if ctx.shape.attention == Attention.FLASH:
        return kept
    return kernel_classes(ctx.compute, unfused_core_kernels(ctx.shape, fwd_k))


def stage_classes(ctx: Context, stack: StackProfile, stage: int) -> Classes:
    """Compute seconds by class of ``stage`` for one microbatch: its layers of each kind
    (:mod:`simulator.engine.layer_kinds`), the embedding on the first stage, the output layer
    and loss on the last (again for each multi-token prediction layer)."""
    kind = stage_kinds(ctx.scenario.model, ctx.scenario.parallelism)[stage]
    layers, first, last, dense, mtp, pattern = kind
    if pattern:
        parts = [(sublayer_context(ctx, kind), n) for kind, n in pattern_counts(pattern).items()]
    else:
        parts = [(ctx, layers - dense + mtp)] + ([(dense_context(ctx), dense)] if dense else [])
    out = Classes()
    for part, n in parts:
        forward, backward, recompute = layer_classes(part, stack)
        out = out + (forward + backward + recompute) * n
    if first:
        out = out + kernel_classes(ctx.compute, embedding_forward(ctx.shape))
    heads = kernel_classes(ctx.compute, logits_forward(ctx.shape)) + kernel_classes(
        ctx.compute, logits_backward(ctx.shape))
    out = out + heads * (last + mtp)
    if mtp:
        extra = mtp_forward(ctx.shape)
        out = out + (kernel_classes(ctx.compute, extra) + kernel_classes(ctx.compute, extra.backward())) * mtp
    return out + Classes(memory=gradient_kernel_seconds(ctx, *kind))


def busiest_stage(ctx: Context, result: StepResult) -> tuple[int, float, float]:
    """(stage, its busy seconds, its pipeline sends) of the stage whose busy time (compute,
    exposed in-pass communication, sends) is largest, as the analytical engine's bubble."""
    par = ctx.scenario.parallelism
    sends = np.asarray(stage_send_counts(par.schedule, par.pp, ctx.microbatches,
                                         par.virtual_stages), dtype=float)
    work = np.array([s.forward_s + s.backward_s for s in result.stages])
    busy = ctx.microbatches * work + send_split(ctx, result.stages[0].p2p_s)[0] * sends
    stage = int(np.argmax(busy))
    return stage, float(busy[stage]), float(sends[stage])


def predicted_parts(ctx: Context, result: StepResult) -> PredictedParts:
    """The partition of ``result`` (the analytical step of ``ctx``'s scenario) for the GPU
    of its busiest stage (module docstring)."""
    stack = scenario_stack(ctx.scenario)
    m = ctx.microbatches
    stage, busy, sends = busiest_stage(ctx, result)
    s = result.stages[stage]
    in_pass = {"tp": s.tp_comm_s, "cp": s.cp_comm_s, "ep": s.ep_comm_s, "zero3": s.zero3_exposed_s,
               "amax": s.amax_comm_s}
    computed = s.forward_s + s.backward_s - sum(in_pass.values())
    classes = stage_classes(ctx, stack, stage) * m
    host = stack.step_overhead_s
    optimizer = result.optimizer_s - host
    sync = result.step_time_s - result.pipeline_s - result.optimizer_s
    exposed = {"tp": m * s.tp_comm_s, "pp": send_split(ctx, s.p2p_s)[0] * sends,
               "dp": m * (s.zero3_exposed_s + s.amax_comm_s) + sync,
               "cp": m * s.cp_comm_s, "ep": m * s.ep_comm_s}
    layer = layer_cost(ctx.scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout)
    return PredictedParts(
        stage, ctx.layout.pp, m, result.step_time_s, classes + Classes(memory=optimizer),
        _snap(m * computed - classes.total, result.step_time_s), optimizer, exposed,
        _comm(ctx, stack, result, layer, s.layers, exposed),
        _snap(result.pipeline_s - busy, result.step_time_s), host)


def _snap(value: float, step: float) -> float:
    """0 for a difference of equal sums that is only rounding (below 1e-12 of the step)."""
    return 0.0 if abs(value) < 1e-12 * step else value


def _comm(ctx: Context, stack: StackProfile, result: StepResult, layer: LayerCost,
          layers: int, exposed: dict[str, float]) -> dict[str, float]:
    """Communication seconds per step and dimension on the stage's GPU, hidden or not.

    Tensor parallel: every layer runs its collectives twice per pass (attention and MLP; once
    where a mixture of experts' dispatcher gathers instead),
    plus the recomputed forward's, with their layout copies and fused sums; context and
    expert parallel and the pipeline sends are all exposed in the model; data parallel:
    gradient synchronisation and ZeRO-3 traffic (``StepResult.dp_comm_s``) and the compute its
    NCCL kernels' SMs slow (``dp_sm_slowdown_s``, which its exposed part counts too).
    """
    found = tp_collectives(ctx.scenario, ctx.shape, ctx.collectives, ctx.layout)
    site = tp_site(stack, ctx.compute, found, ctx.shape.micro_batch, ctx.layout.tp,
                   row_input_bytes(ctx.shape), tp_site_count(ctx.shape, ctx.layout))
    recompute = layer.tp_recompute
    if stack.tensor_parallel.comm_overlap and recompute > 0.0:
        recompute = site.count * site.busy(False)  # exposed is the chunked part; all runs again
    tp = ctx.microbatches * layers * (site.count * site.busy(False) + site.count * site.busy(True)
                                      + recompute)
    amax = ctx.microbatches * result.stages[0].amax_comm_s   # the same on every stage
    dp = result.dp_comm_s + result.dp_sm_slowdown_s + amax
    return {"tp": tp, "pp": exposed["pp"], "dp": dp, "cp": exposed["cp"], "ep": exposed["ep"]}
