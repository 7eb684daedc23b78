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
=========  =============================  ========================================

Backward runs two GEMMs per forward GEMM (data and weight gradients), so twice
the FLOPs. Memory-bound kernels (layer norms, bias+activation, bias+dropout+add,
and the unfused softmax/dropout over the b a/t s^2 score matrix) move the bytes
listed in :func:`_memory_bytes`; backward moves twice the forward bytes.
Reference: Narayanan et al. SC21, sec. 3 and Appendix; Korthikanti et al. 2022.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from simulator.config.scenario import Mlp, ModelConfig


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

    @property
    def seq(self) -> int:
        return self.model.seq_len // self.cp

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq

    @property
    def head_dim(self) -> int:
        return self.model.hidden // self.model.heads


@dataclass(frozen=True)
class Kernels:
    """GEMMs as an (n, 4) array of (M, N, K, batch) and memory kernels as byte counts."""

    gemms: np.ndarray
    memory_bytes: np.ndarray

    @property
    def flops(self) -> float:
        g = self.gemms
        return float(np.sum(2.0 * g[:, 0] * g[:, 1] * g[:, 2] * g[:, 3]))

    def backward(self) -> Kernels:
        """Data-gradient and weight-gradient GEMMs, and twice the memory traffic."""
        m, n, k, batch = self.gemms.T
        dgrad = np.stack([m, k, n, batch], axis=1)
        wgrad = np.stack([k, n, m, batch], axis=1)
        return Kernels(np.concatenate([dgrad, wgrad]), np.concatenate([self.memory_bytes] * 2))


def layer_forward(shape: LayerShape) -> Kernels:
    """Forward kernels of one transformer layer (see the module table)."""
    return Kernels(np.array(_gemms(shape), dtype=np.float64), _memory_bytes(shape))


def _gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    mdl, t, d = shape.model, shape.tp, shape.head_dim
    tokens, heads = shape.tokens, mdl.heads / t
    kv_seq = shape.seq * shape.cp
    causal = 0.5 if shape.attention == Attention.FLASH else 1.0
    gemms = [
        (tokens, (mdl.heads + 2 * mdl.kv_heads) * d / t, mdl.hidden, 1),
        (shape.seq, kv_seq * causal, d, shape.micro_batch * heads),
        (shape.seq, d, kv_seq * causal, shape.micro_batch * heads),
        (tokens, mdl.hidden, mdl.heads * d / t, 1),
    ]
    return gemms + _mlp_gemms(shape)


def _mlp_gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    """Dense MLP, or top_k experts per token spread over ep ranks (balanced routing)."""
    mdl, t = shape.model, shape.tp
    up_width = (2 if mdl.mlp == Mlp.SWIGLU else 1) * mdl.ffn_hidden / t
    if mdl.experts == 1:
        rows, batch = shape.tokens, 1
    else:
        batch = mdl.experts / shape.ep
        rows = shape.tokens * mdl.top_k / batch
    return [(rows, up_width, mdl.hidden, batch), (rows, mdl.hidden, mdl.ffn_hidden / t, batch)]


def _memory_bytes(shape: LayerShape) -> np.ndarray:
    """Bytes moved by each memory-bound forward kernel (read + write)."""
    mdl, nb = shape.model, shape.dtype_bytes
    sp_tokens = shape.tokens / (shape.tp if shape.sequence_parallel else 1)
    act = sp_tokens * mdl.hidden * nb
    ffn_act = shape.tokens * mdl.ffn_hidden / shape.tp * nb * max(mdl.top_k, 1)
    kernels = [2 * act, 2 * act,                       # two layer norms
               3.5 * act, 3.5 * act,                   # bias + dropout + residual add (mask 1 B)
               (3.0 if mdl.mlp == Mlp.SWIGLU else 2.0) * ffn_act]   # bias + activation
    if shape.attention == Attention.UNFUSED:
        scores = shape.micro_batch * mdl.heads / shape.tp * shape.seq * shape.seq * shape.cp * nb
        kernels += [2 * scores, 2.5 * scores]          # scale+mask+softmax; dropout (+mask)
    return np.array(kernels, dtype=np.float64)


def logits_forward(shape: LayerShape) -> Kernels:
    """Output layer and cross-entropy on the last stage: (b s, V/t, h) GEMM + fp32 softmax."""
    mdl = shape.model
    gemm = np.array([(shape.tokens, mdl.vocab / shape.tp, mdl.hidden, 1)], dtype=np.float64)
    softmax = 3 * shape.tokens * mdl.vocab / shape.tp * 4.0
    return Kernels(gemm, np.array([softmax]))


def embedding_forward(shape: LayerShape) -> Kernels:
    """Token (and position) embedding lookup on the first stage: memory-bound."""
    act = shape.tokens * shape.model.hidden * shape.dtype_bytes
    return Kernels(np.zeros((0, 4)), np.array([3 * act]))
