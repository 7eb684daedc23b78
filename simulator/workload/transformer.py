"""Kernels of one transformer layer for one microbatch on one GPU (Megatron-style sharding).

With b microbatch sequences of s tokens (s/cp per GPU with context parallelism),
hidden h, heads a (kv heads k, head dim d = h/a), FFN width f, tensor-parallel t:

=========  =============================  ========================================
GEMM       (M, N, K) x batch              notes
=========  =============================  ========================================
QKV        (b s, (a + 2k) d / t, h)       column-parallel
scores     (s, s_kv, d) x b a/t           attention core; causal flash halves it
context    (s, d, s_kv) x b a/t
proj       (b s, h, a d / t)              row-parallel
fc1        (b s, f/t [2f/t SwiGLU], h)    per expert group for MoE
fc2        (b s, h, f/t)
shared     (b s, f_s/t [2f_s/t], h) and   MoE with shared experts (width f_s): a
           (b s, h, f_s/t)                dense MLP over t beside the routed experts
=========  =============================  ========================================

A layer of one block (``model.block``, a hybrid pattern's layers: :mod:`simulator.config.hybrid`)
lists that block's kernels alone, its norm and residual add with them; a Mamba-2 mixer's are
:mod:`simulator.workload.mamba_mixer`'s (in_proj and out_proj in the linears' places). A latent
mixture of experts (``model.moe_latent`` L) runs its experts at L (K of fc1, N of fc2) and its
two projections after them.

With latent attention (``model.mla``: ranks r_q, r_kv, per-head widths d_qk = d_n + d_r and
d_v) QKV becomes q_up ``(b s, a d_qk / t, r_q)`` and three more linears follow the MLP's in the
list: kv_up ``(b s, a (d_n + d_v) / t, r_kv)`` and the down projections ``(b s / t, r_q, h)``,
``(b s / t, r_kv + d_r, h)`` on the rank's own tokens (:func:`attention_input_gemms`); proj
reads ``a d_v / t``. QKV and proj stay the first two linears and the MLP's the next ones, the
order the tensor-parallel sites and the expert node read.

Backward runs two GEMMs per forward GEMM (data and weight gradients), so twice
the FLOPs. With fused (flash) attention the scores and context products are one kernel
of its own class, ``4 b (a/t) s s_kv d`` FLOPs forward (half of it with a causal mask),
and its backward is 2.5x the forward: five matrix products instead of two, since it
recomputes ``Q K^T`` (Dao 2023, FlashAttention-2, arXiv:2307.08691, sec. 3.1-3.2); with
query/key and value heads of unequal width (latent attention) ``(3 d_qk + 2 d_v) / (d_qk + d_v)``
(:attr:`AttentionShape.backward_ratio`).
Memory-bound kernels (norms, bias+activation, bias+dropout+add, rotary embeddings, and
the unfused softmax/dropout over the b a/t s^2 score matrix) move the bytes listed in
:func:`_memory_bytes`, fused (one kernel per op group, as Megatron/TransformerEngine
fusions or torch.compile run them) or eager (one PyTorch op per kernel); backward
moves each kernel's forward bytes times its ratio in :mod:`simulator.workload.backward_bytes`
(1 to 2: 1.5 for a fused norm, 1 for a rotation or a copy).
Reference: Narayanan et al. SC21, sec. 3 and Appendix; Korthikanti et al. 2022.
"""

from __future__ import annotations

import numpy as np

from simulator.config.hybrid import Block
from simulator.config.scenario import Mlp
from simulator.workload.attention_window import local_layer_share, pair_fraction
from simulator.workload.backward_bytes import ATTENTION_DROPOUT, GENERIC, ONCE, SOFTMAX, norm_ratio
from simulator.workload.layer_shape import (
    Attention,
    AttentionShape,
    Kernels,
    LayerShape,
    backward_memory,
    local_tokens,
)
from simulator.workload.mamba_mixer import (
    backward_rerun_gemms,
    mixer_memory_bytes,
    projection_gemms,
    scan_gemms,
)
from simulator.workload.mlp_kernels import (
    expert_activation_bytes,
    expert_activation_ratios,
    latent_gemms,
    mlp_gemms,
    moe_memory_kernels,
    residual_bytes,
    residual_ratio,
    shared_expert_bytes,
    shared_expert_ratios,
    shared_gemms,
)
from simulator.workload.moe_dispatch import router_gemm


