"""ZeRO-3 / FSDP (simulator/cost/sharding.py): the exposure formula by prefetch depth, the
per-unit collectives, hybrid sharding, and the stack's dtypes."""

from __future__ import annotations

import re

import pytest

from simulator.collectives import Group, Op
from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.sharding import (
    _ListCopies,
    _pass_exposed,
    backward_gather_seconds,
    sharding_cost,
    unit_comm,
)
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.params import layer_parameters, layer_tensor_sizes


def _fsdp(shard=None, stack="fsdp2", nodes=4, global_batch=None, **parallelism):
    par = {"tp": 1, **parallelism}
    if shard:
        par["shard_size"] = shard
    data = {"name": "fsdp", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                        "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": global_batch or 8 * nodes, "stack": stack},
            "parallelism": par}
    session = session_from_scenario(scenario_from_mapping(data, "fsdp.yaml"))
    return session.scenario, session.collectives


def test_no_prefetch_exposes_every_collective_and_prefetch_hides_all_but_the_ends():
    """prefetch 0: L c; prefetch >= 1: first gather + last reduce + (L-1) max(0, c - C)."""
    assert _pass_exposed(10, 2.0, 1.0, 0.5, prefetch=0) == pytest.approx(15.0)
    assert _pass_exposed(10, 2.0, 1.0, 0.5, prefetch=1) == pytest.approx(1.5)
    assert _pass_exposed(10, 1.0, 1.0, 0.5, prefetch=2) == pytest.approx(1.5 + 9 * 0.5)


def test_a_unit_gathers_its_layer_in_the_gather_dtype_over_all_data_parallel_ranks():
    """fsdp2 gathers a Llama block in bf16 over the 32 ranks (one coalesced all-gather)."""
    scenario, collectives = _fsdp()
    stack, layout = scenario_stack(scenario), make_context(scenario, collectives).layout
    nbytes = 2 * layer_parameters(scenario.model)
    alone = collectives.sweep(Op.ALL_GATHER, None, Group(collectives.cluster, tuple(range(32))),
                              [nbytes]).time_s[0]
    assert unit_comm(scenario, stack, collectives, layout, 0).gather == pytest.approx(alone, rel=1e-12)


_NO_LIST_BUILDING = {"list_narrow_host_us": 0.0, "list_view_host_us": 0.0, "list_zeros_host_us": 0.0,
                     "gather_zero_fill": False}
"""The list loops' host time and the gather's zero fill off, to isolate the per-rank copies."""


def _list_and_plain(host_us):
    """DeepSpeed 2021's profile with ``sharding.list_copy_host_us`` set, and without the
    tensor-list collectives, on a 32-rank Llama 3 8B."""
    scenario, collectives = _fsdp(stack="deepspeed-2021")
    stack, layout = scenario_stack(scenario), make_context(scenario, collectives).layout
    assert stack.sharding.list_collectives and layout.dp == 32
    listed = stack.model_copy(update={"sharding": stack.sharding.model_copy(
        update={"list_copy_host_us": host_us, **_NO_LIST_BUILDING})})
    plain = stack.model_copy(update={"sharding": stack.sharding.model_copy(
        update={"list_collectives": False})})
    return scenario, collectives, layout, listed, plain


def test_list_collectives_add_one_copy_per_rank_to_every_collective():
    """With a free host, each of a unit's per-parameter collectives over r ranks gains r
    device copies of n / r bytes, r (t_k + t_m) + 2 n / B (each copy a kernel's gap and a
    memory-bound kernel's fixed time; closed form against the same profile without them); the
    gathers in the param dtype, the reduce-scatters too."""
    scenario, collectives, layout, listed, plain = _list_and_plain(0.0)
    with_copies = unit_comm(scenario, listed, collectives, layout, 0)
    without = unit_comm(scenario, plain, collectives, layout, 0)
    gpu = collectives.cluster.hw.gpu
    rate = gpu.hbm_bandwidth_Bps * gpu.compute.memory_bandwidth_fraction
    tensors = layer_tensor_sizes(scenario.model, 1)
    def copies(sizes):
        per_kernel = (gpu.compute.kernel_overhead_us + gpu.compute.memory_fixed_us) * 1e-6
        return sum(32 * per_kernel + 2 * 2.0 * n / rate for n in sizes)
    gathered = [n for n in tensors if n >= 1e5]       # the RMSNorm weights persist
    assert len(gathered) == len(tensors) - 2
    assert with_copies.gather - without.gather == pytest.approx(copies(gathered), rel=1e-9)
    assert with_copies.per_step_gather - without.per_step_gather == pytest.approx(
        copies([n for n in tensors if n < 1e5]), rel=1e-9)
    assert with_copies.reduce - without.reduce == pytest.approx(copies(tensors), rel=1e-9)


