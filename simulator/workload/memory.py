"""GPU memory of one pipeline stage: model state (weights, gradients, optimizer state) and activations.

All results are bytes (floats). Notation: sequence ``s`` (per context-parallel
rank, ``seq_len / cp``), micro-batch ``b``, hidden ``h``, heads ``a``, KV heads
``k``, FFN width ``f``, vocabulary ``V``, tensor-parallel ``t``, pipeline ``p``.

References
----------
.. [K22] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198 -- sec. 4 and Table 2 (activations).
.. [N21] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
   Clusters Using Megatron-LM", SC21, arXiv:2104.04473 -- sec. 2.2 (schedules).
.. [R20] Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
   Parameter Models", SC20, arXiv:1910.02054 -- sec. 3.1 and 5 (model state).
.. [C16] Chen et al., "Training Deep Nets with Sublinear Memory Cost",
   arXiv:1604.06174 -- a recomputed segment is re-materialised during backward.
.. [MC] Megatron Core distributed-optimizer guide (docs/source/api-guide/dist_optimizer.md):
   "bf16 param, fp32 grads": 18 bytes per parameter without, ``6 + 12/d`` with the
   distributed optimizer -- the fp32 ``main_grad`` buffer Megatron keeps under bf16.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.hardware import Dtype, GpuSpec
from simulator.config.library import HardwareLibrary
from simulator.config.optimizer import OptimizerConfig
from simulator.config.scenario import (
    AttentionKernel,
    Mlp,
    ModelConfig,
    ParallelismConfig,
    Recompute,
    RecomputeModule,
    Schedule,
    TrainingConfig,
)
from simulator.config.stack import (
    DEFAULT_STACK,
    EpDispatcher,
    Fp8Scaling,
    PipelineRuntime,
    ReduceDtype,
    SelectiveRecompute,
    StackProfile,
)
from simulator.memo import remembered
from simulator.workload.dispatcher_buffers import DEEPEP_SMS, deepep_buffer_bytes, hybridep_buffer_bytes
from simulator.workload.fp8_weight_cache import fp8_weight_memory, primary_low_precision
from simulator.workload.layer_activations import (
    activation_bytes_per_layer,
    mask_bytes,
    recompute_transient_bytes,
)
from simulator.workload.loss_kernels import LOSS_PEAK_BYTES
from simulator.workload.matrices import matrix_elements
from simulator.workload.muon import SAVED_STATE_BYTES, stage_matrices
from simulator.workload.params import (
    dense_layer_parameters,
    hybrid_kinds,
    hybrid_layer_parameters,
    layer_parameters,
    mtp_extra_parameters,
)
from simulator.workload.pipeline_memory import Chunk, PipelinePeak, timeline_peak, torch_order
from simulator.workload.runtime_memory import (  # noqa: F401 (re-exported)
    CUDA_CONTEXT_BYTES,
    FRAGMENTATION,
    NCCL_BUFFER_BYTES,
    NCCL_CHANNELS,
    communicator_peers,
    expert_shard_size,
    runtime_bytes,
    shard_group_size,
)
from simulator.workload.saved_activations import (
    gathered_input_bytes,
    head_gathered_input_bytes,
    op_sac_bytes_per_layer,
)
from simulator.workload.stage_layers import (  # noqa: F401
    chunk_layers,
    layer_split,
    pipeline_chunks,
    scenario_split,
    stage_mix,
    stage_patterns,
)
from simulator.workload.unsharded import unsharded_bytes
from simulator.workload.warmup import interleaved_warmup
from simulator.workload.whatif_memory import what_if_buffers

BYTES = {Dtype.FP32: 4, Dtype.BF16: 2, Dtype.FP16: 2, Dtype.FP8: 1}

LOGIT_BYTES = 4         # the cross entropy keeps fp32 logits [K22, sec. 4.3]; stacks: loss.logit_bytes


def microbatches_in_flight(schedule: Schedule, pp: int, stage: int, microbatches: int,
                           virtual_stages: int = 1) -> float:
    """Peak micro-batches whose activations a stage holds, in whole-stage equivalents.

    - GPipe: all ``m`` micro-batches run forward before any backward.
    - 1F1B [N21, sec. 2.2.1]: ``min(m, p - i)`` on stage ``i`` (``p`` on stage 0, 1 on the last).
    - Interleaved 1F1B [N21, sec. 2.2.2], counted as Megatron-LM's
      ``forward_backward_pipelining_with_interleaving`` does, in model *chunks*
      (each ``1/v`` of the stage's layers): ``w = 2 (p - i - 1) + (v - 1) p``
      warm-up forwards, plus the first steady-state forward, capped at the
      ``m v`` chunk passes; when ``m == p`` Megatron runs every forward first
      (``m v`` chunks). The result is ``chunks / v``, so stage 0 holds
      ``p + (p - 1)/v`` = ``p (1 + (p-1)/(p v))``, [K22] sec. 4.2.3. With ``v = 1``
      interleaving is plain 1F1B.

    Multiply by the stage's per-micro-batch activation bytes (layers on the
    stage times the per-layer bytes); exact when its chunks are equal-sized.

    Raises
    ------
    ValueError
        If ``stage`` is not in ``0..pp-1`` or a count is below 1.
    """
    if min(pp, microbatches, virtual_stages) < 1 or not 0 <= stage < pp:
        raise ValueError(f"need pp, microbatches, virtual_stages >= 1 and 0 <= stage < pp; got "
                         f"pp={pp}, stage={stage}, m={microbatches}, v={virtual_stages}")
    if schedule == Schedule.GPIPE:
        return float(microbatches)
    if schedule == Schedule.ONE_F_ONE_B or virtual_stages == 1:
        return float(min(microbatches, pp - stage))
    total_chunks = microbatches * virtual_stages
    warmup = interleaved_warmup(pp, stage, microbatches, virtual_stages)
    return min(warmup + 1, total_chunks) / virtual_stages


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak bytes on one GPU, by kind. ``workspace`` holds transient buffers (a recomputed
    layer); ``cuda_context``, ``nccl_buffers`` and ``fragmentation`` are the runtime's share
    (:func:`runtime_bytes`)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    workspace: float = 0.0
    cuda_context: float = 0.0
    nccl_buffers: float = 0.0
    fragmentation: float = 0.0
    what_if: tuple[tuple[str, float], ...] = ()   # named extra parts: pipeline_buffers, what-ifs

    @property
    def total(self) -> float:
        """Sum of all parts, bytes."""
        return sum(self.as_dict().values())

    def as_dict(self) -> dict[str, float]:
        """The parts by name (``total`` excluded), bytes."""
        return memory_parts((self.weights, self.gradients, self.optimizer, self.activations, self.workspace,
                             self.cuda_context, self.nccl_buffers, self.fragmentation, self.what_if))


def memory_parts(fields: tuple) -> dict[str, float]:
    """A stage's memory by part name, bytes, from :class:`MemoryBreakdown`'s fields in order
    (:func:`stage_memory_fields`: weights to fragmentation, then the named extra parts), the
    named parts listed after the workspace and before the runtime's."""
    weights, gradients, optimizer, activations, workspace, cuda, nccl, fragmentation, named = fields
    parts = {"weights": weights, "gradients": gradients, "optimizer": optimizer,
             "activations": activations, "workspace": workspace}
    parts.update(named)
    parts.update({"cuda_context": cuda, "nccl_buffers": nccl, "fragmentation": fragmentation})
    return parts


