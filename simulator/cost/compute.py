"""The compute half of the cost model: kernel durations on one GPU, vectorized over kernels.

GEMM (M x K) @ (K x N), ``batch`` independent copies, ``F = 2 M N K batch`` FLOPs:
output tiles ``T = ceil(M/tm) ceil(N/tn) batch`` run in ``W = ceil(T / SMs)`` waves, so

    efficiency = f_peak * (M N batch / (T tm tn)) * (T / (W SMs)) * K / (K + k0)
    time = F / (peak * efficiency) + t_fixed + overhead

(tile quantisation, wave quantisation and the per-tile main-loop prologue; see NVIDIA,
"Matrix Multiplication Background User's Guide", sections on tile and wave quantization).
``k0`` is the prologue and epilogue (filling the operand pipeline, writing the output tile)
in K elements of the 16-bit main loop: on the H100 (and its die's other parts) measured from
the efficiency's fall at small K in OpenXLA's GEMM tables
(:mod:`simulator.validation.gemm_tables`), an estimate on the others; both take about the
same seconds in an fp8 GEMM, whose main loop covers K twice as fast, so there ``k0`` is
scaled by the fp8/16-bit peak ratio. ``t_fixed`` (``gemm_fixed_us``) is the kernel's
fixed time, the operand pipeline's first fill and the last tile's epilogue, which a persistent
kernel hides for every tile but the first and last; measured with ``k0`` on the H100 (the
same tables; :mod:`simulator.validation.gemm_tables`). ``overhead`` is the launch gap between
back-to-back kernels.
Memory-bound kernels take ``bytes / (HBM bandwidth * f_mem) + overhead``. Fused attention
is its own kernel class: ``F / (peak_16bit * f_attn * r(s)) + overhead`` with forward and
backward fractions of its own, measured at ``s_ref`` = 8,192 tokens, and ``r(s)`` the causal
tile efficiency at the kernel's sequence length over that at ``s_ref``
(:func:`causal_tile_efficiency`). Under fp8 training only linear layers' GEMMs run at the fp8 peak (and
``fp8_gemm_peak_fraction``); attention and the output layer stay in 16 bit, as
TransformerEngine and torchao convert only ``Linear`` modules of the transformer blocks.
Compute-bound kernels also scale with the GPU's ``sustained_clock_fraction`` (a power-capped
part runs its tensor cores below the boost clock its peak is quoted at). The fractions are
data in the GPU spec (``compute:``), never per-scenario knobs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from simulator.config.hardware import Dtype, GpuSpec, head_widths_key
from simulator.units import US
from simulator.workload.attention_window import band_fraction, pair_fraction
from simulator.workload.layer_shape import AttentionShape, Kernels


@dataclass(frozen=True)
class ComputeModel:
    """Kernel times on ``gpu`` at ``dtype``; ``speedup`` scales every peak (what-ifs)."""

    gpu: GpuSpec
    dtype: Dtype
    speedup: float = 1.0
    attention_kernel: str = "default"
    expert_streams: int = 0
    """Streams a GPU's local experts' GEMMs are issued on one per expert (0: one grouped kernel;
    the stack's ``kernels.grouped_gemm_streams``)."""
    fp4: bool = False
    """Whether fp8 training's linears run as NVFP4 GEMMs (``kernels.fp8_scaling: nvfp4``): at
    the fp4 peak and ``fp4_gemm_peak_fraction``."""
    fp8_block: bool = False
    """Whether fp8 training's linears run block-scaled fp8 GEMMs (``kernels.fp8_scaling:
    blockwise``): at the fp8 rate times the GPU's ``fp8_block_gemm_ratio``."""
    fp8_attention: str | None = None
    """The recipe fused attention runs in fp8 with (``kernels.fp8_attention``: ``mxfp8`` or
    ``per_tensor``; None: bf16): the bf16 kernel's time over the GPU's ``fp8_attention_speedup``
    for that recipe and the kernel's head widths and sequence."""

    @property
    def peak_flops(self) -> float:
        """Dense peak at the training dtype (fp8: the fp8 peak; NVFP4: the fp4 peak), FLOP/s:
        what linear GEMMs run at and MFU is counted against."""
        return self.gpu.peak_flops(Dtype.FP4 if self.fp4 else self.dtype) * self.speedup

    @property
    def half_peak_flops(self) -> float:
        """Dense 16-bit peak (32-bit for fp32 training): what non-fp8 GEMMs run at, FLOP/s."""
        dtype = Dtype.FP32 if self.dtype == Dtype.FP32 else Dtype.BF16
        return self.gpu.peak_flops(dtype) * self.speedup

    @property
    def _fp8_speedup(self) -> float:
        """The low-precision linears' peak (fp8, or fp4 under NVFP4) over the bf16 peak."""
        low = Dtype.FP4 if self.fp4 else Dtype.FP8
        return self.gpu.peak_flops(low) / self.gpu.peak_flops(Dtype.BF16)

    @property
    def overhead_s(self) -> float:
        return self.gpu.compute.kernel_overhead_us * US

    @property
    def gemm_fixed_s(self) -> float:
        """A GEMM kernel's fixed in-kernel time (``compute.gemm_fixed_us``), seconds."""
        return self.gpu.compute.gemm_fixed_us * US

    def expert_by_expert(self, batch) -> np.ndarray:
        """Which batched GEMMs (a GPU's local experts, ``batch`` > 1) run one expert at a time
        on ``expert_streams`` streams, each quantizing its own operands: none without streams."""
        return (np.asarray(batch, float) > 1) & bool(self.expert_streams)

    def gemm_efficiency(self, m, n, k, batch=1, fp8=False, scan=False) -> np.ndarray:
        """Fraction of peak for GEMMs of shape (m, n, k) x batch (arrays broadcast); ``scan``
        GEMMs (a mask) are a chunked scan's products, at the GPU's ``scan_product_fraction``."""
        c = self.gpu.compute
        k = np.asarray(k, dtype=np.float64)
        fill, _ = tile_and_wave_fill(m, n, batch, c.gemm_tile, self.gpu.sm_count)
        low = c.fp4_gemm_peak_fraction if self.fp4 and c.fp4_gemm_peak_fraction else c.fp8_fraction
        if self.fp8_block and c.fp8_block_gemm_ratio:
            low = low * c.fp8_block_gemm_ratio
        fraction = np.where(fp8, low, np.where(scan, c.scan_fraction, c.gemm_peak_fraction))
        k_overhead = c.gemm_k_overhead * np.where(fp8, self._fp8_speedup, 1.0)
        return fraction * fill * k / (k + k_overhead)

    def gemm_time(self, m, n, k, batch=1, linear=False, scan=False) -> np.ndarray:
        """Seconds for GEMMs (m, n, k) x batch: 2 m n k batch / (peak * clock * efficiency)
        + the kernel's fixed time + overhead; ``linear`` GEMMs (a mask) run at the fp8 peak under
        fp8 training, ``scan`` GEMMs (a mask: a chunked scan's products) at the GPU's
        ``scan_product_fraction``.

        A batched linear GEMM is a GPU's local experts; with ``expert_streams`` ``s > 0`` they
        run one GEMM per expert, round-robin on ``s`` streams (TransformerEngine
        ``multi_stream_cublas_gemm``, transformer_engine/common/gemm/cublaslt_gemm.cu, 4 compute
        streams in common/util/multi_stream.cpp, the GroupedLinear path at least to v2.15): the
        ``s`` GEMMs in flight share the waves (the efficiency of a batch of ``min(s, E)``) and
        every round of launches costs the fixed time and the overhead, ``ceil(E / s)`` of them."""
        linear = np.asarray(linear, bool)
        fp8 = linear & (self.dtype == Dtype.FP8)
        flops = 2.0 * np.asarray(m, float) * n * k * batch
        peak = np.where(fp8, self.peak_flops, self.half_peak_flops) * self.gpu.clock_fraction
        in_flight, rounds = batch, 1.0
        if self.expert_streams:
            batch = np.asarray(batch, float)
            experts = linear & self.expert_by_expert(batch)
            rounds = np.where(experts, np.ceil(batch / self.expert_streams), 1.0)
            in_flight = np.where(experts, np.minimum(batch, self.expert_streams), batch)
        seconds = flops / (peak * self.gemm_efficiency(m, n, k, in_flight, fp8, scan))
        return seconds + rounds * (self.gemm_fixed_s + self.overhead_s)

    def attention_time(self, flops: float, backward: bool, shape: AttentionShape | None = None) -> float:
        """Seconds for fused attention of ``flops`` of kernels of ``shape``:
        F / (16-bit peak * clock * f_attn * r) + overhead, ``r`` = :func:`attention_shape_factor`
        (1 for ``shape`` None: the shape the fractions were measured at); in fp8 the causal and
        the sliding-window kernels each sped up by their own :func:`fp8_attention_speedup`."""
        if flops <= 0.0:
            return 0.0
        rate = self.half_peak_flops * self.gpu.clock_fraction
        fraction = self.gpu.compute.attention_fraction(backward, self.attention_kernel)
        speedups = self._fp8_attention_speedups(shape, backward)
        if shape is None:
            return flops / (rate * fraction * speedups[0]) + self.overhead_s
        fraction *= attention_shape_factor(shape, self.gpu.compute.attention_tile_overhead, speedups)
        return flops / (rate * fraction) + self.overhead_s

    def _fp8_attention_speedups(self, shape: AttentionShape | None, backward: bool) -> tuple[float, float]:
        """(causal, sliding-window) kernels' fp8 speed over bf16 (:func:`fp8_attention_speedup`);
        (1, 1) in bf16."""
        if not self.fp8_attention:
            return 1.0, 1.0
        causal = fp8_attention_speedup(self.gpu, self.fp8_attention, shape, backward)
        if shape is None or shape.window is None:
            return causal, 1.0
        return causal, fp8_attention_speedup(self.gpu, self.fp8_attention, shape, backward, shape.window)

    def kernels_attention_time(self, kernels: Kernels) -> float:
        """:meth:`attention_time` of ``kernels``' fused attention at its shape."""
        return self.attention_time(kernels.attention_flops, kernels.is_backward, kernels.attention_shape)

    @property
    def memory_fixed_s(self) -> float:
        """A memory-bound kernel's fixed in-kernel time (``compute.memory_fixed_us``), seconds."""
        return self.gpu.compute.memory_fixed_us * US

    def memory_time(self, nbytes) -> np.ndarray:
        """Seconds for streaming kernels moving ``nbytes`` each: bytes / (B_hbm f_mem) + the
        kernel's fixed time + overhead."""
        rate = self.gpu.hbm_bandwidth_Bps * self.gpu.compute.memory_bandwidth_fraction * self.speedup
        return np.asarray(nbytes, dtype=np.float64) / rate + self.memory_fixed_s + self.overhead_s


def fp8_attention_speedup(gpu: GpuSpec, recipe: str, shape: AttentionShape | None, backward: bool,
                          window: int | None = None) -> float:
    """The fp8 attention kernel's speed over the bf16 one's on ``gpu`` under ``recipe`` at
    ``shape``'s head widths and sequence (``compute.fp8_attention_speedup``), for the causal
    kernel or, with ``window``, the sliding-window one: linear in ``log2(seq)`` between the
    measured rows, the end rows' value beyond them; 1 where not measured (the scenario check
    refuses ``kernels.fp8_attention`` there)."""
    widths = head_widths_key(shape.head_dim, shape.value_dim, window) if shape is not None else "128/128"
    rows = sorted(gpu.compute.fp8_attention_speedup.get(recipe, {}).get(widths, []))
    if not rows:
        return 1.0
    seq = shape.seq if shape is not None else ATTENTION_REFERENCE_SEQ
    column = 2 if backward else 1
    return float(np.interp(np.log2(seq), [np.log2(r[0]) for r in rows], [r[column] for r in rows]))


def tile_and_wave_fill(m, n, batch, tile: tuple[int, int], sm_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(tile fill x wave fill, waves) of GEMMs (m, n) x batch in ``tile``-sized output tiles
    on ``sm_count`` SMs: ``T = ceil(m/tm) ceil(n/tn) batch`` tiles in ``W = ceil(T / SMs)``
    waves, fill ``(m n batch / (T tm tn)) (T / (W SMs))`` (module docstring); arrays broadcast."""
    tm, tn = tile
    m, n, batch = (np.asarray(x, dtype=np.float64) for x in (m, n, batch))
    tiles = np.ceil(m / tm) * np.ceil(n / tn) * batch
    waves = np.ceil(tiles / sm_count)
    return (m * n * batch) / (tiles * tm * tn) * tiles / (waves * sm_count), waves


ATTENTION_REFERENCE_SEQ = 8192
"""Tokens per sequence at which the library's attention fractions were read (the
FlashAttention-2, -3 and cuDNN figures of ``hardware_specs/gpus/*.yaml`` are at 8k; the
AMD parts' estimates carry no length and are taken as the same)."""
ATTENTION_TILE = 128
"""Query and key tokens per tile of a flash-attention kernel (FlashAttention-2 runs 128-row
query blocks at head dimension 128; Dao 2023, arXiv:2307.08691, sec. 3.3)."""
ATTENTION_TILE_OVERHEAD = 1.5
"""Per query tile, the prologue (loading Q) and epilogue (rescaling and writing O and the
log-sum-exp), in key tiles of main-loop work: the default of the GPU field
``compute.attention_tile_overhead`` (B200 sets its own). Read off FlashAttention-2's published H100
benchmark (Dao-AILab/flash-attention assets/flash2_h100_fwd_bwd_benchmark.png @4f285b35,
causal, head dim 128, forward + backward: 163, 221, 265, 294, 308, 328 TFLOP/s at 0.5k-16k):
with it :func:`causal_tile_efficiency` over its 8k value gives 0.53, 0.71, 0.85, 0.94, 1,
1.03 against the measured 0.53, 0.72, 0.86, 0.95, 1, 1.06. The A100 panel of the same
benchmark (99, 133, 155, 173, 182, 189: 0.54, 0.73, 0.85, 0.95, 1, 1.04) was not used to
set it and agrees within 2.3%."""


ATTENTION_REFERENCE_HEAD_DIM = 128
"""Head dimension at which the library's attention fractions were read."""
ATTENTION_SOFTMAX_HEAD_DIM = 22.5
"""Per query-key tile, the softmax work (scale, max, exp, rescale on the CUDA cores) in head
dimensions of tensor-core work: a tile's matmuls scale with ``d``, its softmax does not, so
the efficiency goes as ``d / (d + d_0)``. Read off the same FlashAttention-2 H100 benchmark's
head-dimension-64 panel (causal, forward + backward: 141, 192, 232, 257, 273, 284 TFLOP/s at
0.5k-16k: 0.865-0.886 of head dimension 128, 0.870 modelled); its A100 panel gives
0.889-0.907 (88-171 against 99-189), 2-4 points off, not used to set it."""


def attention_shape_factor(shape: AttentionShape, overhead: float = ATTENTION_TILE_OVERHEAD,
                           speedups: tuple[float, float] = (1.0, 1.0)) -> float:
    """Efficiency of an attention kernel of ``shape`` over the reference kernel's (8K tokens,
    no context parallelism, head dimension 128): the tile factor (:func:`_tile_factor`,
    ``overhead`` tiles per query tile; the causal and sliding-window kernels sped up by
    ``speedups``, fp8's over bf16) over the reference's times the head-dimension factor
    ``(d / (d + d_0)) / (128 / (128 + d_0))`` with ``d`` the mean of the query/key and value
    widths (dimensionless)."""
    tiles = _tile_factor(shape, overhead, speedups) / _reference_tiles(overhead)
    return tiles * _head_dim_efficiency(shape.mean_dim) / _REFERENCE_HEAD


def _tile_factor(shape: AttentionShape, overhead: float, speedups: tuple[float, float]) -> float:
    """The causal kernel's tile efficiency (:func:`causal_tile_efficiency`) or, where a share
    ``f`` of the layers is local (:mod:`simulator.workload.attention_window`), the harmonic
    mean of the two kernels' weighted by their pairs, so that a layer's mean FLOPs at it take
    the two kernels' mean time: ``P / ((1 - f) P_c / r_c + f P_w / r_w)``, ``P`` the mean pairs,
    ``P_c = s^2 / 2`` and ``P_w`` the causal and local kernels' over the whole sequence (a
    rank's share of each is the same under context parallelism), ``r_w``
    :func:`window_tile_efficiency`; each ``r`` times its kernel's entry of ``speedups``."""
    causal = causal_tile_efficiency(shape.seq, shape.cp, overhead) * speedups[0]
    if not shape.local_share or shape.window is None or shape.window >= shape.full_seq:
        return causal
    share, band = shape.local_share, band_fraction(shape.full_seq, shape.window)
    local = window_tile_efficiency(shape.window, overhead) * speedups[1]
    pairs = pair_fraction(shape.full_seq, shape.window, share)
    return pairs / ((1.0 - share) / causal + share * band / local)


def window_tile_efficiency(window: float, overhead: float = ATTENTION_TILE_OVERHEAD) -> float:
    """Useful share of a sliding-window kernel's work: per query tile of ``T`` rows the band of
    ``w`` keys straddles ``n_w + 1`` key tiles (``n_w = w / T``) of which ``n_w`` carry pairs,
    plus the prologue and epilogue ``c``: ``r = n_w / (n_w + 1 + c)`` (the causal kernel's
    count, :func:`causal_tile_efficiency`, with the band in place of the triangle).
    Dimensionless; GPT-OSS's 128-token window on 128-row tiles: 1 / 3.5."""
    tiles = window / ATTENTION_TILE
    return tiles / (tiles + 1.0 + overhead)


def causal_tile_efficiency(seq: float, cp: int = 1, overhead: float = ATTENTION_TILE_OVERHEAD) -> float:
    """Useful share of causal flash attention's work at ``seq`` query tokens per rank.

    With ``n = seq / T`` tiles of ``T`` tokens (:data:`ATTENTION_TILE`), one kernel runs the
    ``n (n + 1) / 2`` query-key tile pairs on or below the diagonal, of which ``n^2 / 2``
    carry the causal half's FLOPs (the diagonal ones are computed whole and half used), and
    pays ``c`` tiles of prologue and epilogue per query tile (``overhead``; default
    :data:`ATTENTION_TILE_OVERHEAD`):

        r = (n^2 / 2) / (n (n + 1) / 2 + c n) = n / (n + 1 + 2 c)

    With context parallelism over ``cp`` ranks and load-balanced chunks (TransformerEngine's
    and PyTorch's rings), a rank's ``n`` query tiles meet ``cp n`` key tiles in ``cp`` kernel
    calls: ``cp n^2 / 2`` useful tile pairs, ``n / 2`` of diagonal waste (its own step only)
    and ``c n`` of overhead per call, so ``r = n / (n + 1/cp + 2 c)``. Dimensionless, in
    (0, 1); rises towards 1 with the sequence length.
    """
    tiles = max(seq / ATTENTION_TILE, 1.0)
    return tiles / (tiles + 1.0 / max(cp, 1) + 2.0 * overhead)


def _head_dim_efficiency(head_dim: float) -> float:
    """``d / (d + d_0)``: a tile's matmul share at head dimension ``d`` (with unequal query/key
    and value widths their mean, :attr:`AttentionShape.mean_dim`)."""
    return head_dim / (head_dim + ATTENTION_SOFTMAX_HEAD_DIM)


@functools.lru_cache(maxsize=16)
def _reference_tiles(overhead: float) -> float:
    """:func:`causal_tile_efficiency` at the reference length, once per overhead."""
    return causal_tile_efficiency(ATTENTION_REFERENCE_SEQ, 1, overhead)


_REFERENCE_HEAD = _head_dim_efficiency(ATTENTION_REFERENCE_HEAD_DIM)
