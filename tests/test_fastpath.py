"""The max-plus fast path (issue 15, item 6): equal to the event replay with contention off,
step by step and for every kind of noise, on every training scenario in scenarios/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.engine import des
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.engine.noise_process import BLOCK_GPU_STEPS
from simulator.pipeline import open_scenario

ROOT = Path(__file__).resolve().parent.parent
TRAINING_SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml") if "model:" in p.read_text())
ALL_NOISE = {"straggler": {"distribution": "lognormal", "sigma": 0.05},
             "throttle": {"probability": 0.01, "factor": 1.5},
             "episodes": [{"gpu": 0, "factor": 1.7, "start_step": 1, "steps": 1}],
             "fail_slow": [{"rate_per_hour": 20.0, "mean_duration_s": 200.0, "factor": 2.0},
                           {"scope": "node", "rate_per_hour": 5.0, "mean_duration_s": 100.0, "factor": 1.3}],
             "host_pause": {"probability": 0.05, "duration_s": 0.3},
             "nic_faults": [{"gpu": 0, "latency_s": 0.01, "fraction": 0.5, "start_step": 1}]}


def _noisy(name: str, noise: dict):
    session = open_scenario(ROOT / "scenarios" / f"{name}.yaml")
    scenario = session.scenario.model_copy(update={"noise": session.scenario.noise.model_validate(noise)})
    return scenario, session.collectives


@pytest.mark.parametrize("name", TRAINING_SCENARIOS)
def test_fast_path_equals_the_event_replay_on_every_scenario(name):
    """Jitter, throttling, an episode, GPU and server fail-slow processes, host pauses and a
    faulty NIC, 2 steps: the same steps to 1e-9 relative (bit for bit in practice)."""
    steps = 2
    scenario, collectives = _noisy(name, ALL_NOISE)
    event = simulate_steps_des(scenario, collectives, steps=steps, contention=False, path="event")
    fast = simulate_steps_des(scenario, collectives, steps=steps, contention=False, path="fast")
    assert np.allclose(fast.step_times_s, event.step_times_s, rtol=1e-9, atol=0.0)
    for key in ("step_time_p50_s", "step_time_p95_s", "step_time_p99_s", "tokens_per_s", "mfu"):
        assert getattr(fast, key) == pytest.approx(getattr(event, key), rel=1e-9)


@pytest.mark.parametrize("name", ["sc21-7.5b", "llama3-70b-1024xH100"])
def test_without_noise_the_fast_path_is_the_analytical_step(name):
    session = open_scenario(ROOT / "scenarios" / f"{name}.yaml")
    analytical = simulate_step(session.scenario, session.collectives).step_time_s
    fast = simulate_steps_des(session.scenario, session.collectives, steps=4, contention=False, path="fast")
    assert fast.step_times_s == pytest.approx([analytical] * 4, rel=1e-9)


def test_auto_takes_the_fast_path_without_contention_only(monkeypatch):
    scenario, collectives = _noisy("sc21-7.5b", {"straggler": {"distribution": "lognormal", "sigma": 0.02}})
    calls = []
    monkeypatch.setattr(des, "_one_step", lambda *a, **k: calls.append(1) or 1e6)
    simulate_steps_des(scenario, collectives, steps=3, contention=False)
    assert calls == []
    simulate_steps_des(scenario, collectives, steps=3, contention=True)
    assert calls == [1, 1, 1]
    with pytest.raises(ValueError, match="contention off"):
        simulate_steps_des(scenario, collectives, steps=3, contention=True, path="fast")


def test_same_seed_same_steps_on_both_paths_other_seed_other_steps():
    scenario, collectives = _noisy("sc21-7.5b", ALL_NOISE)
    fast = simulate_steps_des(scenario, collectives, steps=6, seed=7, contention=False)
    again = simulate_steps_des(scenario, collectives, steps=6, seed=7, contention=False, path="fast")
    event = simulate_steps_des(scenario, collectives, steps=6, seed=7, contention=False, path="event")
    other = simulate_steps_des(scenario, collectives, steps=6, seed=8, contention=False)
    assert fast.step_times_s == again.step_times_s == event.step_times_s
    assert fast.step_times_s != other.step_times_s


def test_memory_is_bounded_by_blocks_of_steps(monkeypatch):
    """Noise comes in blocks of at most BLOCK_GPU_STEPS GPU-steps; the steps do not depend
    on the block size's placement for memoryless noise (drawn step by step)."""
    import simulator.engine.noise_process as noise_process
    scenario, collectives = _noisy("sc21-7.5b", {"straggler": {"distribution": "lognormal", "sigma": 0.03},
                                                 "throttle": {"probability": 0.02, "factor": 1.4}})
    whole = simulate_steps_des(scenario, collectives, steps=50, contention=False).step_times_s
    gpus = collectives.cluster.gpus
    assert max(1, BLOCK_GPU_STEPS // gpus) >= 50
    monkeypatch.setattr(noise_process, "BLOCK_GPU_STEPS", 7 * gpus)
    sizes = []
    original = noise_process.NoiseSource._block
    monkeypatch.setattr(noise_process.NoiseSource, "_block",
                        lambda self, t0, k: sizes.append(k) or original(self, t0, k))
    blocked = simulate_steps_des(scenario, collectives, steps=50, contention=False).step_times_s
    assert max(sizes) == 7 and sum(sizes) == 50
    assert blocked == whole
