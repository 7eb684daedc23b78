"""Several pipeline schedules a step (``parallelism.pipeline_flushes``,
simulator/engine/flushes.py): the closed form against the one-schedule step, both engines,
the sweep's path, and the rules of the key."""

from __future__ import annotations

import pytest

from simulator.config import scenario_from_mapping
from simulator.engine.analytical import simulate_step
from simulator.engine.batch import simulate_headlines, simulate_steps
from simulator.engine.des import simulate_steps_des
from simulator.engine.flushes import flushed_seconds
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario


def _torchtitan_pp(flushes: int = 1, batch: int = 16, **parallelism):
    """Llama 3 8B on 4 DGX H100 under torchtitan: pp 4 x dp 8, FSDP2, ``batch`` microbatches
    of 1 per pipeline over ``flushes`` schedules."""
    par = {"tp": 1, "pp": 4, "dp": 8, "zero_stage": 3, "pipeline_flushes": flushes, **parallelism}
    data = {"name": "flushes", "cluster": {"node": "dgx-h100", "nodes": 4,
                                           "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 8 * batch, "micro_batch": 1, "stack": "torchtitan"},
            "parallelism": par}
    session = session_from_scenario(scenario_from_mapping(data, "flushes.yaml"))
    return session.scenario, session.collectives


def test_flushed_seconds_repeats_all_but_what_runs_once():
    """F (t_1 - t_once) + t_once; one flush is the step itself."""
    assert flushed_seconds(5.0, 1.0, 3) == pytest.approx(13.0)
    assert flushed_seconds(5.0, 1.0, 1) == 5.0


def test_a_step_of_f_schedules_is_f_one_schedule_steps_but_one_optimizer():
    """16 microbatches as 4 schedules of 4: the step, the pipeline, the bubble and the exposed
    data-parallel time are 4 times those of one schedule of 4 (global batch / 4), the optimizer
    once, and memory that of one schedule; the step's microbatches and tokens are all 16."""
    one = simulate_step(*_torchtitan_pp(batch=4))
    four = simulate_step(*_torchtitan_pp(flushes=4, batch=16))
    assert four.step_time_s == pytest.approx(4 * (one.step_time_s - one.optimizer_s) + one.optimizer_s,
                                             rel=1e-12)
    for name in ("pipeline_s", "bubble_s", "dp_comm_exposed_s", "comm_exposed_s"):
        assert getattr(four, name) == pytest.approx(4 * getattr(one, name), rel=1e-12), name
    assert four.optimizer_s == one.optimizer_s
    assert four.memory_per_gpu_bytes == one.memory_per_gpu_bytes
    assert four.microbatches == 16
    assert four.tokens_per_s == pytest.approx(4 * one.tokens_per_s * one.step_time_s / four.step_time_s,
                                              rel=1e-12)


def test_flushes_cost_bubbles_and_memory_against_one_schedule():
    """The same 16 microbatches in one schedule fill and drain once: a shorter step, and more
    microbatches in flight and kept to the step's end (torch pipelining's outputs)."""
    one = simulate_step(*_torchtitan_pp(batch=16))
    four = simulate_step(*_torchtitan_pp(flushes=4, batch=16))
    assert four.bubble_s > 2 * one.bubble_s
    assert four.step_time_s > one.step_time_s
    assert four.memory_per_gpu_bytes < one.memory_per_gpu_bytes


def test_both_engines_and_the_sweep_agree_on_a_flushed_step():
    """Contention and noise off, the discrete-event engine and the batch paths give the
    analytical step."""
    scenario, collectives = _torchtitan_pp(flushes=2, batch=8)
    analytical = simulate_step(scenario, collectives)
    des = simulate_steps_des(scenario, collectives, steps=2, contention=False)
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
    batch = simulate_steps([scenario], collectives)[0]
    headline = simulate_headlines([scenario], collectives)[0]
    assert batch.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-12)
    assert headline["step_time_s"] == pytest.approx(analytical.step_time_s, rel=1e-12)


def test_flushes_must_divide_the_microbatches():
    with pytest.raises(ConfigError, match="pipeline_flushes") as error:
        _torchtitan_pp(flushes=3, batch=16)
    assert "use a divisor such as 2" in str(error.value)


def test_the_interleaved_rule_applies_to_one_schedules_microbatches():
    """interleaved-1f1b on pp 4 needs each schedule's microbatches a multiple of 4: 16 in 2
    schedules of 8 pass, in 8 schedules of 2 they do not."""
    _torchtitan_pp(flushes=2, batch=16, schedule="interleaved-1f1b", virtual_stages=2)
    with pytest.raises(ConfigError, match="each pipeline schedule's microbatch count"):
        _torchtitan_pp(flushes=8, batch=16, schedule="interleaved-1f1b", virtual_stages=2)


def test_flushes_are_refused_with_training_what_ifs():
    with pytest.raises(ConfigError, match="training.sync_every"):
        data = {"name": "x", "cluster": {"node": "dgx-h100", "nodes": 4},
                "model": {"preset": "llama3-8b"},
                "training": {"global_batch": 64, "sync_every": 4},
                "parallelism": {"tp": 1, "pp": 4, "dp": 8, "pipeline_flushes": 2}}
        session_from_scenario(scenario_from_mapping(data, "x.yaml"))


def test_without_a_pipeline_the_key_has_no_effect_and_says_so():
    """pp 1: the step is the one-schedule step (any count accepted), with a warning."""
    from simulator.results.warnings import layout_warnings
    plain = _torchtitan_pp(batch=16, pp=1, dp=32)
    flushed = _torchtitan_pp(flushes=3, batch=16, pp=1, dp=32)
    assert simulate_step(*flushed).step_time_s == simulate_step(*plain).step_time_s
    assert any("no effect with pp 1" in w for w in layout_warnings(flushed[0]))


def test_a_megatron_stack_is_told_it_runs_one_schedule():
    from simulator.results.warnings import layout_warnings
    scenario, _ = _torchtitan_pp(flushes=2, batch=16)
    megatron = scenario.model_copy(update={"training": scenario.training.model_copy(
        update={"stack": "megatron-core"})})
    assert not any("pipeline_flushes" in w for w in layout_warnings(scenario))
    assert any("Megatron-LM runs one pipeline schedule" in w for w in layout_warnings(megatron))
