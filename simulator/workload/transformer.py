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
moves twice the forward bytes.
Reference: Narayanan et al. SC21, sec. 3 and Appendix; Korthikanti et al. 2022.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from simulator.config.hybrid import Block
from simulator.config.scenario import Mlp, ModelConfig
from simulator.config.stack import EpDispatcher, LossKernel
from simulator.workload.attention_window import local_layer_share, pair_fraction
from simulator.workload.loss_kernels import LOSS_TRAFFIC
from simulator.workload.mamba_mixer import (
    backward_rerun_gemms,
    mixer_memory_bytes,
    projection_gemms,
    scan_gemms,
)
from simulator.workload.moe_dispatch import (
    flex_permutation_parts,
    permutation_backward_once,
    permutation_parts,
    router_bytes,
    router_gemm,
)
from simulator.workload.token_dedup import hit_probability


class Attention(StrEnum):
    FLASH = "flash"        # fused kernel, no s^2 traffic, causal half skipped
    UNFUSED = "unfused"    # batched GEMMs + softmax/dropout over s^2 (Megatron 2021)


@dataclass(frozen=True)
class LayerShape:
    """Per-GPU shape of one layer's work for one microbatch."""

    model: ModelConfig
    micro_batch: int
    tp: int
    cp: int = 1
    ep: int = 1
    sequence_parallel: bool = False
    attention: Attention = Attention.FLASH
    dtype_bytes: int = 2
    fused: bool = True
    fused_activation: bool | None = None     # None: as ``fused``
    moe_permute_fused: bool = False          # TransformerEngine's fused MoE permutations
    loss_traffic: tuple[float, float] = LOSS_TRAFFIC[LossKernel.VOCAB_PARALLEL]   # bytes per logit
    etp: int | None = None                   # expert tensor parallelism (None: tp)
    attention_unpad: bool = False            # flash-attn's unpad/pad copies around attention
    expert_mlp_fused: bool = False           # TE's fused grouped MLP (kernels.grouped_mlp_fusion)
    moe_dispatcher: EpDispatcher = EpDispatcher.ALLTOALL   # expert_parallel.dispatcher
    moe_permute_in_dispatch: bool = False    # HybridEP's permute inside its dispatch and combine
    expert_padding_copies: bool = False      # fp8 padding copies around the experts (expert_passes)
    output_proj_cast_bytes: float = 0.0      # > 0: the output layer is an fp8 linear, bytes per cast element

    @property
    def moe_flex(self) -> bool:
        """Whether the flex dispatcher (DeepEP, HybridEP) moves the tokens: deduplicated rows, no
        sorts (:mod:`simulator.workload.moe_dispatch`)."""
        return self.moe_dispatcher != EpDispatcher.ALLTOALL

    @property
    def seq(self) -> int:
        return self.model.seq_len // self.cp

    @property
    def expert_tp(self) -> int:
        """Tensor parallelism of the experts' linears (``etp``, default ``tp``)."""
        return self.etp or self.tp

    @property
    def sequence_shards(self) -> int:
        """Ranks a microbatch's tokens are split over between blocks: ``t`` under sequence
        parallelism, else 1."""
        return self.tp if self.sequence_parallel and self.tp > 1 else 1

    @property
    def expert_tokens(self) -> float:
        """Tokens one expert tensor-parallel group routes per microbatch: its ranks' sequence
        shards gathered, ``etp b s / t`` under sequence parallelism (``b s`` with ``etp =
        t``), else ``b s`` (each rank holds them all)."""
        shards = self.sequence_shards
        return self.tokens if shards == 1 else self.tokens * self.expert_tp / shards

    def expert_rows(self, expert_load: float = 1.0) -> float:
        """``R``: rows a GPU's local experts receive per microbatch, the group's tokens times
        ``top_k`` times the busiest rank's ``expert_load`` (:attr:`expert_tokens`)."""
        return self.expert_tokens * self.model.top_k * expert_load

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq

    @property
    def head_dim(self) -> int:
        return self.model.d_head


