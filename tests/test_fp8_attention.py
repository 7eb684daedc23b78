"""MXFP8 attention (``kernels.fp8_attention``): the bf16 kernel's time over the GPU's measured
MXFP8/bf16 ratio for the model's head widths (GPU ``compute.fp8_attention_speedup``, from cuDNN's
training benchmark, NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training @ 3929da2)."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.compute import ComputeModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.transformer import AttentionShape

LIBRARY = HardwareLibrary()


@pytest.mark.parametrize("gpu, shape, forward, backward", [
    ("gb300", AttentionShape(4096, head_dim=128), 1.335, 0.915),          # GQA, Qwen3 / Llama widths
    ("gb300", AttentionShape(4096, head_dim=192, value_dim=128), 1.582, 1.332),   # DeepSeek-V3's MLA
    ("gb200", AttentionShape(4096, head_dim=128), 1.199, 0.918),
])
def test_kernel_time_is_the_bf16_time_over_the_measured_ratio(gpu, shape, forward, backward):
    spec = LIBRARY.gpu(gpu)
    bf16 = ComputeModel(spec, "fp8")
    mx = ComputeModel(spec, "fp8", fp8_attention=True)
    flops, overhead = 1e12, bf16.overhead_s
    for is_backward, ratio in ((False, forward), (True, backward)):
        kernel = bf16.attention_time(flops, is_backward, shape) - overhead
        assert mx.attention_time(flops, is_backward, shape) - overhead == pytest.approx(kernel / ratio)


def _scenario(dtype="fp8", scaling="mxfp8", preset="qwen3-30b-a3b", fp8_attention=True, **model):
    return {"cluster": {"node": "dgx-b300", "nodes": 1},
            "model": {"preset": preset, "seq_len": 4096, "layers": 4, **model},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": scaling, "fp8_attention": fp8_attention}}},
            "parallelism": {"dp": 8, "ep": 8}}


def _step(data):
    session = session_from_scenario(scenario_from_mapping(data, "<test>", LIBRARY), LIBRARY)
    return simulate_step(session.scenario, session.collectives).step_time_s


def _context(data):
    session = session_from_scenario(scenario_from_mapping(data, "<test>", LIBRARY), LIBRARY)
    return make_context(session.scenario, session.collectives)


def test_the_key_reaches_the_compute_model_and_slows_qwen3_widths():
    """At Qwen3's widths on a B300 MXFP8 attention is slower over a forward and backward (the
    backward, most of the kernel's work, runs at 0.915x bf16's speed): the step grows."""
    on, off = _scenario(), _scenario(fp8_attention=False)
    assert _context(on).compute.fp8_attention and not _context(off).compute.fp8_attention
    assert _step(on) > _step(off)


def test_a_dense_model_at_measured_widths_is_accepted():
    data = _scenario(preset="qwen3-4b")                 # dense, head widths 128/128
    data["parallelism"] = {"dp": 8}
    assert _context(data).compute.fp8_attention and _step(data) > 0


@pytest.mark.parametrize("change, words", [
    ({"dtype": "bf16"}, "MXFP8 recipe"),
    ({"scaling": "dynamic"}, "MXFP8 recipe"),
    ({"attention_window": 128, "full_attention_every": 2}, "sliding windows"),
])
def test_unpriced_cases_are_refused_with_the_key(change, words):
    with pytest.raises(ConfigError) as caught:
        _context(_scenario(**change))
    assert caught.value.key == "training.stack.kernels.fp8_attention"
    assert words in str(caught.value)


def test_head_widths_without_a_measurement_are_refused():
    """GPT-OSS's 64/64 heads (its full layers) have no MXFP8 measurement: refused, naming the
    measured widths."""
    data = _scenario(preset="gpt-oss-120b", attention_window=None, full_attention_every=None)
    with pytest.raises(ConfigError) as caught:
        _context(data)
    assert "64/64" in str(caught.value) and "128/128, 192/128" in str(caught.value)
