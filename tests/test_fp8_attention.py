"""fp8 attention (``kernels.fp8_attention``): the bf16 kernel's time over the GPU's measured
fp8/bf16 ratio for the recipe TransformerEngine runs it with (MXFP8 or per-tensor scales), the
model's head widths and the sequence (GPU ``compute.fp8_attention_speedup``, from cuDNN's
training benchmark, NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training @ 3929da2)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.stack import ATTENTION_KERNELS
from simulator.cost.compute import ComputeModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.attention_window import pair_fraction
from simulator.workload.layer_shape import AttentionShape

LIBRARY = HardwareLibrary()


def _kernel_speedup(gpu: str, recipe: str, shape: AttentionShape, backward: bool) -> float:
    """bf16 kernel time over the fp8 one (the per-call overhead left out)."""
    spec = LIBRARY.gpu(gpu)
    bf16, fp8 = ComputeModel(spec, "fp8"), ComputeModel(spec, "fp8", fp8_attention=recipe)
    overhead = bf16.overhead_s
    return ((bf16.attention_time(1e12, backward, shape) - overhead)
            / (fp8.attention_time(1e12, backward, shape) - overhead))


@pytest.mark.parametrize("gpu, recipe, shape, forward, backward", [
    ("gb300", "mxfp8", AttentionShape(4096, head_dim=128), 1.335, 0.915),     # Qwen3 / Llama widths
    ("gb300", "mxfp8", AttentionShape(4096, head_dim=192, value_dim=128), 1.582, 1.332),  # MLA
    ("gb200", "mxfp8", AttentionShape(4096, head_dim=128), 1.199, 0.918),
    ("gb300", "per_tensor", AttentionShape(8192, head_dim=128), 1.561, 1.241),
    ("h100-sxm", "per_tensor", AttentionShape(4096, head_dim=128), 1.444, 0.994),   # H200's run
    ("h100-sxm", "per_tensor", AttentionShape(8192, head_dim=128), 1.497, 0.795),
])
def test_kernel_time_is_the_bf16_time_over_the_measured_ratio(gpu, recipe, shape, forward, backward):
    assert _kernel_speedup(gpu, recipe, shape, False) == pytest.approx(forward)
    assert _kernel_speedup(gpu, recipe, shape, True) == pytest.approx(backward)


def test_between_and_beyond_the_measured_sequences():
    """Linear in log2(seq) between the 4K and 8K rows; the end rows' values outside them."""
    mid = np.interp(np.log2(6144), [12, 13], [0.994, 0.795])
    assert _kernel_speedup("h100-sxm", "per_tensor", AttentionShape(6144), True) == pytest.approx(mid)
    assert _kernel_speedup("h100-sxm", "per_tensor", AttentionShape(2048), True) == pytest.approx(0.994)
    assert _kernel_speedup("h100-sxm", "per_tensor", AttentionShape(32768), True) == pytest.approx(0.795)


