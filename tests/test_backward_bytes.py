"""What the backward's memory-bound kernels move (simulator/workload/backward_bytes.py), checked
against the one published per-layer split of a forward and a backward: Korthikanti et al. 2022
(arXiv:2205.05198), Table 4, one layer of GPT 22B on 8 A100 (tp 8, micro batch 4, sequence
2,048, unfused attention, no recompute): forward 7.7 ms and backward 11.9 ms, 7.2 and 11.8 with
sequence parallelism. Each time is rounded to 0.1 ms, so their ratio is known to about 1%.

The ratio does not depend on the A100's GEMM rate, which the forward and the backward share; the
model's layer is about 7% slow in both (that part is the rate, calibrated on whole steps). With
every memory-bound kernel moving twice its forward's bytes backward the ratio read 1.659 and
1.712 (+7.4%, +4.5%)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.config.scenario import Mlp
from simulator.engine.context import make_context
from simulator.engine.layer_kinds import model_layer_cost
from simulator.pipeline import session_from_scenario
from simulator.workload.backward_bytes import activation_ratio, residual_backward_act
from simulator.workload.layer_shape import Kernels, backward_memory

LAYER_22B = (Path(__file__).parents[1] / "validation" / "scenarios" / "megatron_selective"
             / "gpt-22b-8gpu-selective.yaml")
TABLE4 = {False: (7.7e-3, 11.9e-3), True: (7.2e-3, 11.8e-3)}   # sequence parallel: (forward, backward)


def _layer(sequence_parallel: bool):
    mapping = yaml.safe_load(LAYER_22B.read_text())
    mapping["parallelism"].update({"recompute": "none", "sequence_parallel": sequence_parallel})
    session = session_from_scenario(scenario_from_mapping(mapping, str(LAYER_22B)))
    ctx = make_context(session.scenario, session.collectives)
    return model_layer_cost(ctx, scenario_stack(session.scenario))


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_backward_over_forward_of_a_22b_layer_is_table_4s(sequence_parallel):
    """3% holds the rounding (1%) and the GEMM shapes' own spread between the passes."""
    layer = _layer(sequence_parallel)
    forward, backward = layer.forward + layer.tp_forward, layer.backward + layer.tp_backward
    measured_forward, measured_backward = TABLE4[sequence_parallel]
    assert backward / forward == pytest.approx(measured_backward / measured_forward, rel=0.03)


def test_general_rule_is_twice_and_ratios_split_into_at_most_two_kernels():
    """Kernels without ratios keep two kernels of the forward's bytes each; a ratio above 1
    gives a second kernel of the rest, a ratio of 1 or below one kernel; the bytes add up to
    ratio x forward."""
    forward = [10.0, 20.0, 30.0]
    plain = Kernels(np.zeros((0, 4)), np.array(forward))
    assert plain.backward().memory_bytes.tolist() == [10.0, 20.0, 30.0, 10.0, 20.0, 30.0]
    ratios = [1.5, 1.0, 6.5 / 7.5]
    backward = backward_memory(forward, ratios)
    assert len(backward) == 4
    assert backward.sum() == pytest.approx(float(np.dot(forward, ratios)))


def test_ratios_follow_the_bytes_each_kernel_reads_and_writes():
    """SwiGLU: read gate, up and the gradient, write both gradients (5) over read two, write one
    (3); a residual site without dropout moves only the fork's accumulation, with it the
    dropout's and the bias's gradients too (6.5 activation bytes)."""
    assert activation_ratio(Mlp.SWIGLU, fused=True, weighted=False) == pytest.approx(5 / 3)
    assert activation_ratio(Mlp.GELU, fused=True, weighted=False) == 2.0
    assert activation_ratio(Mlp.SWIGLU, fused=False, weighted=False) == 2.0
    assert residual_backward_act(dropout=False) == 3.0
    assert residual_backward_act(dropout=True) == 6.5


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_22b_layer_is_slow_by_the_same_share_in_both_passes(sequence_parallel):
    """The known miss, guarded both ways: at the A100's SC21-calibrated GEMM fraction (0.72) the
    layer reads 6-9% slower than Table 4 in the forward and the backward alike (forward 8.22 /
    7.68 ms against 7.7 / 7.2, backward 12.94 / 12.60 against 11.9 / 11.8), the share of a whole
    step the calibration carries for time the model does not price (docs/validation.md,
    megascale_megatron). A fix of that time, refitted, moves both towards 1 together."""
    layer = _layer(sequence_parallel)
    measured_forward, measured_backward = TABLE4[sequence_parallel]
    forward = (layer.forward + layer.tp_forward) / measured_forward
    backward = (layer.backward + layer.tp_backward) / measured_backward
    assert 1.03 < forward < 1.10 and 1.03 < backward < 1.10
    assert abs(forward - backward) < 0.03
