"""Software-stack profiles: how a training framework shards, gathers, reduces and overlaps.

A profile is data (``hardware_specs/stacks/<name>.yaml``), one per framework and era
(Megatron-LM 2021, Megatron-Core, NeMo, DeepSpeed, PyTorch FSDP/FSDP2, torchtitan), each
value with its source; docs/stacks.md describes them. A scenario names one with
``training.stack: NAME`` or overrides fields with a mapping
``training.stack: {base: fsdp2, sharding: {prefetch: 2}}``; the default is
:data:`DEFAULT_STACK`. Keys the stack sets in ``defaults`` fill the scenario's
``parallelism`` keys that the scenario leaves out.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict

from simulator.config.hardware import Dtype

DEFAULT_STACK = "megatron-core"
"""What a new user most likely runs: Megatron-Core (directly, or through NeMo/Megatron-LM)."""

Flag = Annotated[bool, Strict()]
SmallCount = Annotated[int, Strict(), Field(ge=0, le=1024)]
_MB = 1e6



ATTENTION_KERNELS = ("default", "fa1", "fa2", "fa3", "fa4", "cudnn", "triton", "ck")
"""The fused-attention implementations the library's GPU specs measure
(``compute.attention_kernels``): FlashAttention 1 (flash-attn 1.x's CUDA kernel), 2, 3 and 4,
cuDNN's (TransformerEngine's FusedAttention), flash-attn 1.x's Triton kernel, AMD's Composable
Kernel."""


class ReduceDtype(StrEnum):
    """Dtype of a gradient or weight collective; ``param`` means the training dtype."""

    PARAM = "param"
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"   # NVFP4 weights: packed 4-bit values (Megatron-Core fp4_param_gather)

    def nbytes(self, training_dtype: Dtype) -> float:
        """Bytes per element of this dtype (``param``: the training dtype's bytes, fp8 -> 2
        since fp8 recipes keep bf16 weights and gradients; fp4: 0.5, the packed values alone,
        as Megatron-Core rebuilds the scales on every rank from all-reduced amaxes)."""
        sizes = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "fp4": 0.5}
        if self is ReduceDtype.PARAM:
            return {Dtype.FP32: 4}.get(training_dtype, 2)
        return sizes[self.value]


class GatherUnit(StrEnum):
    LAYER = "layer"          # one coalesced all-gather per transformer block (FSDP unit)
    PARAMETER = "parameter"  # one all-gather per weight tensor (DeepSpeed ZeRO-3, 2021)


class GradCopyIn(StrEnum):
    """How a sharded stack assembles a unit's gradients for its reduce-scatter (see
    simulator.cost.sharding.copy_in_bytes_per_param)."""

    NONE = "none"            # gradients reduced in place (not modelled)
    FLAT_CAT = "flat_cat"    # FSDP1: autograd concatenates them into the FlatParameter's grad,
                             # then FSDP casts it to the reduce dtype
    CHUNK_CAT = "chunk_cat"  # FSDP2: one chunk_cat into the reduce-scatter input, cast included


class GatherCopyIn(StrEnum):
    """What a sharded stack runs on a unit's fp32 parameter shard before its all-gather (see
    simulator.engine.pipeline_fsdp.gather_copy_seconds)."""

    NONE = "none"            # the shard is gathered as stored (DeepSpeed's 16-bit parameters)
    CAST = "cast"            # FSDP1: the fp32 shard cast to the gather dtype (_use_low_precision_shard)
    CAST_COPY = "cast_copy"  # FSDP2: that cast, then a foreach copy into the all-gather buffer


class Fp8Scaling(StrEnum):
    DELAYED = "delayed"      # scale from an amax history (TransformerEngine default)
    DYNAMIC = "dynamic"      # amax of the tensor computed before each cast (torchao tensorwise)
    MXFP8 = "mxfp8"          # one E8M0 scale per 32 elements, set in the cast kernel (Blackwell)
    BLOCKWISE = "blockwise"  # an fp32 scale per 1 x 128 tile (activations, gradients) and per 128 x 128
                             # block (weights): TE Float8BlockScaling, the DeepSeek-V3 recipe (Hopper)
    NVFP4 = "nvfp4"          # 4-bit E2M1, one E4M3 scale per 16 elements and a per-tensor one (Blackwell)


class Fp8AttentionScaling(StrEnum):
    """The recipe fp8 attention runs with (TransformerEngine's ``NVTE_DPA_FP8_RECIPE``)."""

    AUTO = "auto"                # the linears' recipe (MXFP8 -> mxfp8, delayed/current -> per_tensor)
    MXFP8 = "mxfp8"              # "MXFP8BlockScaling"
    PER_TENSOR = "per_tensor"    # "Float8CurrentScaling" or "DelayedScaling"


class Fp8WeightCast(StrEnum):
    """When a stack makes a weight's fp8 copy (see simulator.cost.fp8_casts)."""

    PER_STEP = "per_step"        # cached over the step's microbatches (TE + Megatron-Core)
    PER_FORWARD = "per_forward"  # every forward (torchao Float8Linear; TE without the cache)


class Fp8WeightCache(StrEnum):
    """Which fp8 copies of the linear weights a stack keeps between steps (see
    simulator.workload.fp8_weight_cache)."""

    NONE = "none"          # every copy transient (torchao Float8Linear; TE without is_first_microbatch)
    ROWWISE = "rowwise"    # the row-wise copy only (ROCm TE, keep_fp8_weight_transpose_cache False)
    FULL = "full"          # row-wise and, where the GEMMs need one, column-wise (TE's weight workspace)


class CudaGraphs(StrEnum):
    """What a job replays from CUDA graphs. clustersim prices the GPU's work as if the host
    always issued kernels ahead of it, which graphs approach; the mode is a tag
    (:mod:`simulator.validation.regimes`), not a price."""

    NONE = "none"          # every kernel launched by the host as the step runs (eager)
    PARTIAL = "partial"    # parts of each layer (Megatron-Core TE-scoped graphs: attn, moe_router, ...)
    FULL = "full"          # every transformer layer (per-layer graphs) or the whole forward-backward


class AmaxReduction(StrEnum):
    """Which ranks TransformerEngine's delayed-scaling amax all-reduce spans (see
    simulator.cost.amax_reduction)."""

    NONE = "none"            # no all-reduce of amaxes per fp8 region (dynamic scaling, no TE)
    TP_CP = "tp_cp"          # Megatron-Core 0.8: tensor- and context-parallel ranks
    TP_DP_CP = "tp_dp_cp"    # Megatron-Core 0.9+: every rank of the pipeline stage


class EpDispatcher(StrEnum):
    """What moves a mixture of experts' tokens between expert-parallel ranks (see
    simulator.cost.ep_dedup)."""

    ALLTOALL = "alltoall"    # one copy per (token, expert): Megatron-Core's alltoall dispatcher
    DEEPEP = "deepep"        # flex dispatcher, DeepEP's normal kernels: one copy per GPU, per server
    HYBRIDEP = "hybridep"    # flex dispatcher, HybridEP: the same bytes (NVIDIA's kernels in DeepEP)


class SelectiveRecompute(StrEnum):
    """What ``recompute: selective`` recomputes in a stack."""

    CORE_ATTENTION = "core_attention"            # Megatron: the attention core (Korthikanti 2022)
    EVERY_SECOND_MATMUL = "every_second_matmul"  # torchtitan per-op SAC: every second mm + cheap ops


class CpRing(StrEnum):
    """How a stack runs ring attention (context parallelism)."""

    GENERIC = "generic"  # three K/V all-gathers per pass, nothing else (the first cp model)
    TORCH = "torch"      # PyTorch _templated_ring_attention (simulator.cost.context_parallel)
    P2P = "p2p"          # TransformerEngine AttnFuncWithCP: K/V send-recv overlapped per step
    ULYSSES = "ulysses"  # DeepSpeed-Ulysses: q/k/v and output all-to-alls (heads <-> sequence)
    ALL_GATHER = "all_gather"  # TE AttnFuncWithCPAndKVAllGather, Llama 3: K/V gathered, dK/dV scattered


class CpHeads(StrEnum):
    """Which heads' K and V the context-parallel ring exchanges."""

    KV = "kv"    # the model's key/value heads (GQA kept through attention)
    ALL = "all"  # every query head: K and V repeated to the query heads before attention


class ShardedReduce(StrEnum):
    """How a ZeRO 1-2 optimizer gets the gradient slice it updates."""

    REDUCE_SCATTER = "reduce_scatter"  # each rank receives its slice (Megatron's distributed optimizer)
    ALL_REDUCE = "all_reduce"          # the whole gradient everywhere (DeepSpeed's BF16_Optimizer)


class ParamGatherLaunch(StrEnum):
    """When a ZeRO 1-2 optimizer's overlapped weight all-gathers are launched (see
    simulator.workload.chunk_gathers)."""

    BUCKET = "bucket"    # each bucket's forward hook launches the next: only the first waits
    CHUNK = "chunk"      # interleaved: a whole model chunk ahead (align_param_gather)


class ReduceCalls(StrEnum):
    """How an overlapped ZeRO 0-2 gradient reduction (and its weight all-gather) goes out to
    NCCL: each call pays the collective's latency (see simulator.engine.dp_calls)."""

    BUCKET = "bucket"    # one call per bucket, back to back (PyTorch DDP, DeepSpeed ZeRO-1/2)
    CHUNK = "chunk"      # Megatron-Core: buckets only on the first pipeline rank's first chunk
    LAYER = "layer"      # Apex DistributedFusedAdam under NeMo: one NCCL group per layer


class GradAccumulation(StrEnum):
    """How gradients are summed over a step's microbatches (ZeRO 0-2)."""

    FUSED = "fused"            # in the weight-gradient GEMM or autograd's own accumulation
    ADD = "add"                # each microbatch's gradient added in place into the fp32 buffer
    UPCAST_ADD = "upcast_add"  # each microbatch's gradient cast to a temporary and added (fp32)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StackDefaults(_Part):
    zero_stage: Annotated[int, Strict(), Field(ge=0, le=3)] = 1
    overlap_grad_reduce: Flag = True


class DataParallelProfile(_Part):
    """Gradient reduction for ZeRO 0-2 (DDP, Megatron DDP and distributed optimizer)."""

    grad_reduce_dtype: ReduceDtype = ReduceDtype.PARAM
    bucket_MB: Annotated[float, Field(gt=0.0, le=1e6, allow_inf_nan=False)] = 25.0
    overlap_param_gather: Flag = False
    param_gather_dtype: ReduceDtype = ReduceDtype.PARAM
    """ZeRO 1-2: the dtype the updated weights are all-gathered in (``fp8`` with Megatron-Core's
    ``fp8_param_gather``, NeMo's ``fp8_params``)."""
    param_gather_launch: ParamGatherLaunch = ParamGatherLaunch.BUCKET
    """With ``overlap_param_gather`` under the interleaved schedule: ``chunk`` launches each
    model chunk's gather one chunk ahead and its first forward waits for all of it;
    ``bucket`` lets only the step's first bucket wait."""
    param_gather_with_optimizer: Flag = False
    """Megatron-Core's ``overlap_param_gather_with_optimizer_step``: bucketing is turned off, so
    each model chunk is one bucket, reduced when the chunk's backward ends and gathered after
    the optimizer step (:mod:`simulator.engine.dp_calls`)."""
    reduce_calls: ReduceCalls = ReduceCalls.BUCKET
    """With ``overlap_grad_reduce``: the NCCL calls the reduction goes out in, each paying the
    collective's latency (:mod:`simulator.engine.dp_calls`)."""
    bucket_params_per_rank: Annotated[float, Field(ge=0.0, le=1e12, allow_inf_nan=False)] = 0.0
    """A bucket holds at least this many parameters per data-parallel rank: Megatron-Core's
    default bucket of ``max(40M, 1M x dp)`` parameters, so that each rank's share of a bucket
    stays bandwidth-bound. 0 when the run states its bucket size (a scenario that overrides
    ``bucket_MB`` and not this field gets 0)."""
    sharded_reduce: ShardedReduce = ShardedReduce.REDUCE_SCATTER
    """ZeRO 1-2: the gradient collective before the sharded optimizer step (then every rank
    all-gathers the updated weights)."""
    embedding_grad_dtype: ReduceDtype | None = None
    """Dtype of the tied embedding's gradient all-reduce between the first and last pipeline
    stages (None: ``grad_reduce_dtype``, the main gradient's dtype under Megatron-Core)."""
    zero_grad_buffer: Flag = False
    """ZeRO 0-2: the runtime zeroes its whole gradient buffer (every parameter the GPU holds, in
    ``grad_reduce_dtype``) at the start of each step, one memory-bound write (Megatron-Core's
    ``DistributedDataParallel.zero_grad_buffer``: ``grad_data.zero_()`` per buffer); PyTorch's
    DDP and FSDP set the gradients to None instead."""
    grad_accumulation: GradAccumulation = GradAccumulation.FUSED
    accumulation_dtype: ReduceDtype = ReduceDtype.FP32
    """With ``grad_accumulation: add`` or ``upcast_add``: the dtype of the buffer gradients are
    added into."""

    @property
    def bucket_bytes(self) -> float:
        return self.bucket_MB * _MB


class ShardingProfile(_Part):
    """Parameter sharding (ZeRO-3, FSDP): gather granularity, prefetch, dtypes."""

    unit: GatherUnit = GatherUnit.LAYER
    prefetch: Annotated[int, Strict(), Field(ge=0, le=16)] = 1
    reshard_after_forward: Flag = True
    regather_for_recompute: Flag = False
    param_gather_dtype: ReduceDtype = ReduceDtype.PARAM
    grad_reduce_dtype: ReduceDtype = ReduceDtype.PARAM
    reduce_every_microbatch: Flag = True
    experts_outside_units: Flag = False
    """Where expert parallelism leaves one rank in the experts' shard group, the experts are not
    FSDP parameters (NeMo AutoModel's MoE parallelizer passes them as ``ignored_params``): their
    gradients accumulate over the microbatches in their own ``.grad``, counted in the model
    state, with no unsharded accumulator of the reduce dtype beside it
    (:func:`simulator.workload.unsharded.unsharded_bytes`)."""
    grad_copy_in: GradCopyIn = GradCopyIn.NONE
    """Memory-bound kernels that assemble each unit's gradients before its reduce-scatter."""
    gather_copy_in: GatherCopyIn = GatherCopyIn.NONE
    """Kernels on the fp32 parameter shard before each all-gather: its cast to a narrower
    gather dtype (read 4, write ``n`` bytes per shard element; an fp8 gather's cast is the fp8
    weight cast, priced with the fp8 casts) and, for FSDP2, the copy into the all-gather
    buffer (read and write ``n``)."""
    gather_copy_out: Flag = False
    """After each all-gather, one copy kernel on the compute stream moves the gathered bytes
    from the all-gather output into the parameters' unsharded tensors (read and write; FSDP2
    ``foreach_all_gather_copy_out``, ``torch.split_with_sizes_copy``); FSDP1 gathers into the
    flat parameter in place."""
    predivide: Flag = False
    """The assembled gradient is divided by a pre-divide factor before the reduce-scatter, a
    separate elementwise kernel (FSDP1 ``_div_if_needed``; FSDP2 lets NCCL average fp32 and
    bf16 instead)."""
    list_collectives: Flag = False
    """Each gather and reduce-scatter goes through ``torch.distributed``'s tensor-list API:
    PyTorch 1.x ``ProcessGroupNCCL`` copies the flat NCCL output back into each rank's tensor
    (all-gather), or each rank's input into a flat buffer (reduce-scatter), one copy kernel per
    rank on the collective's stream (DeepSpeed ZeRO-3 of 2021, one collective per parameter)."""
    persistence_threshold_params: Annotated[float, Field(ge=0.0, le=1e15, allow_inf_nan=False)] = 0.0
    """With ``unit: parameter``: tensors of fewer elements (on a rank) stay gathered, one
    all-gather each per step after the optimizer step and none per pass; their gradients are
    still reduce-scattered (DeepSpeed ``stage3_param_persistence_threshold``). 0: none."""
    max_reuse_distance_params: Annotated[float, Field(ge=0.0, le=1e15, allow_inf_nan=False)] | None = None
    """With ``unit: parameter`` and full recompute: a tensor gathered for its recompute is kept
    for its backward only when fewer parameters than this are used in between (twice the
    layer's later tensors); the others are gathered once more (DeepSpeed
    ``stage3_max_reuse_distance``). None: every tensor kept (``regather_for_recompute``
    false) or every one gathered again (true)."""
    list_copy_host_us: Annotated[float, Field(ge=0.0, le=1e4, allow_inf_nan=False)] = 0.0
    """Host microseconds to issue one of those per-rank copies (an eager ``aten::copy_``
    launching one device-to-device ``cudaMemcpyAsync``, from C++ in the process group): the
    host issues them one after the other, so ``r`` of them take ``r`` times this however
    small each copy is. Used only with ``list_collectives``."""
    list_narrow_host_us: Annotated[float, Field(ge=0.0, le=1e4, allow_inf_nan=False)] = 0.0
    """Host microseconds of one ``Tensor.narrow`` in the Python loop that builds a list
    collective's per-rank tensors before it is issued: one per rank for an all-gather (views
    of the zeroed flat tensor), one per rank whose share lies inside the gradient for a
    reduce-scatter (DeepSpeed 0.3-0.5 ``_allgather_param``, ``_reduce_scatter_gradient``).
    Used only with ``list_collectives``."""
    list_view_host_us: Annotated[float, Field(ge=0.0, le=1e4, allow_inf_nan=False)] = 0.0
    """Host microseconds of the ``grad.view(-1)`` a reduce-scatter's list loop takes before
    each in-range rank's ``narrow``. Used only with ``list_collectives``."""
    list_zeros_host_us: Annotated[float, Field(ge=0.0, le=1e4, allow_inf_nan=False)] = 0.0
    """Host microseconds of the ``torch.zeros`` a reduce-scatter's list loop allocates for each
    rank whose share lies past the gradient's end (a tensor of ``n`` elements is split in
    shares of ``ceil(n / r)``, so ``r - floor(n / ceil(n / r))`` ranks pad). Used only with
    ``list_collectives``."""
    gather_zero_fill: Flag = False
    """Each all-gather first zero-fills the unsharded flat tensor it gathers into, a
    memory-bound kernel writing the whole tensor before the gather (DeepSpeed 0.3-0.5
    ``_allgather_param``: ``torch.zeros(aligned_param_size)``)."""


class TensorParallelProfile(_Part):
    """How the stack runs tensor-parallel collectives (see simulator.cost.tp_exposure)."""

    overlap_dgrad_comm: Flag = False
    comm_overlap: Flag = False
    comm_overlap_input_grad: Flag = True
    """With ``comm_overlap``: whether the backward input-gradient reduce-scatters (or
    all-reduces) of the column-parallel linears are overlapped too."""
    layout_copies: Flag = False
    """Activations are batch-first ([b, s, h]) and sequence-parallel collectives gather or
    scatter the sequence dim: each NCCL all-gather's output and reduce-scatter's input is
    copied once (chunk and cat) when the micro-batch exceeds 1."""
    fp8_all_gather: Flag = False
    """Under fp8, forward all-gathers of the linears' inputs move fp8 (1 byte)."""
    saves_gathered_inputs: Flag = False
    """With sequence parallelism, the column-parallel linears keep their all-gathered
    (unsharded) input for the weight gradient (DTensor TP), where Megatron keeps the shard
    and gathers it again in backward."""
    sum_after_exchange: Flag = False
    """With ``comm_overlap``: a fused matmul-reduce-scatter exchanges the tp partial products
    and sums them in a separate memory-bound kernel (PyTorch async TP)."""

    # Issue 8, async TP as torch 2.6 runs it (simulator.cost.tp_exposure).
    fp8_grad_all_gather: Flag = False
    """Under fp8, the backward all-gathers of the row-parallel linears' output gradients move
    fp8 too: the gradient is cast on its sequence shard before the gather (torchao
    ``Float8RowwiseParallel``)."""
    fused_pairs: Flag = False
    """With ``comm_overlap``: each fused collective is pipelined only with the matmuls the
    micro-pipeline pass fuses it with (an all-gather with the matmuls that take the gathered
    tensor as their left operand, a reduce-scatter with the one matmul producing its input),
    and a fused all-gather first copies the local shard into the symmetric buffer and waits on
    a barrier, exposed."""
    fused_gather_major: Flag = False
    """With ``fused_pairs``: the fused ops leave their tensors gather-dim major (a [b, s, h]
    tensor stored [s, b, h]); with a micro-batch above 1 and bf16 linears each weight-gradient
    matmul flattens such an operand with a copy (read and write): the gathered inputs of QKV
    and fc1, the gathered output gradients of proj and fc2, and the inputs of proj and fc2."""
    userbuffers: Flag = False
    """With ``comm_overlap``: TransformerEngine userbuffers, where each forward collective is
    pipelined with its own GEMM only (the all-gather with QKV or fc1 by ring exchange, the
    reduce-scatter with proj or fc2 as ``rs_splits`` says)."""
    rs_splits: tuple[SmallCount, SmallCount] = (0, 0)
    """With ``userbuffers``, per site (proj, fc2): 0 for a ring-exchange reduce-scatter (tp
    chunks, none left after the last GEMM chunk), n > 0 for TE's ``pipeline`` method (n GEMM
    chunks, each chunk's reduce-scatter overlapping the next chunk's GEMM, the last one's
    exposed)."""
    rs_sm_margin: tuple[SmallCount, SmallCount] = (0, 0)
    """With ``userbuffers``, per site (proj, fc2): SMs withheld from the forward GEMM for its
    reduce-scatter's kernel (TE ``num_sm`` with ``set_sm_margin``; 0 when the margin is off)."""


class KernelProfile(_Part):
    fused_elementwise: Flag = True
    fp8_scaling: Fp8Scaling = Fp8Scaling.DELAYED
    fp8_weight_cast: Fp8WeightCast = Fp8WeightCast.PER_STEP
    fp8_weight_cache: Fp8WeightCache | None = None
    """Under fp8, the fp8 weight copies kept in memory from step to step: ``full`` for
    TransformerEngine's linears called with ``is_first_microbatch`` (the cached weight
    workspace and its transposed copy), ``rowwise`` without the transposed one, ``none`` where
    every copy is transient. None: ``full`` when ``fp8_weight_cast`` is ``per_step`` (the cache
    the cast is reused from), else ``none`` (:mod:`simulator.workload.fp8_weight_cache`)."""
    fp8_params: Flag | None = None
    """Whether the linear weights are stored quantized, with no 16-bit copy (TransformerEngine's
    ``fp8_model_init``: Megatron-Core's ``fp8_param_gather``, NeMo's ``fp8_params``). None: when
    ZeRO 1-2 gathers them in fp8 or fp4 (``data_parallel.param_gather_dtype``); set it where
    they are gathered in 16 bit and quantized after (MXFP8 with
    ``reuse_grad_buf_for_mxfp8_param_ag``)."""
    fp8_amax_reduction: AmaxReduction = AmaxReduction.NONE
    """With fp8 delayed scaling: the group of TE's amax all-reduce, one at the end of every
    fp8_autocast region's forward and one at the end of its backward."""
    fp8_sp_amax_reduction: Flag = False
    """With fp8 current (dynamic) scaling and sequence parallelism: each tensor cast before a
    tensor-parallel all-gather (a column-parallel linear's input in forward, a row-parallel
    linear's output gradient in backward) has its amax all-reduced (MAX) over the
    tensor-parallel group before its scale is computed, in line on the compute stream
    (TransformerEngine ``Float8CurrentScalingQuantizer`` ``with_amax_reduction``,
    :mod:`simulator.cost.amax_reduction`)."""
    fused_activation: Flag | None = None
    """Whether the MLP activation runs as one fused kernel; None: as ``fused_elementwise``.
    Megatron-Core with ``bias_activation_fusion: false`` runs it as separate PyTorch ops
    (squared ReLU: ``relu`` then ``pow``)."""
    fp8_saved_inputs: Flag = False
    """Under fp8, whether the linear layers keep their inputs for the weight gradient as the
    fp8 copy they cast (one byte per element) instead of the 2-byte input: TransformerEngine's
    ``Linear``, ``LayerNormLinear`` and ``LayerNormMLP`` save the quantized input
    (:func:`simulator.workload.layer_activations.activation_bytes_per_layer`)."""
    moe_permute_fusion: Flag = False
    """Whether a mixture-of-experts layer permutes its tokens with TransformerEngine's fused
    kernels (Megatron-Core ``--moe-permute-fusion``) instead of PyTorch index ops
    (:mod:`simulator.workload.moe_dispatch`)."""
    grouped_gemm_streams: Annotated[int, Strict(), Field(ge=0, le=64)] = 0
    """How a GPU's local experts run their GEMMs: 0 as one grouped kernel over all of them
    (``torch._grouped_mm``, CUTLASS/cuBLASLt grouped GEMM); ``n > 0`` as one GEMM per expert,
    issued round-robin on ``n`` streams, with each expert's fp8 operands quantized by kernels of
    their own (TransformerEngine's ``GroupedLinear``: ``multi_stream_cublas_gemm`` on 4 compute
    streams, :mod:`simulator.cost.compute`)."""
    grouped_mlp_fusion: Flag = False
    """Whether a GPU's local experts run their MLP as TransformerEngine's fused grouped MLP
    (``NVTE_CUTEDSL_FUSED_GROUPED_MLP=1``; Megatron-Core's ``TEGroupedMLP`` with the TE op
    fuser, Blackwell only): fc1 and fc2 as one grouped GEMM each, the SwiGLU and the
    quantization of fc2's input in fc1's epilogue, the SwiGLU's gradient and the quantization of
    fc1's output gradient in fc2's data-gradient epilogue (:mod:`simulator.workload.transformer`
    ``expert_activation_bytes``)."""
    fp8_attention: Flag = False
    """Whether fused attention runs in fp8 (TransformerEngine's ``fp8_dpa``, Megatron-Core and
    Megatron-Bridge ``fp8_dot_product_attention``), with the linears' recipe
    (:func:`fp8_attention_recipe`: MXFP8 or per-tensor scales): its time is the bf16 kernel's
    over the GPU's measured ``compute.fp8_attention_speedup`` for that recipe, the head widths (and
    the window, for sliding-window layers) and the sequence (:mod:`simulator.cost.compute`)."""
    fp8_attention_recipe: Fp8AttentionScaling = Fp8AttentionScaling.AUTO
    """The recipe fp8 attention runs with (TransformerEngine's ``NVTE_DPA_FP8_RECIPE``, v2.16
    ``dot_product_attention.py``'s recipe table): ``auto`` follows the linears' recipe, which
    NVFP4 has none of for attention (it then needs ``mxfp8``, "MXFP8BlockScaling", or
    ``per_tensor``, "Float8CurrentScaling" / "DelayedScaling"); "F16" is ``fp8_attention`` false."""
    fp8_output_proj: Flag = False
    """Whether the output layer (the LM head's ``(b s, V/t, h)`` GEMMs) runs as an MXFP8 linear,
    as Megatron-Core's ``fp8_output_proj`` does (``TELMHeadColumnParallelLinear`` under the
    MXFP8 autocast; NVIDIA/Megatron-LM #4825, 2026-05-31, megatron/core/transformer/
    transformer_config.py, which refuses it without fp8 and the ``mxfp8`` recipe). Off, the
    output layer stays in 16 bit under fp8 training, as Megatron-Core's plain
    ``ColumnParallelLinear`` head runs it. Megatron-Bridge v0.5.0 and v0.6.0 set it for
    DeepSeek-V3 and GPT-OSS 120B with MXFP8 on GB200 and GB300 (and DeepSeek-V3 on B300 from
    v0.6.0); MLPerf Training v6.0's GB300 DeepSeek-V3 configurations export
    ``FP8_OUTPUT_PROJ=True`` (:func:`simulator.workload.head_kernels.logits_forward`)."""
    attention_unpad: Flag = False
    """Whether each layer gathers its queries, keys and values into an unpadded ``(tokens,
    heads, d)`` layout before a variable-length flash-attention call and scatters the output
    back (flash-attn's ``bert_padding.unpad_input`` / ``pad_input``, which llm-foundry's MPT
    ``flash_attn_fn`` runs at every layer whatever the padding;
    :func:`simulator.workload.transformer.unpad_bytes`)."""
    cuda_graphs: CudaGraphs = CudaGraphs.NONE
    """What the job captures in CUDA graphs: ``none`` (eager), ``partial`` (modules of each
    layer: Megatron-Core ``--cuda-graph-impl transformer_engine --cuda-graph-scope attn
    moe_router moe_preprocess``), ``full`` (every layer, Megatron-Core ``--cuda-graph-scope full``
    and NeMo's ``LAYER_CUDA_GRAPH``, or the whole forward-backward, ``full_iteration`` and MLPerf's
    ``FULL_CUDA_GRAPH``). The model has no host time, so the mode moves no prediction; it
    selects the published runs ``clustersim run`` quotes (eager mixtures of experts ran well
    below the host-free price, fully captured ones near it: docs/validation.md)."""
    attention: Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,32}$")] = "default"
    """Fused-attention implementation (fa2, fa3, cudnn...): its efficiency is GPU data
    (``compute.attention_kernels``); ``default`` uses the GPU's generic fractions, as does a
    kernel of :data:`ATTENTION_KERNELS` the GPU has no measurement of; another name must be one
    the GPU spec declares."""