def model_state_bytes(params_on_gpu: float, dp: int, zero_stage: int, dtype: Dtype,
                      grad_bytes: float | None = None, state_bytes: float | None = None
                      ) -> tuple[float, float, float]:
    """Bytes of (weights, gradients, optimizer state) for Adam, sharded by ZeRO.

    Mixed precision (bf16, fp16, fp8) as in [R20] sec. 3.1: 2-byte weights,
    2-byte gradients and ``K = 12`` bytes of optimizer state (fp32 master
    weights, momentum and variance), 16 B/param. FP8 recipes keep bf16 weights
    and fp32 master weights; the fp8 copies kept are counted apart (fp8_weight_cache). fp32 training: 4 + 4
    + 8 (moments only, no master copy). ``grad_bytes`` overrides the gradient
    element size: Megatron-LM accumulates fp32 "main grads" under bf16 (4 B,
    18 B/param [MC]); :func:`gradient_bytes` says which a stack keeps.

    ZeRO [R20] sec. 5: stage 1 divides the optimizer state by ``dp``, stage 2
    the gradients too, stage 3 the weights too (Megatron's distributed
    optimizer is stage 1).

    Parameters
    ----------
    params_on_gpu : float
        Parameters held by the GPU before ZeRO sharding.
    dp : int
        Size of the group ZeRO shards over.
    zero_stage : int
        0 (none) to 3.
    dtype : Dtype
        Training dtype.
    grad_bytes : float, optional
        Bytes per gradient element (default: 4 for fp32 training, else 2).
    state_bytes : float, optional
        Optimizer-state bytes per parameter (default ``K`` above; the precision-aware
        optimizer's, :func:`optimizer_state_bytes`).
    """
    if zero_stage not in (0, 1, 2, 3) or dp < 1:
        raise ValueError(f"need zero_stage in 0..3 and dp >= 1; got {zero_stage}, {dp}")
    if dtype not in BYTES:
        raise ValueError(f"{dtype} is not a training dtype")
    per_param = (4, 4, 8) if dtype == Dtype.FP32 else (2, 2, 12)
    if grad_bytes is not None:
        per_param = (per_param[0], grad_bytes, per_param[2])
    if state_bytes is not None:
        per_param = (per_param[0], per_param[1], state_bytes)
    shards = (dp if zero_stage >= 3 else 1, dp if zero_stage >= 2 else 1, dp if zero_stage >= 1 else 1)
    weights, grads, optimizer = (params_on_gpu * n / d for n, d in zip(per_param, shards, strict=True))
    return weights, grads, optimizer


