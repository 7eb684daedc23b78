"""What both engines need to price one scenario: its layout, layer shape and cost models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from simulator.config.checks import data_parallel_size
from simulator.config.hardware import Dtype, GpuSpec
from simulator.config.loader import scenario_stack
from simulator.config.scenario import RankOrder, Scenario
from simulator.config.stack import Fp8Scaling, StackProfile, fp8_attention_recipe, pads_by_copy
from simulator.cost import CollectiveModel
from simulator.cost.compute import ComputeModel
from simulator.cost.fp8_casts import cast_bytes_per_element
from simulator.memo import remembered
from simulator.workload.layer_shape import Attention, LayerShape
from simulator.workload.layout import Layout
from simulator.workload.loss_kernels import loss_traffic
from simulator.workload.pipeline_sends import overlapped_sends, path_sends, send_parts

ACTIVATION_BYTES = {Dtype.FP32: 4}
"""Bytes per activation element: 4 for fp32 training, else 2 (fp8 recipes keep activations
and tensor-parallel traffic in bf16; only GEMM operands are cast to fp8)."""


@dataclass(frozen=True)
class Context:
    scenario: Scenario
    layout: Layout
    shape: LayerShape
    compute: ComputeModel
    collectives: CollectiveModel
    microbatches: int
    """Microbatches of one pipeline schedule: the step's over ``parallelism.pipeline_flushes``."""
    memo: dict | None = None
    flushes: int = 1
    """Pipeline schedules a step (:mod:`simulator.engine.flushes`)."""


T = TypeVar("T")


def send_split(ctx: Context, p2p: float) -> tuple[float, float]:
    """(held, lag) seconds of a stage-to-stage send of ``p2p`` seconds under the scenario's
    stack and schedule (:mod:`simulator.workload.pipeline_sends`)."""
    return send_parts(p2p, overlapped_sends(ctx.scenario, scenario_stack(ctx.scenario)))


def exposed_send_seconds(ctx: Context, p2p: float) -> float:
    """The pipeline sends' exposed seconds the result reports under ``pp``: held sends
    ``2 p2p (m + p - 1)`` (one each way per microbatch on the critical path, and the
    fill), overlapped ones ``p2p`` times :func:`~simulator.workload.pipeline_sends.path_sends`
    (the fill and drain: the steady state hides them)."""
    par = ctx.scenario.parallelism
    if send_split(ctx, p2p)[1] > 0.0:
        return p2p * path_sends(par.pp, par.virtual_stages)
    return 2 * p2p * (ctx.microbatches + par.pp - 1)


def memoised(ctx: Context, key: tuple, compute: Callable[[], T]) -> T:
    """``compute()``, kept in ``ctx.memo`` under ``key`` for the next context that shares it.

    A memo belongs to layouts of one model on one cluster with one training setup (all
    scenario keys equal but the parallelism and the micro batch), so ``key`` names the
    layout fields the value depends on; without a memo the value is computed every time.
    Values are shared, never modified.
    """
    return remembered(ctx.memo, key, compute)


def make_context(scenario: Scenario, collectives: CollectiveModel, speedup: float = 1.0,
                 memo: dict | None = None) -> Context:
    """The context of ``scenario`` on the cluster behind ``collectives``.

    ``speedup`` scales every GPU peak (FLOP/s and HBM bandwidth) for what-ifs; ``memo``
    shares sub-results with other layouts of the same setup (:func:`memoised`); without one
    the context has its own, so what one evaluation reads twice is priced once.
    """
    memo = {} if memo is None else memo
    par, training = scenario.parallelism, scenario.training
    gpus = collectives.cluster.gpus
    dp = data_parallel_size(scenario, gpus)
    fields = (par.tp, par.pp, dp, par.cp, par.ep, par.rank_order == RankOrder.TP_CP_PP_DP, par.etp)
    layout = remembered(memo, ("layout", *fields), lambda: Layout(*fields))   # one object: keys
    shape = remembered(memo, ("shape", training.micro_batch, par.tp, par.cp, par.ep, par.sequence_parallel,
                              par.etp), lambda: _shape(scenario, collectives.cluster.hw.gpu))
    kernels = scenario_stack(scenario).kernels
    fp4 = training.dtype == Dtype.FP8 and kernels.fp8_scaling == Fp8Scaling.NVFP4
    fp8_block = training.dtype == Dtype.FP8 and kernels.fp8_scaling == Fp8Scaling.BLOCKWISE
    per_expert = scenario.model.experts > 1 and not kernels.grouped_mlp_fusion   # fused: one grouped kernel
    streams = kernels.grouped_gemm_streams if per_expert else 0                  # only experts batch linears
    fp8_attention = fp8_attention_recipe(training.dtype, kernels) if kernels.fp8_attention else None
    compute = remembered(memo, ("compute", speedup), lambda: ComputeModel(
        collectives.cluster.hw.gpu, training.dtype, speedup, kernels.attention, streams, fp4, fp8_block,
        fp8_attention))
    return Context(scenario, layout, shape, compute, collectives, scenario.schedule_microbatches(dp), memo,
                   par.schedules_per_step)


def _shape(scenario: Scenario, gpu: GpuSpec) -> LayerShape:
    """The per-GPU layer shape of ``scenario``'s layout and micro batch on ``gpu``."""
    par, training = scenario.parallelism, scenario.training
    stack = scenario_stack(scenario)
    kernels = stack.kernels
    return LayerShape(scenario.model, training.micro_batch, par.tp, par.cp, par.ep,
                      par.sequence_parallel, Attention(training.attention),
                      ACTIVATION_BYTES.get(training.dtype, 2), kernels.fused_elementwise,
                      kernels.fused_activation, kernels.moe_permute_fusion,
                      loss_traffic(stack.loss), par.etp, kernels.attention_unpad,
                      kernels.grouped_mlp_fusion, stack.expert_parallel.dispatcher,
                      stack.expert_parallel.permute_in_dispatch,
                      pads_by_copy(stack.expert_parallel, training.dtype),
                      _output_proj_cast_bytes(scenario, stack, gpu))


def _output_proj_cast_bytes(scenario: Scenario, stack: StackProfile, gpu: GpuSpec) -> float:
    """Bytes per element of the output layer's fp8 casts when it runs in MXFP8
    (``kernels.fp8_output_proj``, fp8 training: :mod:`simulator.config.checks`), else 0."""
    if not stack.kernels.fp8_output_proj or scenario.training.dtype != Dtype.FP8:
        return 0.0
    return cast_bytes_per_element(stack, gpu)
