"""fp8 casts of a layer's linear operands: activations every microbatch, weights where the
stack casts them.

Every linear casts its input and its output gradient to fp8: read 2 B, write the fp8 copy and
its transpose, 1 B each (``FP8_CAST_BYTES``; Hopper fp8 GEMMs take only the TN layout, so
TransformerEngine casts and transposes in one kernel); dynamic scaling reads the tensor once
more for its amax first (``AMAX_BYTES``). NVIDIA TransformerEngine docs, "Using FP8 with
Transformer Engine"; pytorch/ao float8 README. On a GPU whose tensor cores take fp8 operands in
any layout (gpu ``fp8_any_layout``: Blackwell) the per-tensor recipes write one copy, 3 B, and
no transposed copy of a gathered fp8 weight is made (TransformerEngine docs, "FP8 Current
Scaling", transpose handling).

MXFP8 (``kernels.fp8_scaling: mxfp8``, TransformerEngine's ``MXFP8BlockScaling``; OCP
Microscaling Formats spec v1.0) scales each block of 32 consecutive elements by its own E8M0
power of two, computed inside the cast kernel: no amax pass before it. A block runs along the
GEMM's reduction dimension, so the copy the weight-gradient GEMM reads (reduced over tokens)
is quantized separately from the 16-bit tensor, not transposed: the same kernel writes a
row-wise and a column-wise copy, 1 B each, and one scale byte per 32 elements for each
(``MX_SCALE_BYTES``). Its GEMMs run at the fp8 rate: cuBLAS's block-scaled kernel
(``nvjet_sm100_qqtst_..._Avec32UE8M0_Bvec32UE8M0``) reached 2,348 TFLOP/s against the
per-tensor fp8 kernel's 2,369 on a B200 at the same shape (flashinfer-ai/flashinfer#2256), so
the fp8 GEMM fraction is kept.

NVFP4 (``kernels.fp8_scaling: nvfp4``, TransformerEngine's ``NVFP4BlockScaling``; NVIDIA,
"Pretraining Large Language Models with NVFP4", arXiv:2509.25149): 4-bit E2M1 values, an E4M3
scale per 16 elements and a per-tensor FP32 scale from the tensor's amax; weights scaled in 16 x
16 blocks, gradients stochastically rounded, the weight-gradient GEMM's operands Hadamard-
transformed. Each cast takes an amax pass and one fused kernel writing both copies
(``NVFP4_CAST_BYTES``); the linears' GEMMs run at the fp4 peak (:mod:`simulator.cost.compute`).

Each cast is priced as one kernel moving those bytes, plus a launch gap for every further
kernel its recipe runs (:data:`QUANTIZE_KERNELS`: per-tensor current scaling computes the amax,
the scale and the cast in three, NVFP4 in two; :func:`cast_launches`).

Where the weight's fp8 copy is made follows ``kernels.fp8_weight_cast``:

- ``per_step``: TransformerEngine caches it over a step's microbatches: Megatron-Core's
  schedules call ``set_is_first_microbatch`` on the model at each step's first microbatch
  (``megatron/core/transformer/module.py``: "TE modules will update their fp8 parameter
  cache"), and TE's linears reuse the cached workspace while ``is_first_microbatch`` is
  False. One full cast per step, ``W (4 [+2]) / m`` bytes per microbatch.
- ``per_forward``: every forward casts the whole weight (torchao ``Float8Linear``; TE
  modules called without ``is_first_microbatch``, as DeepSpeed's engine does).
  ``W (4 [+2])`` bytes per microbatch.
- ``per_forward`` with ZeRO-3 gathering weights in fp8 (``sharding.param_gather_dtype:
  fp8``; torchao's ``enable_fsdp_float8_all_gather`` with
  ``precompute_float8_dynamic_scale_for_fsdp``, torchtitan ``docs/float8.md``): each
  all-gather casts only the local shard, scale precomputed once per step (read 2 B, write
  1 B: ``GATHER_CAST_BYTES``), and the backward makes a transposed copy of the gathered fp8
  weight for the input-gradient GEMM (``TRANSPOSE_BYTES``: read 1, write 1).
"""

from __future__ import annotations

import numpy as np

