"""Hardware constants derived from paired measurements: the same recipe and software on two
GPUs, so the throughput ratio isolates the GPUs (validation/gb200_b200_pair.csv,
validation/mamba2_gpus.csv).

The GB200's ``sustained_clock_fraction`` (hardware_specs/gpus/gb200.yaml) is set from the
Megatron-Bridge 25.11 LLAMA3_8B FP8-CS pair; this test recomputes the model's ratio on that
pair, so a change to either GPU file, the node files or the shared cost model that breaks the
derivation fails here instead of silently moving every GB200 prediction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.config.hardware import Dtype
from simulator.config.library import HardwareLibrary
from simulator.cost.compute import ComputeModel
from simulator.pipeline import run_scenario

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "validation" / "gb200_b200_pair.csv"
B200 = ROOT / "validation" / "scenarios" / "megatron_bridge_b200" / "llama3-8b-8gpu-fp8cs.yaml"
GB200 = ROOT / "validation" / "scenarios" / "hardware_pairs" / "gb200-llama3-8b-8gpu-fp8cs.yaml"


@pytest.fixture(scope="module")
def pair() -> pd.Series:
    frame = pd.read_csv(PAIRS).set_index("pair")
    return frame.loc["llama3_8b_fp8cs"]


def test_the_pair_file_states_its_ratio(pair):
    """The stored ratio is the two measured throughputs' quotient (to its 4 decimals)."""
    ratio = pair["gb200_tokens_per_s_per_gpu"] / pair["b200_tokens_per_s_per_gpu"]
    assert pair["measured_ratio"] == pytest.approx(ratio, abs=5e-5)


def test_gb200_over_b200_matches_the_paired_measurement(pair):
    """The model's GB200/B200 throughput ratio on the pair is the measured 1.029 within 0.5%
    (the clock fraction is given to two digits: 0.93 against the 0.932 that matches exactly,
    a 0.2% difference in the ratio)."""
    b200, gb200 = run_scenario(B200), run_scenario(GB200)
    assert b200.gpus == gb200.gpus == pair["gpus"]
    predicted = gb200.tokens_per_s / b200.tokens_per_s
    assert predicted == pytest.approx(pair["measured_ratio"], rel=0.005)


MAMF_TFLOPS = {
    # stas00/ml-engineering compute/accelerator/README.md @744d01e1, MAMF tables (best shape, mean of
    # 100 iterations): (bf16, fp8) TFLOP/s and the dense peaks they are quoted against.
    "b200": ((1745.0, 3432.5), (2250.0, 4500.0)),
    "gb200": ((1822.0, 3615.6), (2500.0, 5000.0)),
}


def test_mamf_puts_the_gb200_near_its_paired_clock():
    """An independent check of the GB200's 0.93 relative clock (set from the training pair):
    MAMF's GB200 rows stand 0.939 (bf16) and 0.948 (fp8) of the B200's fractions of peak, both
    within 2% of 0.93 (a kernel benchmark run on each part, not a training run)."""
    (b_rates, b_peaks), (g_rates, g_peaks) = MAMF_TFLOPS["b200"], MAMF_TFLOPS["gb200"]
    relative = [(g / gp) / (b / bp) for b, bp, g, gp in zip(b_rates, b_peaks, g_rates, g_peaks, strict=True)]
    library = HardwareLibrary()
    paired = library.gpu("gb200").clock_fraction / library.gpu("b200").clock_fraction
    for ratio in relative:
        assert ratio == pytest.approx(paired, rel=0.02)


def test_a100_pcie_clock_is_its_mamf_rate_over_the_sxm_parts():
    """The A100 PCIe card (300 W) runs the SXM module's silicon at 0.933 of its rate: MAMF bf16
    252.9 against 271.2 TFLOP/s (stas00/ml-engineering @744d01e1), its sustained clock fraction."""
    library = HardwareLibrary()
    pcie, sxm = library.gpu("a100-pcie-80gb"), library.gpu("a100-sxm-80gb")
    assert pcie.clock_fraction / sxm.clock_fraction == pytest.approx(252.9 / 271.2, abs=5e-4)
    assert pcie.compute == sxm.compute


