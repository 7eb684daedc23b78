"""The kernels around each FSDP all-gather (simulator.engine.pipeline_fsdp.gather_copy_seconds):
FSDP2's copy of the gathered bytes into the unsharded parameters (``sharding.gather_copy_out``)
and the cast and copy of the fp32 shard before the gather (``sharding.gather_copy_in``): the
closed forms, which stacks run them, and what they add to a step."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.pipeline_fsdp import gather_bytes_per_param, gather_copy_seconds
from simulator.topology import build_cluster
from simulator.workload.memory import stage_parameters


def _scenario(stack="fsdp2", sharding=None, dtype="bf16", zero=3, gb=16):
    spec = stack if sharding is None else {"base": stack, "sharding": sharding}
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1, "dtype": dtype, "stack": spec},
            "parallelism": {"tp": 1, "pp": 1, "zero_stage": zero}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def _seconds(scenario, collectives, per_gather: float = 0.0, gathers: float = 1.0) -> tuple[float, float]:
    """(the gathers' kernel seconds per microbatch, ``t_mem(c P g)``: the stage's ``P``
    parameters at ``c`` = ``per_gather`` bytes, ``g`` gathers per microbatch)."""
    ctx = make_context(scenario, collectives, 1.0, None)
    layers = scenario.model.layers
    params = stage_parameters(scenario.model, scenario.parallelism, layers, True, True)[0]
    return (gather_copy_seconds(ctx, layers, True, True),
            float(ctx.compute.memory_time(per_gather * params * gathers)))


SHARDS = 8                       # one 8-GPU server


@pytest.mark.parametrize("sharding, per_gather, gathers", [
    # FSDP2, bf16 gathers over 8 ranks: copy-out 2 x 2 on the unit, cast (4 + 2) and copy (2 x 2) on the shard
    (None, 2 * 2 + (4 + 2 + 2 * 2) / SHARDS, 2.0),                # forward + backward re-gather
    ({"reshard_after_forward": False}, 2 * 2 + 10 / SHARDS, 1.0 / 2.0),   # one forward gather a step (m = 2)
    ({"param_gather_dtype": "fp8"}, 2 * 1 + (2 * 1) / SHARDS, 2.0),       # fp8: the cast is the fp8 casts'
    ({"gather_copy_in": "none"}, 2 * 2, 2.0),                      # copy-out alone
    ({"gather_copy_out": False, "gather_copy_in": "cast"}, (4 + 2) / SHARDS, 2.0),   # FSDP1's cast alone
])
def test_closed_form(sharding, per_gather, gathers):
    """``t_mem(c P (f / m + b))``: f = m, b = 1 when blocks are resharded after forward, else
    f = 1, b = 0; global batch 16 on 8 GPUs, m = 2."""
    got, expected = _seconds(*_scenario(sharding=sharding), per_gather, gathers)
    assert got == pytest.approx(expected, rel=1e-12)


def test_bytes_per_parameter_per_gather():
    """The per-gather count on its own: fp32 training gathers fp32 (no cast), FSDP1 bf16 over 96 ranks."""
    scenario, _ = _scenario("fsdp2", sharding={"param_gather_dtype": "fp32"})
    assert gather_bytes_per_param(scenario_stack(scenario), Dtype.BF16, 8) == pytest.approx(2 * 4 + 2 * 4 / 8)
    fsdp1, _ = _scenario("fsdp")
    assert gather_bytes_per_param(scenario_stack(fsdp1), Dtype.BF16, 96) == pytest.approx((4 + 2) / 96)


@pytest.mark.parametrize("stack, zero, applies", [
    ("fsdp2", 3, True), ("torchtitan", 3, True),
    ("fsdp", 3, True),           # FSDP1 casts its shard (and gathers into the flat parameter in place)
    ("deepspeed", 3, False),     # 16-bit parameters gathered as stored
    ("fsdp2", 1, False),         # nothing is gathered without ZeRO-3
])
def test_which_stacks_copy(stack, zero, applies):
    got, _ = _seconds(*_scenario(stack, zero=zero))
    assert (got > 0.0) == applies


def test_step_grows_by_the_gather_kernels_of_every_microbatch():
    """One stage: the backward carries the kernels once per microbatch and nothing else moves."""
    with_copy, collectives = _scenario()
    without, _ = _scenario(sharding={"gather_copy_out": False, "gather_copy_in": "none"})
    ctx = make_context(with_copy, collectives, 1.0, None)
    extra = ctx.microbatches * gather_copy_seconds(ctx, with_copy.model.layers, True, True)
    a, b = simulate_step(with_copy, collectives), simulate_step(without, collectives)
    assert a.step_time_s - b.step_time_s == pytest.approx(extra, rel=1e-9)
    assert extra > 0.0
