"""TransformerEngine's fused grouped MLP (``kernels.grouped_mlp_fusion``): the SwiGLU and the
quantization of fc2's input run in fc1's grouped-GEMM epilogue, the SwiGLU's gradient and fc1's
output-gradient quantization in fc2's data-gradient epilogue, and each linear is one grouped GEMM
(transformer_engine/pytorch/ops/fused/grouped_mlp.py). The tests check that exactly those kernels
leave the layer's price and nothing else moves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.cost.compute import ComputeModel
from simulator.cost.fp8_casts import cast_bytes_per_element, fp8_cast_times
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import open_scenario, session_from_scenario
from simulator.workload.layer_shape import LayerShape
from simulator.workload.mlp_kernels import (
    activation_kernel_bytes,
    expert_activation_bytes,
    fused_away_casts,
    mlp_gemms,
)
from simulator.workload.transformer import layer_forward

ROOT = Path(__file__).parents[1]


def _session(fused: bool, preset: str = "qwen3-30b-a3b"):
    data = {"cluster": {"node": "gb300-nvl72", "nodes": 1, "gpus_per_node": 8},
            "model": {"preset": preset, "seq_len": 4096, "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 2, "dtype": "fp8",
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": "mxfp8", "grouped_mlp_fusion": fused}}},
            "parallelism": {"tp": 1, "dp": 8, "ep": 8}}
    library = HardwareLibrary()
    return session_from_scenario(scenario_from_mapping(data, "<test>", library), library)


def _context(fused: bool, preset: str = "qwen3-30b-a3b"):
    session = _session(fused, preset)
    return make_context(session.scenario, session.collectives)


def _shape(preset: str, fused: bool) -> LayerShape:
    return _context(fused, preset).shape


@pytest.mark.parametrize("preset", ["qwen3-30b-a3b", "deepseek-v3"])
def test_the_fused_rows_are_the_routed_experts_fc1_and_fc2(preset):
    """``fused_away_casts`` names the routed experts' fc2 (input cast) and fc1 (output-gradient
    cast) among the linear GEMMs, with and without shared experts ahead of them."""
    shape = _shape(preset, True)
    kernels = layer_forward(shape)
    linear = kernels.gemms[kernels.linear_mask]
    fc2, fc1 = fused_away_casts(shape)
    up, down = mlp_gemms(shape)
    np.testing.assert_array_equal(linear[fc1], up)
    np.testing.assert_array_equal(linear[fc2], down)


def test_only_the_expert_activation_leaves_the_memory_kernels():
    """Fused, the layer's memory-bound kernels are the unfused ones less the activation kernel;
    a dense model keeps its activation whatever the flag."""
    plain, fused = (layer_forward(_shape("qwen3-30b-a3b", f)).memory_bytes for f in (False, True))
    activation = activation_kernel_bytes(_shape("qwen3-30b-a3b", False))
    assert len(plain) == len(fused) + 1
    assert plain.sum() - fused.sum() == pytest.approx(activation)
    dense = replace(_shape("qwen3-30b-a3b", True), model=_context(True).scenario.model.dense_model())
    assert expert_activation_bytes(dense) == [activation_kernel_bytes(dense)]
    assert fused_away_casts(dense) == (None, None)


def test_the_fused_casts_cost_exactly_their_bytes():
    """Under MXFP8 the fused layer's casts are cheaper by one streaming kernel over fc2's input
    (forward) and one over fc1's output gradient (backward), at the cast's bytes per element."""
    ctx = _context(False)
    scenario = ctx.scenario
    stack = scenario_stack(scenario)
    compute = ComputeModel(ctx.compute.gpu, Dtype.FP8)
    shape = replace(ctx.shape, expert_mlp_fused=True)
    kernels = layer_forward(shape)
    plain = fp8_cast_times(scenario, stack, compute, kernels, ctx.layout)
    fused = fp8_cast_times(scenario, stack, compute, kernels, ctx.layout, fused_away_casts(shape))
    (m1, n1, _k1, b1), (m2, _n2, k2, b2) = mlp_gemms(shape)
    per_element = cast_bytes_per_element(stack, compute.gpu)
    assert plain[0] - fused[0] == pytest.approx(float(compute.memory_time(per_element * m2 * k2 * b2)))
    assert plain[1] - fused[1] == pytest.approx(float(compute.memory_time(per_element * m1 * n1 * b1)))


def test_fusion_runs_one_grouped_kernel_and_is_faster():
    """With the fusion the experts' GEMMs run as one grouped kernel (no stream rounds), whatever
    the profile's ``grouped_gemm_streams``, and the step is shorter than without it."""
    steps = {}
    for fused in (False, True):
        session = _session(fused)
        context = make_context(session.scenario, session.collectives)
        assert context.compute.expert_streams == (0 if fused else 4)
        steps[fused] = simulate_step(session.scenario, session.collectives).step_time_s
    assert steps[True] < steps[False]