def _scenario(dtype="fp8", scaling="mxfp8", preset="qwen3-30b-a3b", node="dgx-b300", fp8_attention=True,
              cp=1, **model):
    return {"cluster": {"node": node, "nodes": 1},
            "model": {"preset": preset, "seq_len": 4096, "layers": 4, **model},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": scaling, "fp8_attention": fp8_attention},
                                   "context_parallel": {"ring": "all_gather"}}},
            "parallelism": {"dp": 8 // cp, "ep": 8 // cp, "cp": cp}}


def _context(data):
    session = session_from_scenario(scenario_from_mapping(data, "<test>", LIBRARY), LIBRARY)
    return make_context(session.scenario, session.collectives)


def _step(data):
    session = session_from_scenario(scenario_from_mapping(data, "<test>", LIBRARY), LIBRARY)
    return simulate_step(session.scenario, session.collectives).step_time_s


def test_the_recipe_follows_the_linears_and_qwen3_widths_slow_on_a_b300():
    """MXFP8 linears run MXFP8 attention, current scaling per-tensor attention. At Qwen3's widths
    on a B300 MXFP8 attention is slower over a forward and backward (the backward, most of the
    kernel's work, runs at 0.915x bf16's speed): the step grows."""
    on, off = _scenario(), _scenario(fp8_attention=False)
    assert _context(on).compute.fp8_attention == "mxfp8" and _context(off).compute.fp8_attention is None
    assert _context(_scenario(scaling="dynamic")).compute.fp8_attention == "per_tensor"
    assert _step(on) > _step(off)


@pytest.mark.parametrize("scaling, recipe", [("nvfp4", "mxfp8"), ("nvfp4", "per_tensor"),
                                             ("mxfp8", "per_tensor"), ("dynamic", "mxfp8")])
def test_a_named_recipe_overrides_the_linears(scaling, recipe):
    """``kernels.fp8_attention_recipe`` (TransformerEngine's ``NVTE_DPA_FP8_RECIPE``) sets the
    attention's recipe whatever the linears run, NVFP4 included (TE's recipe table: "NVFP4
    linear, MXFP8 attention"), and the attention is then priced as under linears of that recipe:
    the same attention seconds per layer."""
    named = _scenario(scaling=scaling)
    named["training"]["stack"]["kernels"]["fp8_attention_recipe"] = recipe
    alike = _scenario(scaling="mxfp8" if recipe == "mxfp8" else "dynamic")
    ctx, twin = _context(named), _context(alike)
    assert ctx.compute.fp8_attention == recipe
    stage, twin_stage = (simulate_step(c.scenario, c.collectives).stages[0] for c in (ctx, twin))
    assert stage.attention_forward_s == pytest.approx(twin_stage.attention_forward_s, rel=1e-12)
    assert stage.attention_backward_s == pytest.approx(twin_stage.attention_backward_s, rel=1e-12)


def test_a_recipe_without_fp8_attention_is_refused():
    data = _scenario(fp8_attention=False)
    data["training"]["stack"]["kernels"]["fp8_attention_recipe"] = "mxfp8"
    with pytest.raises(ConfigError) as caught:
        _context(data)
    assert caught.value.key == "training.stack.kernels.fp8_attention_recipe"


def test_a_dense_hopper_model_at_measured_widths_is_accepted():
    data = _scenario(preset="llama3-8b", node="dgx-h100", scaling="delayed")
    data["parallelism"] = {"dp": 8}
    assert _context(data).compute.fp8_attention == "per_tensor" and _step(data) > 0


@pytest.mark.parametrize("change, words", [
    ({"dtype": "bf16"}, "fp8 training"),
    ({"scaling": "nvfp4"}, "fp8_attention_recipe"),
    ({"attention_window": 128, "full_attention_every": 2}, "128/128@128"),   # no window run at 128/128
    ({"preset": "gpt-oss-120b", "node": "dgx-h100", "scaling": "delayed"}, "64/64"),  # none on Hopper
    ({"preset": "gpt-oss-120b", "cp": 2}, "context parallelism"),
    ({"preset": "deepseek-v3", "node": "dgx-h100", "scaling": "dynamic", "mtp_layers": 0}, "192/128"),
])
def test_unpriced_cases_are_refused_with_the_key(change, words):
    with pytest.raises(ConfigError) as caught:
        _context(_scenario(**change))
    assert caught.value.key == "training.stack.kernels.fp8_attention"
    assert words in str(caught.value)


def test_head_widths_without_a_measurement_name_the_measured_ones():
    """Hopper has a per-tensor measurement at 128/128 only: GPT-OSS's kernels (64/64 full,
    64/64 over its 128-token window) are refused, naming what is measured."""
    data = _scenario(preset="gpt-oss-120b", node="dgx-h100", scaling="delayed")
    data["parallelism"] = {"dp": 8, "ep": 8}
    with pytest.raises(ConfigError) as caught:
        _context(data)
    assert "64/64" in str(caught.value) and "measured: 128/128" in str(caught.value)


WINDOW = AttentionShape(4096, head_dim=64, window=128, local_share=1.0)


@pytest.mark.parametrize("gpu, recipe, forward, backward", [
    ("gb300", "mxfp8", 1.154, 0.236),      # cuDNN 9.22, GPT-OSS's heads, window 128, 4K
    ("gb300", "per_tensor", 1.210, 0.299),
    ("gb200", "mxfp8", 1.000, 0.224),
])
def test_the_window_kernel_takes_its_own_measured_ratio(gpu, recipe, forward, backward):
    """Over a sliding window cuDNN's fp8 backward runs the whole causal triangle (its time grows
    with the square of the sequence): 4.2x bf16's backward at 4K on a GB300."""
    assert _kernel_speedup(gpu, recipe, WINDOW, False) == pytest.approx(forward)
    assert _kernel_speedup(gpu, recipe, WINDOW, True) == pytest.approx(backward)


def test_a_model_of_full_and_local_layers_sums_the_two_kernels_times():
    """GPT-OSS's mean layer (half its layers local): its attention time in fp8 is each kernel's
    bf16 time, for its share of the FLOPs, over that kernel's own ratio."""
    spec = LIBRARY.gpu("gb300")
    bf16, fp8 = ComputeModel(spec, "fp8"), ComputeModel(spec, "fp8", fp8_attention="mxfp8")
    seq, share = 4096, 0.5
    mixed = AttentionShape(seq, head_dim=64, window=128, local_share=share)
    full = AttentionShape(seq, head_dim=64)
    local = AttentionShape(seq, head_dim=64, window=128, local_share=1.0)
    flops = 1e12
    full_flops = flops * (1 - share) / pair_fraction(seq, 128, share)

    def kernel_time(model, shape, f, backward):
        return model.attention_time(f, backward, shape) - model.overhead_s

    for bwd in (False, True):
        parts = ((full, full_flops), (local, flops - full_flops))
        ratio = (sum(kernel_time(fp8, shape, f, bwd) for shape, f in parts)
                 / sum(kernel_time(bf16, shape, f, bwd) for shape, f in parts))
        measured = kernel_time(fp8, mixed, flops, bwd) / kernel_time(bf16, mixed, flops, bwd)
        assert measured == pytest.approx(ratio)


def test_gpt_oss_on_a_gb300_is_slower_with_fp8_attention():
    """The window kernel's fp8 backward outweighs the full kernel's faster forward."""
    on = _scenario(preset="gpt-oss-120b", node="gb300-nvl72")
    on["cluster"]["gpus_per_node"] = 8
    off = _scenario(preset="gpt-oss-120b", node="gb300-nvl72", fp8_attention=False)
    off["cluster"]["gpus_per_node"] = 8
    assert _step(on) > _step(off)


def test_the_recipe_key_names_the_gpu_specs_recipes():
    """``kernels.fp8_attention_recipe``'s recipes are the keys of a GPU's
    ``compute.fp8_attention_speedup`` (``Fp8AttentionRecipe``), plus ``auto``: the two lists
    cannot drift apart."""
    from typing import get_args

    from simulator.config.hardware import Fp8AttentionRecipe
    from simulator.config.stack import Fp8AttentionScaling

    named = {member.value for member in Fp8AttentionScaling} - {Fp8AttentionScaling.AUTO.value}
    assert named == set(get_args(Fp8AttentionRecipe))


def test_every_library_attention_kernel_is_a_known_name():
    """ATTENTION_KERNELS lists what the GPU specs measure, so a name in it is never a typo."""
    for name in LIBRARY.names("gpus"):
        assert set(LIBRARY.gpu(name).compute.attention_kernels) <= set(ATTENTION_KERNELS), name


@pytest.mark.parametrize(("node", "kernel", "refused"), [
    ("dgx-h100", "cudnm", True), ("dgx-h100", "fa-3", True), ("dgx-h100", "fa3", False),
    ("mi300x-platform", "cudnn", False)])     # known, not measured there: the generic fractions
def test_an_attention_kernel_name_is_known_or_the_gpus_own(node, kernel, refused):
    data = {"name": "t", "cluster": {"node": node, "nodes": 1}, "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 8,
                         "stack": {"base": "megatron-core", "kernels": {"attention": kernel}}}}
    if refused:
        with pytest.raises(ConfigError, match="training.stack.kernels.attention"):
            session_from_scenario(scenario_from_mapping(data, "t.yaml", LIBRARY))
    else:
        session_from_scenario(scenario_from_mapping(data, "t.yaml", LIBRARY))
