"""Checks on the hardware library in ``hardware_specs/``: every file loads, every
number names its source, references between files resolve, and a few published
figures and physical orderings hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.hardware import Dtype, IntraFabricKind, LinkKind, missing_sources
from simulator.config.library import HardwareLibrary

SPECS_DIR = Path(__file__).resolve().parents[1] / "hardware_specs"
DERATING = 0.72 / 0.869
"""The sustained-training derating every kernel-benchmark fraction carries: the A100's SC21-calibrated
GEMM fraction over its best-shape MAMF fraction (hardware_specs/gpus/a100-sxm-80gb.yaml; 0.73 / 0.869
until 2026-12-02)."""

LIB = HardwareLibrary(root=SPECS_DIR)
CATEGORIES = ("gpus", "links", "nodes")
ALL_SPECS = [(cat, name) for cat in CATEGORIES for name in LIB.names(cat)]

# Names the scenario format contract promises to scenario authors.
CONTRACT_NODES = [
    "dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100", "hgx-h200", "dgx-b200",
    "gb200-nvl72", "mi300x-platform", "pcie-a100x8", "pcie-h100x8",
]
CONTRACT_LINKS = [
    "ib-hdr", "ib-ndr", "ib-xdr", "roce-100g", "roce-200g", "roce-400g",
    "ethernet-25g", "ethernet-100g",
]


def test_library_is_not_empty():
    """Each category has files, so the parametrized tests below actually run."""
    for cat in CATEGORIES:
        assert LIB.names(cat), f"no files in hardware_specs/{cat}"


@pytest.mark.parametrize(("category", "name"), ALL_SPECS)
def test_spec_loads_and_cites_every_number(category, name):
    """The file validates against its schema and every numeric key has a source."""
    spec = LIB.load_any(category, name)
    assert spec.name == name
    assert missing_sources(spec) == []
    assert all(text.strip() for text in spec.sources.values()), "empty source text"


@pytest.mark.parametrize("name", LIB.names("nodes"))
def test_node_references_resolve(name):
    """A node's GPU and every link it names exist in the library."""
    node = LIB.node(name)
    assert node.gpu in LIB.names("gpus")
    linked = [node.pcie.link, node.nic_link, node.fabric.link, node.pcie.socket_link,
              node.pcie.gpu_link]
    for link in filter(None, linked):
        assert link in LIB.names("links"), f"{name}: unknown link {link}"


@pytest.mark.parametrize("name", LIB.names("nodes"))
def test_node_fabric_is_consistent(name):
    """PCIe-only nodes name no fabric link; NVLink fabrics use NVLink links, meshes xGMI."""
    fabric = LIB.node(name).fabric
    if fabric.kind is IntraFabricKind.PCIE:
        assert fabric.link is None and not fabric.in_switch_reduction
        return
    kind = LIB.link(fabric.link).kind
    expected = LinkKind.XGMI if fabric.kind is IntraFabricKind.MESH else LinkKind.NVLINK
    assert kind is expected
    if fabric.kind is not IntraFabricKind.NVSWITCH:
        assert not fabric.in_switch_reduction, "in-switch reduction needs a switch"


@pytest.mark.parametrize("name", LIB.names("gpus"))
def test_gpu_peaks_are_ordered(name):
    """Dense peaks never increase with precision: bf16 >= tf32 >= fp32 (fp8 >= bf16)."""
    peak = LIB.gpu(name).peak_dense_tflops
    order = [Dtype.FP8, Dtype.BF16, Dtype.TF32, Dtype.FP32]
    present = [peak[d] for d in order if d in peak]
    assert present == sorted(present, reverse=True)
    if Dtype.FP16 in peak and Dtype.BF16 in peak:
        assert peak[Dtype.FP16] == pytest.approx(peak[Dtype.BF16])


@pytest.mark.parametrize(
    ("gpu", "bf16"),
    [("h100-sxm", 989.4), ("a100-sxm-40gb", 312.0), ("a100-sxm-80gb", 312.0), ("mi355x", 2500.0)],
)
def test_published_dense_bf16_peaks(gpu, bf16):
    """Dense BF16 peaks match the vendors' datasheets (no sparsity factor; AMD's MI355X page
    via stas00/ml-engineering)."""
    assert LIB.gpu(gpu).peak_dense_tflops[Dtype.BF16] == pytest.approx(bf16, abs=1.0)


