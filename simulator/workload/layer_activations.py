"""Activation bytes one transformer layer keeps for backward, per micro-batch and GPU: the
per-token accounting of Korthikanti et al. generalised block by block (attention, MLP and
experts, Mamba-2 mixer), with fp8 inputs, recomputed modules and context parallelism.

All results are bytes (floats). Notation: sequence ``s`` (per context-parallel rank,
``seq_len / cp``), micro-batch ``b``, hidden ``h``, heads ``a``, tensor-parallel ``t``.

References
----------
.. [K22] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198 -- sec. 4 and Table 2 (activations).
"""

from __future__ import annotations

from simulator.config.hybrid import Block, MambaConfig
from simulator.config.scenario import Mlp, ModelConfig, Recompute, RecomputeModule
from simulator.workload.recompute_modules import freed_bytes_per_token, separate_norms

MASK_BYTES = 1          # a dropout mask stores one byte per element [K22, sec. 4.1]

def activation_bytes_per_layer(model: ModelConfig, micro_batch: int, tp: int, sequence_parallel: bool,
                               recompute: Recompute, cp: int = 1, dtype_bytes: int = 2,
                               fp8_inputs: bool = False,
                               modules: frozenset[RecomputeModule] | None = None,
                               etp: int | None = None) -> float:
    """Activation bytes one transformer layer keeps for backward, per micro-batch and GPU.

    [K22] Table 2, with ``s = seq_len / cp``:

    ================================  =================================
    no parallelism (t = 1)            ``s b h (34 + 5 a s / h)``
    tensor parallel                   ``s b h (10 + 24/t + 5 a s/(h t))``
    tensor + sequence parallel        ``s b h / t (34 + 5 a s / h)``
    selective recompute               ``s b h (10 + 24/t)``; with SP ``34 s b h / t``
    full recompute                    ``2 s b h``; with SP ``2 s b h / t``
    ================================  =================================

    The 34 is counted per token, in bytes at 2-byte activations [K22, sec. 4.1]:
    ``10 h`` not split by TP (QKV input 2h, MLP input 2h, two norm inputs 4h,
    two 1-byte dropout masks 2h) and ``24 h`` split by TP (Q 2h, K and V 4h,
    attention-output-projection input 2h, MLP inner 16h). It is generalised as
    K and V of width ``k h / a`` (GQA), or with latent attention Q and K of ``a d_qk``, V and the
    output-projection input of ``a d_v`` and the latents (``r_q + r_kv + d_r``, twice, not split
    by TP); MLP inner ``2 f`` elements for GELU (its
    input and fc2 input) or ``3 f`` for SwiGLU (the ``2 f`` fc1 output that
    Megatron's fused SwiGLU saves, and the fc2 input); with ``model.qk_norm`` the norm's
    input, the projected queries and keys, is kept too (``q_width + kv_width``, split by TP:
    TransformerEngine's RMSNorm saves its input for backward); for MoE the MLP inner is
    times ``top_k``, and the busiest expert-parallel rank's ``expert_load`` (router logits
    and capacity padding are ignored); the routed experts' first grouped GEMM keeps its input,
    the permuted rows a GPU's experts receive (:func:`_expert_input_bytes`), which the layer's
    input does not stand for. ``dtype_bytes`` scales tensors,
    not masks. Masks are kept only with ``model.dropout`` above 0 (GPT-style models by default;
    Llama-style ones train without dropout).
    With the GPT shape (``f = 4h``, GELU, ``k = a``) the published formulas hold exactly.

    With ``fp8_inputs`` (fp8 training under TransformerEngine, the stack's
    ``kernels.fp8_saved_inputs``) each linear layer keeps for its weight gradient the fp8
    copy of its input that it cast, one byte per element: the QKV and fc1 inputs (``h``
    each, replicated) and the fc2 input (``f``) drop to one byte, and the attention output,
    which the fused attention keeps in 2 bytes for its own backward, gains the proj layer's
    1-byte copy (``q_width``). TransformerEngine ``_Linear.forward`` (v1.x: ``saved_inputmat``
    / ``inputmat_t`` are the fp8 cast when fp8 is on and the wgrad is not overridden; v2.x:
    ``saved_inputmat = inputmat``, the quantized input with its row-wise data dropped, or
    kept for the sequence-parallel all-gather), ``transformer_engine/pytorch/module/linear.py``.

    The ``5 a s^2 b`` attention core (softmax output, its dropout mask and
    output) is what ``selective`` drops: it is recomputed, or never stored by
    flash-style fused attention. Under context parallelism each rank keeps
    scores of its ``s`` queries against all ``seq_len`` keys.

    Parameters
    ----------
    model : ModelConfig
    micro_batch : int
        Sequences per micro-batch, ``b``.
    tp : int
        Tensor-parallel size, ``t``.
    sequence_parallel : bool
        Megatron sequence parallelism (splits the ``10 s b h`` part by ``t``).
    recompute : Recompute
    cp : int, optional
        Context-parallel size; the local sequence is ``seq_len / cp``.
    dtype_bytes : int, optional
        Bytes per stored activation element; [K22] assumes 2.
    fp8_inputs : bool, optional
        Linear inputs kept as their 1-byte fp8 copies (above).
    modules : frozenset of RecomputeModule, optional
        Megatron-Core's ``recompute_modules`` under selective recompute: each frees what
        :func:`simulator.workload.recompute_modules.freed_bytes_per_token` says, and the
        attention core is kept unless ``core_attn`` is named.
    etp : int, optional
        Expert tensor parallelism (default ``tp``): under sequence parallelism a GPU's experts
        receive the rows of ``etp`` sequence shards.

    Returns
    -------
    float
        Bytes per layer on one GPU for one micro-batch in flight.
    """
    s = model.seq_len / cp
    sp_div = tp if sequence_parallel else 1
    if recompute == Recompute.FULL:
        return dtype_bytes * s * micro_batch * model.hidden / sp_div
    replicated, sharded = _per_token_bytes(model, dtype_bytes)
    if fp8_inputs:
        replicated, sharded = _fp8_inputs(model, dtype_bytes, replicated, sharded)
    if modules is not None:
        freed = freed_bytes_per_token(model, modules, dtype_bytes, fp8_inputs)
        replicated, sharded = replicated - freed[0], sharded - freed[1]
    total = s * micro_batch * (replicated / sp_div + sharded / tp)
    if modules is None or RecomputeModule.MOE not in modules:
        shards = _expert_input_shards(tp, sequence_parallel, etp)
        total += s * micro_batch * shards * _expert_input_bytes(model, dtype_bytes, fp8_inputs)
    kept_core = (recompute == Recompute.NONE
                 or (modules is not None and RecomputeModule.CORE_ATTN not in modules))
    if kept_core and model.block.has_attention:
        total += _attention_core_bytes(model, micro_batch, cp, dtype_bytes) / tp
    return total