MAMBA2 = ROOT / "validation" / "mamba2_gpus.csv"
MAMBA2_RUN = ROOT / "validation" / "scenarios" / "hardware_pairs" / "mamba2-1p4b-{}.yaml"


@pytest.fixture(scope="module")
def mamba2() -> tuple[pd.Series, dict[str, float]]:
    """Issue #904's measured TFLOP/s per GPU and the model's step on each GPU (the same run)."""
    measured = pd.read_csv(MAMBA2).set_index("gpu")["measured_tflops_per_gpu"]
    steps = {gpu: run_scenario(str(MAMBA2_RUN).format(gpu.lower())).step_time_s for gpu in measured.index}
    return measured, steps


def test_gb200_over_h200_on_mamba2_matches_issue_904(mamba2):
    """The derivation of the B200 family's ``scan_product_fraction``: the model's GB200/H200
    throughput ratio on the pure Mamba-2 run is the measured 1.507 within 1% (0.26 is given to
    two digits and matches within 0.05%; 0.01 of the fraction moves the ratio 1.8%)."""
    measured, steps = mamba2
    assert steps["H200"] / steps["GB200"] == pytest.approx(measured["GB200"] / measured["H200"], rel=0.01)


@pytest.mark.xfail(strict=True, reason=(
    "a recorded miss since 2026-12-01: with GEMM kernels' fixed time and the H100's K overhead "
    "refitted with it (244 -> 138), the H200 prices the run 5.6% faster and the ratio reads "
    "2.63 against the measured 2.33 (+13%); the H200's scan products at K = 256, priced as "
    "cuBLAS GEMMs, are the likeliest part (mamba_ssm's Triton kernels), not measured"))
def test_h200_over_a100_on_mamba2_is_an_independent_check(mamba2):
    """Nothing is set from the A100 row: the model's H200/A100 ratio on the same run (2.47 until
    2026-12-01, 2.63 since) against the measured 2.33 within 8%, the Hopper and Ampere pricing
    of the Mamba-2 mixer (its scan products as cuBLAS GEMMs of their shapes) read against a
    measurement it was not fitted to."""
    measured, steps = mamba2
    assert steps["A100"] / steps["H200"] == pytest.approx(measured["H200"] / measured["A100"], rel=0.08)


def test_scan_fraction_moves_only_the_scan_products():
    """Closed form: with ``scan_product_fraction`` f in place of the GEMM fraction g, a scan
    product's time less the GEMM's fixed time and launch overhead scales by g / f exactly, and
    every other GEMM (a linear layer's or an unfused attention product's) is unchanged."""
    gpu = HardwareLibrary().gpu("b200")
    plain = gpu.model_copy(update={"compute": gpu.compute.model_copy(update={"scan_product_fraction": None})})
    shapes = np.array([(64, 128, 256, 8192), (256, 256, 128, 4096), (16384, 8512, 2048, 1)], dtype=float).T
    scan = np.array([True, True, False])
    with_f = ComputeModel(gpu, Dtype.BF16).gemm_time(*shapes, scan=scan)
    without = ComputeModel(plain, Dtype.BF16).gemm_time(*shapes, scan=scan)
    overhead = (gpu.compute.kernel_overhead_us + gpu.compute.gemm_fixed_us) * 1e-6
    ratio = gpu.compute.gemm_peak_fraction / gpu.compute.scan_product_fraction
    assert with_f[:2] - overhead == pytest.approx((without[:2] - overhead) * ratio, rel=1e-12)
    assert with_f[2] == without[2]


def test_hopper_prices_its_scan_as_gemms():
    """The Hopper and Ampere parts state no scan fraction: their scan products run at the GEMM
    fraction, which the H200/A100 check above reads."""
    library = HardwareLibrary()
    for name in ("a100-sxm-80gb", "h100-sxm", "h200-sxm"):
        compute = library.gpu(name).compute
        assert compute.scan_product_fraction is None
        assert compute.scan_fraction == compute.gemm_peak_fraction
