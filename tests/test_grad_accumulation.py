"""DeepSpeed BF16_Optimizer mechanics (stack ``megatron-deepspeed-2022``): the fp32 gradient
accumulation by upcast-and-add every microbatch (simulator/cost/grad_accumulation.py) and the
all-reduce of the whole gradient before the sharded optimizer step
(``data_parallel.sharded_reduce``, simulator/engine/gradient_sync.py): closed forms, where they
apply, and what they add to a step."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.stack import GradAccumulation
from simulator.cost import CollectiveModel
from simulator.cost.grad_accumulation import (
    accumulation_bytes_per_param,
    upcast_accumulation_bytes_per_param,
    upcast_accumulation_seconds,
)
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.topology import build_cluster
from simulator.workload.memory import stage_parameters


def _scenario(data_parallel=None, zero=1, pp=2, stack="megatron-deepspeed-2022", dtype="bf16"):
    spec = stack if data_parallel is None else {"base": stack, "data_parallel": data_parallel}
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": 4,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": 32, "micro_batch": 2, "dtype": dtype, "stack": spec},
            "parallelism": {"tp": 4, "pp": pp, "zero_stage": zero}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def test_bytes_per_parameter_closed_form():
    """g + 4 r: the cast's read (g) and write (r), the add's two reads and one write (3 r):
    18 bytes for bf16 gradients into fp32, 10 into a bf16 buffer."""
    assert upcast_accumulation_bytes_per_param(2.0, 4.0) == pytest.approx(18.0)
    assert upcast_accumulation_bytes_per_param(2.0, 2.0) == pytest.approx(10.0)


def test_in_place_add_closed_form():
    """Megatron-Core's DDP hook without gradient_accumulation_fusion, ``main_grad.add_(grad)``:
    g + 2 r, the bf16 gradient and the fp32 buffer read, the buffer written (10 bytes); the
    fused GEMM adds nothing."""
    assert accumulation_bytes_per_param(GradAccumulation.ADD, 2.0, 4.0) == pytest.approx(10.0)
    assert accumulation_bytes_per_param(GradAccumulation.UPCAST_ADD, 2.0, 4.0) == pytest.approx(18.0)
    assert accumulation_bytes_per_param(GradAccumulation.FUSED, 2.0, 4.0) == 0.0


def test_in_place_add_counts_a_mixture_of_experts_local_experts():
    """Every parameter the stage holds is accumulated, its experts' included."""
    data = {"name": "moe", "cluster": {"node": "dgx-h100", "nodes": 2},
            "model": {"preset": "mixtral-8x7b", "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 1,
                         "stack": {"base": "megatron-core", "data_parallel": {"grad_accumulation": "add"}}},
            "parallelism": {"tp": 1, "pp": 1, "dp": 16, "ep": 8}}
    scenario = scenario_from_mapping(data, "<test>")
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    ctx = make_context(scenario, collectives, 1.0, None)
    params = sum(stage_parameters(scenario.model, scenario.parallelism, 4, True, True))
    expected = float(ctx.compute.memory_time(10.0 * params))
    assert upcast_accumulation_seconds(ctx, 4, True, True) == pytest.approx(expected)


def test_seconds_per_microbatch_are_the_stage_parameters_at_hbm_rate():
    scenario, collectives = _scenario()
    ctx = make_context(scenario, collectives, 1.0, None)
    layers = scenario.model.layers // 2
    params = stage_parameters(scenario.model, scenario.parallelism, layers, True, False)[0]
    expected = float(ctx.compute.memory_time(18.0 * params))
    assert upcast_accumulation_seconds(ctx, layers, True, False) == pytest.approx(expected)


@pytest.mark.parametrize("data_parallel, zero, stack", [
    ({"grad_accumulation": "fused"}, 1, "megatron-deepspeed-2022"),   # fused: nothing extra
    (None, 3, "megatron-deepspeed-2022"),                              # ZeRO-3 accumulates its own way
    (None, 1, "megatron-core"),                                        # the default is fused
])
def test_nothing_where_it_does_not_apply(data_parallel, zero, stack):
    scenario, collectives = _scenario(data_parallel, zero=zero, stack=stack)
    ctx = make_context(scenario, collectives, 1.0, None)
    assert upcast_accumulation_seconds(ctx, 8, True, False) == 0.0


def test_accumulation_lengthens_the_step_by_its_microbatch_cost():
    """The upcast-and-add runs in each microbatch's backward: the step grows by at least
    m x its per-microbatch seconds on the busiest stage (the pipeline's steady state)."""
    fused, collectives = _scenario({"grad_accumulation": "fused"})
    upcast, _ = _scenario()
    ctx = make_context(upcast, collectives, 1.0, None)
    per_microbatch = upcast_accumulation_seconds(ctx, upcast.model.layers // 2, True, False)
    grown = simulate_step(upcast, collectives).step_time_s - simulate_step(fused, collectives).step_time_s
    assert per_microbatch > 0.0
    assert grown >= ctx.microbatches * per_microbatch * 0.99


def test_sharded_reduce_all_reduce_then_gather():
    """DeepSpeed's BF16_Optimizer: the whole gradient all-reduced, then the updated weights
    all-gathered; Megatron's distributed optimizer reduce-scatters instead."""
    deepspeed, collectives = _scenario()
    ops = [c.op for c in all_gradient_collectives(make_context(deepspeed, collectives, 1.0, None))[0]]
    assert ops == [Op.ALL_REDUCE, Op.ALL_GATHER]
    scattered, collectives = _scenario({"sharded_reduce": "reduce_scatter"})
    ops = [c.op for c in all_gradient_collectives(make_context(scattered, collectives, 1.0, None))[0]]
    assert ops == [Op.REDUCE_SCATTER, Op.ALL_GATHER]