@pytest.mark.parametrize(("node", "dtype", "scaling", "says"), [
    ("dgx-h100", "fp8", "dynamic", "MXFP8 or NVFP4"),
    ("gb300-nvl72", "bf16", "mxfp8", "MXFP8 or NVFP4"),
    ("mi355x-platform", "fp8", "mxfp8", "sm100"),
])
def test_fusion_outside_block_scaling_is_refused(node, dtype, scaling, says):
    """TE fuses the grouped MLP only under MXFP8 or NVFP4 on Blackwell: elsewhere the key is a
    user mistake, named, not a silent speed-up."""
    data = {"cluster": {"node": node, "nodes": 1, "gpus_per_node": 8},
            "model": {"preset": "qwen3-30b-a3b", "seq_len": 4096, "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 2, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": scaling, "grouped_mlp_fusion": True}}},
            "parallelism": {"tp": 1, "dp": 8, "ep": 8}}
    library = HardwareLibrary()
    with pytest.raises(ConfigError, match=says) as raised:
        session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    assert raised.value.key == "training.stack.kernels.grouped_mlp_fusion"


MOE = ROOT / "validation/scenarios"
SOFTWARE_AB = [
    # (26.04.01 scenario, 26.06 scenario, measured tokens/s per GPU before and after; Megatron-Bridge
    # docs/performance-summary-archive.md @ 067f987df): the same model, GPU and layout, the recipe
    # adding the all-to-all overlap and TE's fused grouped MLP (and CUDA graphs, MXFP8 attention).
    ("megatron_bridge_2604_moe/qwen3-235b-a22b-256gpu-gb300-fp8mx.yaml",
     "megatron_bridge_2606_moe/qwen3-235b-a22b-256gpu-gb300-fp8mx-2606.yaml", 6944, 9015),
    ("megatron_bridge_2604_moe/qwen3-235b-a22b-256gpu-gb200-fp8mx.yaml",
     "megatron_bridge_2606_moe/qwen3-235b-a22b-256gpu-gb200-fp8mx-2606.yaml", 5680, 7376),
]


HOST_GAIN_BOUND = 1.10
"""How much more than the model the 26.06 runs may gain: what full-iteration CUDA graphs remove
(host time, not modelled). Megatron-LM's MoE recipe index measures it for this model on GB200:
the same recipe from TE-scoped to full-iteration graphs (with the paged stash and the fused
MLP) ran 1.139x faster (1,018 -> 1,159.5 TFLOP/s, validation/megatron_moe_recipes.csv rows 10
and 9), where the model gives 1.05x (the fused MLP): a host share of about 1.09x, bounded here
at 1.10."""


@pytest.mark.parametrize(("before", "after", "was", "now"), SOFTWARE_AB)
def test_the_26_06_software_gain_is_reproduced_but_for_host_time(before, after, was, now):
    """Megatron-Bridge's 26.06 recipes ran Qwen3 235B 1.30x faster than 26.04.01's on the same
    GPUs and layout. The model gains from the mechanisms it prices (the overlapped all-to-alls
    with HybridEP's SMs, the fused grouped MLP, MXFP8 attention) and falls short by at most the
    host time the full-iteration graphs remove (:data:`HOST_GAIN_BOUND`): measured over modelled
    in [1, 1.10] (GB300 1.01, GB200 1.06 on 2026-11-30)."""
    steps = [simulate_step(s.scenario, s.collectives).step_time_s
             for s in (open_scenario(MOE / before), open_scenario(MOE / after))]
    shortfall = (now / was) / (steps[0] / steps[1])
    assert 1.0 <= shortfall <= HOST_GAIN_BOUND
