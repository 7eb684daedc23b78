"""A GPU's local experts as TransformerEngine's GroupedLinear runs them
(``kernels.grouped_gemm_streams``): one GEMM per expert, round-robin on 4 streams, and each
expert's fp8 operands quantized by kernels of their own. Checked against the closed forms of
:mod:`simulator.cost.compute` and :mod:`simulator.cost.fp8_casts`."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary
from simulator.config.hardware import Dtype
from simulator.config.stack import Fp8Scaling
from simulator.cost.compute import ComputeModel
from simulator.cost.fp8_casts import expert_quantize_launches

B200 = HardwareLibrary().gpu("b200")
SHAPE = (1024.0, 4096.0, 7168.0)   # one of DeepSeek-V3's expert fc1 GEMMs at 1,024 tokens per expert


def test_per_expert_gemms_share_the_waves_of_the_gemms_in_flight():
    """32 experts on 4 streams: the efficiency of 4 GEMMs at once, 8 rounds of a GEMM's fixed
    time and launch overhead; one grouped kernel: the efficiency of all 32 and one of each."""
    streams, grouped = ComputeModel(B200, Dtype.FP8, expert_streams=4), ComputeModel(B200, Dtype.FP8)
    m, n, k = SHAPE
    flops = 2 * m * n * k * 32
    peak = B200.peak_flops(Dtype.FP8) * B200.clock_fraction
    rounds = 8 * (grouped.gemm_fixed_s + grouped.overhead_s)
    expected = flops / (peak * grouped.gemm_efficiency(m, n, k, 4, True)) + rounds
    assert streams.gemm_time(m, n, k, 32, True) == pytest.approx(expected, rel=1e-12)
    assert streams.gemm_time(m, n, k, 32, True) > grouped.gemm_time(m, n, k, 32, True)


def test_only_expert_gemms_change():
    """Non-linear batched GEMMs (unfused attention scores) and unbatched linears keep their times."""
    streams, grouped = ComputeModel(B200, Dtype.BF16, expert_streams=4), ComputeModel(B200, Dtype.BF16)
    m, n, k = SHAPE
    assert streams.gemm_time(m, n, k, 32, False) == grouped.gemm_time(m, n, k, 32, False)
    assert streams.gemm_time(m, n, k, 1, True) == grouped.gemm_time(m, n, k, 1, True)
    at_most_streams = np.array([4.0, 2.0])
    assert np.allclose(streams.gemm_time(m, n, k, at_most_streams, True),
                       grouped.gemm_time(m, n, k, at_most_streams, True))


class _Stack:
    """The one field expert_quantize_launches reads."""

    def __init__(self, scaling: Fp8Scaling) -> None:
        self.kernels = type("K", (), {"fp8_scaling": scaling})()


@pytest.mark.parametrize(("scaling", "per_tensor"), [(Fp8Scaling.DYNAMIC, 3), (Fp8Scaling.MXFP8, 1),
                                                     (Fp8Scaling.DELAYED, 0)])
def test_each_expert_quantizes_its_own_operands(scaling, per_tensor):
    """Per grouped linear of E experts: E k - 1 more kernels than one (TE quantizer.cpp: amax,
    scale, cast under current scaling); delayed scaling's fused multi-tensor kernel adds none."""
    batch = np.array([1.0, 32.0, 32.0])           # a dense linear and two expert linears
    compute = ComputeModel(B200, Dtype.FP8, expert_streams=4)
    expected = 2 * (32 * per_tensor - 1) if per_tensor else 0.0
    assert expert_quantize_launches(_Stack(scaling), compute, batch) == expected
    assert expert_quantize_launches(_Stack(scaling), ComputeModel(B200, Dtype.FP8), batch) == 0.0
