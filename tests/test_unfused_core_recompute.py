"""Selective recompute of an unfused attention core re-runs its softmax and dropout with its two
batched GEMMs (Megatron-LM's ``ParallelAttention._checkpointed_attention_forward`` wraps the
whole ``CoreAttention``), checked against the one published per-layer split: Korthikanti et al.
2022 (arXiv:2205.05198), Table 4, a layer of GPT 22B on 8 A100 (tp 8, micro batch 4, sequence
2,048): the backward takes 11.9 ms without recompute and 13.2 ms with selective recompute (11.8
and 13.1 with sequence parallelism), so the recompute costs 1.3 ms, each time given to 0.1 ms."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.engine.context import make_context
from simulator.engine.layer_kinds import model_layer_cost
from simulator.pipeline import session_from_scenario

SELECTIVE_22B = (Path(__file__).parents[1] / "validation" / "scenarios" / "megatron_selective"
                 / "gpt-22b-8gpu-selective.yaml")
TABLE4_RECOMPUTE_S = 13.2e-3 - 11.9e-3


def _layer(changes: dict):
    mapping = yaml.safe_load(SELECTIVE_22B.read_text())
    mapping["parallelism"].update(changes)
    session = session_from_scenario(scenario_from_mapping(mapping, str(SELECTIVE_22B)))
    ctx = make_context(session.scenario, session.collectives)
    return model_layer_cost(ctx, scenario_stack(session.scenario))


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_selective_recompute_of_the_unfused_core_costs_what_table_4_measured(sequence_parallel):
    """1.3 ms measured (two times rounded to 0.1 ms: 1.2-1.4); 15% either side of 1.3 holds the
    rounding and the A100 constants' own error on this layer (its forward reads 6% slow). The
    two GEMMs alone (the price before the softmax and dropout were counted) gave 0.48 ms."""
    layer = _layer({"recompute": "selective", "sequence_parallel": sequence_parallel})
    assert layer.recompute == pytest.approx(TABLE4_RECOMPUTE_S, rel=0.15)
    assert layer.tp_recompute == 0.0


def test_core_attn_module_re_runs_the_same_kernels_as_the_stack_selective_recompute():
    """Megatron-Core's ``recompute_modules: [core_attn]`` and the stack's selective recompute
    re-run the same unfused core (both paths count its softmax and dropout)."""
    stack_selective = _layer({"recompute": "selective"})
    core_attn = _layer({"recompute": "selective", "recompute_modules": ["core_attn"]})
    assert core_attn.recompute == pytest.approx(stack_selective.recompute, rel=1e-12)
