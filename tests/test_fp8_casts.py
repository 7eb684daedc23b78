"""fp8 weight casts (simulator.cost.fp8_casts): where each stack makes a weight's fp8 copy,
checked against the closed forms of the module docstring."""

from __future__ import annotations

import pytest

from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.fp8_casts import (
    AMAX_BYTES,
    FP8_CAST_BYTES,
    GATHER_CAST_BYTES,
    TRANSPOSE_BYTES,
    cast_bytes_per_element,
    cast_shard,
    fp8_cast_times,
    step_microbatches,
    weight_cast_bytes,
)
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.transformer import layer_forward

WEIGHTS = 1.0e9


def _scenario(stack, zero_stage=1, recompute="none", dp=8, global_batch=64):
    data = {"name": "fp8", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "llama3-8b", "seq_len": 4096},
            "training": {"global_batch": global_batch, "micro_batch": 1, "dtype": "fp8", "stack": stack},
            "parallelism": {"dp": dp, "zero_stage": zero_stage, "recompute": recompute}}
    return scenario_from_mapping(data, "fp8.yaml")


def _weight_bytes(stack, **kw):
    scenario = _scenario(stack, **kw)
    ctx = make_context(scenario, session_from_scenario(scenario).collectives)
    return weight_cast_bytes(scenario, scenario_stack(scenario), ctx.layout, WEIGHTS), ctx


def test_megatron_caches_the_weight_cast_over_the_step():
    """TE under Megatron-Core (is_first_microbatch): one cast per step, W (4 [+2]) / m per
    microbatch; 64 sequences over dp 8 is m = 8."""
    (fwd, bwd), ctx = _weight_bytes("megatron-core")
    assert ctx.microbatches == step_microbatches(ctx.scenario, ctx.layout) == 8
    assert (fwd, bwd) == (WEIGHTS * FP8_CAST_BYTES / 8, 0.0)
    (fwd, _), _ = _weight_bytes({"base": "megatron-core", "kernels": {"fp8_scaling": "dynamic"}})
    assert fwd == WEIGHTS * (FP8_CAST_BYTES + AMAX_BYTES) / 8


def test_torchao_casts_the_whole_weight_every_forward():
    """torchao Float8Linear (dynamic scaling) without fp8 all-gather: W (4 + 2) per microbatch."""
    (fwd, bwd), _ = _weight_bytes("fsdp2", zero_stage=3)
    assert (fwd, bwd) == (WEIGHTS * (FP8_CAST_BYTES + AMAX_BYTES), 0.0)


@pytest.mark.parametrize(("recompute", "regathers"), [("none", 1), ("full", 1)])
def test_fp8_all_gather_casts_the_shard_per_gather(recompute, regathers):
    """torchtitan with float8 all-gather: each gather casts the 1/8 shard (3 B per element,
    scale precomputed), forward once and backward once more after resharding (FSDP2 does
    not re-gather for the recompute), and the backward transposes the gathered fp8 weight."""
    stack = {"base": "torchtitan", "sharding": {"param_gather_dtype": "fp8"}}
    (fwd, bwd), _ = _weight_bytes(stack, zero_stage=3, recompute=recompute)
    shard = WEIGHTS * GATHER_CAST_BYTES / 8
    assert fwd == pytest.approx(shard)
    assert bwd == pytest.approx(regathers * shard + WEIGHTS * TRANSPOSE_BYTES)


def test_cached_cast_never_costs_more_and_vanishes_with_many_microbatches():
    """Invariant: the cached cast's per-microbatch time falls as 1/m towards the activation
    casts alone, and never exceeds the uncached one."""
    def forward_cast(stack, global_batch):
        scenario = _scenario(stack, global_batch=global_batch)
        ctx = make_context(scenario, session_from_scenario(scenario).collectives)
        return fp8_cast_times(scenario, scenario_stack(scenario), ctx.compute,
                              layer_forward(ctx.shape), ctx.layout)[0]

    cached = [forward_cast("megatron-core", gb) for gb in (8, 64, 512)]
    uncached = [forward_cast("deepspeed", gb) for gb in (8, 64)]
    assert uncached[0] == cached[0]                       # one microbatch: one cast either way
    assert uncached[1] == uncached[0] > cached[1] > cached[2] > 0.0


def _b200(stack):
    data = {"name": "mx", "cluster": {"node": "dgx-b200", "nodes": 1},
            "model": {"preset": "llama3-8b", "seq_len": 4096},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": "fp8", "stack": stack},
            "parallelism": {"dp": 8}}
    return scenario_from_mapping(data, "mx.yaml")


def test_mxfp8_weight_cast_writes_two_copies_and_their_block_scales():
    """MXFP8: no amax pass, a row-wise and a column-wise copy (1 B each) and one E8M0 byte per 32
    elements for each: W (4 + 2/32) / m per microbatch under Megatron-Core's per-step cache."""
    scenario = _b200({"base": "megatron-core", "kernels": {"fp8_scaling": "mxfp8"}})
    layout = make_context(scenario, session_from_scenario(scenario).collectives).layout
    fwd, bwd = weight_cast_bytes(scenario, scenario_stack(scenario), layout, WEIGHTS)
    assert (fwd, bwd) == (WEIGHTS * (FP8_CAST_BYTES + 2.0 / 32) / 8, 0.0)