def test_a_slow_host_bounds_each_list_collective_by_its_copies_issue_time():
    """A host that takes 1 ms to issue each copy: the reduce-scatter's copies are issued
    before NCCL's kernel (r h + t_c each), the all-gather's behind it (max(t_c + r g, r h),
    here r h = 32 ms, longer than any gather of a Llama 3 8B weight), so both grow by the
    host's time and the gather no longer pays its communication (the RMSNorm weights, under
    the persistence threshold, are not gathered per pass)."""
    scenario, collectives, layout, listed, plain = _list_and_plain(1000.0)
    slow = unit_comm(scenario, listed, collectives, layout, 0)
    without = unit_comm(scenario, plain, collectives, layout, 0)
    tensors = layer_tensor_sizes(scenario.model, 1)
    assert slow.reduce - without.reduce == pytest.approx(len(tensors) * 32 * 1e-3, rel=1e-9)
    assert slow.gather == pytest.approx(sum(n >= 1e5 for n in tensors) * 32 * 1e-3, rel=1e-9)


def test_building_the_lists_costs_the_host_per_rank_and_the_gather_zero_fills_first():
    """DeepSpeed 2021 builds each list in a Python loop before issuing it: one narrow per rank
    for an all-gather, behind the zero fill of the whole flat tensor (its bytes written once at
    the sustained HBM rate plus one kernel's gap and fixed time); a view and a narrow per rank for a
    reduce-scatter of a tensor that splits evenly (closed forms against the profile with the
    copies alone)."""
    scenario, collectives, layout, copies_only, _ = _list_and_plain(9.0)
    stack = scenario_stack(scenario)
    assert stack.sharding.gather_zero_fill and stack.sharding.list_narrow_host_us == 4.0
    full = unit_comm(scenario, stack, collectives, layout, 0)
    base = unit_comm(scenario, copies_only, collectives, layout, 0)
    gpu = collectives.cluster.hw.gpu
    rate = gpu.hbm_bandwidth_Bps * gpu.compute.memory_bandwidth_fraction
    tensors = layer_tensor_sizes(scenario.model, 1)
    gathered = [n for n in tensors if n >= 1e5]
    assert all(n % 32 == 0 for n in tensors)            # no padded ranks on 32
    per_kernel = (gpu.compute.kernel_overhead_us + gpu.compute.memory_fixed_us) * 1e-6
    fills = sum(per_kernel + 2.0 * n / rate for n in gathered)
    assert full.gather - base.gather == pytest.approx(len(gathered) * 32 * 4e-6 + fills, rel=1e-9)
    assert full.reduce - base.reduce == pytest.approx(len(tensors) * 32 * (1e-6 + 4e-6), rel=1e-9)


@pytest.mark.parametrize(("elements", "ranks", "inside"), [
    (20_480, 2_240, 2_048),     # GPT 530B's bias on 2,240 ranks: shares of 10, 192 pads
    (20_480, 1_120, 1_077),     # shares of 19: 43 pads
    (20_480, 640, 640),         # shares of 32: none
    (12_288, 1_536, 1_536),     # GPT 175B's: shares of 8, none
])
def test_a_reduce_scatter_list_pads_the_ranks_past_the_gradients_end(elements, ranks, inside):
    """``_reduce_scatter_gradient`` splits N elements in shares of ceil(N / r): the
    floor(N / share) ranks inside the gradient take a view and a narrow, the rest a
    torch.zeros each: k (v_v + v_n) + (r - k) z, in fp16 (2 B per element)."""
    scenario, collectives, _, _, _ = _list_and_plain(9.0)
    stack = scenario_stack(scenario)
    copies = _ListCopies.of(stack, make_context(scenario, collectives).compute, 2.0)
    expected = inside * 5e-6 + (ranks - inside) * 23e-6
    assert copies.reduce_list_seconds(2.0 * elements, ranks) == pytest.approx(expected, rel=1e-12)