def stage_parameters(model: ModelConfig, parallelism: ParallelismConfig, layers_on_stage: int,
                     first: bool, last: bool, dense_layers: int = 0, mtp_layers: int = 0, pattern: str = ""
                     ) -> tuple[float, float]:
    """(Dense, expert) parameters one GPU of a stage holds.

    Dense: ``layers * layer_parameters / t`` (non-expert part; norms, row-parallel
    biases and the router are in fact replicated over TP, an O(1/h) error),
    plus the word embedding ``V h / t`` on the first stage (and GPT's learned
    positions ``s h``, which Megatron replicates) and the output layer ``V h / t``
    on the last. Models with ``tied_embeddings`` (GPT-style by default) tie the output
    layer to the embedding; with ``p > 1`` Megatron keeps a copy on the last stage, synchronised through
    an embedding-group all-reduce, so it counts there too. Expert MLPs are
    divided by ``etp * ep`` (expert tensor parallelism, ``t`` unless ``parallelism.etp``).
    Latent attention's down projections and latent norms are whole on every tensor-parallel rank
    (:meth:`~simulator.config.mla.MlaConfig.duplicated_parameters`), and so are a latent mixture
    of experts' projections (:meth:`~simulator.config.scenario.ModelConfig.latent_projection_parameters`).
    ``dense_layers`` of the stage's decoder layers are ``model.dense_model()`` layers (all
    dense); each of its ``mtp_layers`` multi-token prediction layers is a layer of the model
    plus :func:`~simulator.workload.params.mtp_extra_parameters`, and a stage holding them keeps
    a copy of the word embedding unless it is the first (Megatron-Core's ``GPTModel`` builds the
    embedding where ``pre_process or mtp_process``) and of the output layer unless it is the
    last (a standalone MTP stage) or the output layer is the embedding.
    A hybrid model's stage holds the layers of its ``pattern`` (:func:`stage_patterns`), each
    of its kind (:func:`~simulator.workload.params.hybrid_kinds`).
    """
    h, tp = model.hidden, parallelism.tp
    if pattern:
        dense, expert = _hybrid_parameters(model, parallelism, pattern, mtp_layers)
        if mtp_layers:                 # the embedding and output layer the depths run, where not here
            copies = (0 if first else 1) + (0 if last or model.tied_embeddings else 1)
            dense += copies * model.vocab * h / tp
        return dense + _embedding_parameters(model, tp, first, last), expert
    dense_layer = dense_layer_parameters(model)
    expert_layer = layer_parameters(model) - dense_layer
    routed = layers_on_stage - dense_layers + mtp_layers
    dense = routed * dense_layer / tp
    if dense_layers:
        dense += dense_layers * layer_parameters(model.dense_model()) / tp
    if model.mla is not None:          # latent attention's down projections: whole on every rank
        dense += (routed + dense_layers) * model.mla.duplicated_parameters(h) * (1 - 1 / tp)
    dense += routed * model.latent_projection_parameters() * (1 - 1 / tp)   # and the latent MoE's
    if mtp_layers:                     # and the embedding and output layer it runs, where not here
        copies = (0 if first else 1) + (0 if last or model.tied_embeddings else 1)
        dense += (mtp_layers * mtp_extra_parameters(model) + copies * model.vocab * h) / tp
    dense += _embedding_parameters(model, tp, first, last)
    return dense, routed * expert_layer / (parallelism.expert_tp * parallelism.ep)


def _hybrid_parameters(model: ModelConfig, par: ParallelismConfig, pattern: str,
                       mtp_layers: int) -> tuple[float, float]:
    """(dense, expert) parameters one GPU holds of a hybrid stage's layers (``pattern``, with its
    ``mtp_layers`` prediction depths': :func:`~simulator.workload.params.hybrid_layer_parameters`),
    the dense over ``t`` but a latent mixture of experts' projections (whole on every rank), the
    experts over ``etp ep``."""
    whole = hybrid_layer_parameters(model, pattern, mtp_layers)
    dense = hybrid_layer_parameters(model, pattern, mtp_layers, dense_layer_parameters)
    latent = hybrid_layer_parameters(model, pattern, mtp_layers, ModelConfig.latent_projection_parameters,
                                     extras=False)
    return (dense - latent) / par.tp + latent, (whole - dense) / (par.expert_tp * par.ep)


def _embedding_parameters(model: ModelConfig, tp: int, first: bool, last: bool) -> float:
    """The word embedding ``V h / t`` (and GPT's replicated learned positions) on the first
    stage, the output layer ``V h / t`` on the last unless it is the embedding on one stage
    (:func:`stage_parameters`)."""
    h = model.hidden
    dense = model.vocab * h / tp + (model.seq_len * h if model.mlp == Mlp.GELU else 0) if first else 0.0
    if last and not (first and model.tied_embeddings):
        dense += model.vocab * h / tp
    return dense


