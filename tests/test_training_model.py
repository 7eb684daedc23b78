"""Issue #3 invariants: FLOP counts, pipeline bubbles, schedule replay, engine monotonicity."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from des_checks import assert_des_brackets_analytical
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import replay_1f1b

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.flops import step_flops
from simulator.topology import build_cluster
from simulator.workload.pipeline import bubble_fraction, pipeline_time

ROOT = Path(__file__).resolve().parent.parent


def _scenario(model="gpt3-175b", recompute="none", nodes=2, tp=8, pp=2, gb=16, **par):
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": nodes,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": model}, "training": {"global_batch": gb, "micro_batch": 1},
            "parallelism": {"tp": tp, "pp": pp, "recompute": recompute, **par}}
    return scenario_from_mapping(data, "<test>")


@pytest.mark.parametrize("preset", ["gpt3-175b", "megatron-1.7b", "megatron-1t"])
def test_model_flops_equal_narayanan_formulas(preset):
    """72 B s l h^2 (1 + s/6h + V/12lh) and, with full recompute, 96 ... (1 + s/6h + V/16lh)."""
    m = MODEL_PRESETS[preset]
    b, s, n_layers, h, v = 16, m["seq_len"], m["layers"], m["hidden"], m["vocab"]
    model, _ = step_flops(_scenario(preset, gb=b))
    base = b * s * n_layers * h**2
    assert model == pytest.approx(72 * base * (1 + s / (6 * h) + v / (12 * n_layers * h)), rel=1e-12)
    _, hardware = step_flops(_scenario(preset, recompute="full", gb=b))
    assert hardware == pytest.approx(96 * base * (1 + s / (6 * h) + v / (16 * n_layers * h)),
                                     rel=1e-12)


@pytest.mark.parametrize(("dtype", "async_tp"), [("bf16", False), ("fp8", False), ("bf16", True)])
def test_torchtitan_selective_hardware_flops_are_the_matmuls_it_reruns(dtype, async_tp):
    """torchtitan's per-op checkpointing saves attention and every second matmul: it re-runs wk,
    wo and w3, ``2 T (n_kv d h + h^2 + f h)`` per layer, under float8 linears and async TP as in
    bf16 (the policy sees ``aten.mm`` before torchao's subclass and Inductor's fusion;
    docs/research/stack_facts.md section 53)."""
    m = MODEL_PRESETS["llama3-8b"]
    gb, s, h, f, layers = 4, m["seq_len"], m["hidden"], m["ffn_hidden"], m["layers"]
    kv = m["kv_heads"] * h // m["heads"]
    stack = {"base": "torchtitan", "tensor_parallel": {"comm_overlap": async_tp}}
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": gb, "micro_batch": 1, "dtype": dtype, "stack": stack},
            "parallelism": {"tp": 2, "pp": 1, "recompute": "selective"}}
    model, hardware = step_flops(scenario_from_mapping(data, "<test>"))
    expected = layers * 2 * gb * s * (kv * h + h * h + f * h)
    assert hardware - model == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 96), (16, 16)])
def test_uniform_bubble_is_p_minus_1_over_m_plus_p_minus_1(p, m):
    total, bubble = pipeline_time(np.full(p, 3.0), m)
    assert bubble / total == pytest.approx((p - 1) / (m + p - 1), rel=1e-12)
    assert bubble_fraction(p, m) == pytest.approx((p - 1) / (m + p - 1), rel=1e-12)


@pytest.mark.parametrize("v", [2, 3, 4])
def test_interleaving_divides_the_bubble_by_v(v):
    _, plain = pipeline_time(np.full(8, 1.0), 32)
    _, interleaved = pipeline_time(np.full(8, 1.0), 32, chunks=v)
    assert interleaved == pytest.approx(plain / v, rel=1e-12)


@pytest.mark.parametrize("p,m", [(2, 2), (4, 8), (5, 3), (8, 16)])
def test_closed_form_equals_1f1b_replay_for_uniform_stages(p, m):
    f, b = np.full(p, 1.0), np.full(p, 2.0)
    assert pipeline_time(f + b, m)[0] == pytest.approx(replay_1f1b(f, b, m), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.1, 5.0), min_size=2, max_size=6), st.integers(1, 12))
def test_closed_form_bounds_the_1f1b_replay(work, m):
    """For uneven stages the closed form is an upper bound of the replayed critical path."""
    f = np.array(work)
    assert pipeline_time(3 * f, m)[0] >= replay_1f1b(f, 2 * f, m) * (1 - 1e-12)


def _collectives(scenario, bandwidth_scale=1.0):
    library = HardwareLibrary()
    cluster = build_cluster(resolve_cluster(scenario.cluster, library))
    return CollectiveModel(replace(cluster, bandwidth_Bps=cluster.bandwidth_Bps * bandwidth_scale))


@settings(max_examples=8, deadline=None)
@given(scale=st.floats(1.0, 4.0), recompute=st.sampled_from(["none", "full"]),
       pp=st.sampled_from([1, 2]))
def test_more_bandwidth_never_makes_a_step_slower(scale, recompute, pp):
    scenario = _scenario("megatron-7.5b", recompute=recompute, tp=4, pp=pp, gb=32)
    slow = simulate_step(scenario, _collectives(scenario)).step_time_s
    fast = simulate_step(scenario, _collectives(scenario, scale)).step_time_s
    assert fast <= slow * (1 + 1e-12)


@settings(max_examples=8, deadline=None)
@given(speedup=st.floats(1.0, 4.0))
def test_faster_gpus_never_make_a_step_slower(speedup):
    scenario = _scenario("megatron-7.5b", tp=4, pp=2, gb=32)
    collectives = _collectives(scenario)
    slow = simulate_step(scenario, collectives).step_time_s
    fast = simulate_step(scenario, collectives, compute_speedup=speedup).step_time_s
    assert fast <= slow * (1 + 1e-12)


def test_result_has_every_documented_field():
    keys = {"step_time_s", "step_time_p50_s", "step_time_p99_s", "tokens_per_s",
            "model_flops_per_gpu", "hardware_flops_per_gpu", "mfu", "bubble_fraction",
            "comm_exposed_s", "memory_per_gpu_bytes", "fits_in_memory", "gpus"}
    scenario = _scenario("megatron-7.5b", tp=4, pp=2, gb=32)
    data = simulate_step(scenario, _collectives(scenario)).to_json_dict()
    assert keys <= set(data)
    assert data["tokens_per_s"] == pytest.approx(32 * 2048 / data["step_time_s"])
    assert data["mfu"] == pytest.approx(data["model_flops_per_gpu"] / 312e12)


def test_a_model_that_does_not_fit_is_a_result_not_a_crash():
    scenario = _scenario("gpt3-175b", tp=8, pp=2, gb=16)        # 175B on 16 GPUs
    result = simulate_step(scenario, _collectives(scenario))
    assert not result.fits_in_memory and result.memory_per_gpu_bytes > 80 * 2**30


def test_zero3_adds_parameter_gathers_and_frees_memory():
    z1 = _scenario("megatron-7.5b", tp=4, pp=1, gb=32, zero_stage=1)
    z3 = _scenario("megatron-7.5b", tp=4, pp=1, gb=32, zero_stage=3)
    collectives = _collectives(z1)
    r1, r3 = simulate_step(z1, collectives), simulate_step(z3, collectives)
    assert r3.memory_per_gpu_bytes < r1.memory_per_gpu_bytes
    # ZeRO-3's gathers and reduce-scatters are reported under dp, and they are never free
    assert r3.dp_comm_s > 0 and r3.exposed_by_dimension["dp"] > 0
    assert r3.step_time_s >= r1.step_time_s - r1.dp_comm_exposed_s


def test_gpt3_175b_has_174_6_billion_parameters():
    from simulator.config.scenario import ModelConfig
    from simulator.workload.params import parameter_count
    assert round(parameter_count(ModelConfig(**MODEL_PRESETS["gpt3-175b"])) / 1e8) == 1746


@pytest.mark.parametrize("overlap", [False, True])
def test_gradient_sync_starts_with_or_after_the_last_backward(overlap):
    """pp = 1: the stage's last task is the last microbatch's backward, so the exposed
    reduction is ``max(tail + s, sync - backward)`` with overlap_grad_reduce (``tail``: the
    last bucket, which cannot start before the backward ends; ``s`` what NCCL's SMs and HBM
    draw take from that backward, simulator/engine/dp_overlap_sms.py and dp_beside.py) and
    ``sync`` without; the next forward also waits for the first weight bucket with
    overlap_param_gather, and loses pace to the later buckets' gathers."""
    from simulator.collectives.group import Group
    from simulator.cost.nccl_sms import nccl_sm_share
    from simulator.engine.context import make_context
    from simulator.engine.dp_beside import stage_gather_shares, stage_reduce_shares
    from simulator.engine.gradient_sync import (
        all_gradient_collectives,
        first_param_bucket_time,
        last_bucket_times,
        rest_gather_seconds,
    )

    scenario = _scenario("megatron-7.5b", nodes=4, tp=8, pp=1, gb=32, overlap_grad_reduce=overlap)
    collectives = _collectives(scenario)
    result = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    tail = last_bucket_times(ctx, all_gradient_collectives(ctx))[0]
    first_bucket = first_param_bucket_time(ctx)
    forward, rest = result.stages[0].forward_s, rest_gather_seconds(ctx)[0]
    # dp_comm_s holds the reductions and, under overlap_param_gather, the whole weight gather
    sync, backward = result.dp_comm_s - (first_bucket + rest), result.stages[0].backward_s
    f = nccl_sm_share(Group(collectives.cluster, ctx.layout.stage_dp_groups(0)[0]))
    f_r, f_g = stage_reduce_shares(ctx)[0], stage_gather_shares(ctx)[0]   # with the HBM draw
    assert f_r >= f and f_g >= f
    slowed = f_r * min(sync, backward / (1 - f_r))      # NCCL's SMs and HBM beside the reduction
    gathers = f_g * min(rest, forward / (1 - f_g))      # and beside the later buckets' gathers
    expected = (max(tail + slowed, sync - backward) if overlap else sync) + first_bucket + gathers
    assert (tail > 0) == overlap and 0 < first_bucket < sync
    assert sync > 0 and result.dp_comm_exposed_s == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert result.step_time_s == pytest.approx(
        result.pipeline_s + expected + result.optimizer_s, rel=1e-12)


