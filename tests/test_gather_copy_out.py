"""FSDP2's copy of each all-gather's output into the unsharded parameters
(simulator.engine.pipeline_fsdp.copy_out_seconds, stack ``sharding.gather_copy_out``): the closed
form ``t_mem(2 n P (f / m + b))``, which stacks run it, and what it adds to a step."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.pipeline_fsdp import copy_out_seconds
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


def _seconds(scenario, collectives, gathers: float = 1.0) -> tuple[float, float]:
    """(copy-out seconds per microbatch, ``t_mem(4 P g)``: the stage's ``P`` parameters at 2
    bytes, read and written ``g`` times)."""
    ctx = make_context(scenario, collectives, 1.0, None)
    layers = scenario.model.layers
    params = stage_parameters(scenario.model, scenario.parallelism, layers, True, True)[0]
    return copy_out_seconds(ctx, layers, True, True), float(ctx.compute.memory_time(4.0 * params * gathers))


@pytest.mark.parametrize("sharding, gathers", [
    (None, 2.0),                                             # forward + backward re-gather, bf16
    ({"reshard_after_forward": False}, 1.0 / 2.0),           # one forward gather a step (m = 2)
    ({"param_gather_dtype": "fp8"}, 1.0),                    # 2 gathers of 1-byte elements
])
def test_closed_form(sharding, gathers):
    """``t_mem(2 n P (f / m + b))``: n = 2 (bf16) or 1 (fp8); f = m, b = 1 when blocks are
    resharded after forward, else f = 1, b = 0; global batch 16 on 8 GPUs, m = 2."""
    got, expected = _seconds(*_scenario(sharding=sharding), gathers)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("stack, zero, applies", [
    ("fsdp2", 3, True), ("torchtitan", 3, True),
    ("fsdp", 3, False),          # FSDP1 gathers into the flat parameter in place
    ("fsdp2", 1, False),         # nothing is gathered without ZeRO-3
])
def test_which_stacks_copy(stack, zero, applies):
    got, _ = _seconds(*_scenario(stack, zero=zero))
    assert (got > 0.0) == applies


def test_step_grows_by_the_copy_out_of_every_microbatch():
    """One stage: the backward carries the copies once per microbatch and nothing else moves."""
    with_copy, collectives = _scenario()
    without, _ = _scenario(sharding={"gather_copy_out": False})
    ctx = make_context(with_copy, collectives, 1.0, None)
    extra = ctx.microbatches * copy_out_seconds(ctx, with_copy.model.layers, True, True)
    a, b = simulate_step(with_copy, collectives), simulate_step(without, collectives)
    assert a.step_time_s - b.step_time_s == pytest.approx(extra, rel=1e-9)
    assert extra > 0.0