def stage_memory(model: ModelConfig, training: TrainingConfig, parallelism: ParallelismConfig, stage: int,
                 layers_on_stage: int, dp: int, first: bool, last: bool,
                 microbatches: int | None = None, runtime: bool = True,
                 stack: StackProfile | None = None, memo: dict | None = None) -> MemoryBreakdown:
    """Peak memory of one GPU of pipeline ``stage``.

    Model state: :func:`model_state_bytes` of :func:`stage_parameters`. ZeRO
    shards dense parameters over ``dp * cp`` (context-parallel ranks hold the
    same weights; Megatron shards over the data-and-context-parallel group), or over
    ``shard_size`` ranks with hybrid sharding, and expert parameters over their share of
    them (:func:`expert_shard_size`).

    Activations: ``activation_bytes_per_layer * layers_on_stage * in_flight``
    with ``in_flight`` from :func:`microbatches_in_flight` and ``m`` =
    ``microbatches`` if given, else ``global_batch // (micro_batch * dp * pipeline_flushes)``
    (one pipeline schedule's);
    plus, per micro-batch in flight [K22] sec. 4.3: on the first stage the embedding dropout mask ``s b h``
    (1 byte, ``/t`` with SP); on the last stage the final-norm and output-layer
    inputs ``2 dtype s b h`` (``/t`` with SP); once, the logits at the loss's peak,
    ``c s b V / t`` with ``c`` the stack's ``loss.logit_bytes`` (4: Megatron's fp32 logits).
    A stack whose selective recompute is torchtitan's per-op policy keeps
    :func:`simulator.workload.saved_activations.op_sac_bytes_per_layer` per layer instead
    of Megatron's selective amount, and holds one layer's recompute as workspace. A stack
    whose TP layers keep their all-gathered inputs (``tensor_parallel.saves_gathered_inputs``)
    adds them per layer kept, or to the recomputed layer's workspace.
    Activations are 4 bytes for fp32 training, else 2 (FP8 recipes keep the
    saved activations mostly in bf16). With fused (flash) attention the
    ``b a s^2`` score and softmax tensors are never stored, so ``recompute:
    none`` keeps the selective-recompute amount (Dao et al. 2022; Korthikanti
    et al. 2022 sec. 5 make the same point).

    Workspace: with full recompute, the layer being recomputed holds its
    activations during backward [C16]; counted as one layer at the selective
    (fused-attention) level. Otherwise 0.

    Under a stack whose ``pipeline.runtime`` is ``torch`` (torch.distributed.pipelining) and
    ``pp > 1``, activations, the loss, the FSDP2 gradients accumulated over microbatches and
    the runtime's receive buffers come instead from replaying the rank's op order
    (:func:`_torch_pipeline_peak`, :mod:`simulator.workload.pipeline_memory`); the buffers
    are the named part ``pipeline_buffers``. With ``loss.parallel_logit_bytes`` and ``tp > 1``
    the loss holds that many bytes per logit (DTensor loss_parallel), and a DTensor-TP stack's
    last stage keeps the output layer's all-gathered input.

    Gradients are kept in the stack's ``data_parallel.grad_reduce_dtype`` for ZeRO 0-2
    (:func:`gradient_bytes`); ZeRO-3 keeps [R20]'s 16 B/param, plus, given a ``stack``,
    the unsharded weights and gradients of
    :func:`simulator.workload.unsharded.unsharded_bytes`. With ``runtime`` (the
    default) the CUDA context, NCCL buffers and allocator fragmentation are added
    (:func:`runtime_bytes`).

    ``memo`` (:mod:`simulator.memo`) shares the per-layer activations
    (:func:`_activation_parts`) and the model state (:func:`_state_parts`) with other
    layouts of the same setup: the same numbers, computed once.
    """
    return MemoryBreakdown(*stage_memory_fields(model, training, parallelism, stage, layers_on_stage, dp,
                                                first, last, microbatches, runtime, stack, memo))