class RecomputeProfile(_Part):
    selective: SelectiveRecompute = SelectiveRecompute.CORE_ATTENTION


class LossKernel(StrEnum):
    """The cross-entropy implementation a stack runs; its HBM traffic per logit element is in
    :mod:`simulator.workload.loss_kernels`."""

    VOCAB_PARALLEL = "vocab_parallel"              # Megatron's unfused VocabParallelCrossEntropy
    VOCAB_PARALLEL_FUSED = "vocab_parallel_fused"  # cross_entropy_loss_fusion, impl native
    TE = "te"                                      # cross_entropy_fusion_impl te (Triton)
    TORCH = "torch"                                # eager F.cross_entropy(logits.float())
    TORCH_BF16 = "torch_bf16"                      # eager F.cross_entropy(logits), no upcast
    XENTROPY = "xentropy"                          # flash-attn / apex fused softmax xentropy


class LossProfile(_Part):
    """How the stack computes the cross entropy over the vocabulary."""

    kernel: LossKernel = LossKernel.VOCAB_PARALLEL
    """Which implementation runs (bytes it moves: :mod:`simulator.workload.loss_kernels`)."""

    logit_bytes: Annotated[float, Field(gt=0.0, le=64.0, allow_inf_nan=False)] | None = None
    """Bytes per logit element alive at the loss's memory peak; None: the ``kernel``'s
    (:data:`simulator.workload.loss_kernels.LOSS_PEAK_BYTES`: 4, one fp32 copy, for Megatron's
    vocab-parallel cross entropy; 12 for eager ``F.cross_entropy(logits.float())``; 2 for
    TransformerEngine's, which writes the gradient over the saved bf16 logits)."""
    parallel_logit_bytes: Annotated[float, Field(gt=0.0, le=64.0, allow_inf_nan=False)] | None = None
    """Bytes per logit element at the loss's peak when the vocabulary is sharded over
    tensor-parallel ranks (DTensor ``loss_parallel``: 16); None: ``logit_bytes``."""
    fp32_logits: Flag = False
    """The model casts its logits to fp32 before the loss (OLMo-core's ``self.w_out(h).float()``;
    Hugging Face causal-LM heads' ``logits.float()``): a cast each way and the loss kernel on
    4-byte logits (:func:`simulator.workload.loss_kernels.loss_traffic`)."""
    shift_copy: Flag = False
    """The trainer shifts the logits with a copy before the loss
    (``logits[..., :-1, :].contiguous()``): a copy forward and, backward, a zero-filled
    gradient of the whole logits with the slice's gradient copied in."""
    z_loss: Flag = False
    """An auxiliary z-loss computed apart from the cross-entropy kernel
    (``logits.logsumexp(-1).pow(2)``, PaLM's, OLMo's unfused path): ATen's logsumexp passes over
    the logits forward and its gradient backward (:func:`simulator.workload.loss_kernels.loss_traffic`);
    a fused kernel that computes it in the same pass (flash-attn's, OLMo-core's Triton one) adds
    nothing."""