def test_hybrid_sharding_gathers_inside_a_server_and_all_reduces_shards_across():
    """shard_size 8 on 8-GPU servers: the gather is one server's NVLink all-gather; the
    reduction adds an all-reduce of 1/8 of the unit across the 4 servers; memory grows
    because the model state is split 8 ways instead of 32."""
    full, collectives = _fsdp()
    hybrid, _ = _fsdp(shard=8)
    stack, layout = scenario_stack(hybrid), make_context(hybrid, collectives).layout
    nbytes = 2 * layer_parameters(hybrid.model)
    server = collectives.sweep(Op.ALL_GATHER, None, Group(collectives.cluster, tuple(range(8))),
                               [nbytes]).time_s[0]
    comm = unit_comm(hybrid, stack, collectives, layout, 0)
    assert comm.gather == pytest.approx(server, rel=1e-12)
    assert comm.gather < unit_comm(full, stack, collectives, layout, 0).gather
    r_full, r_hybrid = simulate_step(full, collectives), simulate_step(hybrid, collectives)
    assert r_hybrid.memory_per_gpu_bytes > r_full.memory_per_gpu_bytes
    assert r_hybrid.dp_comm_s > 0


@pytest.mark.parametrize(("parallelism", "expected"), [
    ({"shard_size": 5}, "does not divide dp*cp"),
    ({"shard_size": 1}, "shards nothing"),
    ({"shard_size": 8, "zero_stage": 1}, "needs zero_stage 3"),
])
def test_bad_shard_sizes_are_refused(parallelism, expected):
    data = {"name": "x", "cluster": {"node": "dgx-h100", "nodes": 4},
            "model": {"preset": "llama3-8b"}, "training": {"global_batch": 32, "stack": "fsdp2"},
            "parallelism": parallelism}
    with pytest.raises(ConfigError, match=re.escape(expected)):
        scenario_from_mapping(data, "x.yaml")


def test_zero3_time_is_reported_under_data_parallel_and_grows_with_scale():
    """Fixed global batch, 16 then 64 GPUs, no prefetch (every collective exposed): each
    microbatch gathers and reduces the same bytes per unit, but over a group four times
    larger (more ring steps, more of them across servers), so the share of the step ZeRO-3
    takes grows and throughput per GPU falls."""
    stack = {"base": "fsdp2", "sharding": {"prefetch": 0}}
    small, c_small = _fsdp(nodes=2, stack=stack, global_batch=64)
    big, c_big = _fsdp(nodes=8, stack=stack, global_batch=64)
    r_small, r_big = simulate_step(small, c_small), simulate_step(big, c_big)
    share = [r.exposed_by_dimension["dp"] / r.step_time_s for r in (r_small, r_big)]
    assert 0 < share[0] < share[1]
    assert r_big.tokens_per_s / 64 < r_small.tokens_per_s / 16


def _zero3_des(fabric: dict, fidelity: str = "per-rank"):
    data = {"name": "z3", "cluster": {"node": "dgx-a100-80gb", "nodes": 4, "fabric": fabric},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": 64, "micro_batch": 2, "stack": "fsdp2"},
            "parallelism": {"tp": 1, "pp": 2}, "simulate": {"engine": "des", "fidelity": fidelity}}
    session = session_from_scenario(scenario_from_mapping(data, "z3.yaml"))
    return session.scenario, session.collectives


@pytest.mark.parametrize("fidelity", ["tp-collapsed", "per-rank", "per-transfer"])
def test_zero3_traffic_replayed_alone_gives_the_analytical_step(fidelity):
    """One switch: the replayed gathers and reductions meet nothing they were not priced
    with, so every task takes its analytical duration, with contention on or off."""
    from simulator.engine.des import simulate_steps_des

    scenario, collectives = _zero3_des({"topology": "single-switch", "link": "ib-hdr"}, fidelity)
    analytical = simulate_step(scenario, collectives).step_time_s
    for contention in (False, True):
        des = simulate_steps_des(scenario, collectives, steps=1, contention=contention).step_time_s
        assert des == pytest.approx(analytical, rel=1e-9)