def layer_forward(shape: LayerShape, expert_load: float = 1.0) -> Kernels:
    """Forward kernels of one transformer layer (see the module table); with ``expert_load``
    > 1 those of the busiest expert-parallel rank (its expert GEMMs' rows and expert
    activations times the load; the mean work, for FLOP counts, is the default 1)."""
    gemms, linear = _gemms(shape, expert_load)
    attention = _attention_shape(shape)
    mamba = shape.model.mamba if shape.model.block == Block.MAMBA else None
    rerun = None if mamba is None else np.array(backward_rerun_gemms(mamba, shape.tokens, shape.tp))
    linear = np.array(linear, dtype=bool)
    memory, ratios = _memory_bytes(shape, expert_load)
    return Kernels(np.array(gemms, dtype=np.float64).reshape(-1, 4), np.array(memory, dtype=np.float64),
                   linear, _flash_flops(shape, attention), attention_shape=attention,
                   rerun=rerun, scan=None if mamba is None else ~linear,
                   memory_backward=backward_memory(memory, ratios))


def _attention_shape(shape: LayerShape) -> AttentionShape:
    """The fused attention kernel's shape (its value width only where it differs: latent attention)."""
    d_v = shape.model.d_value
    mdl = shape.model
    local = local_layer_share(mdl.attention_window, mdl.full_attention_every, mdl.layers)
    return AttentionShape(shape.seq, shape.cp, shape.head_dim, None if d_v == shape.head_dim else d_v,
                          mdl.attention_window, local)


def _flash_flops(shape: LayerShape, attention: AttentionShape) -> float:
    """``2 b (a/t) s s_kv (d_qk + d_v)`` (``4 b (a/t) s s_kv d`` with equal query and value
    heads), halved by the causal mask, times the mean pairs of ``attention``'s local layers
    over the whole sequence (:func:`~simulator.workload.attention_window.pair_fraction`; with
    context parallelism a rank's ``s`` queries attend a window of the gathered ``s_kv``, the
    same share of the causal count as without); 0 for unfused attention."""
    if shape.attention != Attention.FLASH or not shape.model.block.has_attention:
        return 0.0
    mdl = shape.model
    heads = mdl.heads / shape.tp
    widths = mdl.d_head + mdl.d_value
    local = pair_fraction(attention.full_seq, attention.window, attention.local_share)
    return 2.0 * shape.micro_batch * heads * shape.seq * shape.seq * shape.cp * widths * 0.5 * local


def _gemms(shape: LayerShape,
           expert_load: float = 1.0) -> tuple[list[tuple[float, float, float, float]], list[bool]]:
    """The layer's GEMMs and which are linear layers, in the order the tensor-parallel sites read
    them: the attention's (or the Mamba mixer's) input linear and projection first, then the
    MLP's; the blocks ``model.block`` leaves out are left out."""
    block = shape.model.block
    mixer, latent = ([], []), []
    if block.has_attention:
        gathered, latent = attention_input_gemms(shape)      # latent attention's follow the MLP's
        mixer = _attention_gemms(shape, gathered)
    elif block == Block.MAMBA:
        mixer = _mamba_gemms(shape)
    mlp = _mlp_block_gemms(shape, expert_load) if block.has_mlp else ([], [])
    return mixer[0] + mlp[0] + latent, mixer[1] + mlp[1] + [True] * len(latent)


def _mamba_gemms(shape: LayerShape) -> tuple[list[tuple[float, ...]], list[bool]]:
    """in_proj, the scan's four products, out_proj (:mod:`simulator.workload.mamba_mixer`)."""
    mamba = shape.model.mamba
    in_proj, out_proj = projection_gemms(mamba, shape.model.hidden, shape.tokens, shape.tp)
    scan = scan_gemms(mamba, shape.tokens, shape.tp)
    return [in_proj, *scan, out_proj], [True] + [False] * len(scan) + [True]


def _attention_gemms(shape: LayerShape, gathered: tuple) -> tuple[list[tuple[float, ...]], list[bool]]:
    """QKV (``gathered``, :func:`attention_input_gemms`), the unfused attention core's two
    products, the output projection."""
    mdl, t = shape.model, shape.tp
    tokens, heads = shape.tokens, mdl.heads / t
    kv_seq = shape.seq * shape.cp
    proj = (tokens, mdl.hidden, mdl.context_width / t, 1)
    core = []
    if shape.attention == Attention.UNFUSED:
        core = [(shape.seq, kv_seq, mdl.d_head, shape.micro_batch * heads),
                (shape.seq, mdl.d_value, kv_seq, shape.micro_batch * heads)]
    return [gathered, *core, proj], [True] + [False] * len(core) + [True]


