"""Megatron-Core's MXFP8 output layer (``kernels.fp8_output_proj``; NVIDIA/Megatron-LM #4825,
``TELMHeadColumnParallelLinear``): the LM head's three GEMMs run at the fp8 rate, its input and
the logits' gradient are quantized, and nothing else moves. Megatron-Core refuses it without fp8
and the MXFP8 recipe (``TransformerConfig.__post_init__``), and so does the scenario check."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.compute import ComputeModel
from simulator.cost.fp8_casts import cast_bytes_per_element
from simulator.cost.layer import head_costs, kernels_time
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.head_kernels import logits_backward, logits_forward


def _mapping(output_proj: bool, scaling: str = "mxfp8", dtype: str = "fp8") -> dict:
    return {"cluster": {"node": "gb300-nvl72", "nodes": 1, "gpus_per_node": 8},
            "model": {"preset": "deepseek-v3", "seq_len": 4096, "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "kernels": {"fp8_scaling": scaling, "fp8_output_proj": output_proj}}},
            "parallelism": {"tp": 1, "pp": 2, "dp": 4, "ep": 4}}


def _context(output_proj: bool):
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(_mapping(output_proj), "<test>", library), library)
    return make_context(session.scenario, session.collectives), session


def test_the_head_gemms_are_fp8_linears_and_its_operands_are_cast():
    """On: one forward and two backward GEMMs, all linear; the forward adds the cast of its
    ``b s h`` input, the backward the cast of the ``b s V`` logits' gradient, each at the recipe's
    bytes per element. Off: the same GEMMs, none linear, no cast bytes."""
    on, _ = _context(True)
    off, _ = _context(False)
    shape, model = on.shape, on.scenario.model
    per_element = cast_bytes_per_element(scenario_stack(on.scenario), on.compute.gpu)
    assert shape.output_proj_cast_bytes == pytest.approx(per_element)
    assert off.shape.output_proj_cast_bytes == 0
    fwd_on, fwd_off = logits_forward(shape), logits_forward(off.shape)
    bwd_on, bwd_off = logits_backward(shape), logits_backward(off.shape)
    assert fwd_on.linear_mask.tolist() == [True] and bwd_on.linear_mask.tolist() == [True, True]
    assert not fwd_off.linear_mask.any() and not bwd_off.linear_mask.any()
    np.testing.assert_array_equal(fwd_on.gemms, fwd_off.gemms)
    np.testing.assert_array_equal(bwd_on.gemms, bwd_off.gemms)
    tokens = shape.tokens
    assert fwd_on.memory_bytes.sum() - fwd_off.memory_bytes.sum() == pytest.approx(
        per_element * tokens * model.hidden)
    assert bwd_on.memory_bytes.sum() - bwd_off.memory_bytes.sum() == pytest.approx(
        per_element * tokens * model.vocab)


def test_the_head_runs_faster_by_at_most_the_fp8_peak_ratio():
    """The head's GEMM time falls by at most the fp8/bf16 peak ratio (2 on Blackwell) and its
    total, casts included, still falls at DeepSeek-V3's shape (vocabulary 129,280)."""
    on, _ = _context(True)
    off, _ = _context(False)
    compute: ComputeModel = on.compute
    fwd_on, fwd_off = head_costs(on.shape, compute)[1], head_costs(off.shape, compute)[1]
    gemm_on = kernels_time(compute, replace(logits_forward(on.shape), memory_bytes=np.zeros(0)))
    gemm_off = kernels_time(compute, replace(logits_forward(off.shape), memory_bytes=np.zeros(0)))
    ratio = compute.peak_flops / compute.half_peak_flops
    assert gemm_off / ratio <= gemm_on * (1 + 1e-9) < gemm_off
    assert fwd_on < fwd_off


def test_only_the_last_stage_gets_faster():
    """With two pipeline stages the head is on the last: its forward and backward per
    microbatch fall, the first stage's do not move, and so does the step."""
    _, session_on = _context(True)
    _, session_off = _context(False)
    on = simulate_step(session_on.scenario, session_on.collectives)
    off = simulate_step(session_off.scenario, session_off.collectives)
    first_on, last_on = on.stages[0], on.stages[-1]
    first_off, last_off = off.stages[0], off.stages[-1]
    assert first_on.forward_s == pytest.approx(first_off.forward_s)
    assert first_on.backward_s == pytest.approx(first_off.backward_s)
    assert last_on.forward_s < last_off.forward_s and last_on.backward_s < last_off.backward_s
    assert np.isfinite(on.step_time_s) and on.step_time_s < off.step_time_s


@pytest.mark.parametrize(("scaling", "dtype"), [("dynamic", "fp8"), ("mxfp8", "bf16")])
def test_megatron_refuses_it_outside_mxfp8(scaling, dtype):
    library = HardwareLibrary()
    with pytest.raises(ConfigError) as err:
        session_from_scenario(scenario_from_mapping(_mapping(True, scaling, dtype), "<test>", library),
                              library)
    assert err.value.key == "training.stack.kernels.fp8_output_proj"
    assert "MXFP8" in str(err.value)


def test_the_last_stage_holds_the_heads_fp8_copies():
    """The MXFP8 head's weight is held as the other TE linears' are (fp8_weight_cache): on the
    last stage its ``V h / t`` elements add a row-wise and a column-wise copy, 1 B each plus one
    E8M0 scale per 32 (2.0625 B per element, bf16 primary weights); the first stage does not move."""
    _, session_on = _context(True)
    _, session_off = _context(False)
    on = simulate_step(session_on.scenario, session_on.collectives)
    off = simulate_step(session_off.scenario, session_off.collectives)
    assert on.stages[0].memory_bytes == pytest.approx(off.stages[0].memory_bytes)
    model, tp = session_on.scenario.model, session_on.scenario.parallelism.tp
    head = model.vocab * model.hidden / tp
    grown = on.stages[-1].memory_bytes - off.stages[-1].memory_bytes
    assert grown == pytest.approx(2 * (1 + 1 / 32) * head)