@dataclass(frozen=True)
class AttentionShape:
    """What a fused attention kernel's efficiency depends on besides its FLOPs: query tokens
    per sequence on this rank, the context-parallel ranks the sequence is split over (one
    kernel call per ring step) and the head dimensions (query/key ``head_dim``, value
    ``value_dim``: None when they are equal)."""

    seq: float
    cp: int = 1
    head_dim: int = 128
    value_dim: int | None = None
    window: int | None = None
    """Sliding-window attention's window in tokens (:mod:`simulator.workload.attention_window`)."""
    local_share: float = 0.0
    """Share of the model's layers whose attention is local (0: none)."""

    @property
    def full_seq(self) -> float:
        """Tokens per whole sequence, ``seq cp``: what a rank's queries attend over (the causal
        prefix or, in a local layer, the window) once context parallelism gathers it."""
        return self.seq * self.cp

    @property
    def mean_dim(self) -> float:
        """``(d_qk + d_v) / 2``: the width of the average of the kernel's two matmuls per score."""
        return (self.head_dim + (self.value_dim or self.head_dim)) / 2

    @property
    def backward_ratio(self) -> float:
        """Backward FLOPs over forward: ``(3 d_qk + 2 d_v) / (d_qk + d_v)``, 2.5 with equal widths
        (:data:`FLASH_BACKWARD_RATIO`): backward recomputes ``Q K^T`` and forms ``dQ`` and ``dK``
        (``d_qk`` each per score) and ``dV`` and ``dP`` (``d_v`` each), against forward's ``Q K^T``
        and ``P V``."""
        d_v = self.value_dim or self.head_dim
        return (3 * self.head_dim + 2 * d_v) / (self.head_dim + d_v)


@dataclass(frozen=True)
class Kernels:
    """GEMMs as an (n, 4) array of (M, N, K, batch), which of them are linear layers
    (their weights may run in fp8), fused-attention FLOPs and memory kernels' bytes."""

    gemms: np.ndarray
    memory_bytes: np.ndarray
    linear: np.ndarray | None = None
    attention_flops: float = 0.0
    is_backward: bool = False
    attention_shape: AttentionShape | None = None
    """The fused attention kernel's shape (None: the shape the GPU's fractions were measured at)."""
    rerun: np.ndarray | None = None
    """GEMMs the backward runs besides each GEMM's two gradients (a fused kernel's recomputed
    products: :func:`~simulator.workload.mamba_mixer.backward_rerun_gemms`); None: none."""
    scan: np.ndarray | None = None
    """Which GEMMs are a chunked scan's products (the Mamba-2 mixer's Triton kernels, priced at
    the GPU's ``scan_product_fraction``); None: none. The reruns are scan products too."""
    memory_once: np.ndarray | None = None
    """Which memory kernels' backward moves their forward's bytes once rather than twice: row
    permutations, whose gradient is the inverse permutation of the same rows
    (:func:`~simulator.workload.moe_dispatch.permutation_backward_once`); None: none."""

    @property
    def flops(self) -> float:
        g = self.gemms
        return float(np.sum(2.0 * g[:, 0] * g[:, 1] * g[:, 2] * g[:, 3])) + self.attention_flops

    @property
    def linear_mask(self) -> np.ndarray:
        return np.zeros(len(self.gemms), bool) if self.linear is None else self.linear

    @property
    def scan_mask(self) -> np.ndarray:
        return np.zeros(len(self.gemms), bool) if self.scan is None else self.scan

    def backward(self) -> Kernels:
        """Data- and weight-gradient GEMMs, 2.5x the attention FLOPs, twice the memory traffic
        (each memory kernel's bytes twice, those of :attr:`memory_once` once)."""
        m, n, k, batch = self.gemms.T
        dgrad = np.stack([m, k, n, batch], axis=1)
        wgrad = np.stack([k, n, m, batch], axis=1)
        mask = self.linear_mask
        ratio = self.attention_shape.backward_ratio if self.attention_shape else FLASH_BACKWARD_RATIO
        rerun = np.zeros((0, 4)) if self.rerun is None else self.rerun
        scan = None if self.scan is None else np.concatenate([self.scan] * 2 + [np.ones(len(rerun), bool)])
        memory = backward_memory(self.memory_bytes, self.memory_once)
        return Kernels(np.concatenate([dgrad, wgrad, rerun]), memory,
                       np.concatenate([mask, mask, np.zeros(len(rerun), bool)]), ratio * self.attention_flops,
                       True, self.attention_shape, scan=scan)


