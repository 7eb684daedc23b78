"""Every layout that the loader accepts runs (issue: accepted means simulable): drawn over
tp, pp, cp, ep, virtual stages, ZeRO stage, schedule, recompute, stack, node kind, node
count and model preset (dense and MoE), each either refused cleanly (ConfigError) or
simulated by both engines into a result that passes the invariants, with the discrete-event
engine equal to the analytical one when contention and noise are off. A bounded number of
examples runs here; `python benchmarks/bench_layout_property.py` runs a longer search."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.config import scenario_from_mapping
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario

PRESETS = ["megatron-1.7b", "llama3-8b", "mixtral-8x7b", "megatron-7.5b"]
NODES = ["dgx-a100-80gb", "dgx-h100", "mi300x-platform", "pcie-a100x8"]
STACKS = ["megatron-core", "megatron-lm-2021", "fsdp2", "torchtitan", "deepspeed", "nemo",
          "megatron-deepspeed-2022"]


@st.composite
def scenarios(draw) -> dict:
    powers = st.sampled_from([1, 2, 4, 8])
    preset = draw(st.sampled_from(PRESETS))
    experts = preset.startswith("mixtral")
    parallelism = {"tp": draw(powers), "pp": draw(st.sampled_from([1, 2, 4])),
                   "cp": draw(st.sampled_from([1, 2])),
                   "ep": draw(st.sampled_from([1, 2, 4])) if experts else 1,
                   "zero_stage": draw(st.integers(0, 3)),
                   "recompute": draw(st.sampled_from(["none", "selective", "full"])),
                   "sequence_parallel": draw(st.booleans())}
    if draw(st.booleans()):
        parallelism |= {"schedule": "interleaved-1f1b", "virtual_stages": draw(st.sampled_from([2, 3]))}
    else:
        parallelism["schedule"] = draw(st.sampled_from(["1f1b", "gpipe"]))
    return {"name": "drawn",
            "cluster": {"node": draw(st.sampled_from(NODES)), "nodes": draw(st.sampled_from([1, 2, 4])),
                        "fabric": {"topology": draw(st.sampled_from(["fat-tree", "rail-optimized"]))}},
            "model": {"preset": preset},
            "training": {"global_batch": draw(st.sampled_from([8, 16, 32, 64])),
                         "micro_batch": draw(st.sampled_from([1, 2])),
                         "dtype": draw(st.sampled_from(["bf16", "fp8"])),
                         "stack": draw(st.sampled_from(STACKS))},
            "parallelism": parallelism}


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(scenarios())
def test_an_accepted_layout_runs_in_both_engines(data):
    try:
        scenario = scenario_from_mapping(data, "drawn.yaml")
    except ConfigError:
        return                                  # a clean refusal is a valid outcome
    session = session_from_scenario(scenario)
    analytical = simulate_step(scenario, session.collectives)          # invariants checked inside
    des = simulate_steps_des(scenario, session.collectives, steps=1, contention=False)
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