def test_zero3_traffic_meets_other_traffic_on_oversubscribed_uplinks(monkeypatch):
    """Radix-16 fat-tree at 3:1, two pipeline stages: the stages' gathers and reductions
    (and the pipeline sends) share leaf uplinks, so the replayed ZeRO-3 traffic slows the
    step beyond what the same replay without ZeRO-3 flows gives, and beyond the analytical
    step."""
    from dataclasses import replace

    import simulator.engine.des as des

    scenario, collectives = _zero3_des({"topology": "fat-tree", "link": "ib-hdr",
                                        "switch_radix": 16, "oversubscription": 3.0})
    analytical = simulate_step(scenario, collectives).step_time_s
    with_flows = des.simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    plan = des.step_plan
    monkeypatch.setattr(des, "step_plan", lambda ctx, base, c: replace(plan(ctx, base, c), sharding=()))
    without = des.simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    assert analytical < without < with_flows


@pytest.mark.parametrize(("reduce_every_microbatch", "at_least_gib", "at_most_gib"),
                         [(None, 0.0, 2.0), (False, 29.0, 31.0)])
def test_megatron_core_zero3_reduce_scatters_every_microbatch(reduce_every_microbatch, at_least_gib,
                                                              at_most_gib):
    """Megatron-Core's torch FSDP2 wrapper (--use-torch-fsdp2) has a no-op no_sync, so each
    microbatch's backward reduce-scatters and no unsharded gradients outlive it: with 8
    microbatches on 32 GPUs Llama 3 8B keeps well under 2 GiB of gradients a GPU. Accumulating
    unsharded fp32 gradients instead (FSDP2 under no_sync) would hold the whole model's,
    8.03e9 x 4 B = 29.9 GiB."""
    stack = {"base": "megatron-core"}
    if reduce_every_microbatch is not None:
        stack["sharding"] = {"reduce_every_microbatch": reduce_every_microbatch, "grad_reduce_dtype": "fp32"}
    scenario, collectives = _fsdp(stack=stack, global_batch=256, zero_stage=3)
    gradients = simulate_step(scenario, collectives).stages[0].memory["gradients"] / 2**30
    assert at_least_gib <= gradients <= at_most_gib


def _mixtral(zero_stage: int, nodes: int, ep: int = 8):
    data = {"name": "moe", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                       "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "mixtral-8x7b"},
            "training": {"global_batch": 64 * nodes, "micro_batch": 1},
            "parallelism": {"tp": 1, "pp": 8, "ep": ep, "zero_stage": zero_stage, "recompute": "full"}}
    session = session_from_scenario(scenario_from_mapping(data, "moe.yaml"))
    return session.scenario, session.collectives


@pytest.mark.parametrize(("shard", "gathered"), [(8, 0), (16, 1), (64, 1)])
def test_a_zero3_unit_gathers_only_the_ranks_own_experts(shard, gathered):
    """Mixtral 8x7B at ep 8: a layer's non-expert weights (attention 2 h q + 2 h kv, norms,
    router: 41,984,000) plus, when the experts' data-parallel group (shard / ep ranks) has
    more than one rank, this rank's 8 / 8 = 1 expert (3 h f = 176,160,768); with one rank
    the expert is resident and nothing is gathered."""
    from simulator.workload.unsharded import unit_parameters
    scenario, _ = _mixtral(3, 8)
    par = scenario.parallelism.model_copy(update={"ep": 8})
    dense, unit = unit_parameters(scenario.model, par, shard)
    h, f, kv = 4096, 14336, 1024
    assert dense == 2 * h * h + 2 * h * kv + 2 * h + 8 * h
    assert unit == dense + gathered * 3 * h * f


def test_moe_zero3_holds_less_than_zero2():
    """Mixtral 8x7B on pp 8 x dp 8 (ep 8): each expert lives on one rank, so ZeRO-3 shards the
    dense weights and gathers only them; its peak stays under ZeRO-2's (before 2026-11-28 every
    unit gathered all 8 experts: 6.8 GiB of weights against ZeRO-2's 1.9)."""
    peaks = {z: simulate_step(*_mixtral(z, 8)).memory_per_gpu_bytes for z in (2, 3)}
    assert peaks[3] < peaks[2]