def _mlp_block_gemms(shape: LayerShape, expert_load: float) -> tuple[list[tuple[float, ...]], list[bool]]:
    """The router, the shared experts' and the MLP's (or routed experts') linears."""
    mdl = shape.model
    mlp = shared_gemms(shape) + mlp_gemms(shape, expert_load) + latent_gemms(shape)
    router = [router_gemm(local_tokens(shape), mdl.experts, mdl.hidden)] if mdl.experts > 1 else []
    return [*router, *mlp], [False] * len(router) + [True] * len(mlp)


def attention_input_gemms(shape: LayerShape) -> tuple[tuple, list[tuple]]:
    """The attention's input linears: (the column-parallel GEMM the tensor-parallel gather
    feeds, which stands for the block's input in the tensor-parallel site; the others, listed
    after the MLP's). Standard attention: the fused QKV, ``(b s, (a + 2k) d / t, h)``. Latent
    attention (``model.mla``, :mod:`simulator.config.mla`): q_up ``(b s, a d_qk / t, r_q)`` (or
    q_proj from ``h`` without a query rank), then kv_up ``(b s, a (d_n + d_v) / t, r_kv)`` and
    the down projections on this rank's own tokens, ``b s / t`` under sequence parallelism
    (Megatron-Core runs them ``duplicated``, unsplit, on every tensor-parallel rank)."""
    mdl, t, tokens = shape.model, shape.tp, shape.tokens
    if mdl.mla is None:
        return (tokens, (mdl.heads + 2 * mdl.kv_heads) * mdl.d_head / t, mdl.hidden, 1), []
    mla, local = mdl.mla, local_tokens(shape)
    kv = [(tokens, mdl.heads * (mla.qk_head_dim + mla.v_head_dim) / t, mla.kv_lora_rank, 1),
          (local, mla.kv_lora_rank + mla.qk_rope_head_dim, mdl.hidden, 1)]
    if not mla.q_lora_rank:
        return (tokens, mdl.q_width / t, mdl.hidden, 1), kv
    q_down = (local, mla.q_lora_rank, mdl.hidden, 1)
    return (tokens, mdl.q_width / t, mla.q_lora_rank, 1), [kv[0], q_down, kv[1]]


def _memory_bytes(shape: LayerShape, expert_load: float = 1.0) -> tuple[list[float], list[float]]:
    """Bytes moved by each memory-bound forward kernel (read + write), and what its backward
    moves over that (:attr:`Kernels.memory_backward`, :mod:`simulator.workload.backward_bytes`).

    In units of ``act`` = the layer's hidden activation bytes (``b s h`` elements, over
    ``t`` with sequence parallelism) and ``ffn`` = the MLP inner activation bytes:

    ===================  ===============================  ===================================
    kernel               fused                            eager (one PyTorch op per kernel)
    ===================  ===============================  ===================================
    2 norms              2 act each (read x, write y)     RMSNorm in fp32 ops: 18 act each
    2 residual adds      3 act (no dropout); with         3 act; with dropout 7.5 act
                         dropout, bias+dropout+add 3.5    (bias, dropout, add apart)
                         act (1 B mask)
    activation           GELU 2 ffn; SwiGLU 3 ffn         GELU 4 ffn (bias apart); SwiGLU 5 ffn
    rotary (SwiGLU/      read + write q, k                fp32 complex product: 10x q, k
    Llama models)
    attention output     -                                transpose + contiguous: 2 act
    QK-norm              read + write q, k                fp32 RMSNorm ops: 18x q, k
    (``model.qk_norm``)
    unpad / pad          gather q, k, v (read + write);   the same (eager index ops)
    (``kernels.          zero-fill + scatter the output
    attention_unpad``)
    ===================  ===============================  ===================================

    ``fused_activation`` (the stack's ``kernels.fused_activation``) sets the activation row
    apart from the others: Megatron-Core's ``bias_activation_fusion: false`` runs it eagerly in
    an otherwise fused layer.
    The eager RMSNorm is ``(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x)
    * w``: upcast (2 B read, 4 B write per element), pow (4 + 4), mean (4), multiply (4 + 4),
    downcast (4 + 2), weight (2 + 2): 36 B per element (torchtitan models/llama, 2024).
    The eager rotary embedding upcasts, multiplies as complex numbers and downcasts:
    6 + 8 + 6 B per element of q and k. Unfused attention adds scale+mask+softmax and
    dropout over the ``b a/t s^2`` scores (Megatron-LM 2021).
    """
    mdl, nb = shape.model, shape.dtype_bytes
    act = local_tokens(shape) * mdl.hidden * nb
    block = mdl.block
    kernels = [norm_traffic(shape) * act] * block.sites + [residual_bytes(shape)] * block.sites
    ratios = [norm_ratio(shape.fused)] * block.sites + [residual_ratio(shape)] * block.sites
    if block.has_mlp:
        activation = expert_activation_bytes(shape, expert_load)
        kernels, ratios = kernels + activation, ratios + expert_activation_ratios(shape, activation)
    if block.has_attention:
        attention, attention_ratios = _attention_memory_bytes(shape, act)
        kernels, ratios = kernels + attention, ratios + attention_ratios
    if block == Block.MAMBA:
        mixer = mixer_memory_bytes(mdl.mamba, shape.tokens, shape.tp, nb)
        kernels, ratios = kernels + mixer, ratios + [GENERIC] * len(mixer)
    if block.has_mlp and mdl.experts > 1:       # the router's and permutations' kernels, the shared experts'
        moe, moe_ratios = moe_memory_kernels(shape, expert_load)
        shared = shared_expert_bytes(shape)
        kernels += moe + shared
        ratios += moe_ratios + shared_expert_ratios(shape, shared)
    return kernels, ratios


