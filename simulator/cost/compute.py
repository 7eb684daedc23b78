"""The compute half of the cost model: kernel durations on one GPU, vectorized over kernels.

GEMM (M x K) @ (K x N), ``batch`` independent copies, ``F = 2 M N K batch`` FLOPs:
output tiles ``T = ceil(M/tm) ceil(N/tn) batch`` run in ``W = ceil(T / SMs)`` waves, so

    efficiency = f_peak * (M N batch / (T tm tn)) * (T / (W SMs)) * K / (K + k0)
    time = F / (peak * efficiency) + overhead

(tile quantisation, wave quantisation and the per-tile main-loop prologue; see NVIDIA,
"Matrix Multiplication Background User's Guide", sections on tile and wave quantization).
``k0`` is the prologue and epilogue (filling the operand pipeline, writing the output tile)
in K elements of the 16-bit main loop; both take the same seconds in an fp8 GEMM, whose
main loop covers K twice as fast, so there ``k0`` is scaled by the fp8/16-bit peak ratio.
Memory-bound kernels take ``bytes / (HBM bandwidth * f_mem) + overhead``. Fused attention
is its own kernel class: ``F / (peak_16bit * f_attn) + overhead`` with forward and backward
fractions of its own. Under fp8 training only linear layers' GEMMs run at the fp8 peak (and
``fp8_gemm_peak_fraction``); attention and the output layer stay in 16 bit, as
TransformerEngine and torchao convert only ``Linear`` modules of the transformer blocks.
Compute-bound kernels also scale with the GPU's ``sustained_clock_fraction`` (a power-capped
part runs its tensor cores below the boost clock its peak is quoted at). The fractions are
data in the GPU spec (``compute:``), never per-scenario knobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.config.hardware import Dtype, GpuSpec
from simulator.units import US


@dataclass(frozen=True)
class ComputeModel:
    """Kernel times on ``gpu`` at ``dtype``; ``speedup`` scales every peak (what-ifs)."""

    gpu: GpuSpec
    dtype: Dtype
    speedup: float = 1.0
    attention_kernel: str = "default"

    @property
    def peak_flops(self) -> float:
        """Dense peak at the training dtype (fp8: the fp8 peak), FLOP/s."""
        return self.gpu.peak_flops(self.dtype) * self.speedup

    @property
    def half_peak_flops(self) -> float:
        """Dense 16-bit peak (32-bit for fp32 training): what non-fp8 GEMMs run at, FLOP/s."""
        dtype = Dtype.FP32 if self.dtype == Dtype.FP32 else Dtype.BF16
        return self.gpu.peak_flops(dtype) * self.speedup

    @property
    def _fp8_speedup(self) -> float:
        return self.gpu.peak_flops(Dtype.FP8) / self.gpu.peak_flops(Dtype.BF16)

    @property
    def overhead_s(self) -> float:
        return self.gpu.compute.kernel_overhead_us * US

    def gemm_efficiency(self, m, n, k, batch=1, fp8=False) -> np.ndarray:
        """Fraction of peak for GEMMs of shape (m, n, k) x batch (arrays broadcast)."""
        c = self.gpu.compute
        tm, tn = c.gemm_tile
        m, n, k, batch = (np.asarray(x, dtype=np.float64) for x in (m, n, k, batch))
        tiles = np.ceil(m / tm) * np.ceil(n / tn) * batch
        waves = np.ceil(tiles / self.gpu.sm_count)
        tile_fill = (m * n * batch) / (tiles * tm * tn)
        wave_fill = tiles / (waves * self.gpu.sm_count)
        fraction = np.where(fp8, c.fp8_fraction, c.gemm_peak_fraction)
        k_overhead = c.gemm_k_overhead * np.where(fp8, self._fp8_speedup, 1.0)
        return fraction * tile_fill * wave_fill * k / (k + k_overhead)

    def gemm_time(self, m, n, k, batch=1, linear=False) -> np.ndarray:
        """Seconds for GEMMs (m, n, k) x batch: 2 m n k batch / (peak * clock * efficiency)
        + overhead; ``linear`` GEMMs (a mask) run at the fp8 peak under fp8 training."""
        fp8 = np.asarray(linear, bool) & (self.dtype == Dtype.FP8)
        flops = 2.0 * np.asarray(m, float) * n * k * batch
        peak = np.where(fp8, self.peak_flops, self.half_peak_flops) * self.gpu.clock_fraction
        return flops / (peak * self.gemm_efficiency(m, n, k, batch, fp8)) + self.overhead_s

    def attention_time(self, flops: float, backward: bool) -> float:
        """Seconds for fused attention of ``flops``: F / (16-bit peak * clock * f_attn) + overhead."""
        if flops <= 0.0:
            return 0.0
        rate = self.half_peak_flops * self.gpu.clock_fraction
        fraction = self.gpu.compute.attention_fraction(backward, self.attention_kernel)
        return flops / (rate * fraction) + self.overhead_s

    def memory_time(self, nbytes) -> np.ndarray:
        """Seconds for streaming kernels moving ``nbytes`` each: bytes / (B_hbm f_mem) + overhead."""
        rate = self.gpu.hbm_bandwidth_Bps * self.gpu.compute.memory_bandwidth_fraction * self.speedup
        return np.asarray(nbytes, dtype=np.float64) / rate + self.overhead_s
