"""The shapes and kernel lists every layer-cost module shares: :class:`LayerShape` (one layer's
work for one microbatch on one GPU), :class:`AttentionShape` (what a fused attention kernel's
efficiency depends on), :class:`Kernels` (a pass's GEMMs, fused-attention FLOPs and memory-bound
kernels' bytes) and its backward rule (:func:`backward_memory`, :data:`FLASH_BACKWARD_RATIO`).
The layer's kernels themselves are :mod:`simulator.workload.transformer`'s (its attention and mixer
blocks), :mod:`simulator.workload.mlp_kernels`' (the MLP and experts) and
:mod:`simulator.workload.head_kernels`' (embedding, output layer and loss, multi-token prediction).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from simulator.config.scenario import ModelConfig
from simulator.config.stack import EpDispatcher, LossKernel
from simulator.workload.loss_kernels import LOSS_TRAFFIC


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
    memory_backward: np.ndarray | None = None
    """Bytes of the backward's memory-bound kernels (:func:`backward_memory` of
    :attr:`memory_bytes` and each kernel's ratio, :mod:`simulator.workload.backward_bytes`: 1.5
    for a fused norm, 1 for a row permutation, whose gradient is the inverse permutation of the
    same rows, ...); None: two kernels of each forward kernel's bytes."""

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
        """Data- and weight-gradient GEMMs, 2.5x the attention FLOPs, the memory kernels of
        :attr:`memory_backward` (by default each forward kernel's bytes twice)."""
        m, n, k, batch = self.gemms.T
        dgrad = np.stack([m, k, n, batch], axis=1)
        wgrad = np.stack([k, n, m, batch], axis=1)
        mask = self.linear_mask
        ratio = self.attention_shape.backward_ratio if self.attention_shape else FLASH_BACKWARD_RATIO
        rerun = np.zeros((0, 4)) if self.rerun is None else self.rerun
        scan = None if self.scan is None else np.concatenate([self.scan] * 2 + [np.ones(len(rerun), bool)])
        memory = self.memory_backward
        if memory is None:
            memory = np.concatenate([self.memory_bytes, self.memory_bytes])
        return Kernels(np.concatenate([dgrad, wgrad, rerun]), memory,
                       np.concatenate([mask, mask, np.zeros(len(rerun), bool)]), ratio * self.attention_flops,
                       True, self.attention_shape, scan=scan)


def backward_memory(memory_bytes: list[float], ratios: list[float]) -> np.ndarray:
    """Bytes of the backward's memory-bound kernels for forward kernels of ``memory_bytes``
    whose backward moves ``ratios`` times their bytes (:mod:`simulator.workload.backward_bytes`):
    one kernel of ``min(r, 1) m`` bytes per forward kernel, and a second of ``(r - 1) m`` where
    ``r > 1`` (the gradient and, for instance, the accumulation beside it). Lists, since a
    layer's few kernels are built in Python (numpy's per-call cost would exceed the work)."""
    pairs = list(zip(memory_bytes, ratios, strict=True))
    first = [m * min(r, 1.0) for m, r in pairs]
    return np.array(first + [m * (r - 1.0) for m, r in pairs if r > 1.0], dtype=np.float64)


FLASH_BACKWARD_RATIO = 2.5
"""Flash-attention backward FLOPs over forward: 5 matrix products (recomputed Q K^T, dV,
dP, dQ, dK) against 2 (Dao 2023, arXiv:2307.08691, sec. 3.2; FlashAttention-3 counts the
same, arXiv:2407.08608 sec. 4.1)."""


def local_tokens(shape: LayerShape) -> float:
    """Tokens of the microbatch on this GPU between the layer's blocks: ``b s``, over ``t``
    with sequence parallelism."""
    return shape.tokens / (shape.tp if shape.sequence_parallel else 1)