# --- pipeline runtime (memory) -------------------------------------------------------------
class PipelineRuntime(StrEnum):
    """Which pipeline runtime runs the schedule (what it keeps alive per microbatch)."""

    MEGATRON = "megatron"   # Megatron-LM schedules.py: outputs freed after send, fixed grad buffers
    TORCH = "torch"         # torch.distributed.pipelining PipelineStage + Schedule1F1B/Interleaved1F1B


class PipelineProfile(_Part):
    """The pipeline-parallel runtime's memory behaviour (simulator.workload.pipeline_memory)
    and, under FSDP, its gradient handling (simulator.engine.pipeline_fsdp)."""

    runtime: PipelineRuntime = PipelineRuntime.MEGATRON
    deferred_reduce_scatter: Flag = False
    """Sharded (FSDP) gradients are reduce-scattered only after the stage's last backward has
    run, unit after unit in series (torch.distributed.pipelining ``backward_maybe_with_nosync``
    calls every group's ``post_backward`` after it), not overlapped with that backward."""
    unsharded_grad_accumulation: Flag = False
    """Each microbatch's unsharded gradients are accumulated into fp32 buffers by separate
    elementwise kernels (FSDP2 ``to_accumulated_grad_if_needed`` at the first backward,
    ``accumulate_unsharded_grad_if_needed`` at later ones), not fused into the weight-gradient
    GEMM."""
    keep_stage_outputs: Flag = True
    """With ``runtime: torch``, every microbatch's stage output (the logits on the last stage)
    stays referenced until the step ends (``PipelineStage.output_chunks``, what
    ``schedule.step`` returns; torch.distributed.pipelining before ``save_forward_output``,
    which torch nightly added to ``forward_one_chunk`` for torch 2.10). False: the schedule
    runs with ``return_outputs=False`` (torchtitan @ b5bcd76c6, ``trainer.py`` L827-834), so an
    output lives only until its microbatch's backward (``fwd_cache``), like the activations
    (:mod:`simulator.workload.pipeline_memory`). Memory only."""
    overlap_p2p: Flag = False
    """Under the interleaved schedule (``v > 1``), a pass's send to the next stage is issued
    asynchronously and the stage runs its next pass at once; the receiver still waits for
    the data (Megatron-Core ``overlap_p2p_comm``: ``isend``/``irecv`` whose handles are waited
    before the stage's next pass in the same direction, ``schedules.py``
    ``forward_backward_pipelining_with_interleaving``). False: the send holds the stage
    (``batch_p2p_comm``'s batched, waited exchange; the only mode of 1F1B without virtual
    stages, where Megatron-LM turns the overlap off)."""