def test_a100_has_no_fp8():
    """Ampere has no FP8 tensor cores; the simulator falls back to fp16."""
    gpu = LIB.gpu("a100-sxm-80gb")
    assert Dtype.FP8 not in gpu.peak_dense_tflops
    assert gpu.peak_flops("fp8") == gpu.peak_flops("fp16")


# GPUs without a kernel benchmark of their own, each with the measured part of the same
# silicon whose fractions of peak it must use (hardware_specs/gpus/*.yaml "compute" sources).
SAME_SILICON = {"h100-sxm": ["h100-pcie", "h100-sxm-96gb-500w", "h800-sxm"],
                "a100-sxm-80gb": ["a100-pcie-80gb", "a100-sxm-40gb", "a800-sxm-80gb"], "b200": ["gb200"]}


@pytest.mark.parametrize(("measured", "variant"),
                         [(m, v) for m, variants in SAME_SILICON.items() for v in variants])
def test_unmeasured_variants_use_the_measured_parts_fractions(measured, variant):
    # (the GB300 is not in the list: its attention fractions come from its own cuDNN benchmark)
    """A variant of a measured GPU (other memory, power or package) prices kernels with that
    GPU's fractions of peak: until 2026-11-27 the GH200, H100 PCIe and A100 PCIe files kept
    first estimates (GEMM 0.75, no attention rates) that put a GH200 above every H100."""
    assert LIB.gpu(variant).compute == LIB.gpu(measured).compute


@pytest.mark.parametrize("variant", ["gh200", "gh200-144gb"])
def test_gh200_takes_its_own_mamf_gemm_rates_and_the_h100s_other_fractions(variant):
    """Since 2026-11-30 the GH200's GEMM fractions are its own MAMF rows (bf16 828.6 of 989,
    fp8 1,535.0 of 1,979 TFLOP/s, stas00/ml-engineering @744d01e1) times the derating (:data:`DERATING`);
    every other compute field is the H100 SXM's (same GPU)."""
    gh200, h100 = LIB.gpu(variant).compute, LIB.gpu("h100-sxm").compute
    assert gh200.gemm_peak_fraction == pytest.approx(828.6 / 989.0 * DERATING, abs=5e-4)
    assert gh200.fp8_gemm_peak_fraction == pytest.approx(1535.0 / 1979.0 * DERATING, abs=5e-4)
    rest = {"gemm_peak_fraction", "fp8_gemm_peak_fraction"}
    assert gh200.model_dump(exclude=rest) == h100.model_dump(exclude=rest)


@pytest.mark.parametrize(
    ("node", "per_gpu_GBps"),
    [("dgx-a100-80gb", 300.0), ("dgx-h100", 450.0), ("dgx-b200", 900.0),
     ("h100-pcie-2gpu-bridge", 300.0), ("dgx-a800", 200.0), ("hgx-h800", 200.0)],
)
def test_nvlink_bandwidth_per_gpu(node, per_gpu_GBps):
    """links_per_gpu x per-link rate gives the datasheet per-direction NVLink bandwidth."""
    fabric = LIB.node(node).fabric
    total = fabric.links_per_gpu * LIB.link(fabric.link).bandwidth_GBps
    assert total == pytest.approx(per_gpu_GBps)


@pytest.mark.parametrize("name", LIB.names("links"))
def test_link_efficiency_is_below_line_rate(name):
    """Achievable rate is a real fraction of line rate and latency is positive."""
    link = LIB.link(name)
    assert 0.5 <= link.efficiency < 1.0
    assert link.latency_us > 0


def test_link_speeds_are_ordered():
    """Each InfiniBand/RoCE generation doubles the previous one."""
    bw = {n: LIB.link(n).bandwidth_GBps for n in CONTRACT_LINKS}
    assert bw["ib-hdr"] * 2 == bw["ib-ndr"] and bw["ib-ndr"] * 2 == bw["ib-xdr"]
    assert bw["roce-100g"] * 2 == bw["roce-200g"] and bw["roce-200g"] * 2 == bw["roce-400g"]
    assert bw["ethernet-25g"] * 4 == bw["ethernet-100g"]


