"""FSDP gradients under torch.distributed.pipelining (simulator.engine.pipeline_fsdp):
closed forms, the flags' reach, and the DES against the analytical engine."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.cost.sharding import unit_comm
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.des import simulate_steps_des
from simulator.engine.pipeline_fsdp import (
    accumulation_bytes_per_param,
    accumulation_seconds,
    deferred_reduce_collectives,
)
from simulator.topology import build_cluster
from simulator.workload.memory import scenario_split, stage_parameters


def _scenario(stack="torchtitan", pp=4, gb=32):
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": 4,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1, "stack": stack},
            "parallelism": {"tp": 2, "pp": pp, "zero_stage": 3},
            "simulate": {"engine": "des", "steps": 1}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def test_accumulation_bytes_follow_fsdp2s_upcast_then_add():
    """First backward: read bf16, write fp32 (6 B); later ones: read fp32 + bf16, write fp32 (10 B)."""
    assert accumulation_bytes_per_param(2.0, 4.0, 8) == pytest.approx((6 + 7 * 10) / 8)
    assert accumulation_bytes_per_param(2.0, 4.0, 1) == pytest.approx(6.0)
    assert accumulation_bytes_per_param(2.0, 2.0, 4) == pytest.approx(3 * 2 * 3 / 4)


def test_deferred_tail_is_every_layers_reduce_scatter_plus_the_copy_in():
    """tail_i = (P_i / P_layer) c_rs + t_mem(2 r P_i), r = 4 (fp32 reduce)."""
    scenario, collectives = _scenario()
    ctx = make_context(scenario, collectives, 1.0, None)
    tails = [stage[0].time_s for stage in deferred_reduce_collectives(ctx)]
    par, model, stack = scenario.parallelism, scenario.model, scenario_stack(scenario)
    layer = stage_parameters(model, par, 1, False, False)[0]
    split = scenario_split(model, par)
    for i, layers in enumerate(split):
        params = stage_parameters(model, par, layers, i == 0, i == len(split) - 1)[0]
        reduce = unit_comm(scenario, stack, collectives, ctx.layout, i).reduce
        expected = params / layer * reduce + float(ctx.compute.memory_time(8.0 * params))
        assert tails[i] == pytest.approx(expected, rel=1e-9)


def test_flags_off_for_plain_fsdp2_and_without_pipeline():
    scenario, collectives = _scenario(stack="fsdp2")
    ctx = make_context(scenario, collectives, 1.0, None)
    assert deferred_reduce_collectives(ctx) is None
    assert accumulation_seconds(ctx, 8, False, False) == 0.0
    flat, collectives = _scenario(pp=1)
    ctx = make_context(flat, collectives, 1.0, None)
    assert deferred_reduce_collectives(ctx) is None
    assert accumulation_seconds(ctx, 8, False, False) == 0.0


def test_step_ends_with_the_latest_stage_tail():
    """With the tails, the exposed sync is max_i(finish_i + tail_i) - pipe, and the step
    grows by at least the first stage's tail minus the one reduce the old model exposed (the
    same stack with per-microbatch reduce-scatters and no copy-in or accumulation kernels)."""
    scenario, collectives = _scenario()
    with_tails = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives, 1.0, None)
    tails = [stage[0].time_s for stage in deferred_reduce_collectives(ctx)]
    assert with_tails.dp_comm_exposed_s >= float(np.min(tails)) - 1e-12
    old_model = {"base": "torchtitan", "sharding": {"grad_copy_in": "none"},
                 "pipeline": {"deferred_reduce_scatter": False, "unsharded_grad_accumulation": False}}
    plain = simulate_step(_scenario(stack=old_model)[0], collectives)
    assert with_tails.step_time_s > plain.step_time_s


def test_without_contention_des_equals_analytical_under_the_torch_pipeline():
    scenario, collectives = _scenario()
    analytical = simulate_step(scenario, collectives).step_time_s
    des = simulate_steps_des(scenario, collectives, contention=False).step_time_s
    assert des == pytest.approx(analytical, rel=1e-9)