def recompute_transient_bytes(model: ModelConfig, micro_batch: int, tp: int, sequence_parallel: bool,
                              cp: int, dtype_bytes: int, fp8_inputs: bool,
                              modules: frozenset[RecomputeModule], flash: bool,
                              etp: int | None = None) -> float:
    """Bytes one layer's selective recompute holds at once in backward, per micro-batch and GPU:
    the largest of ``modules``' re-run activations, ``max_m T_m``.

    Backward re-runs a recomputed module when it reaches it and frees what the re-run saved as
    the module's own backward proceeds, one module at a time: Megatron-Core's
    ``CheckpointFunction.backward`` runs the module's forward under ``enable_grad`` and then
    its backward (``moe``, ``mlp``, ``shared_experts``, ``core_attn``), and
    ``CheckpointWithoutOutput`` recomputes a discarded output when the gradient of its consumer
    arrives (``moe_act``, ``layernorm``, ``mla_up_proj``)
    (``megatron/core/tensor_parallel/random.py`` @ d98e8a64dd). So at the start of a
    recomputed module's backward what it had stopped keeping is live again beside the kept
    activations, ``T_m``:

    - ``moe``, ``mlp``, ``shared_experts``, ``moe_act``, ``mla_up_proj``: what the module stops
      keeping (:func:`simulator.workload.recompute_modules.freed_bytes_per_token`), for ``moe``
      with the routed experts' saved inputs (:func:`_expert_input_bytes`);
    - ``layernorm``: one norm's output;
    - ``core_attn``: the unfused scores, ``(2 dtype + mask) a s seq b / t``; a fused (flash)
      kernel keeps none, and its re-run output is the size of the gradient buffers the
      backward of every layer holds, which the model does not count.

    As ``T_m`` is part of what the layer stops keeping, a layer's selective peak never exceeds
    its peak without recompute. Bytes per token are split as in
    :func:`activation_bytes_per_layer` (replicated ones by ``t`` only under sequence
    parallelism)."""
    tokens = model.seq_len / cp * micro_batch
    sp_div = tp if sequence_parallel else 1
    largest = 0.0
    for module in modules:
        if module == RecomputeModule.CORE_ATTN:
            unfused = model.block.has_attention and not flash
            held = _attention_core_bytes(model, micro_batch, cp, dtype_bytes) / tp if unfused else 0.0
        else:
            replicated, sharded = freed_bytes_per_token(model, frozenset({module}), dtype_bytes, fp8_inputs)
            if module == RecomputeModule.LAYERNORM:
                replicated /= max(1, separate_norms(model))
            held = tokens * (replicated / sp_div + sharded / tp)
            if module == RecomputeModule.MOE:
                shards = _expert_input_shards(tp, sequence_parallel, etp)
                held += tokens * shards * _expert_input_bytes(model, dtype_bytes, fp8_inputs)
        largest = max(largest, held)
    return largest


