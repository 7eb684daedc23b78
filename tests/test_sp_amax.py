"""Current scaling's amax all-reduce over the tensor-parallel group (simulator/cost/amax_reduction.py
``sp_amax_seconds``): TransformerEngine's sequence-parallel casts wait for a 4-byte MAX
all-reduce between the amax and the scale kernels, two per dense layer and pass."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.amax_reduction import AMAX_VALUE_BYTES, sp_amax_casts, sp_amax_seconds
from simulator.cost.layer import layer_cost
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario

LIBRARY = HardwareLibrary()


def _context(scaling: str = "dynamic", sequence_parallel: bool = True, experts: int = 1,
             amax: bool = True):
    stack = {"base": "megatron-core", "kernels": {"fp8_scaling": scaling, "fp8_sp_amax_reduction": amax}}
    model = {"preset": "llama3-8b", "seq_len": 4096}
    if experts > 1:
        model.update(experts=experts, top_k=2)
    scenario = scenario_from_mapping(
        {"cluster": {"node": "dgx-h100", "nodes": 1}, "model": model,
         "training": {"global_batch": 8, "micro_batch": 1, "dtype": "fp8", "stack": stack},
         "parallelism": {"tp": 4, "dp": 2, "sequence_parallel": sequence_parallel,
                         **({"ep": 2} if experts > 1 else {})}},
        "<test>", LIBRARY)
    session = session_from_scenario(scenario, LIBRARY)
    return make_context(session.scenario, session.collectives)


def _layer(ctx):
    return layer_cost(ctx.scenario, ctx.scenario.training.stack, ctx.shape, ctx.compute,
                      ctx.collectives, ctx.layout)


def test_a_dense_layer_waits_for_two_amax_all_reduces_per_pass():
    """Forward (QKV's and fc1's inputs) and backward (proj's and fc2's output gradients):
    2 AR(tp group, 4 B) each, added to the layer's tensor-parallel time, against the same
    layer with the stack's flag off (closed form)."""
    ctx = _context()
    without = _layer(_context(amax=False))
    one = ctx.collectives.concurrent_time(Op.ALL_REDUCE, [ctx.layout.tp_group()], AMAX_VALUE_BYTES)[0]
    assert 0.0 < one < 1e-4
    cost = _layer(ctx)
    assert cost.tp_forward - without.tp_forward == pytest.approx(2 * one, rel=1e-12)
    assert cost.tp_backward - without.tp_backward == pytest.approx(2 * one, rel=1e-12)
    assert cost.forward == pytest.approx(without.forward, rel=1e-12)


@pytest.mark.parametrize(("kwargs", "casts"), [
    ({}, 2),
    ({"experts": 8}, 1),                    # routed experts take dispatched tokens
    ({"scaling": "delayed"}, 0),            # the history's amax, reduced per region instead
    ({"sequence_parallel": False}, 0),      # nothing is cast before a gather
    ({"amax": False}, 0),
])
def test_only_current_scaling_casts_before_a_sequence_parallel_gather_reduce(kwargs, casts):
    ctx = _context(**kwargs)
    stack = ctx.scenario.training.stack
    assert sp_amax_casts(ctx.scenario, stack, ctx.shape, ctx.layout.tp) == casts
    seconds = sp_amax_seconds(ctx.scenario, stack, ctx.shape, ctx.collectives, ctx.layout)
    assert (seconds > 0.0) == (casts > 0)