@pytest.mark.parametrize("nodes, expert_ranks", [(8, 1), (16, 2)])
def test_moe_zero3_units_gather_experts_over_their_own_groups(nodes, expert_ranks):
    """Mixtral at pp 8 x dp 8 (or 16) x ep 8: a unit's dense weights are gathered over the
    data-parallel shard group and its expert over the expert-data-parallel group (dp / ep
    ranks: none with one rank), each one collective of its own (unit: layer), priced on those
    groups: the unit's gather is exactly the sum of the two."""
    scenario, collectives = _mixtral(3, nodes)
    ctx = make_context(scenario, collectives)
    lay, stack = ctx.layout, scenario_stack(scenario)
    comm = unit_comm(scenario, stack, collectives, lay, 0)
    h, f, kv = 4096, 14336, 1024
    dense, expert = (2 * h * h + 2 * h * kv + 2 * h + 8 * h) * 2.0, 3 * h * f * 2.0     # bf16
    priced = collectives.concurrent_terms(Op.ALL_GATHER, lay.stage_shard_groups(0), dense)
    expected = priced.time(dense).item()
    if expert_ranks > 1:
        groups = lay.stage_expert_dp_groups(0)
        assert {len(g) for g in groups} == {expert_ranks}
        expected += collectives.concurrent_terms(Op.ALL_GATHER, groups, expert).time(expert).item()
    assert comm.gather == pytest.approx(expected, rel=1e-9)


def _deepspeed_unit(**sharding):
    """Modern DeepSpeed's per-tensor unit on a 32-rank Llama 3 8B with ``sharding`` set."""
    scenario, collectives = _fsdp(stack="deepspeed")
    stack, layout = scenario_stack(scenario), make_context(scenario, collectives).layout
    stack = stack.model_copy(update={"sharding": stack.sharding.model_copy(update=sharding)})
    return unit_comm(scenario, stack, collectives, layout, 0), scenario, stack


def test_persistent_tensors_leave_the_passes_for_one_gather_a_step():
    """Under the persistence threshold a tensor is gathered once per step, not per pass: the
    two RMSNorm weights (4,096 elements) at the default 1e5, everything at 1e9."""
    none, *_ = _deepspeed_unit(persistence_threshold_params=0.0)
    norms, *_ = _deepspeed_unit()
    every, scenario, stack = _deepspeed_unit(persistence_threshold_params=1e9)
    assert none.per_step_gather == 0.0 and every.gather == 0.0
    assert norms.gather + norms.per_step_gather == pytest.approx(none.gather, rel=1e-12)
    assert 0.0 < norms.per_step_gather < 0.1 * none.gather      # two latency-bound gathers
    assert every.per_step_gather == pytest.approx(none.gather, rel=1e-12)
    assert every.reduce == none.reduce                  # their gradients are still reduced
    cost = sharding_cost(scenario, stack, every, 10, 1.0, 2.0, 4)
    assert cost.comm_per_step == pytest.approx(10 * (every.per_step_gather + 4 * every.reduce), rel=1e-12)


def test_reuse_distance_regathers_the_tensors_far_from_their_backward():
    """Full recompute: tensor i is gathered again for backward when twice the layer's later
    tensors reach the limit. Llama 3 8B: w2 (58.7M) is last, w3 has 2 x 58.7M after it:
    a 100M limit regathers all but w2, a 200M one all but w2 and w3 (the same size), 0 all,
    none without a limit."""
    full, *_ = _deepspeed_unit(max_reuse_distance_params=0.0)
    hundred, *_ = _deepspeed_unit(max_reuse_distance_params=1e8)
    two_hundred, *_ = _deepspeed_unit(max_reuse_distance_params=2e8)
    unlimited, *_ = _deepspeed_unit(max_reuse_distance_params=None)
    assert full.recompute_regather == pytest.approx(full.gather, rel=1e-12)
    assert unlimited.recompute_regather == 0.0
    w2 = full.gather - hundred.recompute_regather
    assert w2 > 0.0
    assert full.gather - two_hundred.recompute_regather == pytest.approx(2 * w2, rel=1e-9)


def test_the_regathered_tensors_are_paid_only_under_full_recompute():
    """backward gather = regathers x gather + full_recompute_share x recompute_regather."""
    unit, scenario, stack = _deepspeed_unit(max_reuse_distance_params=0.0)
    par = scenario.parallelism
    full = scenario.model_copy(update={"parallelism": par.model_copy(update={"recompute": "full"})})
    assert backward_gather_seconds(scenario, stack, unit, 1.0) == pytest.approx(unit.gather, rel=1e-12)
    assert backward_gather_seconds(full, stack, unit, 1.0) == pytest.approx(2 * unit.gather, rel=1e-12)
