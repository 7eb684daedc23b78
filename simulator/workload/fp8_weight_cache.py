"""The fp8 copies of the linear weights that TransformerEngine keeps from step to step.

Under fp8, every linear GEMM reads its weight as an fp8 copy. Where it is made follows the
stack (:mod:`simulator.cost.fp8_casts` prices the casts); where it lives is this module:

- TransformerEngine's ``Linear``, ``LayerNormLinear``, ``LayerNormMLP`` and ``GroupedLinear``
  called with ``is_first_microbatch`` (Megatron-Core's ``TELinear`` wrappers pass it; the
  schedules reset it at each step's first microbatch) keep the copy in a workspace of the
  module, ``self._fp8_workspaces["weight"]`` (``get_fp8_workspace`` / ``get_weight_workspace``
  with ``cache_name="weight"``, transformer_engine/pytorch/module/base.py at v1.13 and v2.x;
  at v1.4 the persistent ``weight1_fp8`` and ``weight1_t_fp8`` of
  ``get_fp8_weights_scratchpad``). It is allocated at the first fp8 forward and never freed,
  so it is resident like the weights. With the gradient enabled it holds the row-wise copy
  the forward GEMM reads and the column-wise one the backward's input-gradient GEMM reads:
  a transposed copy for per-tensor scaling on GPUs whose fp8 GEMMs take one layout only
  (Hopper, CDNA3; ``gpu.fp8_any_layout`` false), none on Blackwell, and a separately scaled
  copy for the block-scaled recipes (MXFP8: 1 B plus one E8M0 scale per 32 elements each;
  NVFP4: 0.5 B plus one E4M3 scale per 16). ZeRO-3 / FSDP does not shard it: the module
  casts the gathered weight, so the workspace holds every layer's whole (tensor-parallel)
  weight.
- ROCm's TransformerEngine takes ``keep_fp8_weight_transpose_cache`` (Primus's
  ``no_fp8_weight_transpose_cache``, Megatron-LM ROCm's ``fp8_weight_transpose_cache``; both
  "to reduce memory usage"): only the row-wise copy is kept (``rowwise``).
- With fp8 primary weights (Megatron-Core ``fp8_param_gather``, NeMo ``fp8_params``; the
  stack's ``kernels.fp8_params``, by default set when ZeRO 1-2 gathers the weights in fp8 or
  fp4) the parameter is the quantized tensor (``fp8_model_init``): the weights take the
  row-wise copy's bytes instead of 2, and the column-wise copy is kept beside them.
- torchao's ``Float8Linear`` and TransformerEngine modules called without
  ``is_first_microbatch`` (DeepSpeed) make a transient copy each forward (``none``).

Measured (validation/training_logs, AMD's MI325X runs of rocm/megatron-lm and Primus,
rank 0's "allocated" after the first iteration against the model's resident state): Llama 2
7B with the distributed optimizer and the transpose cache, 12.2 GiB above the weights,
gradients and optimizer state, where the cache is 12.1 GiB (2 B per linear weight element);
Llama 2 70B under torch FSDP2 without it, 66 GiB above, against 63.8 GiB (1 B per element, the
whole model's linears); Mixtral in bf16, no cache, within 0.2 GiB (docs/validation.md,
``megatron_memory``).

Norm weights and the router, which are not fp8 linears, are counted with the linears (under
0.01% of a layer).
"""

from __future__ import annotations

from simulator.config.hardware import Dtype, GpuSpec
from simulator.config.stack import Fp8Scaling, Fp8WeightCache, Fp8WeightCast, ReduceDtype, StackProfile

MX_BLOCK = 32
"""Elements sharing one MXFP8 scale (OCP Microscaling Formats spec v1.0)."""
FP8_BLOCK = 128
"""Elements of the 1 x 128 tile (activations, gradients) and of a side of the 128 x 128 block
(weights) that share one fp32 scale under blockwise fp8 (TransformerEngine ``Float8BlockScaling``,
``block_scaling_dim`` 1 and 2)."""
NVFP4_BLOCK = 16
"""Elements sharing one NVFP4 E4M3 scale (TransformerEngine ``NVFP4BlockScaling``)."""