def backward_memory(memory_bytes: np.ndarray, once: np.ndarray | None) -> np.ndarray:
    """Bytes of the backward's memory-bound kernels for forward kernels of ``memory_bytes``:
    each kernel's bytes twice (its gradient reads what it read and the incoming gradient, writes
    what it wrote), those marked in ``once`` (row permutations) once."""
    twice = memory_bytes if once is None else memory_bytes[~once]
    return np.concatenate([memory_bytes, twice])


FLASH_BACKWARD_RATIO = 2.5
"""Flash-attention backward FLOPs over forward: 5 matrix products (recomputed Q K^T, dV,
dP, dQ, dK) against 2 (Dao 2023, arXiv:2307.08691, sec. 3.2; FlashAttention-3 counts the
same, arXiv:2407.08608 sec. 4.1)."""


def layer_forward(shape: LayerShape, expert_load: float = 1.0) -> Kernels:
    """Forward kernels of one transformer layer (see the module table); with ``expert_load``
    > 1 those of the busiest expert-parallel rank (its expert GEMMs' rows and expert
    activations times the load; the mean work, for FLOP counts, is the default 1)."""
    gemms, linear = _gemms(shape, expert_load)
    attention = _attention_shape(shape)
    mamba = shape.model.mamba if shape.model.block == Block.MAMBA else None
    rerun = None if mamba is None else np.array(backward_rerun_gemms(mamba, shape.tokens, shape.tp))
    linear = np.array(linear, dtype=bool)
    memory, once = _memory_bytes(shape, expert_load)
    return Kernels(np.array(gemms, dtype=np.float64).reshape(-1, 4), memory,
                   linear, _flash_flops(shape, attention), attention_shape=attention,
                   rerun=rerun, scan=None if mamba is None else ~linear, memory_once=once)


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


def shared_gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    """The shared experts' fc1 and fc2 (``model.shared_expert_ffn``), a dense MLP over ``t``
    on the whole microbatch (Megatron-Core ``SharedExpertMLP``, an ``MLP`` whose linears
    gather and scatter the sequence as a dense layer's do); none without shared experts. They
    come first among the layer's MLP GEMMs, so its MLP tensor-parallel site is theirs."""
    mdl = shape.model
    width = mdl.shared_expert_ffn / shape.tp if mdl.experts > 1 else 0.0
    if not width:
        return []
    up = (2 if mdl.mlp == Mlp.SWIGLU else 1) * width
    return [(shape.tokens, up, mdl.hidden, 1), (shape.tokens, mdl.hidden, width, 1)]


def mlp_forward_flops(shape: LayerShape) -> float:
    """Forward FLOPs of the MLP's GEMMs on this GPU (a mixture of experts': its local experts'
    share of the routed tokens, balanced)."""
    return _gemm_flops(mlp_gemms(shape))


def shared_expert_flops(shape: LayerShape) -> float:
    """Forward FLOPs of the shared experts' two GEMMs, ``2 b s (2|3) h f_s / t`` (0 without)."""
    return _gemm_flops(shared_gemms(shape))


def _gemm_flops(gemms: list[tuple[float, float, float, float]]) -> float:
    """``2 M N K batch`` summed over ``gemms``."""
    return float(sum(2.0 * m * n * k * batch for m, n, k, batch in gemms))


def local_tokens(shape: LayerShape) -> float:
    """Tokens of the microbatch on this GPU between the layer's blocks: ``b s``, over ``t``
    with sequence parallelism."""
    return shape.tokens / (shape.tp if shape.sequence_parallel else 1)


