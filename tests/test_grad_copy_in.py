"""The kernels that assemble each FSDP unit's gradients before its reduce-scatter
(simulator.cost.sharding.copy_in_bytes_per_param, simulator.engine.pipeline_fsdp.copy_in_seconds):
closed forms per stack, where they apply, and what they add to a step."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.cost.sharding import copy_in_bytes_per_param, gradient_dtype_bytes
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.pipeline_fsdp import copy_in_seconds
from simulator.topology import build_cluster
from simulator.workload.memory import stage_parameters


def _scenario(stack="fsdp", dp_nodes=2, zero=3, pp=1, gb=16, sharding=None, dtype="bf16"):
    spec = stack if sharding is None else {"base": stack, "sharding": sharding}
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": dp_nodes,
                                     "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1, "dtype": dtype, "stack": spec},
            "parallelism": {"tp": 1, "pp": pp, "zero_stage": zero}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


@pytest.mark.parametrize("stack, reduce, expected", [
    ("fsdp", "fp32", 2 * 2 + (2 + 4) + 2 * 4),     # FSDP1 cat + cast + pre-divide: 18 B
    ("fsdp", "param", 2 * 2 + 0 + 2 * 2),          # no cast when the dtypes match: 8 B
    ("fsdp2", "fp32", 2 + 4),                       # FSDP2 chunk_cat, cast included, NCCL averages
    ("fsdp2", "param", 2 + 2),
    ("megatron-core", "fp32", 0.0),                 # not a ZeRO-3 stack: nothing
])
def test_bytes_per_parameter(stack, reduce, expected):
    scenario, _ = _scenario(stack, sharding={"grad_reduce_dtype": reduce})
    prof = scenario_stack(scenario)
    assert copy_in_bytes_per_param(prof, *gradient_dtype_bytes(scenario, prof)) == pytest.approx(expected)


def test_fp32_training_moves_fp32_gradients():
    scenario, _ = _scenario("fsdp2", sharding={"grad_reduce_dtype": "fp32"}, dtype="fp32")
    assert gradient_dtype_bytes(scenario, scenario_stack(scenario)) == (4.0, 4.0)


def test_seconds_per_microbatch_are_the_stage_parameters_at_hbm_rate():
    """Every microbatch reduce-scatters every unit: t_mem(18 P) for P stage parameters; once a
    step (1/m per microbatch) when the stack reduces only the last microbatch."""
    scenario, collectives = _scenario(sharding={"grad_reduce_dtype": "fp32"})
    ctx = make_context(scenario, collectives, 1.0, None)
    params = stage_parameters(scenario.model, scenario.parallelism, scenario.model.layers, True, True)[0]
    expected = float(ctx.compute.memory_time(18.0 * params))
    assert copy_in_seconds(ctx, scenario.model.layers, True, True) == pytest.approx(expected)
    once, collectives = _scenario(sharding={"grad_reduce_dtype": "fp32", "reduce_every_microbatch": False})
    ctx = make_context(once, collectives, 1.0, None)
    assert copy_in_seconds(ctx, once.model.layers, True, True) == pytest.approx(expected / ctx.microbatches)


@pytest.mark.parametrize("arguments, applies", [
    (dict(zero=1), False),                          # ZeRO 1 reduces its buffer in place
    (dict(stack="torchtitan", pp=2), False),        # the deferred reduction prices its own copy-in
    (dict(stack="torchtitan"), True),
])
def test_where_it_applies(arguments, applies):
    scenario, collectives = _scenario(**arguments)
    ctx = make_context(scenario, collectives, 1.0, None)
    layers = scenario.model.layers // scenario.parallelism.pp
    assert (copy_in_seconds(ctx, layers, True, False) > 0.0) == applies


def test_step_grows_by_the_copy_in_of_every_microbatch():
    """pp 1: the stage's backward carries the copy-in once per microbatch, and nothing else
    moves (the sharding exposure is priced from the layers' own compute)."""
    with_copy, collectives = _scenario(sharding={"grad_reduce_dtype": "fp32"})
    without, _ = _scenario(sharding={"grad_reduce_dtype": "fp32", "grad_copy_in": "none",
                                     "predivide": False})
    ctx = make_context(with_copy, collectives, 1.0, None)
    extra = ctx.microbatches * copy_in_seconds(ctx, with_copy.model.layers, True, True)
    a, b = simulate_step(with_copy, collectives), simulate_step(without, collectives)
    assert a.step_time_s - b.step_time_s == pytest.approx(extra, rel=1e-9)
    assert extra > 0.0


def test_later_microbatches_add_their_shard_to_the_accumulated_gradient():
    """Reducing every microbatch, each reduce-scatter's output is added to the shard the earlier
    ones left (read both, write one: ``3 r / s`` per parameter) on ``m - 1`` of the ``m``
    microbatches: FSDP2 at global batch 64 on 16 ranks, m = 4, fp32 reduction (r = 4, s = 16):
    ``t_mem((6 + 12 / 16 x 3 / 4) P)`` per microbatch."""
    scenario, collectives = _scenario("fsdp2", gb=64, sharding={"grad_reduce_dtype": "fp32"})
    ctx = make_context(scenario, collectives, 1.0, None)
    assert ctx.microbatches == 4
    params = stage_parameters(scenario.model, scenario.parallelism, scenario.model.layers, True, True)[0]
    expected = float(ctx.compute.memory_time((2 + 4 + 3 * 4 / 16 * 3 / 4) * params))
    assert copy_in_seconds(ctx, scenario.model.layers, True, True) == pytest.approx(expected, rel=1e-12)
