"""The memory-bound passes around the grouped experts (simulator/workload/expert_passes.py): the
fp8 padding copies Megatron-Core's TEGroupedMLP makes under the alltoall dispatcher, and the
eager per-expert bias of GPT-OSS's second expert linear; closed forms and the draft's mapping."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.layer import expert_pass_seconds, layer_cost
from simulator.engine.context import make_context
from simulator.measure.draft import draft_from_log
from simulator.measure.megatron_log import read_megatron_log
from simulator.pipeline import session_from_scenario
from simulator.workload.expert_passes import bias_kernels, padding_kernels

LIBRARY = HardwareLibrary()
MIXTRAL_LOG = "validation/training_logs/primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz"


def _context(preset: str = "qwen3-30b-a3b", dtype: str = "fp8", expert_parallel: dict | None = None,
             kernels: dict | None = None, parallelism: dict | None = None):
    stack = {"base": "megatron-core", "expert_parallel": expert_parallel or {}, "kernels": kernels or {}}
    scenario = scenario_from_mapping(
        {"cluster": {"node": "dgx-b200", "nodes": 1}, "model": {"preset": preset, "seq_len": 4096},
         "training": {"global_batch": 8, "micro_batch": 1, "dtype": dtype, "stack": stack},
         "parallelism": {"tp": 1, "dp": 8, "ep": 8, **(parallelism or {})}},
        "<test>", LIBRARY)
    session = session_from_scenario(scenario, LIBRARY)
    return make_context(session.scenario, session.collectives)


def test_padding_copies_the_rows_in_and_out_each_pass():
    """Under the alltoall dispatcher in fp8 the rows R h are copied into the padded buffer and the
    output back (2 x 2 B each) and the probabilities (2 x 2 B each), forward and backward alike;
    R = b s k on the busiest rank (4,096 tokens x 8 experts each)."""
    ctx = _context()
    assert ctx.shape.expert_padding_copies
    rows = ctx.shape.expert_rows()
    assert rows == pytest.approx(4096 * 8)
    forward, backward = padding_kernels(ctx.shape)
    h = ctx.scenario.model.hidden
    assert forward == pytest.approx([4 * rows * h, 4 * rows, 4 * rows * h])
    assert backward == forward


@pytest.mark.parametrize(("dtype", "expert_parallel", "copies"), [
    ("fp8", {}, True),                                            # auto: alltoall does not pad
    ("bf16", {}, False),                                          # no quantized grouped GEMM
    ("fp8", {"dispatcher": "hybridep"}, False),                   # HybridEP pads in its dispatch
    ("fp8", {"dispatcher": "deepep"}, False),                     # DeepEP's fused permute pads
    ("fp8", {"dispatcher": "deepep", "fp8_padding": "copy"}, True),   # older Megatron-Core
    ("fp8", {"fp8_padding": "aligned"}, False),                   # router padding, capacity
])
def test_who_pads_decides_the_copies(dtype, expert_parallel, copies):
    ctx = _context(dtype=dtype, expert_parallel=expert_parallel)
    assert ctx.shape.expert_padding_copies is copies
    assert bool(padding_kernels(ctx.shape)[0]) is copies


def test_gpt_oss_bias_in_the_activation_dtype_under_alltoall():
    """bf16 probabilities (the alltoall router's input dtype): per element of R h forward
    5 r + n = 12 B, backward 6 r + 2 n = 16 B; two forward and four backward kernels per local
    expert (16 of 128 on 8 GPUs) plus the cat, and the split's gradient."""
    ctx = _context("gpt-oss-120b", dtype="bf16")
    forward, backward = bias_kernels(ctx.shape)
    elements = ctx.shape.expert_rows() * ctx.scenario.model.hidden
    assert sum(forward) == pytest.approx(12 * elements)
    assert sum(backward) == pytest.approx(16 * elements)
    assert (len(forward), len(backward)) == (2 * 16 + 1, 4 * 16 + 1)


def test_gpt_oss_bias_in_fp32_under_hybridep_and_none_when_fused():
    """HybridEP casts the probabilities to fp32: r = 4, forward 5 r + n + (r + n) = 28 B, backward
    6 r + 2 n + 2 (r + n) = 40 B per element; TE's op fuser (kernels.grouped_mlp_fusion) keeps the
    bias inside its grouped ops; a model without expert biases has none."""
    ctx = _context("gpt-oss-120b", dtype="bf16", expert_parallel={"dispatcher": "hybridep"})
    forward, backward = bias_kernels(ctx.shape)
    elements = ctx.shape.expert_rows() * ctx.scenario.model.hidden
    assert sum(forward) == pytest.approx(28 * elements)
    assert sum(backward) == pytest.approx(40 * elements)
    fused = _context("gpt-oss-120b", kernels={"fp8_scaling": "mxfp8", "grouped_mlp_fusion": True})
    assert bias_kernels(fused.shape) == ([], [])
    assert bias_kernels(_context(dtype="bf16").shape) == ([], [])


def test_the_passes_are_part_of_the_layers_memory_bound_time():
    """The layer's forward and backward grow by the passes' seconds (one streaming kernel each),
    against the same layer with the router's padding stated (no copies)."""
    ctx = _context()
    aligned = _context(expert_parallel={"fp8_padding": "aligned"})
    passes = expert_pass_seconds(ctx.shape, ctx.compute)
    assert passes[0] > 0.0 and expert_pass_seconds(aligned.shape, aligned.compute) == (0.0, 0.0)
    with_copies = layer_cost(ctx.scenario, ctx.scenario.training.stack, ctx.shape, ctx.compute,
                             ctx.collectives, ctx.layout)
    without = layer_cost(aligned.scenario, aligned.scenario.training.stack, aligned.shape, aligned.compute,
                         aligned.collectives, aligned.layout)
    assert with_copies.forward - without.forward == pytest.approx(passes[0], rel=1e-9)
    assert with_copies.backward - without.backward == pytest.approx(passes[1], rel=1e-9)


def test_router_padding_in_a_log_drafts_aligned_counts():
    """``moe_router_padding_for_fp8`` in a Megatron log becomes ``expert_parallel.fp8_padding:
    aligned``; padding to a capacity is listed for the user to judge."""
    log = read_megatron_log(MIXTRAL_LOG)
    padded = draft_from_log(replace(log, arguments={**log.arguments, "moe_router_padding_for_fp8": True}),
                            "mi325x-platform", 8)
    assert padded.scenario["training"]["stack"]["expert_parallel"]["fp8_padding"] == "aligned"
    capacity = draft_from_log(replace(log, arguments={**log.arguments, "moe_expert_capacity_factor": 1.0,
                                                      "moe_pad_expert_input_to_capacity": True}),
                              "mi325x-platform", 8)
    assert any("moe_pad_expert_input_to_capacity" in item for item in capacity.not_modelled)


def test_recomputing_the_moe_module_re_runs_the_forward_passes():
    """``recompute_modules: [moe]`` re-runs the whole MoE block in backward, the padding copies'
    forward included: the recompute grows by the passes' forward seconds exactly."""
    moe = {"recompute": "selective", "recompute_modules": ["moe"]}
    copies = _context(expert_parallel={"fp8_padding": "copy"}, parallelism=moe)
    aligned = _context(expert_parallel={"fp8_padding": "aligned"}, parallelism=moe)

    def cost(ctx):
        return layer_cost(ctx.scenario, ctx.scenario.training.stack, ctx.shape, ctx.compute,
                          ctx.collectives, ctx.layout)

    forward = expert_pass_seconds(copies.shape, copies.compute)[0]
    assert forward > 0.0
    assert cost(copies).recompute - cost(aligned).recompute == pytest.approx(forward, rel=1e-9)