def cache_mode(stack: StackProfile) -> Fp8WeightCache:
    """The stack's ``kernels.fp8_weight_cache``, or what its ``fp8_weight_cast`` implies:
    ``full`` for ``per_step`` (the cast is reused from the cache), else ``none``."""
    kernels = stack.kernels
    if kernels.fp8_weight_cache is not None:
        return kernels.fp8_weight_cache
    return Fp8WeightCache.FULL if kernels.fp8_weight_cast == Fp8WeightCast.PER_STEP else Fp8WeightCache.NONE


def copy_bytes(stack: StackProfile, gpu: GpuSpec | None = None) -> tuple[float, float]:
    """(row-wise, column-wise) bytes per weight element of the kept fp8 copies under the
    stack's scaling on ``gpu`` (None: a Hopper-like part): per-tensor scaling 1 and 1 (0 on a
    GPU with ``fp8_any_layout``); MXFP8 ``1 + 1/32`` each; blockwise ``1 + 4/128^2`` each (a
    row-wise and a transposed copy of the 128 x 128 blocks); NVFP4 ``0.5 + 1/16`` each."""
    scaling = stack.kernels.fp8_scaling
    if scaling == Fp8Scaling.NVFP4:
        block = 0.5 + 1.0 / NVFP4_BLOCK
        return block, block
    if scaling == Fp8Scaling.MXFP8:
        block = 1.0 + 1.0 / MX_BLOCK
        return block, block
    if scaling == Fp8Scaling.BLOCKWISE:       # 128 x 128 blocks: one fp32 scale per 16,384 elements
        block = 1.0 + 4.0 / FP8_BLOCK**2
        return block, block
    any_layout = gpu is not None and gpu.fp8_any_layout
    return 1.0, 0.0 if any_layout else 1.0


def primary_low_precision(stack: StackProfile, zero_stage: int) -> bool:
    """Whether the linear weights are kept as quantized parameters: the stack's
    ``kernels.fp8_params``, by default whether ZeRO 1-2 gathers them in fp8 or fp4
    (Megatron-Core's ``fp8_param_gather`` / ``fp4_param_gather``)."""
    if stack.kernels.fp8_params is not None:
        return stack.kernels.fp8_params
    gathered = stack.data_parallel.param_gather_dtype
    return zero_stage < 3 and gathered in (ReduceDtype.FP8, ReduceDtype.FP4)


def fp8_weight_memory(linear_elements: float, dtype: Dtype, stack: StackProfile | None, zero_stage: int,
                      gpu: GpuSpec | None = None, shards: int = 1) -> tuple[float, float]:
    """(cache bytes, bytes the weights hold less) for ``linear_elements`` linear weight elements
    on one GPU (tensor- and expert-parallel shards, not ZeRO's): with fp8 primary weights the
    weights hold ``(2 - row) E / s`` less (``s``: ``shards``, the ZeRO-3 group the weights are
    sharded over, 1 below stage 3) and the cache ``col E`` under ``full`` (0 under
    ``rowwise``); otherwise the cache is ``(row + col) E`` (``full``), ``row E`` (``rowwise``) or
    0 (module docstring). (0, 0) without fp8 training or a stack."""
    if dtype != Dtype.FP8 or stack is None or linear_elements <= 0.0:
        return 0.0, 0.0
    mode = cache_mode(stack)
    row, col = copy_bytes(stack, gpu)
    kept_column = col if mode == Fp8WeightCache.FULL else 0.0
    if primary_low_precision(stack, zero_stage):
        sharded = shards if zero_stage >= 3 else 1
        return kept_column * linear_elements, (2.0 - row) * linear_elements / sharded
    kept = {Fp8WeightCache.NONE: 0.0, Fp8WeightCache.ROWWISE: row}.get(mode, row + col)
    return kept * linear_elements, 0.0