from simulator.config.hardware import Dtype, GpuSpec
from simulator.config.hybrid import Block
from simulator.config.scenario import ModelConfig, Scenario
from simulator.config.stack import Fp8Scaling, Fp8WeightCast, ReduceDtype, StackProfile
from simulator.cost.compute import ComputeModel
from simulator.cost.sharding import gather_counts
from simulator.workload.fp8_weight_cache import FP8_BLOCK, MX_BLOCK, NVFP4_BLOCK
from simulator.workload.layer_shape import Kernels
from simulator.workload.layout import Layout
from simulator.workload.runtime_memory import shard_group_size

FP8_CAST_BYTES = 4.0
"""Bytes per element of a cast-and-transpose to fp8: read 2, write 1 + 1 (transposed)."""
AMAX_BYTES = 2.0
"""Bytes per element of the amax pass that dynamic scaling runs before each cast."""
GATHER_CAST_BYTES = 3.0
"""Bytes per element of casting a weight shard before an fp8 all-gather: read 2, write 1."""
TRANSPOSE_BYTES = 2.0
"""Bytes per element of a transposed copy of an fp8 tensor: read 1, write 1."""
BLOCK_SCALE_BYTES = 2.0 * 4.0 / FP8_BLOCK
"""Bytes per element of the fp32 scales a block-scaled fp8 cast writes (``kernels.fp8_scaling:
blockwise``): one per 1 x 128 tile for the row-wise and for the column-wise copy."""
MX_SCALE_BYTES = 2.0 / MX_BLOCK
"""Bytes per element of the E8M0 scales an MXFP8 cast writes: one byte per block, for the
row-wise and the column-wise copy."""
NVFP4_CAST_BYTES = AMAX_BYTES + 2.0 + 2 * (0.5 + 1.0 / NVFP4_BLOCK)
"""Bytes per element of an NVFP4 cast: the amax pass its per-tensor FP32 scale needs (read 2;
``nvte_hadamard_transform_amax`` takes the row-wise amax and the column-wise one after the
Hadamard transform in one pass), then one fused kernel (``nvte_quantize_with_hadamard_transform``)
reading 2 and writing a row-wise and a column-wise copy of 4-bit values (0.5) with an E4M3 scale
per 16 (transformer_engine/pytorch/csrc/quantizer.cpp, NVFP4Quantizer::quantize_impl, d0067d0)."""


def cast_shard(scenario: Scenario, stack: StackProfile, layout: Layout, linears: int = 4) -> np.ndarray:
    """Fraction of each of the layer's ``linears`` inputs (QKV, proj, then the MLP's: fc1 and
    fc2, a mixture of experts' shared experts' first, :func:`~simulator.workload.transformer.layer_forward`)
    that is cast to fp8 on this GPU: ``1/t`` for the column-parallel linears fed by the
    tensor-parallel all-gather (QKV, and fc1 of a dense or shared-expert MLP) when the stack casts
    the sequence shard before an fp8 all-gather (``tensor_parallel.fp8_all_gather`` with
    sequence parallelism), else 1. A routed expert's input comes from the dispatcher, gathered
    in 16 bit."""
    shard = np.ones(linears)
    if stack.tensor_parallel.fp8_all_gather and scenario.parallelism.sequence_parallel:
        shard[sequence_gathered_linears(scenario.model)] = 1.0 / layout.tp
    return shard


def sequence_gathered_linears(model: ModelConfig) -> list[int]:
    """Indexes (in :func:`cast_shard`'s order) of the column-parallel linears whose input the
    sequence-parallel all-gather feeds: QKV, and fc1 of a dense or shared-expert MLP (a routed
    expert's input comes from the dispatcher, a latent projection's is the rank's own tokens); a
    one-block layer's first linear (QKV, in_proj, fc1) unless it is a routed expert's."""
    mlp = bool(model.experts == 1 or model.shared_expert_ffn)
    if model.block == Block.FULL:
        return [0, 2] if mlp else [0]
    return [0] if mlp or model.block != Block.MLP else []


_SEPARATE_COPIES = (Fp8Scaling.MXFP8, Fp8Scaling.BLOCKWISE)
"""Recipes whose scales run along the reduction dimension, so the column-wise copy is quantized
apart from the row-wise one on any GPU."""