def test_mxfp8_casts_cost_less_than_current_scaling_and_more_than_delayed():
    """Per microbatch the casts of a layer's operands move 4 B (delayed), 4 1/16 B (MXFP8) and
    6 B (current scaling, the amax pass) per element: the times keep that order."""
    times = {}
    for scaling in ("delayed", "mxfp8", "dynamic"):
        scenario = _b200({"base": "megatron-core", "kernels": {"fp8_scaling": scaling}})
        ctx = make_context(scenario, session_from_scenario(scenario).collectives)
        fwd = layer_forward(ctx.shape)
        times[scaling] = sum(fp8_cast_times(scenario, scenario_stack(scenario), ctx.compute, fwd, ctx.layout))
    assert times["delayed"] < times["mxfp8"] < times["dynamic"]


@pytest.mark.parametrize(("shared", "expected"), [(0, [0.5, 1, 1, 1]), (2048, [0.5, 1, 0.5, 1, 1, 1])])
def test_fp8_all_gather_casts_the_shard_of_the_gathered_inputs_only(shared, expected):
    """With the fp8 all-gather of sequence shards, the column-parallel linears fed by the
    tensor-parallel gather (QKV; a shared experts' fc1) cast 1/t of their input; the routed
    experts' fc1 takes the dispatcher's 16-bit gather and casts it all."""
    data = {"name": "moe", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "qwen3-30b-a3b", "layers": 4, "shared_expert_ffn": shared},
            "training": {"global_batch": 8, "dtype": "fp8",
                         "stack": {"base": "torchtitan", "tensor_parallel": {"fp8_all_gather": True}}},
            "parallelism": {"tp": 2, "ep": 4, "sequence_parallel": True}}
    scenario = scenario_from_mapping(data, "moe.yaml")
    ctx = make_context(scenario, session_from_scenario(scenario).collectives)
    linears = int(layer_forward(ctx.shape).linear_mask.sum())
    assert cast_shard(scenario, scenario_stack(scenario), ctx.layout, linears).tolist() == expected


@pytest.mark.parametrize(("node", "delayed", "dynamic", "mx"), [
    ("dgx-h100", 4.0, 6.0, None), ("dgx-b200", 3.0, 5.0, 4.0 + 2.0 / 32)])
def test_blackwell_casts_one_copy_for_per_tensor_recipes(node, delayed, dynamic, mx):
    """Hopper's fp8 GEMMs take the TN layout only, so a per-tensor cast also writes the
    transpose (read 2, write 1 + 1); Blackwell's take any layout, one copy (read 2, write 1);
    MXFP8's row-wise and column-wise copies are quantized apart on either (TransformerEngine
    docs, FP8 current scaling and MXFP8, transpose handling)."""
    gpu = scenario_from_mapping({"cluster": {"node": node, "nodes": 1}, "model": {"preset": "llama3-8b"},
                                 "training": {"global_batch": 8}, "parallelism": {}}, "x.yaml")
    library_gpu = session_from_scenario(gpu).collectives.cluster.hw.gpu
    got = [cast_bytes_per_element(_stack(s), library_gpu) for s in ("delayed", "dynamic")]
    assert got == [delayed, dynamic]
    if mx is not None:
        assert cast_bytes_per_element(_stack("mxfp8"), library_gpu) == mx


def _stack(scaling):
    from simulator.config.stack import StackProfile
    return StackProfile(name="t", kernels={"fp8_scaling": scaling})


def test_nvfp4_cast_is_an_amax_pass_and_two_packed_copies():
    """TE's NVFP4Quantizer: an amax pass (read 2), then one fused kernel reading 2 and writing a
    row-wise and a column-wise copy of 4-bit values with an E4M3 scale per 16: 2 + 2 + 2 (0.5 + 1/16)."""
    assert cast_bytes_per_element(_stack("nvfp4")) == pytest.approx(2 + 2 + 2 * (0.5 + 1 / 16))


