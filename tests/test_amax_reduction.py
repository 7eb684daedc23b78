"""TransformerEngine's delayed-scaling amax all-reduce (simulator/cost/amax_reduction.py):
its group, its count per microbatch and model chunk, and when it is absent."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.stack import AmaxReduction
from simulator.cost.amax_reduction import AMAX_VALUE_BYTES, GEMMS_PER_LAYER, amax_group
from simulator.engine.analytical import simulate_step
from simulator.pipeline import session_from_scenario
from simulator.workload.layout import Layout


def _scenario(dtype: str = "fp8", amax: str | None = None, scaling: str = "delayed", v: int = 2) -> dict:
    kernels = {"fp8_scaling": scaling} | ({"fp8_amax_reduction": amax} if amax else {})
    return {"cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn_hidden": 5632,
                      "mlp": "swiglu", "seq_len": 2048, "vocab": 32000},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": dtype,
                         "stack": {"base": "megatron-core", "kernels": kernels}},
            "parallelism": {"tp": 2, "pp": 2, "cp": 2, "sequence_parallel": True,
                            "schedule": "interleaved-1f1b", "virtual_stages": v}}


def _run(data: dict):
    library = HardwareLibrary()
    scenario = scenario_from_mapping(data, "<test>", library)
    session = session_from_scenario(scenario, library)
    return simulate_step(scenario, session.collectives), session


def test_groups_are_the_stage_or_its_tensor_and_context_ranks():
    """tp 2 x cp 2 x dp 2 x pp 2 (Megatron order tp, cp, dp, pp): stage 0's TP x DP x CP group is
    its 8 GPUs, the TP x CP group the first 4."""
    layout = Layout(2, 2, 2, 2, 1)
    assert amax_group(layout, AmaxReduction.TP_DP_CP) == tuple(range(8))
    assert amax_group(layout, AmaxReduction.TP_CP) == (0, 1, 2, 3)


def test_each_chunk_runs_one_forward_and_one_backward_all_reduce_per_microbatch():
    """Megatron-Core's default (tp_dp_cp): a stage's forward and backward per microbatch grow
    by v x AR(stage, 2 x 4 x 4 B x layers per chunk) and v x AR(stage, 4 x 4 B x layers per
    chunk) over the same scenario with the reduction off; the breakdown reports their sum."""
    with_amax, session = _run(_scenario())
    without, _ = _run(_scenario(amax="none"))
    layout = Layout(2, 2, 2, 2, 1)
    group = amax_group(layout, AmaxReduction.TP_DP_CP)
    per_chunk = GEMMS_PER_LAYER * 2       # 8 layers on 2 stages x 2 chunks
    fwd = session.collectives.concurrent_time(Op.ALL_REDUCE, [group], 2 * per_chunk * AMAX_VALUE_BYTES)[0]
    bwd = session.collectives.concurrent_time(Op.ALL_REDUCE, [group], per_chunk * AMAX_VALUE_BYTES)[0]
    a, b = with_amax.stages[0], without.stages[0]
    assert a.forward_s - b.forward_s == pytest.approx(2 * fwd, rel=1e-9)
    assert a.backward_s - b.backward_s == pytest.approx(2 * bwd, rel=1e-9)
    assert a.amax_comm_s == pytest.approx(2 * (fwd + bwd), rel=1e-9) and b.amax_comm_s == 0.0
    assert with_amax.step_time_s > without.step_time_s


@pytest.mark.parametrize("change", [{"dtype": "bf16"}, {"scaling": "dynamic"}])
def test_no_all_reduce_without_fp8_delayed_scaling(change):
    """bf16 has no amax; dynamic (current) scaling computes each tensor's amax before its cast
    and keeps no history to agree on."""
    result, _ = _run(_scenario(**change))
    assert all(s.amax_comm_s == 0.0 for s in result.stages)