def _attention_memory_bytes(shape: LayerShape, act: float) -> tuple[list[float], list[float]]:
    """The attention block's memory-bound kernels besides its norm and residual add
    (:func:`_memory_bytes`' table) and their backward ratios (:mod:`simulator.workload.backward_bytes`):
    the eager output transpose, the rotary embedding (SwiGLU models; squared-ReLU models,
    Nemotron-H, have no position embedding), the QK-norm, the unpad copies, latent attention's
    norms, unfused attention's softmax and dropout."""
    mdl = shape.model
    norm = norm_ratio(shape.fused)
    copies = [] if shape.fused else [2.0 * act]
    copies += [rotary_bytes(shape)] if mdl.mlp == Mlp.SWIGLU else []
    qk_norm = [qk_norm_bytes(shape)] if mdl.qk_norm else []
    unpad = [unpad_bytes(shape)] if shape.attention_unpad else []
    latent = [norm_traffic(shape) * latent for latent in latent_norm_bytes(shape)]
    core = unfused_core_bytes(shape)           # the softmax's and the dropout's, or none
    ratios = [ONCE] * len(copies) + [norm] * len(qk_norm) + [ONCE] * len(unpad) + [norm] * len(latent)
    return copies + qk_norm + unpad + latent + core, ratios + [SOFTMAX, ATTENTION_DROPOUT][:len(core)]


def unfused_core_kernels(shape: LayerShape, layer: Kernels) -> Kernels:
    """The unfused attention core of forward ``layer``: its score and context GEMMs and the
    memory-bound kernels between them (:func:`unfused_core_bytes`), what selective recompute
    re-runs."""
    return Kernels(layer.gemms[1:3], np.array(unfused_core_bytes(shape), dtype=np.float64))


def unfused_core_bytes(shape: LayerShape) -> list[float]:
    """HBM bytes of the unfused attention core's memory-bound kernels, those between its two
    batched GEMMs in Megatron's ``CoreAttention``: the fused scale-mask-softmax (reads and
    writes the scores, ``2 S``) and the attention dropout (reads the probabilities, writes them
    and a one-byte mask, ``2.5 S``), ``S = b (a / t) s (s cp)`` scores of ``n`` bytes; none for
    a fused attention kernel. Selective recompute re-runs them with the two GEMMs
    (``ParallelAttention._checkpointed_attention_forward``: ``tensor_parallel.checkpoint``
    around ``CoreAttention``, NVIDIA/Megatron-LM ``megatron/model/transformer.py``, 2022-23, e.g.
    285068c8)."""
    if shape.attention != Attention.UNFUSED:
        return []
    mdl = shape.model
    scores = shape.micro_batch * mdl.heads / shape.tp * shape.seq * shape.seq * shape.cp * shape.dtype_bytes
    return [2 * scores, 2.5 * scores]