def mlp_gemms(shape: LayerShape, expert_load: float = 1.0) -> list[tuple[float, float, float, float]]:
    """Dense MLP over ``t``, or top_k experts per token spread over ep ranks, each expert's
    linears over the expert tensor parallelism ``etp``: balanced routing times
    ``expert_load`` (the busiest rank's share over the mean) of the expert tensor-parallel
    group's tokens (:attr:`LayerShape.expert_tokens`)."""
    mdl = shape.model
    if mdl.experts == 1:
        rows, batch, t = shape.tokens, 1, shape.tp
    else:
        batch, t = mdl.experts / shape.ep, shape.expert_tp
        rows = shape.expert_rows(expert_load) / batch
    up_width = (2 if mdl.mlp == Mlp.SWIGLU else 1) * mdl.ffn_hidden / t
    width = mdl.expert_width
    return [(rows, up_width, width, batch), (rows, width, mdl.ffn_hidden / t, batch)]


def latent_gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    """A latent mixture of experts' two projections (``model.moe_latent`` ``L``) on this rank's
    tokens, whole on every tensor-parallel rank: ``(b s / t, L, h)`` before the dispatch,
    ``(b s / t, h, L)`` after the combine (``t`` under sequence parallelism); none without."""
    mdl = shape.model
    if not mdl.latent_projection_parameters():
        return []
    tokens = local_tokens(shape)
    return [(tokens, mdl.moe_latent, mdl.hidden, 1), (tokens, mdl.hidden, mdl.moe_latent, 1)]