def _per_token_bytes(model: ModelConfig, dtype_bytes: int) -> tuple[float, float]:
    """Bytes per token of one layer: (not split by TP, split by TP); [K22] sec. 4.1 generalised,
    block by block (:mod:`simulator.config.hybrid`): each block keeps its norm's input, its
    first linear's input and a dropout mask unsplit; attention its Q, K, V and context, the MLP
    its inner activations, the Mamba mixer what its fused kernel saves
    (:func:`_mamba_sharded_bytes`)."""
    h, block = model.hidden, model.block
    replicated = (dtype_bytes * 2 * h + mask_bytes(model) * h) * block.sites
    sharded = 0.0
    if block.has_attention:
        replicated += dtype_bytes * 2 * _latent_widths(model)
        widths = model.q_width + model.context_width + model.kv_width + model.v_width   # Q, context; K, V
        sharded += dtype_bytes * (widths + (model.q_width + model.kv_width if model.qk_norm else 0))
    if block.has_mlp:
        sharded += dtype_bytes * (3 if model.mlp == Mlp.SWIGLU else 2) * _fc2_inputs(model)
        replicated += dtype_bytes * (model.moe_latent or 0) * (model.experts > 1)   # fc2_latent_proj's input
    if block == Block.MAMBA:
        sharded += _mamba_sharded_bytes(model.mamba, dtype_bytes)
    return replicated, sharded


def _expert_input_shards(tp: int, sequence_parallel: bool, etp: int | None) -> float:
    """Sequence shards whose rows a GPU's experts receive: ``etp / t`` under sequence parallelism
    with ``t > 1`` (:attr:`simulator.workload.layer_shape.LayerShape.expert_tokens`), else 1."""
    return (etp or tp) / tp if sequence_parallel and tp > 1 else 1.0