def stage_memory_fields(model: ModelConfig, training: TrainingConfig, parallelism: ParallelismConfig,
                        stage: int, layers_on_stage: int, dp: int, first: bool, last: bool,
                        microbatches: int | None = None, runtime: bool = True,
                        stack: StackProfile | None = None, memo: dict | None = None,
                        gpu: GpuSpec | None = None) -> tuple:
    """:func:`stage_memory`'s :class:`MemoryBreakdown` fields in order, without the object
    (:func:`memory_parts` names them): what a search keeps of each stage kind. ``gpu`` (None:
    a Hopper-like part) sets whether a kept fp8 weight needs its transposed copy
    (:mod:`simulator.workload.fp8_weight_cache`).
    """
    par = parallelism
    if microbatches is None:
        microbatches = training.global_batch // (training.micro_batch * dp * par.schedules_per_step)
    in_flight = microbatches_in_flight(par.schedule, par.pp, stage, microbatches, par.virtual_stages)
    kept, recompute_workspace, extra, logits = remembered(
        memo, ("stage_memory.activations", training.micro_batch, par.tp, par.etp, par.sequence_parallel,
               par.cp, par.recompute, par.recompute_fraction, par.recompute_modules, first, last),
        lambda: _activation_parts(model, training, par, first, last, stack))
    mix = stage_mix(model, par)[stage]
    layer_bytes = kept * layers_on_stage
    if any(mix):
        dense_kept, dense_workspace = remembered(
            memo, ("stage_memory.dense_activations", training.micro_batch, par.tp, par.sequence_parallel,
                   par.cp, par.recompute, par.recompute_fraction, par.recompute_modules),   # no experts
            lambda: _activation_parts(model.dense_model(), training, par, False, False, stack)[:2])
        layer_bytes += (dense_kept - kept) * mix[0] + kept * mix[1]
        recompute_workspace = max(recompute_workspace, dense_workspace if mix[0] else 0.0)
        if mix[1]:                     # each prediction depth's loss keeps its own logits
            logits += mix[1] * _logit_bytes(model, training.micro_batch, par, _loss_bytes(stack, par))
    pattern = stage_patterns(model, par)[stage]
    if pattern:
        layer_bytes, recompute_workspace = _hybrid_activations(model, training, par, pattern, stack, memo)
    layer_bytes *= resident_share(par, layers_on_stage)
    activations = (layer_bytes + extra) * in_flight + logits
    workspace = recompute_workspace if layers_on_stage + mix[1] else 0.0
    zero3 = par.zero_stage == 3
    dense, expert, weights, grads, optimizer, lazy = remembered(
        memo, ("stage_memory.state", par.tp, par.ep, par.etp, par.cp, par.zero_stage, par.shard_size, dp,
               layers_on_stage, first, last, mix, pattern, microbatches if zero3 else None),
        lambda: _state_parts(model, training, par, (layers_on_stage, *mix, pattern), dp, first, last,
                             microbatches, stack))
    pipe = ()
    if _torch_pipeline(stack, par):
        peak = _torch_pipeline_peak(model, training, par, stage, microbatches, kept, workspace,
                                    logits, lazy, stack)
        activations, workspace = peak.activations, peak.transient
        grads += peak.gradients - (dense * lazy if lazy else 0.0)
        pipe = (("pipeline_buffers", peak.buffers),)
    cache, lighter = 0.0, 0.0
    if training.dtype == Dtype.FP8:
        shard = shard_group_size(par, dp)
        shards = (shard, expert_shard_size(par, shard))
        linears = _linear_elements(model, par, layers_on_stage, mix, pattern)
        if last and stack is not None and stack.kernels.fp8_output_proj:
            linears = (linears[0] + model.vocab * model.hidden / par.tp, linears[1])   # the MXFP8 head
        for elements, group in zip(linears, shards, strict=True):
            part_cache, part_lighter = fp8_weight_memory(elements, training.dtype, stack, par.zero_stage,
                                                         gpu, group)
            cache, lighter = cache + part_cache, lighter + part_lighter
    cached = (("fp8_weight_cache", cache),) if cache else ()
    parts = runtime_bytes(par, dp, activations + workspace, memo) if runtime else (0.0, 0.0, 0.0)
    buffers = _what_if(model, training, par, layers_on_stage, first, last, dp * par.cp, dense + expert, stack)
    buffers += _dispatcher_buffers(model, training, par, stack)
    return (weights - lighter, grads, optimizer, activations, workspace, *parts, pipe + cached + buffers)


def _dispatcher_buffers(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                        stack: StackProfile | None) -> tuple[tuple[str, float], ...]:
    """The flex dispatcher's communication buffers (DeepEP's, HybridEP's NVLink ones), outside
    PyTorch's allocator (:mod:`simulator.workload.dispatcher_buffers`); () otherwise."""
    profile = (stack or _stack_of(training)).expert_parallel
    flex = profile.dispatcher in (EpDispatcher.DEEPEP, EpDispatcher.HYBRIDEP)
    if par.ep < 2 or model.experts < 2 or not flex:
        return ()
    if profile.dispatcher == EpDispatcher.DEEPEP:
        held = deepep_buffer_bytes(model.expert_width, par.ep, profile.dispatcher_sms or DEEPEP_SMS)
    else:
        tokens = training.micro_batch * model.seq_len / (par.tp * par.cp)
        held = hybridep_buffer_bytes(model.expert_width, tokens, par.ep, model.experts / par.ep)
    return (("ep_buffers", held),)


def resident_share(par: ParallelismConfig, layers_on_stage: int) -> float:
    """The share of a stage's layers whose activations are on the GPU at once under activation
    offloading, ``(L - n) / L`` (TransformerEngine keeps at most ``L - n`` layers' sets there,
    :mod:`simulator.cost.activation_offload`); 1 without."""
    n = par.cpu_offload_layers
    return (layers_on_stage - n) / layers_on_stage if n and layers_on_stage > n else 1.0


def offloaded_layer_bytes(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                          stack: StackProfile | None) -> float:
    """Bytes of activations one layer keeps per micro-batch, what activation offloading copies
    to host memory and back (:func:`_activation_parts`' kept bytes of a middle layer)."""
    return _activation_parts(model, training, par, False, False, stack)[0]


def _hybrid_activations(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig, pattern: str,
                        stack: StackProfile | None, memo: dict | None) -> tuple[float, float]:
    """(activation bytes the layers of a hybrid stage's ``pattern`` keep per microbatch in
    flight, the largest recompute workspace of its kinds): :func:`_activation_parts` of each
    kind's model (:func:`~simulator.workload.params.hybrid_kinds`)."""
    kept, workspace = 0.0, 0.0
    for kind, n in hybrid_kinds(model, pattern):
        one, space = remembered(
            memo, ("stage_memory.hybrid_activations", kind.block, kind.experts, training.micro_batch,
                   par.tp, par.etp, par.sequence_parallel, par.cp, par.recompute, par.recompute_fraction,
                   par.recompute_modules),
            lambda kind=kind: _activation_parts(kind, training, par, False, False, stack)[:2])
        kept, workspace = kept + n * one, max(workspace, space)
    return kept, workspace


