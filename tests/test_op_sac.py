"""torchtitan's per-op selective checkpointing (``recompute.selective: every_second_matmul``):
every second ``aten.mm`` of a block re-runs in backward, under float8 linears and async TP as
in 16 bit, because the policy decides on ``aten.mm`` before torchao's ``Float8TrainingTensor``
turns it into ``torch._scaled_mm`` and before Inductor fuses async TP's collectives
(docs/research/stack_facts.md section 53). Closed form: the re-run seconds as the three
matmuls' kernels plus, under fp8, their inputs' casts (the re-run FLOPs:
tests/test_training_model.py)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.fp8_casts import AMAX_BYTES, cast_bytes_per_element
from simulator.cost.layer import kernels_time, layer_cost, op_sac_recomputed
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.transformer import layer_forward

LIBRARY = HardwareLibrary()


def _scenario(dtype: str, tp: int = 1, async_tp: bool = False):
    stack = {"base": "torchtitan", "tensor_parallel": {"comm_overlap": async_tp}}
    return scenario_from_mapping(
        {"cluster": {"node": "dgx-h100", "nodes": 1},
         "model": {"preset": "llama3-8b", "seq_len": 8192},
         "training": {"global_batch": 16, "micro_batch": 2, "dtype": dtype, "stack": stack},
         "parallelism": {"tp": tp, "dp": 8 // tp, "sequence_parallel": tp > 1, "recompute": "selective"}},
        "<test>", LIBRARY)


def _context(scenario):
    session = session_from_scenario(scenario, LIBRARY)
    return make_context(session.scenario, session.collectives)


def test_under_float8_the_three_matmuls_re_run_with_their_input_casts():
    """Recompute seconds = the three matmuls at the fp8 rate with every memory-bound op, plus one
    cast of each re-run linear's 16-bit input (``M K`` elements) without its amax pass (the
    policy keeps ``aten.max``): the scale and the cast, two launches, one gap beyond the priced
    kernel; and less than re-running every linear (the former reading)."""
    ctx = _context(_scenario("fp8"))
    stack = ctx.scenario.training.stack
    cost = layer_cost(ctx.scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout)
    layer = layer_forward(ctx.shape)
    again, casts = op_sac_recomputed(stack, ctx.shape, ctx.compute, layer)
    g = again.gemms
    elements = g[:, 0] * g[:, 2] * g[:, 3]
    per_element = cast_bytes_per_element(stack, ctx.compute.gpu) - AMAX_BYTES     # dynamic scaling
    expected_casts = (float(ctx.compute.memory_time(per_element * elements).sum())
                      + np.count_nonzero(elements) * ctx.compute.overhead_s)
    assert casts == pytest.approx(expected_casts, rel=1e-12)
    assert cost.recompute == pytest.approx(kernels_time(ctx.compute, again) + casts, rel=1e-12)
    assert cost.recompute < cost.forward - ctx.compute.kernels_attention_time(layer)


def test_async_tp_re_runs_only_the_gathers_fused_with_their_re_run_matmul():
    """With async TP the re-run all-gathers are fused with wk and w3 alone; the reduce-scatters
    are kept, so the recompute's exposed TP seconds stay below the forward's."""
    ctx = _context(_scenario("bf16", tp=8, async_tp=True))
    stack = ctx.scenario.training.stack
    cost = layer_cost(ctx.scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout)
    assert 0.0 <= cost.tp_recompute < cost.tp_forward
