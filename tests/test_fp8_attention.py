"""fp8 attention (``kernels.fp8_attention``): the bf16 kernel's time over the GPU's measured
fp8/bf16 ratio for the recipe TransformerEngine runs it with (MXFP8 or per-tensor scales), the
model's head widths and the sequence (GPU ``compute.fp8_attention_speedup``, from cuDNN's
training benchmark, NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training @ 3929da2)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.compute import ComputeModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.transformer import AttentionShape

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
              **model):
    return {"cluster": {"node": node, "nodes": 1},
            "model": {"preset": preset, "seq_len": 4096, "layers": 4, **model},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": scaling, "fp8_attention": fp8_attention}}},
            "parallelism": {"dp": 8, "ep": 8}}


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


def test_a_dense_hopper_model_at_measured_widths_is_accepted():
    data = _scenario(preset="llama3-8b", node="dgx-h100", scaling="delayed")
    data["parallelism"] = {"dp": 8}
    assert _context(data).compute.fp8_attention == "per_tensor" and _step(data) > 0


@pytest.mark.parametrize("change, words", [
    ({"dtype": "bf16"}, "fp8 training"),
    ({"scaling": "nvfp4"}, "NVFP4"),
    ({"attention_window": 128, "full_attention_every": 2}, "sliding windows"),
    ({"preset": "deepseek-v3", "node": "dgx-h100", "scaling": "dynamic", "mtp_layers": 0}, "192/128"),
])
def test_unpriced_cases_are_refused_with_the_key(change, words):
    with pytest.raises(ConfigError) as caught:
        _context(_scenario(**change))
    assert caught.value.key == "training.stack.kernels.fp8_attention"
    assert words in str(caught.value)


def test_head_widths_without_a_measurement_name_the_measured_ones():
    """GPT-OSS's 64/64 heads (its full layers) have no MXFP8 measurement: refused, naming the
    measured widths."""
    data = _scenario(preset="gpt-oss-120b", attention_window=None, full_attention_every=None)
    with pytest.raises(ConfigError) as caught:
        _context(data)
    assert "64/64" in str(caught.value) and "128/128, 192/128" in str(caught.value)
