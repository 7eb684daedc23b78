"""TransformerEngine's amax all-reduces: delayed scaling's, in line once per fp8 region and
pass; current scaling's, in line once per sequence-parallel cast.

Under delayed scaling every fp8 tensor's scale comes from an amax history that all ranks
sharing the tensor must agree on. TransformerEngine collects the amaxes of an
``fp8_autocast`` region and, when the region exits, all-reduces them (MAX) over the region's
``fp8_group`` with ``async_op=False`` on the compute stream
(``FP8GlobalStateManager.reduce_and_update_fp8_tensors``, transformer_engine/pytorch/fp8.py at
v1.13); the backward pass does the same once, after the region's first module's backward.
Megatron-Core wraps each model chunk's ``TransformerBlock.forward`` in one region whose group
is ``get_amax_reduction_group(with_context_parallel=True)``: the tensor- and context-parallel
ranks in core_v0.8.0, every tensor-, data- and context-parallel rank of the pipeline stage
from core_v0.9.0 (``_TENSOR_AND_DATA_PARALLEL_GROUP_WITH_CP``, unless ``tp_only_amax_red``).

So each microbatch runs, per model chunk, one forward and one backward all-reduce of a few
hundred bytes: latency-bound, and across the whole stage from Megatron-Core 0.9 on, where
its latency grows with the number of servers (NCCL's tree). Bytes: the forward region
reduces the amaxes of each fp8 GEMM's input and weight, the backward one each GEMM's output
gradient, 4 B each, four GEMMs per layer.

Under current scaling (``Float8CurrentScalingQuantizer``, TransformerEngine v2.1 on) there is
no history: each cast computes its tensor's amax, the scale from it and the cast
(``nvte_compute_amax``, ``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``;
transformer_engine/pytorch/csrc/quantizer.cpp at v2.7, lines 521-534). A tensor that is cast on
its sequence shard and then all-gathered over the tensor-parallel group must have one scale on
every rank, so TE's linears set ``with_amax_reduction`` on those quantizers (module/linear.py,
layernorm_linear.py ``_customize_quantizers_float8_current_scaling``: with
``sequence_parallel``, the input quantizer of a column-parallel linear and the output-gradient
quantizer of a row-parallel one, ``amax_reduction_group = tp_group``), and the cast waits for
``amax_reduction_group->allreduce(...)->wait()`` of the 4-byte amax between the amax kernel
and the scale kernel. Megatron-Core's layer has two such casts per pass: the inputs of QKV and
fc1 in forward, the output gradients of proj and fc2 in backward (one each with a mixture of
experts without shared experts, whose routed experts take dispatched tokens, not the
tensor-parallel all-gather).
"""

from __future__ import annotations

from simulator.collectives import Op
from simulator.config.hardware import Dtype
from simulator.config.scenario import Scenario
from simulator.config.stack import AmaxReduction, Fp8Scaling, StackProfile
from simulator.cost.collective import CollectiveModel
from simulator.cost.fp8_casts import sequence_gathered_linears
from simulator.workload.layer_shape import LayerShape
from simulator.workload.layout import Layout

GEMMS_PER_LAYER = 4
"""QKV, attention output projection, fc1 and fc2."""
AMAX_VALUE_BYTES = 4
"""One fp32 amax per fp8 tensor."""


def amax_group(layout: Layout, mode: AmaxReduction, stage: int = 0) -> tuple[int, ...]:
    """GPUs of the amax all-reduce of ``stage``'s first tensor-parallel group: its tensor-
    and context-parallel ranks (``tp_cp``) or every rank of the stage (``tp_dp_cp``)."""
    dps = range(layout.dp) if mode == AmaxReduction.TP_DP_CP else range(1)
    return tuple(layout.gpu(t, c, d, stage) for d in dps for c in range(layout.cp) for t in range(layout.tp))


def amax_reduced(scenario: Scenario, stack: StackProfile) -> bool:
    """Whether the step all-reduces fp8 amax histories at all: fp8 delayed scaling with the
    stack's ``kernels.fp8_amax_reduction`` other than ``none``."""
    return (scenario.training.dtype == Dtype.FP8 and stack.kernels.fp8_scaling == Fp8Scaling.DELAYED
            and stack.kernels.fp8_amax_reduction != AmaxReduction.NONE)


def amax_reduction_seconds(scenario: Scenario, stack: StackProfile, collectives: CollectiveModel,
                           layout: Layout, layers_per_chunk: float) -> tuple[float, float]:
    """(forward, backward) seconds of one model chunk's amax all-reduces per microbatch.

    ``AR(group, 2 x 4 x 4 B x layers)`` forward and ``AR(group, 4 x 4 B x layers)`` backward,
    priced by the collective model; 0 without fp8 delayed scaling, with the stack's
    ``kernels.fp8_amax_reduction`` ``none``, or on a group of one GPU.
    """
    if not amax_reduced(scenario, stack):
        return 0.0, 0.0
    group = amax_group(layout, stack.kernels.fp8_amax_reduction)
    if len(group) == 1:
        return 0.0, 0.0
    tensors = GEMMS_PER_LAYER * max(layers_per_chunk, 1.0)
    forward = collectives.concurrent_time(Op.ALL_REDUCE, [group], 2 * tensors * AMAX_VALUE_BYTES)[0]
    backward = collectives.concurrent_time(Op.ALL_REDUCE, [group], tensors * AMAX_VALUE_BYTES)[0]
    return forward, backward


def sp_amax_casts(scenario: Scenario, stack: StackProfile, shape: LayerShape, tp: int) -> int:
    """Casts per pass of one layer whose amax is all-reduced over the tensor-parallel group
    (module docstring): 2 (QKV's and fc1's inputs forward, proj's and fc2's output gradients
    backward), 1 for a mixture of experts without shared experts; 0 unless fp8 with current
    scaling, the stack's ``kernels.fp8_sp_amax_reduction``, sequence parallelism and tp > 1."""
    kernels = stack.kernels
    if (scenario.training.dtype != Dtype.FP8 or kernels.fp8_scaling != Fp8Scaling.DYNAMIC
            or not kernels.fp8_sp_amax_reduction or not shape.sequence_parallel or tp == 1):
        return 0
    return len(sequence_gathered_linears(shape.model))   # and as many row-parallel partners


def sp_amax_seconds(scenario: Scenario, stack: StackProfile, shape: LayerShape,
                    collectives: CollectiveModel, layout: Layout) -> float:
    """Seconds per pass of one layer's sequence-parallel amax all-reduces:
    ``n AR(tp group, 4 B)``, ``n`` of :func:`sp_amax_casts` (the same in forward and
    backward), priced by the collective model; in line with the layer's compute."""
    casts = sp_amax_casts(scenario, stack, shape, layout.tp)
    if not casts:
        return 0.0
    group = layout.tp_group()
    seconds = collectives.concurrent_time(Op.ALL_REDUCE, [group], AMAX_VALUE_BYTES, key=("tp-amax", group))[0]
    return casts * seconds