@pytest.mark.parametrize(("nodes", "parallelism"), [
    (1, {"tp": 4, "cp": 2, "ep": 2}),              # expert group = the two cp ranks of a replica
    (4, {"tp": 4, "pp": 2, "cp": 2, "ep": 4}),     # spans two replicas' cp ranks
    (4, {"tp": 2, "cp": 4, "ep": 2}),              # two expert groups inside each replica
])
def test_experts_with_context_parallelism_run_in_both_engines(nodes, parallelism):
    """Megatron-Core folds context-parallel ranks into expert data parallelism: an expert
    group is ``ep`` consecutive (cp, dp) ranks. Every such layout runs, and the DES equals
    the analytical step with contention off and is never faster with it on."""
    from simulator.config import scenario_from_mapping
    from simulator.pipeline import session_from_scenario

    data = {"name": "moe-cp", "cluster": {"node": "dgx-h100", "nodes": nodes},
            "model": {"preset": "mixtral-8x7b"}, "training": {"global_batch": 16},
            "parallelism": parallelism, "simulate": {"fidelity": "per-rank"}}
    session = session_from_scenario(scenario_from_mapping(data, "moe-cp.yaml"))
    assert_des_brackets_analytical(session.scenario, session.collectives)


def test_expert_groups_fold_context_ranks_in_megatron_order():
    """tp 4, cp 2, dp 1, ep 2 on 8 GPUs: the expert group of tp rank 0 is GPUs 0 and 4
    (its two context-parallel ranks), of tp rank 3 GPUs 3 and 7."""
    from simulator.workload.layout import Layout

    layout = Layout(tp=4, pp=1, dp=1, cp=2, ep=2)
    assert layout.stage_expert_groups(0) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert layout.expert_replicas == 1