class ContextParallelProfile(_Part):
    """How the stack runs context parallelism (see simulator.cost.context_parallel)."""

    ring: CpRing = CpRing.GENERIC
    exchanged_heads: CpHeads = CpHeads.KV
    eager_ring: Flag = False
    """With ``ring: torch``, the ring runs outside ``torch.compile`` (eager), so its functional
    collectives are waited only where their result is read: the K/V all-gather issued at ring step
    0 hides behind step 0's attention, and each step's dK/dV shift behind the next step's
    backward, all but the last; False: compiled, every collective in line
    (:mod:`simulator.cost.context_parallel`)."""


class ExpertPadding(StrEnum):
    """How the per-expert token counts are aligned for fp8 grouped GEMMs (see
    simulator.workload.expert_passes)."""

    AUTO = "auto"          # copies under the alltoall dispatcher, none under deepep / hybridep
    COPY = "copy"          # TransformerEngine's Fp8Padding / Fp8Unpadding copy the rows
    ALIGNED = "aligned"    # the counts arrive aligned (router or dispatcher padding): no copies


class ExpertParallelProfile(_Part):
    """How the stack schedules a mixture of experts' all-to-alls (see
    simulator.cost.ep_overlap)."""

    a2a_overlap: Flag = False
    """One microbatch's dispatch and combine all-to-alls run on a communication stream under
    another microbatch's attention and expert compute (Megatron-Core
    ``overlap_moe_expert_parallel_comm``: the combined 1F1B schedule); false: in line."""
    delay_wgrad: Flag = False
    """Under ``a2a_overlap``, the weight-gradient GEMMs run after the layer's data-gradient
    all-to-all is issued (Megatron-Core ``delay_wgrad_compute``)."""
    dispatcher: EpDispatcher = EpDispatcher.ALLTOALL
    """``alltoall``: one copy of a token per (token, expert) pair (Megatron-Core's alltoall
    dispatcher); ``deepep`` / ``hybridep``: the flex dispatcher's deduplicated kernels, one copy
    per destination GPU inside a server and per destination server across servers, forwarded
    over NVLink (simulator.cost.ep_dedup)."""
    dispatcher_sms: Annotated[int, Strict(), Field(ge=1, le=100_000)] | None = None
    """SMs the flex dispatcher's kernels hold while they run (Megatron-Core
    ``moe_flex_dispatcher_num_sms``, before it ``moe_deepep_num_sms`` / ``moe_hybridep_num_sms``);
    None: the kernels' own default (simulator.cost.dispatcher_sms). Only with ``deepep`` or
    ``hybridep``."""
    permute_in_dispatch: Flag = False
    """HybridEP's dispatch writes each received token straight into its experts' rows and its
    combine merges them back in the same kernels (Megatron-Core
    ``moe_permute_fusion_into_hybridep``: DeepEP ``dispatch_with_permute(fuse_permute_dispatch)``);
    false: a separate permute kernel after the dispatch and un-permute before the combine
    (simulator.workload.moe_dispatch). Only with ``hybridep``."""
    fp8_padding: ExpertPadding = ExpertPadding.ALIGNED
    """Under fp8 and fp4, how each local expert's token count reaches the multiple of 16 (32 for
    MXFP8) the quantized grouped GEMM needs: ``copy``, Megatron-Core's ``TEGroupedMLP`` copies the
    permuted rows into a padded buffer before the experts and the output back after them
    (TransformerEngine ``Fp8Padding`` / ``Fp8Unpadding``; Megatron-Core core_v0.10 on, unless
    ``moe_router_padding_for_fp8``); ``aligned``, the router or the dispatcher already padded
    them (no copies); ``auto``, ``copy`` under the alltoall dispatcher and ``aligned`` under
    DeepEP's and HybridEP's permutes, which pad as they permute (Megatron-Core from 2026-05)."""