def test_nvfp4_linears_run_at_the_fp4_peak(tmp_path):
    """On a B200 a linear's GEMM under NVFP4 takes F / (fp4 peak x fp4 fraction x tile and wave
    fill) + the GEMM's fixed time + overhead, with the fp4 peak twice the fp8 one; attention
    stays 16-bit, and MFU is counted against the fp4 peak."""
    from simulator.cost.compute import ComputeModel
    data = {"cluster": {"node": "dgx-b200", "nodes": 1}, "model": {"preset": "llama3-8b", "seq_len": 4096},
            "training": {"global_batch": 64, "dtype": "fp8",
                         "stack": {"base": "megatron-core", "kernels": {"fp8_scaling": "nvfp4"}}},
            "parallelism": {"dp": 8}}
    scenario = scenario_from_mapping(data, "nvfp4.yaml")
    ctx = make_context(scenario, session_from_scenario(scenario).collectives)
    gpu = ctx.compute.gpu
    assert ctx.compute.fp4 and ctx.compute.peak_flops == pytest.approx(2 * gpu.peak_flops("fp8"))
    m, n, k = 4096.0, 14336.0, 4096.0
    expected = 2 * m * n * k / (gpu.peak_flops("fp4") * gpu.clock_fraction * ctx.compute.gemm_efficiency(
        m, n, k, 1, True)) + ctx.compute.gemm_fixed_s + ctx.compute.overhead_s
    assert ctx.compute.gemm_time(m, n, k, 1, True) == pytest.approx(expected, rel=1e-12)
    fp8 = ComputeModel(gpu, ctx.compute.dtype)
    attention_like = fp8.gemm_time(m, n, k, 1, False)
    assert ctx.compute.gemm_time(m, n, k, 1, False) == pytest.approx(attention_like, rel=1e-12)
    assert ctx.compute.gemm_efficiency(m, n, k, 1, True) < fp8.gemm_efficiency(m, n, k, 1, True)


@pytest.mark.parametrize(("node", "stack", "key"), [
    ("dgx-h100", {"kernels": {"fp8_scaling": "nvfp4"}}, "training.stack.kernels.fp8_scaling"),
    ("dgx-b200", {"kernels": {"fp8_scaling": "nvfp4"}, "data_parallel": {"param_gather_dtype": "fp8"}},
     "training.stack.data_parallel.param_gather_dtype"),
    ("dgx-b200", {"data_parallel": {"param_gather_dtype": "fp4"}},
     "training.stack.data_parallel.param_gather_dtype"),
    ("dgx-b200", {"kernels": {"fp8_scaling": "nvfp4"}, "data_parallel": {"grad_reduce_dtype": "fp4"}},
     "training.stack.data_parallel.grad_reduce_dtype")])
def test_nvfp4_mistakes_get_one_message_and_exit_2(tmp_path, capsys, node, stack, key):
    """NVFP4 off Blackwell, fp8 weight gathers under it, fp4 gathers without it, fp4 gradients."""
    import yaml

    from simulator.cli import main
    data = {"cluster": {"node": node, "nodes": 1}, "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 64, "dtype": "fp8", "stack": {"base": "megatron-core", **stack}},
            "parallelism": {"dp": 8}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert key in err and "Traceback" not in err


def test_import_log_maps_nvfp4():
    """``--fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather``: fp8 training with the NVFP4
    recipe and 4-bit weight gathers."""
    from dataclasses import replace
    from pathlib import Path

    from simulator.measure.draft import draft_from_log
    from simulator.measure.megatron_log import read_megatron_log
    log = read_megatron_log(Path(__file__).resolve().parents[1] / "validation" / "training_logs"
                            / "primus-megatron_llama2-7b_8x8-mi325x.log.gz")
    args = {**log.arguments, "fp4": "e2m1", "fp4_recipe": "nvfp4", "fp4_param_gather": True, "fp8": None}
    draft = draft_from_log(replace(log, arguments=args), "mi325x-platform", 8).scenario
    assert draft["training"]["dtype"] == "fp8"
    assert draft["training"]["stack"]["kernels"]["fp8_scaling"] == "nvfp4"
    assert draft["training"]["stack"]["data_parallel"]["param_gather_dtype"] == "fp4"


@pytest.mark.parametrize(("scaling", "extra_per_cast"), [("dynamic", 2), ("nvfp4", 1), ("mxfp8", 0),
                                                         ("delayed", 0)])
def test_each_cast_launches_its_recipes_quantize_kernels(scaling, extra_per_cast):
    """TransformerEngine's per-tensor current scaling quantizes a tensor in three kernels (amax,
    scale from it, cast: quantizer.cpp), NVFP4 in two (amax, fused cast), MXFP8 and delayed
    scaling in one: a dense layer's four input casts and four output-gradient casts each add
    ``k - 1`` launch overheads to the bytes-only time of one kernel per cast."""
    scenario = _b200({"base": "megatron-core", "kernels": {"fp8_scaling": scaling}})
    stack = scenario_stack(scenario)
    ctx = make_context(scenario, session_from_scenario(scenario).collectives)
    fwd = layer_forward(ctx.shape)
    priced = fp8_cast_times(scenario, stack, ctx.compute, fwd, ctx.layout)
    g = fwd.gemms[fwd.linear_mask]
    per_element = cast_bytes_per_element(stack, ctx.compute.gpu)
    weight_fwd, _ = weight_cast_bytes(scenario, stack, ctx.layout, float((g[:, 1] * g[:, 2]).sum()),
                                      ctx.compute.gpu)
    inputs = per_element * g[:, 0] * cast_shard(scenario, stack, ctx.layout, len(g)) * g[:, 2]
    grads = per_element * g[:, 0] * g[:, 1]
    launches = len(g) * extra_per_cast * ctx.compute.overhead_s
    forward = float(ctx.compute.memory_time([*inputs, weight_fwd]).sum()) + launches
    backward = float(ctx.compute.memory_time(grads).sum()) + launches
    assert priced == pytest.approx((forward, backward), rel=1e-12)