def _linear_elements(model: ModelConfig, par: ParallelismConfig, layers_on_stage: int,
                     mix: tuple[int, int], pattern: str = "") -> tuple[float, float]:
    """(dense, expert) linear weight elements of a stage's layers on one GPU, split by tensor and
    expert parallelism only (:func:`stage_parameters` without the embedding and output layer,
    plus each multi-token prediction layer's block and projection); what fp8 linears cast. The
    two are sharded over different ZeRO-3 groups (:func:`expert_shard_size`)."""
    if pattern:                        # the prediction depths' layers and projections in the pattern's
        return _hybrid_parameters(model, par, pattern, mix[1])
    dense, expert = stage_parameters(model, par, layers_on_stage, False, False, mix[0], 0)
    if mix[1]:
        one_dense, one_expert = stage_parameters(model, par, 1, False, False, 0, 0)
        dense += mix[1] * (one_dense + mtp_extra_parameters(model) / par.tp)
        expert += mix[1] * one_expert
    return dense, expert


def _activation_parts(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                      first: bool, last: bool, stack: StackProfile | None
                      ) -> tuple[float, float, float, float]:
    """Of :func:`stage_memory`'s activations, bytes per micro-batch in flight: (kept per
    layer, the boundary activations of the stage's ends), the workspace of a stage that
    recomputes (0 when it does not, or holds no layer), and the logits at the loss's peak
    (last stage, else 0): ``activations = (kept layers + ends) in_flight + logits``."""
    act_bytes = 4 if training.dtype == Dtype.FP32 else 2

    fp8_inputs = (training.dtype == Dtype.FP8 and stack is not None
                  and stack.kernels.fp8_saved_inputs)

    modules = par.recomputed_modules
    if modules is not None and training.attention == AttentionKernel.FLASH:
        modules = modules | {RecomputeModule.CORE_ATTN}     # flash attention never keeps the scores

    def per_layer(recompute: Recompute) -> float:
        named = modules if recompute == Recompute.SELECTIVE else None
        return activation_bytes_per_layer(model, training.micro_batch, par.tp, par.sequence_parallel,
                                          recompute, par.cp, act_bytes, fp8_inputs, named, par.etp)

    extra = _boundary_activation_bytes(model, training.micro_batch, par, first, last, act_bytes)
    head = _gathered_head_input(stack, model, training.micro_batch, par, act_bytes)
    extra += head if last else 0.0
    logits = _logit_bytes(model, training.micro_batch, par, _loss_bytes(stack, par)) if last else 0.0
    stored = _kept_mode(training) if par.recompute == Recompute.NONE else par.recompute
    op_sac = _op_sac(stack, par)
    kept = (op_sac_bytes_per_layer(model, training.micro_batch, par.tp, par.sequence_parallel, par.cp,
                                   act_bytes) if op_sac else per_layer(stored))
    gathered = _gathered_inputs(stack, model, training.micro_batch, par, act_bytes)
    recomputes = par.recompute == Recompute.FULL or op_sac
    if not recomputes:
        kept += gathered
    elif par.recompute == Recompute.FULL and par.full_recompute_share < 1.0:
        kept = _partly_recomputed(kept, per_layer(_kept_mode(training)) + gathered, par.full_recompute_share)
    workspace = per_layer(Recompute.SELECTIVE) + gathered if recomputes else 0.0
    if par.recompute == Recompute.SELECTIVE and not op_sac:
        named = par.recomputed_modules
        workspace = recompute_transient_bytes(
            model, training.micro_batch, par.tp, par.sequence_parallel, par.cp, act_bytes, fp8_inputs,
            frozenset({RecomputeModule.CORE_ATTN}) if named is None else named,
            training.attention == AttentionKernel.FLASH, par.etp)
    return kept, workspace, extra, logits


def _kept_mode(training: TrainingConfig) -> Recompute:
    """What a layer that is not recomputed keeps: everything, but flash attention's scores."""
    return Recompute.SELECTIVE if training.attention == AttentionKernel.FLASH else Recompute.NONE


def _partly_recomputed(checkpointed: float, kept: float, share: float) -> float:
    """Bytes per layer when ``share`` of the layers keep only their input (``checkpointed``)
    and the others everything (``kept``): the mean over the stage's layers."""
    return share * checkpointed + (1.0 - share) * kept


def _state_parts(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                 layers: tuple[int, int, int, str], dp: int, first: bool, last: bool, microbatches: int,
                 stack: StackProfile | None) -> tuple[float, float, float, float, float, float]:
    """Of :func:`stage_memory`'s model state: (dense, expert) parameters per GPU
    (:func:`stage_parameters` of ``layers``: decoder, dense, multi-token prediction layers and
    the hybrid pattern), (weights,
    gradients, optimizer) bytes, ZeRO-3's unsharded ones included, and the bytes per dense
    parameter of gradients accumulated unsharded over the microbatches (ZeRO-3 without
    ``reduce_every_microbatch``; else 0)."""
    layers_on_stage = layers[0]
    dense, expert = stage_parameters(model, par, layers_on_stage, first, last, *layers[1:])
    shard = shard_group_size(par, dp)
    grad = gradient_bytes(training, par.zero_stage)
    state = optimizer_state_bytes(training, par.zero_stage)
    dense_state = model_state_bytes(dense, shard, par.zero_stage, training.dtype, grad, state)
    expert_state = model_state_bytes(expert, expert_shard_size(par, shard), par.zero_stage, training.dtype,
                                     grad, state)
    weights, grads, optimizer = (a + b for a, b in zip(dense_state, expert_state, strict=True))
    if training.optimizer.muon:
        optimizer -= _muon_state_saving(model, par, training.optimizer, layers[:3], shard)
    lazy = 0.0
    if stack is not None and par.zero_stage == 3 and shard > 1:
        gathered, unreduced = unsharded_bytes(stack, model, par, training.dtype, (dense, expert),
                                              layers_on_stage, microbatches, shard, layers[3])
        weights, grads = weights + gathered, grads + unreduced
        if not stack.sharding.reduce_every_microbatch and microbatches > 1:
            lazy = stack.sharding.grad_reduce_dtype.nbytes(training.dtype)   # per dense parameter
    return dense, expert, weights, grads, optimizer, lazy