def cast_bytes_per_element(stack: StackProfile, gpu: GpuSpec | None = None) -> float:
    """Bytes moved per element cast: ``FP8_CAST_BYTES`` (one copy less, ``FP8_CAST_BYTES -
    1``, for a per-tensor recipe on a GPU with ``fp8_any_layout``), plus ``AMAX_BYTES`` under
    dynamic scaling, ``MX_SCALE_BYTES`` under MXFP8 or ``BLOCK_SCALE_BYTES`` under blockwise
    scaling (whose two copies are quantized apart on any GPU; blockwise in one kernel,
    TransformerEngine's ``quantize_transpose_vector_blockwise``, its scales local to each tile,
    so no amax pass); ``NVFP4_CAST_BYTES`` under NVFP4. ``gpu`` None: a Hopper-like part."""
    scaling = stack.kernels.fp8_scaling
    if scaling == Fp8Scaling.NVFP4:
        return NVFP4_CAST_BYTES
    one_copy = gpu is not None and gpu.fp8_any_layout and scaling not in _SEPARATE_COPIES
    extra = {Fp8Scaling.DYNAMIC: AMAX_BYTES, Fp8Scaling.MXFP8: MX_SCALE_BYTES,
             Fp8Scaling.BLOCKWISE: BLOCK_SCALE_BYTES}
    return FP8_CAST_BYTES - float(one_copy) + extra.get(scaling, 0.0)


