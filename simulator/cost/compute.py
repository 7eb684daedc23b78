"""The compute half of the cost model: kernel durations on one GPU, vectorized over kernels.

GEMM (M x K) @ (K x N), ``batch`` independent copies, ``F = 2 M N K batch`` FLOPs:
output tiles ``T = ceil(M/tm) ceil(N/tn) batch`` run in ``W = ceil(T / SMs)`` waves, so

    efficiency = f_peak * (M N batch / (T tm tn)) * (T / (W SMs)) * K / (K + k0)
    time = F / (peak * efficiency) + overhead

(tile quantisation, wave quantisation and the per-tile main-loop prologue; see NVIDIA,
"Matrix Multiplication Background User's Guide", sections on tile and wave quantization).
Memory-bound kernels take ``bytes / (HBM bandwidth * f_mem) + overhead``. The fractions
are data in the GPU spec (``compute:``), never per-scenario knobs.
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

    @property
    def peak_flops(self) -> float:
        return self.gpu.peak_flops(self.dtype) * self.speedup

    @property
    def overhead_s(self) -> float:
        return self.gpu.compute.kernel_overhead_us * US

    def gemm_efficiency(self, m, n, k, batch=1) -> np.ndarray:
        """Fraction of peak for GEMMs of shape (m, n, k) x batch (arrays broadcast)."""
        c = self.gpu.compute
        tm, tn = c.gemm_tile
        m, n, k, batch = (np.asarray(x, dtype=np.float64) for x in (m, n, k, batch))
        tiles = np.ceil(m / tm) * np.ceil(n / tn) * batch
        waves = np.ceil(tiles / self.gpu.sm_count)
        tile_fill = (m * n * batch) / (tiles * tm * tn)
        wave_fill = tiles / (waves * self.gpu.sm_count)
        return c.gemm_peak_fraction * tile_fill * wave_fill * k / (k + c.gemm_k_overhead)

    def gemm_time(self, m, n, k, batch=1) -> np.ndarray:
        """Seconds for GEMMs (m, n, k) x batch: 2 m n k batch / (peak * efficiency) + overhead."""
        flops = 2.0 * np.asarray(m, float) * n * k * batch
        return flops / (self.peak_flops * self.gemm_efficiency(m, n, k, batch)) + self.overhead_s

    def memory_time(self, nbytes) -> np.ndarray:
        """Seconds for streaming kernels moving ``nbytes`` each: bytes / (B_hbm f_mem) + overhead."""
        rate = self.gpu.hbm_bandwidth_Bps * self.gpu.compute.memory_bandwidth_fraction * self.speedup
        return np.asarray(nbytes, dtype=np.float64) / rate + self.overhead_s