def _muon_state_saving(model: ModelConfig, par: ParallelismConfig, optimizer: OptimizerConfig,
                       layers: tuple[int, int, int], shard: int) -> float:
    """Bytes of optimizer state Muon keeps less than Adam on one GPU: one fp32 moment per
    element of the matrices it orthogonalises (:func:`~simulator.workload.muon.stage_matrices`),
    sharded as :func:`model_state_bytes` shards the state (ZeRO 1 and up)."""
    dense, expert = stage_matrices(model, par, optimizer.split_qkv, *layers)
    shards = (shard, expert_shard_size(par, shard)) if par.zero_stage >= 1 else (1, 1)
    return SAVED_STATE_BYTES * (matrix_elements(dense) / shards[0] + matrix_elements(expert) / shards[1])


def _loss_bytes(stack: StackProfile | None, par: ParallelismConfig) -> float:
    """Bytes per logit element at the loss's peak: the stack's ``loss.parallel_logit_bytes``
    when the vocabulary is sharded over ``tp > 1`` and it sets one, else ``loss.logit_bytes``,
    else its loss kernel's (:data:`simulator.workload.loss_kernels.LOSS_PEAK_BYTES`)."""
    if stack is None:
        return LOGIT_BYTES
    if par.tp > 1 and stack.loss.parallel_logit_bytes is not None:
        return stack.loss.parallel_logit_bytes
    if stack.loss.logit_bytes is not None:
        return stack.loss.logit_bytes
    return LOSS_PEAK_BYTES[stack.loss.kernel]


def _torch_pipeline(stack: StackProfile | None, par: ParallelismConfig) -> bool:
    """Whether the stage runs under torch.distributed.pipelining (:mod:`pipeline_memory`)."""
    return stack is not None and par.pp > 1 and stack.pipeline.runtime == PipelineRuntime.TORCH


def _torch_pipeline_peak(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                         stage: int, m: int, kept: float, workspace: float, loss: float,
                         grad_bytes: float, stack: StackProfile) -> PipelinePeak:
    """:func:`timeline_peak` of ``stage``'s chunks (:func:`rank_chunks`): per microbatch,
    ``kept`` bytes per layer plus the boundary activations, less the received input; the
    stage output ``dtype s b h / sp`` (bf16 logits ``2 s b V / t`` on the last stage); the
    chunk's dense parameters times ``grad_bytes`` accumulated; receive buffers ``m`` inputs on
    non-first and ``m`` output gradients on non-last chunks; the input gradient ``dtype s b h /
    sp`` a non-first chunk's backward leaves behind."""
    act_bytes = 4 if training.dtype == Dtype.FP32 else 2
    b, s = training.micro_batch, model.seq_len / par.cp
    hidden = act_bytes * s * b * model.hidden / (par.tp if par.sequence_parallel else 1)
    logits = 2 * s * b * model.vocab / par.tp
    chunks, buffers = [], 0.0
    for layers, first, last, dense_layers, mtp_layers in rank_chunks(model, par, stage):
        extra = _boundary_activation_bytes(model, b, par, first, last, act_bytes)
        extra += _gathered_head_input(stack, model, b, par, act_bytes) if last else 0.0
        params = stage_parameters(model, par, layers, first, last, dense_layers, mtp_layers)[0]
        layers += mtp_layers
        received = 0.0 if first else hidden
        chunks.append(Chunk(kept * layers + extra - received, logits if last else hidden,
                            params * grad_bytes, last, received, stack.pipeline.keep_stage_outputs))
        buffers += m * ((0.0 if first else hidden) + (0.0 if last else hidden))
    gpipe = par.schedule == Schedule.GPIPE and par.virtual_stages == 1
    order = torch_order(par.pp, stage, m, par.virtual_stages, gpipe)
    return timeline_peak(order, chunks, m, buffers, workspace, loss)


def rank_chunks(model: ModelConfig, par: ParallelismConfig, stage: int
                ) -> list[tuple[int, bool, bool, int, int]]:
    """(decoder layers, first stage, last stage, dense layers, multi-token prediction layers)
    of each model chunk pipeline rank ``stage`` holds: global chunks ``stage + k p`` (``k < v``)
    of :func:`pipeline_chunks`."""
    p, v = par.pp, par.virtual_stages
    chunks, n = pipeline_chunks(model, par), p * v
    return [(chunks[c][0], c == 0, c == n - 1, chunks[c][1], chunks[c][2])
            for c in (stage + k * p for k in range(v))]