def test_expert_groups_that_cut_context_groups_are_refused():
    from simulator.config import scenario_from_mapping
    from simulator.errors import ConfigError

    data = {"name": "x", "cluster": {"node": "dgx-h100", "nodes": 1, "gpus_per_node": 6},
            "model": {"preset": "mixtral-8x7b", "experts": 12}, "training": {"global_batch": 6},
            "parallelism": {"cp": 2, "ep": 3}}
    with pytest.raises(ConfigError, match="ep a multiple or a divisor of cp"):
        scenario_from_mapping(data, "x.yaml")


@pytest.mark.parametrize("name", ["gpt3-175b-1024xA100", "deepseek-v3-256xB200", "llama31-405b-256xGB300",
                                  "whatif-powersgd-64xA100", "llama3-8b-64xH100"])
def test_data_parallel_time_holds_its_exposed_part(name):
    """``dp_comm_s`` holds every part of ``dp_comm_exposed_s`` but the compute NCCL's SMs slow
    (``dp_sm_slowdown_s``): the reductions, ZeRO-3's traffic, the sharded optimizer's weight
    gathers (overlapped or not) and a compressor's kernels. The DeepSeek-V3, GB300 and PowerSGD
    examples once reported less data-parallel time than its exposed part (the overlapped
    gathers and PowerSGD's kernels were left out of it)."""
    from simulator.pipeline import run_scenario

    result = run_scenario(name)
    assert result.dp_comm_s > 0
    assert result.dp_comm_exposed_s - result.dp_sm_slowdown_s <= result.dp_comm_s * (1 + 1e-12)