def _expert_input_bytes(model: ModelConfig, dtype_bytes: int, fp8_inputs: bool) -> float:
    """Bytes per token of the routed experts' saved fc1 inputs: the ``top_k`` permuted copies of
    the token (times the busiest rank's ``expert_load``, at the experts' width) that
    TransformerEngine's ``GroupedLinear`` keeps for its weight gradient, one byte each under fp8
    (``ctx.save_for_backward(*inputmats, ...)``, the quantized inputs column-wise;
    transformer_engine/pytorch/module/grouped_linear.py @ d0067d0); 0 without routed experts.
    ``recompute_modules`` ``moe`` frees them with the rest of the block."""
    if model.experts == 1 or not model.block.has_mlp:
        return 0.0
    element = 1 if fp8_inputs else dtype_bytes
    return element * model.top_k * model.expert_load * model.expert_width


def _mamba_sharded_bytes(mamba: MambaConfig, dtype_bytes: int) -> float:
    """Bytes per token a Mamba-2 mixer keeps over its tensor-parallel ranks: in_proj's output
    (``2d + 2GN + H``, the fused scan's saved ``zxbcdt``), the ungated scan output, the gated
    norm's input and out_proj's input (``d`` each), the gated norm's fp32 ``rstd`` per group
    (state-spaces/mamba ``MambaSplitConv1dScanCombinedFn.forward`` saves ``zxbcdt`` and
    ``out_x`` and recomputes the rest; ``layernorm_gated.py``; TransformerEngine's ``Linear``
    its input). The convolution's output, ``dt``, the chunk states and ``C B^T`` are recomputed."""
    return dtype_bytes * (mamba.in_proj_width + 3 * mamba.inner) + 4 * mamba.groups


def _fp8_inputs(model: ModelConfig, dtype_bytes: int, replicated: float,
                sharded: float) -> tuple[float, float]:
    """(replicated, sharded) bytes per token when each linear keeps its 1-byte fp8 input
    (:func:`activation_bytes_per_layer`): every block's first linear's input (QKV, fc1, in_proj)
    drops to 1 byte; attention keeps proj's 1-byte copy beside its 16-bit output; fc2's and
    out_proj's inputs drop to 1 byte."""
    block, shrink = model.block, dtype_bytes - 1
    replicated -= shrink * model.hidden * block.sites
    if block.has_attention:
        sharded += model.context_width
    if block.has_mlp:
        sharded -= shrink * _fc2_inputs(model)
    if block == Block.MAMBA:
        sharded -= shrink * model.mamba.inner
    return replicated, sharded


def mask_bytes(model: ModelConfig) -> int:
    """Bytes per element of a dropout mask the model keeps: :data:`MASK_BYTES` when
    ``model.dropout`` is above 0, else 0: PyTorch's ``dropout`` at ``p = 0`` returns its input
    and saves no mask (``aten/src/ATen/native/Dropout.cpp``: ``if (p == 0 || !train ...)
    return input``), and Megatron-Core's fused bias-dropout-add calls it. The residual add is
    priced with or without its mask by the same rule (:mod:`simulator.workload.transformer`)."""
    return MASK_BYTES if model.dropout > 0.0 else 0


def _latent_widths(model: ModelConfig) -> int:
    """Latent attention's latents per token, each kept twice (the down projection's output for
    its norm, the normed latent for the up projection): ``r_q + r_kv + d_r`` (0 without ``mla``)."""
    mla = model.mla
    return 0 if mla is None else mla.latent_width


def _fc2_inputs(model: ModelConfig) -> float:
    """MLP inner elements per token (the fc2 inputs): ``top_k f`` of the routed experts (times
    ``expert_load`` on the busiest rank) plus the shared experts' ``f_s``."""
    shared = model.shared_expert_ffn if model.experts > 1 else 0
    return model.ffn_hidden * model.top_k * model.expert_load + shared


def _attention_core_bytes(model: ModelConfig, micro_batch: int, cp: int, dtype_bytes: int) -> float:
    """``(2 dtype + mask) a (seq/cp) seq b``: softmax output, dropout mask and dropout output."""
    scores = model.heads * (model.seq_len / cp) * model.seq_len * micro_batch
    return (2 * dtype_bytes + mask_bytes(model)) * scores