def _what_if(model, training, par, layers, first, last, dp, params,
             stack: StackProfile | None = None) -> tuple[tuple[str, float], ...]:
    """The training what-ifs' buffers (:mod:`simulator.workload.whatif_memory`) for a gradient
    reduced over ``dp`` ranks (data- and context-parallel); () without."""
    if (training.gradient_compression is None and training.sync_every == 1) or dp == 1:
        return ()
    stack = stack or _stack_of(training)
    g = float(stack.data_parallel.grad_reduce_dtype.nbytes(Dtype(training.dtype)))
    return what_if_buffers(model, training, par, layers, first, last, dp, params, g,
                           stack.data_parallel.bucket_bytes)


def optimizer_state_bytes(training: TrainingConfig, zero_stage: int) -> float | None:
    """Optimizer-state bytes per parameter under Megatron-Core's precision-aware optimizer
    (:meth:`~simulator.config.optimizer.OptimizerConfig.state_bytes`; None without it: [R20]'s
    12). The parameters are bf16 under bf16 training and under fp8 training without fp8
    parameters; under fp8 current or block scaling Megatron-Core keeps fp32 master weights
    itself (``use_precision_aware_optimizer_no_fp8_or_ds_fp8`` false)."""
    optimizer = training.optimizer
    if not optimizer.precision_aware:
        return None
    stack = _stack_of(training)
    fp8 = training.dtype == Dtype.FP8
    params_bf16 = training.dtype == Dtype.BF16 or (fp8 and not primary_low_precision(stack, zero_stage))
    in_core = fp8 and stack.kernels.fp8_scaling != Fp8Scaling.DELAYED
    return optimizer.state_bytes(params_bf16, in_core)


def _stack_of(training: TrainingConfig) -> StackProfile:
    """The training's stack profile (a name is looked up in the library)."""
    stack = training.stack
    if not isinstance(stack, StackProfile):
        stack = HardwareLibrary().stack(stack or DEFAULT_STACK)
    return stack


def gradient_bytes(training: TrainingConfig, zero_stage: int) -> float | None:
    """Bytes per gradient element the stack keeps for ZeRO 0-2 (None: [R20]'s default).

    The stack's ``data_parallel.grad_reduce_dtype`` is the dtype of the gradient buffer
    the reduction reads: Megatron-Core accumulates fp32 ``main_grad`` under bf16 [MC]
    (``fp32``: 4 bytes), Megatron-LM 2021 and NeMo's recipes reduce the 2-byte gradients.
    ZeRO-3 / FSDP returns None (sharded gradients, counted as [R20] does).
    """
    if zero_stage >= 3:
        return None
    reduce = _stack_of(training).data_parallel.grad_reduce_dtype
    return None if reduce == ReduceDtype.PARAM else float(reduce.nbytes(Dtype(training.dtype)))


def _gathered_inputs(stack: StackProfile | None, model: ModelConfig, micro_batch: int,
                     par: ParallelismConfig, act_bytes: int) -> float:
    """Per layer, the unsharded linear inputs a DTensor-TP stack keeps under sequence
    parallelism (:func:`simulator.workload.saved_activations.gathered_input_bytes`), else 0."""
    if stack is None or not stack.tensor_parallel.saves_gathered_inputs or par.tp == 1 \
            or not par.sequence_parallel:
        return 0.0
    return gathered_input_bytes(model, micro_batch, par.tp, par.cp, act_bytes)


def _gathered_head_input(stack: StackProfile | None, model: ModelConfig, micro_batch: int,
                         par: ParallelismConfig, act_bytes: int) -> float:
    """Per micro-batch on the last stage, the all-gathered output-layer input a DTensor-TP
    stack keeps under sequence parallelism (:func:`head_gathered_input_bytes`), else 0."""
    if _gathered_inputs(stack, model, micro_batch, par, act_bytes) == 0.0:
        return 0.0
    return head_gathered_input_bytes(model, micro_batch, par.tp, par.cp, act_bytes)


def _op_sac(stack: StackProfile | None, par: ParallelismConfig) -> bool:
    """Whether ``par``'s selective recompute is torchtitan's per-op policy under ``stack``."""
    return (stack is not None and par.recompute == Recompute.SELECTIVE
            and stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL)


def _boundary_activation_bytes(model: ModelConfig, micro_batch: int, par: ParallelismConfig,
                               first: bool, last: bool, dtype_bytes: int) -> float:
    """Per micro-batch: embedding dropout mask (first stage); norm and output-layer inputs (last)."""
    sb = model.seq_len / par.cp * micro_batch
    sp_div = par.tp if par.sequence_parallel else 1
    extra = mask_bytes(model) * sb * model.hidden / sp_div if first else 0.0
    if last:
        extra += 2 * dtype_bytes * sb * model.hidden / sp_div
    return extra


def _logit_bytes(model: ModelConfig, micro_batch: int, par: ParallelismConfig,
                 logit_bytes: float) -> float:
    """``c s b V / t``: the logits of the one micro-batch whose loss is being computed (the
    last stage runs each micro-batch's loss and starts its backward before the next
    forward reaches the loss, so they are not kept per micro-batch in flight)."""
    return logit_bytes * model.seq_len / par.cp * micro_batch * model.vocab / par.tp