@pytest.mark.parametrize(
    ("category", "name"),
    [("nodes", n) for n in CONTRACT_NODES] + [("links", n) for n in CONTRACT_LINKS],
)
def test_contract_names_exist(category, name):
    """Every name the scenario format documents is present in the library."""
    assert name in LIB.names(category)


def test_mi350x_is_the_mi355x_die_at_its_clock():
    """The MI350X's peaks are the MI355X die's at 2.2 GHz instead of 2.4 (256 CUs x 4,096 bf16
    FLOP per clock; hardware_specs/gpus/mi350x.yaml), fp8 twice and MXFP4 four times bf16."""
    peak = LIB.gpu("mi350x").peak_dense_tflops
    bf16 = 256 * 4096 * 2.2e9 / 1e12
    for dtype, factor in ((Dtype.BF16, 1), (Dtype.FP8, 2), (Dtype.FP4, 4)):
        assert peak[dtype] == pytest.approx(factor * bf16, abs=0.05)


def test_mi355x_fractions_are_the_cited_benchmarks_times_the_derating():
    """hardware_specs/gpus/mi355x.yaml: MAMF bf16 1,565, hipBLASLt fp8 3,293.2 and AITER's
    causal flash attention 1,173.2 / 1,034.1 TFLOP/s (HipKittens), over the 2,500 / 5,000
    peaks, x the library's sustained-training derating (:data:`DERATING`), to the third figure."""
    c = LIB.gpu("mi355x").compute
    assert c.gemm_peak_fraction == pytest.approx(1565.0 / 2500 * DERATING, abs=6e-4)
    assert c.fp8_gemm_peak_fraction == pytest.approx(3293.2 / 5000 * DERATING, abs=6e-4)
    assert c.attention_forward_fraction == pytest.approx(1173.2 / 2500 * DERATING, abs=6e-4)
    assert c.attention_backward_fraction == pytest.approx(1034.1 / 2500 * DERATING, abs=6e-4)


def test_mi350x_has_its_own_fp8_gemm_rate_and_the_mi355x_other_kernels():
    """hardware_specs/gpus/mi350x.yaml: hipBLASLt fp8 on the MI350X, the best of its sweep
    (2,660.15 TFLOP/s at 8192^3, HipKittens' FP8GemmPerfComparisonmi350x.csv), over its 4,613.7
    peak x the derating (:data:`DERATING`); every other kernel fraction is the MI355X's (same silicon, no
    MI350X benchmark of them)."""
    mi350x, mi355x = LIB.gpu("mi350x").compute, LIB.gpu("mi355x").compute
    assert mi350x.fp8_gemm_peak_fraction == pytest.approx(2660.15 / 4613.7 * DERATING, abs=6e-4)
    assert mi350x.model_copy(update={"fp8_gemm_peak_fraction": mi355x.fp8_gemm_peak_fraction}) \
        == mi355x


def test_block_scaled_fp8_on_blackwell_and_cdna4_only():
    """MXFP8 (``kernels.fp8_scaling: mxfp8``) needs block-scaled matrix units: NVIDIA Blackwell
    and AMD CDNA 4 (gfx950's scaled MFMA) have them, Hopper and CDNA 3 do not."""
    for name in ("b200", "gb200", "b300", "mi355x", "mi350x"):
        assert LIB.gpu(name).mx_block_scaling, name
    for name in ("h100-sxm", "h200-sxm", "mi300x", "mi325x"):
        assert not LIB.gpu(name).mx_block_scaling, name


@pytest.mark.parametrize(("export", "base"), [("a800-sxm-80gb", "a100-sxm-80gb"), ("h800-sxm", "h100-sxm")])
def test_export_parts_differ_from_their_base_in_nvlink_only(export, base):
    """The A800 and H800 are the A100 and H100 with NVLink cut to 400 GB/s (Reuters): the same
    peaks, memory and kernel fractions; the cut lives in their servers (test above)."""
    part, ref = LIB.gpu(export), LIB.gpu(base)
    assert part.peak_dense_tflops == ref.peak_dense_tflops
    assert (part.hbm_capacity_GiB, part.hbm_bandwidth_GBps, part.sm_count) == \
        (ref.hbm_capacity_GiB, ref.hbm_bandwidth_GBps, ref.sm_count)