def _memory_bytes(shape: LayerShape, expert_load: float = 1.0) -> tuple[np.ndarray, np.ndarray | None]:
    """Bytes moved by each memory-bound forward kernel (read + write), and which of them a
    backward moves once (:attr:`Kernels.memory_once`: the permutations; None without experts).

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
    kernels = [norm_traffic(shape) * act] * block.sites + [_residual_bytes(shape)] * block.sites
    kernels += expert_activation_bytes(shape, expert_load) if block.has_mlp else []
    kernels += _attention_memory_bytes(shape, act) if block.has_attention else []
    if block == Block.MAMBA:
        kernels += mixer_memory_bytes(mdl.mamba, shape.tokens, shape.tp, nb)
    if not block.has_mlp or mdl.experts == 1:           # no router, permutations or shared experts
        return np.array(kernels, dtype=np.float64), None
    moe, moe_once = _moe_kernels(shape, expert_load)     # the router's and permutations' kernels last
    shared = shared_expert_bytes(shape)
    once = [False] * len(kernels) + moe_once + [False] * len(shared)
    return np.array(kernels + moe + shared, dtype=np.float64), np.array(once)


def _attention_memory_bytes(shape: LayerShape, act: float) -> list[float]:
    """The attention block's memory-bound kernels besides its norm and residual add
    (:func:`_memory_bytes`' table): the eager output transpose, the rotary embedding (SwiGLU
    models; squared-ReLU models, Nemotron-H, have no position embedding), the QK-norm, the unpad
    copies, latent attention's norms, unfused attention's softmax and dropout."""
    mdl, nb = shape.model, shape.dtype_bytes
    kernels = [] if shape.fused else [2.0 * act]
    kernels += [rotary_bytes(shape)] if mdl.mlp == Mlp.SWIGLU else []
    kernels += [qk_norm_bytes(shape)] if mdl.qk_norm else []
    kernels += [unpad_bytes(shape)] if shape.attention_unpad else []
    kernels += [norm_traffic(shape) * latent for latent in latent_norm_bytes(shape)]
    if shape.attention == Attention.UNFUSED:
        scores = shape.micro_batch * mdl.heads / shape.tp * shape.seq * shape.seq * shape.cp * nb
        kernels += [2 * scores, 2.5 * scores]          # scale+mask+softmax; dropout (+mask)
    return kernels


def norm_traffic(shape: LayerShape) -> float:
    """Bytes a norm moves per byte of its input (:func:`_memory_bytes`' table): fused 2, an eager
    RMSNorm (Llama-style models) 18."""
    return 2.0 if shape.fused or shape.model.mlp != Mlp.SWIGLU else 18.0


def rotary_bytes(shape: LayerShape) -> float:
    """Bytes the rotary embedding moves over the queries and keys (:func:`_memory_bytes`' table):
    fused 2, eager 10 per byte of :func:`rotated_elements`."""
    return (2.0 if shape.fused else 10.0) * rotated_elements(shape) * shape.dtype_bytes


def unpad_bytes(shape: LayerShape) -> float:
    """Bytes of flash-attn's unpad and pad copies around one layer's attention
    (``kernels.attention_unpad``; :func:`_memory_bytes`' table): ``unpad_input`` gathers q, k
    and v (``index_first_axis``: read and write each, ``2 b s (a d + k d + k d_v) / t``
    elements), ``pad_input`` zero-fills the padded output and scatters into it (write, read,
    write: ``3 b s a d_v / t``). The backward runs the mirror images (gathers for scatters,
    zero-filled scatters for gathers), which the layer's twice-the-forward memory traffic
    stands for (flash-attn ``flash_attn/bert_padding.py``; llm-foundry
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


def moe_kernel_bytes(shape: LayerShape, expert_load: float = 1.0) -> list[float]:
    """The router's and the token permutations' memory-bound kernels, in the order permute,
    un-permute, sorts (:func:`_permutations`); none without experts."""
    return _moe_kernels(shape, expert_load)[0] if shape.model.experts > 1 else []


def _moe_kernels(shape: LayerShape, expert_load: float) -> tuple[list[float], list[bool]]:
    """:func:`moe_kernel_bytes` of a mixture of experts and, per kernel, whether its backward
    moves its bytes once (:func:`_permutations_once`; the router's kernels no)."""
    parts = _permutations(shape, expert_load)
    router = router_bytes(local_tokens(shape), shape.model.experts)
    once = [False] * len(router) + [o for part in _permutations_once(shape, parts) for o in part]
    return router + [b for part in parts for b in part], once


def _permutations_once(shape: LayerShape, parts: tuple[list[float], list[float], list[float]]
                       ) -> tuple[list[bool], list[bool], list[bool]]:
    """Per kernel of ``parts`` (:func:`_permutations`: permute, un-permute, sorts), whether its
    backward moves its bytes once (:func:`~simulator.workload.moe_dispatch.permutation_backward_once`)."""
    permute, unpermute, sorts = parts
    once = permutation_backward_once(len(permute), len(unpermute), len(sorts), shape.moe_permute_fused)
    cut = len(permute) + len(unpermute)
    return once[:len(permute)], once[len(permute):cut], once[cut:]


def _permutations(shape: LayerShape, expert_load: float) -> tuple[list[float], list[float], list[float]]:
    """Bytes of the permute, the un-permute and the sorts of one forward
    (:func:`~simulator.workload.moe_dispatch.permutation_parts`; under the flex dispatcher
    :func:`~simulator.workload.moe_dispatch.flex_permutation_parts` on the rows its deduplicated
    dispatch delivers, and no sorts)."""
    mdl, nb = shape.model, shape.dtype_bytes
    received = shape.expert_rows(expert_load) * mdl.expert_width * nb
    if shape.moe_flex:
        dispatched = received * dispatched_share(mdl, shape.ep)
        permute, unpermute = flex_permutation_parts(dispatched, received, shape.moe_permute_fused,
                                                    shape.moe_permute_in_dispatch)
        return permute, unpermute, []
    local_copy = local_tokens(shape) * mdl.expert_width * nb
    return permutation_parts(local_copy, received, mdl.top_k, mdl.experts / shape.ep, shape.moe_permute_fused)


def dispatched_share(model: ModelConfig, ep: int) -> float:
    """Rows a deduplicated dispatch delivers to a GPU over the expert copies among them, ``D / R =
    P(e) E / (e k)`` for the ``e = E / ep`` experts it holds (:func:`hit_probability`: the token
    reaches the GPU once whatever number of its experts are there), at most 1."""
    held = model.experts / ep
    hit = hit_probability(model.experts, model.top_k, int(held), model.router_groups, model.router_group_topk)
    return min(1.0, hit * model.experts / (held * model.top_k))


def shared_expert_bytes(shape: LayerShape) -> list[float]:
    """The shared experts' memory-bound kernels: their activation (as the dense MLP's, over
    ``b s f_s / t``) and the add of their output to the routed experts' (read 2, write 1 act);
    none without shared experts."""
    width = shape.model.shared_expert_ffn if shape.model.experts > 1 else 0
    if not width:
        return []
    nb = shape.dtype_bytes
    inner = shape.tokens * width / shape.tp * nb
    return [_activation_kind_bytes(shape) * inner, 3.0 * local_tokens(shape) * shape.model.hidden * nb]


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


def expert_activation_bytes(shape: LayerShape, expert_load: float = 1.0) -> list[float]:
    """The MLP activation kernel's bytes (:func:`activation_kernel_bytes`) as a list of kernels:
    none where the experts run TransformerEngine's fused grouped MLP
    (``shape.expert_mlp_fused``), whose fc1 grouped GEMM applies the SwiGLU and the router's
    probabilities in its epilogue and writes fc2's quantized input there
    (``grouped_gemm_glu_wrapper_sm100``), and whose fc2 data-gradient GEMM applies the SwiGLU's
    gradient in its epilogue (``grouped_gemm_dglu_wrapper_sm100``;
    transformer_engine/pytorch/ops/fused/grouped_mlp.py, TE PR #2769, 2026-04, refactored in
    #3117)."""
    if shape.expert_mlp_fused and shape.model.experts > 1:
        return []
    return [activation_kernel_bytes(shape, expert_load)]


def fused_away_casts(shape: LayerShape) -> tuple[int | None, int | None]:
    """Rows of the layer's linear GEMMs (``_gemms`` order: the input linear, the projection,
    the shared experts' two, the routed experts' fc1 and fc2, latent attention's) whose fp8
    casts TransformerEngine's fused grouped MLP makes inside GEMM epilogues: (the linear whose
    forward input cast is fused: the routed fc2, the linear whose output-gradient cast is fused:
    the routed fc1); (None, None) unless ``shape.expert_mlp_fused`` on a mixture of experts."""
    if not (shape.expert_mlp_fused and shape.model.experts > 1):
        return None, None
    fc1 = 2 * shape.model.block.has_attention + len(shared_gemms(shape))
    return fc1 + 1, fc1


PROBS_WEIGHT_BYTES = 6.0
"""Bytes per routed expert's inner element, in units of its 16-bit activation, that the eager
routing-probability weighting adds: Megatron-Core (core_v0.13.0 on) applies the router's fp32
probabilities in the experts' activation, and unfused (``bias_activation_fusion`` false) that is
``act(x) * permuted_probs`` into an fp32 tensor (read 2 B, write 4) and ``.to(bf16)`` (read 4,
write 2): 12 B, 6 units of 2 B (``TEGroupedMLP.forward``'s ``bias_act_func``,
megatron/core/transformer/moe/experts.py at cf39a4ddcf). The fused kernels
(``weighted_bias_swiglu_impl``, TE's fused grouped MLP) weight inside the activation."""


def activation_kernel_bytes(shape: LayerShape, expert_load: float = 1.0) -> float:
    """Bytes of the MLP activation kernel (module table of :func:`_memory_bytes`), with a
    mixture of experts' eager probability weighting (:data:`PROBS_WEIGHT_BYTES`) when the
    activation is unfused."""
    ffn = _ffn_elements(shape) * shape.dtype_bytes * max(shape.model.top_k, 1) * expert_load
    weighting = PROBS_WEIGHT_BYTES if shape.model.experts > 1 and not _activation_fused(shape) else 0.0
    return (_activation_kind_bytes(shape) + weighting) * ffn


def _activation_fused(shape: LayerShape) -> bool:
    """Whether the MLP activation runs as one fused kernel (the stack's ``fused_activation``,
    else ``fused``)."""
    return shape.fused if shape.fused_activation is None else shape.fused_activation


def _activation_kind_bytes(shape: LayerShape) -> float:
    """Bytes the MLP activation moves per inner element (module table of :func:`_memory_bytes`):
    fused GELU 2, SwiGLU 3; eager 4, 5."""
    llama = shape.model.mlp == Mlp.SWIGLU
    return (3.0 if llama else 2.0) if _activation_fused(shape) else (5.0 if llama else 4.0)


def _residual_bytes(shape: LayerShape) -> float:
    """Bytes of one residual add (bias+dropout+add) kernel (module table of :func:`_memory_bytes`):
    the GPT row with ``model.dropout`` above 0, the Llama row (no mask) without dropout."""
    plain = shape.model.dropout == 0.0
    per_act = (3.0 if plain else 3.5) if shape.fused else (3.0 if plain else 7.5)
    return per_act * local_tokens(shape) * shape.model.hidden * shape.dtype_bytes


@dataclass(frozen=True)
class ExpertBlock:
    """The part of a mixture-of-experts layer that Megatron-Core's combined 1F1B schedule runs
    apart from the attention block (``fine_grained_callables.py``, core_v0.15): ``experts``,
    the expert computation node (``routed_experts_compute``: the received rows sorted by
    expert, the expert GEMMs and activation, the rows sorted back; and the shared experts,
    which ``submodule_moe_forward`` computes there too), and ``combine_tail``, the bytes of the
    memory-bound kernels its combine node runs after the all-to-all on the communication
    stream (the un-permutation, the add of the shared experts' output and the MLP's residual
    add)."""

    experts: Kernels
    combine_tail: np.ndarray
    combine_tail_once: np.ndarray | None = None
    """Which of :attr:`combine_tail`'s kernels the backward runs once (:attr:`Kernels.memory_once`)."""

    @property
    def combine_tail_backward(self) -> np.ndarray:
        """Bytes of the combine tail's backward kernels: each twice, those of
        :attr:`combine_tail_once` once (:meth:`Kernels.backward`)."""
        return backward_memory(self.combine_tail, self.combine_tail_once)


def expert_block(shape: LayerShape, expert_load: float = 1.0) -> ExpertBlock:
    """:class:`ExpertBlock` of a mixture-of-experts layer's forward, priced as
    :func:`layer_forward` prices the same kernels (the busiest rank's ``expert_load``). The flex
    dispatcher's permute and un-permute are priced with the expert node: under DeepEP they run
    there (Megatron-Core's ``dispatch_postprocess`` / ``combine_preprocess``); under HybridEP
    inside its dispatch and combine calls, on the communication stream when the all-to-alls
    overlap, where a memory-bound kernel over every SM still takes the HBM and SMs the other
    microbatch's compute would use, so it is not counted as hidden."""
    parts = _permutations(shape, expert_load)
    permute, unpermute, sorts = parts
    permute_once, unpermute_once, sorts_once = _permutations_once(shape, parts)
    if shape.moe_flex:                  # permuted after the dispatch, merged before the combine
        sorts, unpermute = permute + unpermute, []
        sorts_once, unpermute_once = permute_once + unpermute_once, []
    gemms = np.array(shared_gemms(shape) + mlp_gemms(shape, expert_load), dtype=np.float64)
    shared = shared_expert_bytes(shape)
    activation = expert_activation_bytes(shape, expert_load)
    once = [False] * len(activation) + sorts_once + [False] * len(shared[:1])
    experts = Kernels(gemms, np.array([*activation, *sorts, *shared[:1]]), np.ones(len(gemms), bool),
                      memory_once=np.array(once))
    tail = [*unpermute, *shared[1:], _residual_bytes(shape)]
    tail_once = unpermute_once + [False] * (len(tail) - len(unpermute))
    return ExpertBlock(experts, np.array(tail), np.array(tail_once))


def _ffn_elements(shape: LayerShape) -> float:
    """MLP inner elements per token copy on this GPU: ``b s f / t``, or the experts'
    ``expert_tokens f / etp``."""
    if shape.model.experts == 1:
        return shape.tokens * shape.model.ffn_hidden / shape.tp
    return shape.expert_tokens * shape.model.ffn_hidden / shape.expert_tp


def logits_forward(shape: LayerShape) -> Kernels:
    """Output layer and cross entropy on the last stage: the ``(b s, V/t, h)`` GEMM and the
    loss's forward bytes per logit element (:mod:`simulator.workload.loss_kernels`).

    With the output layer in MXFP8 (``kernels.fp8_output_proj``; ``output_proj_cast_bytes``
    > 0) the GEMM is a linear, run at the fp8 rate, and its input, ``b s h`` elements, is
    quantized first (``output_proj_cast_bytes`` per element,
    :func:`simulator.cost.fp8_casts.cast_bytes_per_element`). The weight's copy, made once a
    step (``V h / t`` elements, 3.8 GB of traffic for DeepSeek-V3 at ``t = 1``, under 1 ms on
    Blackwell), is not priced; its bytes in memory are the other TE linears' fp8 copies
    (:mod:`simulator.workload.fp8_weight_cache`, counted on the last stage)."""
    cast = shape.output_proj_cast_bytes * shape.tokens * shape.model.hidden
    memory = [_logit_elements(shape) * shape.loss_traffic[0]] + ([cast] if cast else [])
    return Kernels(_logits_gemm(shape), np.array(memory), _output_proj_linear(shape))


def logits_backward(shape: LayerShape) -> Kernels:
    """The output layer's data- and weight-gradient GEMMs and the loss's backward bytes per
    logit element (not twice the forward's: the implementations differ,
    :mod:`simulator.workload.loss_kernels`); in MXFP8 the logits' gradient, ``b s V / t``
    elements, is quantized before both GEMMs (:func:`logits_forward`)."""
    head = Kernels(_logits_gemm(shape), np.zeros(0), _output_proj_linear(shape)).backward()
    cast = shape.output_proj_cast_bytes * _logit_elements(shape)
    memory = [_logit_elements(shape) * shape.loss_traffic[1]] + ([cast] if cast else [])
    return Kernels(head.gemms, np.array(memory), head.linear, is_backward=True)


def _logits_gemm(shape: LayerShape) -> np.ndarray:
    mdl = shape.model
    return np.array([(shape.tokens, mdl.vocab / shape.tp, mdl.hidden, 1)], dtype=np.float64)


def _output_proj_linear(shape: LayerShape) -> np.ndarray:
    """The output GEMM's linear mask: an fp8 linear only under ``kernels.fp8_output_proj``."""
    return np.array([shape.output_proj_cast_bytes > 0])


def _logit_elements(shape: LayerShape) -> float:
    """Logit elements of one microbatch on this GPU: ``b s V / t``."""
    return shape.tokens * shape.model.vocab / shape.tp


def mtp_forward(shape: LayerShape) -> Kernels:
    """One multi-token prediction layer's work besides its transformer layer and the shared
    output layer and loss (Megatron-Core ``MultiTokenPredictionLayer.forward``,
    megatron/core/transformer/multi_token_prediction.py): the shifted tokens' embedding
    lookup, the two RMSNorms (embedding and hidden state), their concatenation, the
    column-parallel projection ``eh_proj`` ``(b s, h/t, 2h)`` and the final norm; the
    memory-bound steps read and write ``b s h`` each (the concatenation ``2 b s h``)."""
    act = shape.tokens * shape.model.hidden * shape.dtype_bytes
    h = shape.model.hidden
    gemm = np.array([(shape.tokens, h / shape.tp, 2 * h, 1)], dtype=np.float64)
    return Kernels(gemm, np.array([3 * act, 2 * act, 2 * act, 4 * act, 2 * act]), np.ones(1, bool))


def embedding_forward(shape: LayerShape) -> Kernels:
    """Token (and position) embedding lookup on the first stage: memory-bound."""
    act = shape.tokens * shape.model.hidden * shape.dtype_bytes
    return Kernels(np.zeros((0, 4)), np.array([3 * act]))