def fp8_attention_recipe(dtype: Dtype, kernels: KernelProfile) -> str | None:
    """The recipe TransformerEngine runs fp8 attention with: ``kernels.fp8_attention_recipe``
    where it names one (``NVTE_DPA_FP8_RECIPE``), else the linears' recipe: ``mxfp8`` under
    MXFP8, ``per_tensor`` under delayed or current (dynamic) scaling (TE v2.16
    ``dot_product_attention.py``: attention follows the linear recipe unless that variable says
    otherwise); None for 16-bit training and for NVFP4 without a named recipe."""
    if dtype != Dtype.FP8:
        return None
    if kernels.fp8_attention_recipe != Fp8AttentionScaling.AUTO:
        return kernels.fp8_attention_recipe.value
    if kernels.fp8_scaling == Fp8Scaling.NVFP4:
        return None
    return "mxfp8" if kernels.fp8_scaling == Fp8Scaling.MXFP8 else "per_tensor"


class StackProfile(_Part):
    """One training stack (see the module docstring and docs/stacks.md)."""

    name: str
    display_name: str = ""
    version: str = ""
    defaults: StackDefaults = StackDefaults()
    data_parallel: DataParallelProfile = DataParallelProfile()
    sharding: ShardingProfile = ShardingProfile()
    tensor_parallel: TensorParallelProfile = TensorParallelProfile()
    kernels: KernelProfile = KernelProfile()
    recompute: RecomputeProfile = RecomputeProfile()
    loss: LossProfile = LossProfile()
    context_parallel: ContextParallelProfile = ContextParallelProfile()
    expert_parallel: ExpertParallelProfile = ExpertParallelProfile()
    pipeline: PipelineProfile = PipelineProfile()
    step_overhead_ms: Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)] = 0.0
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def step_overhead_s(self) -> float:
        return self.step_overhead_ms * 1e-3


def stated_bucket(overrides: dict[str, Any]) -> dict[str, Any]:
    """Stack ``overrides`` in which a stated ``data_parallel.bucket_MB`` is the run's bucket
    size, used as given (Megatron-Core's ``--ddp-bucket-size``): the base profile's per-rank
    floor (``bucket_params_per_rank``) is dropped unless the overrides state one too."""
    stated = overrides.get("data_parallel")
    if isinstance(stated, dict) and "bucket_MB" in stated and "bucket_params_per_rank" not in stated:
        return {**overrides, "data_parallel": {**stated, "bucket_params_per_rank": 0.0}}
    return overrides


def merged_profile(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, section by section (nested mappings merge)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged_profile(out[key], value)
        else:
            out[key] = value
    return out


def pads_by_copy(profile: ExpertParallelProfile, dtype: Dtype) -> bool:
    """Whether the experts' rows are copied to and from a padded buffer each pass (the
    profile's ``fp8_padding``; only under fp8 and fp4, ``training.dtype: fp8``)."""
    if dtype != Dtype.FP8 or profile.fp8_padding == ExpertPadding.ALIGNED:
        return False
    return profile.fp8_padding == ExpertPadding.COPY or profile.dispatcher == EpDispatcher.ALLTOALL
