"""Blackwell Ultra's NVFP4 GEMM rate (hardware_specs/gpus/b300.yaml ``fp4_gemm_peak_fraction``),
from TransformerEngine's GEMM profiling guide on an HGX B300 (docs/examples/gemm_profiling/
gemm_profiling.rst, PR #2863, 1609c890e): pre-quantized GEMMs of a 5B config's 12 shapes, 24
layers, BF16 314.445 ms, MXFP8 171.869, NVFP4 90.337."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary
from simulator.config.hardware import Dtype
from simulator.cost.compute import ComputeModel

B300 = HardwareLibrary().gpu("b300")
HIDDEN, FFN, QKV, TOKENS = 4096, 16384, 12288, 31 * 512
SHAPES = [(TOKENS, HIDDEN, QKV), (TOKENS, HIDDEN, HIDDEN), (TOKENS, HIDDEN, FFN), (TOKENS, FFN, HIDDEN),
          (TOKENS, QKV, HIDDEN), (TOKENS, HIDDEN, HIDDEN), (TOKENS, FFN, HIDDEN), (TOKENS, HIDDEN, FFN),
          (HIDDEN, TOKENS, QKV), (HIDDEN, TOKENS, HIDDEN), (HIDDEN, TOKENS, FFN), (FFN, TOKENS, HIDDEN)]
"""(M, K, N) of the guide's fprop, dgrad and wgrad GEMMs (benchmark_gemm.py compute_gemm_shapes)."""


def _gemms_s(dtype: Dtype, fp4: bool = False, linear: bool = True) -> float:
    compute = ComputeModel(B300, dtype, fp4=fp4)
    return sum(compute.gemm_time(np.array([m]), np.array([n]), np.array([k]), 1, np.array([linear]))[0]
               for m, k, n in SHAPES)


def test_nvfp4_over_mxfp8_gemms_is_the_b300s():
    """The fraction was set from this ratio (0.5256), so it holds to 1%."""
    assert _gemms_s(Dtype.FP8, fp4=True) / _gemms_s(Dtype.FP8) == pytest.approx(90.337 / 171.869, rel=0.01)


def test_mxfp8_over_bf16_gemms_agrees_unfitted():
    """MXFP8 over BF16 on the same run, 0.547, from the MAMF-derived fractions (not set from
    the guide): within 5%."""
    ratio = _gemms_s(Dtype.FP8) / _gemms_s(Dtype.BF16, linear=False)
    assert ratio == pytest.approx(171.869 / 314.445, rel=0.05)