def step_microbatches(scenario: Scenario, layout: Layout) -> int:
    """Microbatches per step on one pipeline: global batch / (micro batch x dp)."""
    training = scenario.training
    return max(training.global_batch // (training.micro_batch * layout.dp), 1)


def weight_cast_bytes(scenario: Scenario, stack: StackProfile, layout: Layout,
                      weights: float, gpu: GpuSpec | None = None) -> tuple[float, float]:
    """(forward, backward) bytes per microbatch of making the fp8 copies of ``weights``
    elements of weights on ``gpu`` (module docstring; None: Hopper-like)."""
    microbatches = step_microbatches(scenario, layout)
    per_element = cast_bytes_per_element(stack, gpu)
    if stack.kernels.fp8_weight_cast == Fp8WeightCast.PER_STEP:
        return weights * per_element / microbatches, 0.0
    if not _gathered_in_fp8(scenario, stack):
        return weights * per_element, 0.0
    forward_gathers, regathers = gather_counts(scenario, stack, microbatches)
    shard = weights * GATHER_CAST_BYTES / shard_group_size(scenario.parallelism, layout.dp)
    transpose = 0.0 if gpu is not None and gpu.fp8_any_layout else TRANSPOSE_BYTES
    return shard * forward_gathers / microbatches, shard * regathers + weights * transpose


def _gathered_in_fp8(scenario: Scenario, stack: StackProfile) -> bool:
    return scenario.parallelism.zero_stage >= 3 and stack.sharding.param_gather_dtype == ReduceDtype.FP8


def fp8_cast_times(scenario: Scenario, stack: StackProfile, compute: ComputeModel, fwd: Kernels,
                   layout: Layout, fused: tuple[int | None, int | None] = (None, None),
                   ) -> tuple[float, float]:
    """(forward, backward) seconds per microbatch of the fp8 casts of every linear's operands
    (0 unless fp8): inputs (times :func:`cast_shard`) and output gradients every microbatch,
    weights as :func:`weight_cast_bytes` says. ``fused``: the linear whose input cast and the
    linear whose output-gradient cast run inside a GEMM's epilogue instead
    (:func:`simulator.workload.mlp_kernels.fused_away_casts`), not priced here."""
    if compute.dtype != Dtype.FP8:
        return 0.0, 0.0
    g = fwd.gemms[fwd.linear_mask]
    m, n, k, batch = g[:, 0], g[:, 1], g[:, 2], g[:, 3]     # batch: a GPU's local experts
    per_element = cast_bytes_per_element(stack, compute.gpu)
    weight_fwd, weight_bwd = weight_cast_bytes(scenario, stack, layout, float((n * k * batch).sum()),
                                               compute.gpu)
    inputs = per_element * m * cast_shard(scenario, stack, layout, len(g)) * k * batch
    grads = per_element * (m * n * batch)
    for casts, row in zip((inputs, grads), fused, strict=True):
        if row is not None:
            casts[row] = 0.0
    forward = _kernels_time(compute, np.append(inputs, weight_fwd))
    backward = _kernels_time(compute, np.append(grads, weight_bwd))
    experts = expert_quantize_launches(stack, compute, batch)
    separate = compute.expert_by_expert(batch)      # counted expert by expert above
    return tuple(t + (experts + cast_launches(stack, casts[~separate])) * compute.overhead_s
                 for t, casts in ((forward, inputs), (backward, grads)))


def recast_seconds(stack: StackProfile, compute: ComputeModel, elements: np.ndarray,
                   amax_saved: bool = False) -> float:
    """Seconds of casting 16-bit tensors of ``elements`` each to fp8 again (0 unless fp8): what
    a recompute that re-runs linears or discards their saved fp8 inputs costs in casts, each
    with its recipe's further launches (:func:`cast_launches`); with ``amax_saved`` dynamic
    scaling's amax pass, its bytes and its kernel, is not re-run (its result was kept)."""
    if compute.dtype != Dtype.FP8:
        return 0.0
    saved = amax_saved and stack.kernels.fp8_scaling == Fp8Scaling.DYNAMIC
    elements = np.asarray(elements, dtype=np.float64)
    per_element = cast_bytes_per_element(stack, compute.gpu) - AMAX_BYTES * saved
    launches = cast_launches(stack, elements) - saved * np.count_nonzero(elements)
    return _kernels_time(compute, per_element * elements) + launches * compute.overhead_s


QUANTIZE_KERNELS = {Fp8Scaling.DYNAMIC: 3, Fp8Scaling.MXFP8: 1, Fp8Scaling.NVFP4: 2, Fp8Scaling.BLOCKWISE: 1}
"""Kernels TransformerEngine runs to quantize one tensor it cannot quantize with others: per-tensor
current scaling computes the amax, the scale from it and the cast (``nvte_compute_amax``,
``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``; transformer_engine/pytorch/csrc/quantizer.cpp
@ v2.7); MXFP8 and blockwise scaling one cast; NVFP4 the amax pass and the fused cast. Delayed
scaling quantizes a grouped linear's splits in one fused multi-tensor kernel ("only have fused kernel for FP8
delayed scaling", csrc/extensions/cast.cpp). Taken for torchao's dynamic scaling too, whose cast
runs the same three steps (``tensor_to_amax``, ``amax_to_scale``, the saturated cast:
torchao/float8/float8_utils.py), which Inductor may fuse in part."""


def cast_launches(stack: StackProfile, casts: np.ndarray) -> float:
    """Kernel launches beyond one per cast that the nonzero entries of ``casts`` (one linear's
    operand each) take: ``k - 1`` each, ``k`` of :data:`QUANTIZE_KERNELS` (per-tensor current
    scaling: the amax pass, the scale from it and the cast are three kernels, whose bytes the
    one priced kernel already moves; 0 for delayed scaling, which casts in one)."""
    per_tensor = QUANTIZE_KERNELS.get(stack.kernels.fp8_scaling, 0)
    return float(np.count_nonzero(casts) * max(per_tensor - 1, 0))


def expert_quantize_launches(stack: StackProfile, compute: ComputeModel, batch: np.ndarray) -> float:
    """Kernel launches beyond one per linear that a pass's fp8 casts take when a GPU's local
    experts quantize their operands one expert at a time (``kernels.grouped_gemm_streams`` > 0):
    ``E k - 1`` per grouped linear of ``E`` experts, ``k`` of :data:`QUANTIZE_KERNELS` (0 for
    delayed scaling's fused kernel)."""
    per_tensor = QUANTIZE_KERNELS.get(stack.kernels.fp8_scaling, 0)
    experts = batch[compute.expert_by_expert(batch)]
    return float((experts * per_tensor - 1).sum()) if per_tensor else 0.0


def _kernels_time(compute: ComputeModel, nbytes: np.ndarray) -> float:
    """Seconds of one streaming kernel per nonzero entry of ``nbytes``."""
    return float(compute.memory_time(nbytes[nbytes > 0.0]).sum())