def norm_traffic(shape: LayerShape) -> float:
    """Bytes a norm moves per byte of its input (:func:`_memory_bytes`' table): fused 2, an eager
    RMSNorm (Llama-style models) 18."""
    return 2.0 if shape.fused or shape.model.mlp != Mlp.SWIGLU else 18.0


UNFUSED_ROPE_BYTES = 12.0
"""Bytes per byte of the rotated queries and keys that Megatron-Core's unfused rotary embedding
moves (``_apply_rotary_pos_emb_bshd``, megatron/core/models/common/embeddings/rope_utils.py at
core_v0.17.0, in the activation dtype): ``t * cos`` (read 1, write 1), ``_rotate_half``'s negated
half (0.5 + 0.5) and its ``torch.cat`` (1 + 1), ``* sin`` (1 + 1), the add (2 + 1) and the final
``torch.cat`` with the empty pass-through part (1 + 1): 12. It runs where the YaRN concentration
factor is not 1 (``model.rope_concentration``)."""


def rotary_bytes(shape: LayerShape) -> float:
    """Bytes the rotary embedding moves over the queries and keys (:func:`_memory_bytes`' table):
    fused 2, eager 10 per byte of :func:`rotated_elements`; in a fused stack,
    :data:`UNFUSED_ROPE_BYTES` where ``model.rope_concentration`` is not 1 (Megatron-Core's
    fallback from TransformerEngine's fused RoPE)."""
    if not shape.fused:
        per_byte = 10.0
    else:
        per_byte = UNFUSED_ROPE_BYTES if shape.model.rope_concentration != 1.0 else 2.0
    return per_byte * rotated_elements(shape) * shape.dtype_bytes


def unpad_bytes(shape: LayerShape) -> float:
    """Bytes of flash-attn's unpad and pad copies around one layer's attention
    (``kernels.attention_unpad``; :func:`_memory_bytes`' table): ``unpad_input`` gathers q, k
    and v (``index_first_axis``: read and write each, ``2 b s (a d + k d + k d_v) / t``
    elements), ``pad_input`` zero-fills the padded output and scatters into it (write, read,
    write: ``3 b s a d_v / t``). The backward runs the mirror images (gathers for scatters,
    zero-filled scatters for gathers), the forward's bytes once
    (:data:`~simulator.workload.backward_bytes.ONCE`; flash-attn ``flash_attn/bert_padding.py``; llm-foundry
    ``llmfoundry/models/layers/attention.py`` ``flash_attn_fn``)."""
    mdl = shape.model
    gathered = 2.0 * (mdl.q_width + mdl.kv_width + mdl.v_width)
    padded = 3.0 * mdl.context_width
    return shape.tokens * (gathered + padded) / shape.tp * shape.dtype_bytes


def qk_norm_bytes(shape: LayerShape) -> float:
    """Bytes the QK-norm moves over the queries and keys (:func:`_memory_bytes`' table): a
    norm's traffic (:func:`norm_traffic`) per byte of the ``b s (a + k) d / t`` query and key
    elements (``model.qk_norm``)."""
    mdl = shape.model
    elements = shape.tokens * (mdl.q_width + mdl.kv_width) / shape.tp
    return norm_traffic(shape) * elements * shape.dtype_bytes


def rotated_elements(shape: LayerShape) -> float:
    """Elements the rotary embedding turns per microbatch on this GPU: the queries and keys,
    ``b s (a + k) d / t``; with latent attention only their rotary parts, ``b s d_r (a/t + 1)``
    (one rotary key shared by every head, ``k_pos_emb``)."""
    mdl = shape.model
    if mdl.mla is None:
        return shape.tokens * (mdl.heads + mdl.kv_heads) * mdl.d_head / shape.tp
    return shape.tokens * mdl.mla.qk_rope_head_dim * (mdl.heads / shape.tp + 1)


def latent_norm_bytes(shape: LayerShape) -> list[float]:
    """Bytes of the latents latent attention normalises (``q_layernorm``, ``kv_layernorm``) on
    this rank's tokens, one entry per norm (none without ``model.mla``)."""
    mla = shape.model.mla
    if mla is None:
        return []
    ranks = [mla.q_lora_rank, mla.kv_lora_rank] if mla.q_lora_rank else [mla.kv_lora_rank]
    return [local_tokens(shape) * rank * shape.dtype_bytes for rank in ranks]
