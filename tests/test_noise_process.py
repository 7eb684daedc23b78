"""Noise with memory (issue 15, items 1 and 4): episodes, fail-slow Markov processes at a
fleet's rate, host pauses, NIC and link faults with time; their closed forms and statistics."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.des import simulate_steps_des
from simulator.engine.des_plan import step_plan
from simulator.engine.noise import entity_slowdown
from simulator.engine.noise_process import NoiseSource, _OnOff, _per_step
from simulator.errors import ConfigError
from simulator.topology import build_cluster


def _scenario(noise: dict, nodes: int = 4, tp: int = 8, pp: int = 2, gb: int = 16, **par):
    fabric = {"topology": "fat-tree", "link": "ib-hdr", "switch_radix": 16}
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": nodes, "fabric": fabric},
            "model": {"preset": "megatron-7.5b"}, "training": {"global_batch": gb, "micro_batch": 1},
            "parallelism": {"tp": tp, "pp": pp, **par}, "simulate": {"engine": "des"}, "noise": noise}
    scenario = scenario_from_mapping(data, "noisy.yaml")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def _source(noise: dict, seed: int = 0, **kw):
    scenario, collectives = _scenario(noise, **kw)
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    plan = step_plan(ctx, base, False)
    return NoiseSource(ctx, plan, base.step_time_s, seed), ctx, plan, base


def test_memoryless_noise_draws_the_stream_it_always_drew():
    """Jitter and throttling come step by step from default_rng(seed), as before issue 15."""
    noise = {"straggler": {"distribution": "lognormal", "sigma": 0.05},
             "throttle": {"probability": 0.1, "factor": 1.5}}
    source, ctx, _, _ = _source(noise, seed=11)
    block = next(source.blocks(5))
    rng = np.random.default_rng(11)
    assert np.array_equal(block.factor, np.stack([entity_slowdown(ctx, rng) for _ in range(5)]))


def test_an_episode_slows_its_gpu_exactly_in_its_window():
    source, ctx, _, _ = _source({"episodes": [{"gpu": 9, "factor": 2.5, "start_step": 3, "steps": 4},
                                              {"node": 3, "factor": 1.5, "start_step": 8}]})
    factor = np.concatenate([b.factor for b in source.blocks(12)])
    expected = np.ones_like(factor)
    expected[3:7, 1, 0] = 2.5            # GPU 9: tp 8, dp 2 -> replica 1, stage 0
    expected[8:, 1, 1] = 1.5             # node 3 = GPUs 24..31: replica 1, stage 1
    assert np.array_equal(factor, expected)


def test_fail_slow_chain_has_its_stationary_share_and_mean_episode():
    """Two-state chain with p_on 0.02, p_off 0.1 per step: slowed share p_on / (p_on + p_off)
    = 1/6 and mean episode 1 / p_off = 10 steps (4,000 units x 3 blocks of 500 steps)."""
    chain = _OnOff(4000, 0.02, 0.1, np.random.default_rng(1))
    on = np.concatenate([chain.block(500) for _ in range(3)])
    assert on.mean() == pytest.approx(1 / 6, rel=0.02)
    starts = (on[1:] & ~on[:-1]).sum()
    ends = (~on[1:] & on[:-1]).sum()
    assert on[:-1].sum() / ends == pytest.approx(10.0, rel=0.03)       # steps per episode
    assert (~on[:-1]).sum() / starts == pytest.approx(50.0, rel=0.03)   # steps between them
    boundary = slice(499, 501)                                          # no jump between blocks
    assert (on[boundary][1] != on[boundary][0]).mean() < 0.06


def test_fleet_rate_becomes_per_step_probabilities():
    """One fail-slow per 1,000 GPU-hours, mean 20 minutes, factor 1.5 (issue 15's example):
    p_on = 1 - exp(-T / 3.6e6 s), p_off = 1 - exp(-T / 1200 s) with T the noise-free step."""
    source, _, _, base = _source({"fail_slow": [{"rate_per_hour": 0.001, "mean_duration_s": 1200.0,
                                                 "factor": 1.5}]})
    (_, chain), = source.fail_slow
    step = base.step_time_s
    assert chain.p == pytest.approx((-np.expm1(-step / 3.6e6), -np.expm1(-step / 1200.0)), rel=1e-12)
    assert _per_step(0.0, 10.0) == 0.0


def test_unsynchronised_pauses_hit_each_server_with_their_probability():
    """tp 8 on 8-GPU servers: one server per entity, paused in a share p of steps, before a
    task position in [0, 2 m v)."""
    source, ctx, _, _ = _source({"host_pause": {"probability": 0.2, "duration_s": 0.5}})
    at = np.concatenate([b.pause_at for b in source.blocks(2000)])
    assert (at >= 0).mean() == pytest.approx(0.2, rel=0.05)
    assert at.max() < 2 * ctx.microbatches and at[at >= 0].min() == 0


def test_synchronised_pause_adds_exactly_its_duration():
    """All servers pause at the start of a step: the whole step shifts by the pause."""
    noise = {"host_pause": {"probability": 1.0, "duration_s": 0.75, "synchronized": True}}
    scenario, collectives = _scenario(noise)
    base = simulate_step(scenario, collectives).step_time_s
    for path in ("fast", "event"):
        times = simulate_steps_des(scenario, collectives, steps=3, contention=False, path=path).step_times_s
        assert times == pytest.approx([base + 0.75] * 3, rel=1e-12)


def test_a_faulty_link_slows_exactly_the_sends_that_cross_it():
    """pp 4, link between stage 1 and 2 of replica 0 at a quarter of its bandwidth and 30 ms
    more per message in steps 2..3: forward sends of stage 1 and backward sends of stage 2
    take alpha + 0.03 + (p2p - alpha) / 0.25; every other send the plan's p2p."""
    fault = {"gpu": 8, "peer": 16, "fraction": 0.25, "latency_s": 0.03, "start_step": 2, "steps": 2}
    source, ctx, plan, _ = _source({"nic_faults": [fault]}, nodes=4, tp=8, pp=4, gb=8)
    assert ctx.layout.dp == 1
    send = next(source.blocks(5)).send_s
    slow = plan.p2p_latency_s + 0.03 + (plan.p2p_s - plan.p2p_latency_s) / 0.25
    expected = np.full_like(send, plan.p2p_s)
    expected[2:4, 0, 1, 1] = slow
    expected[2:4, 0, 2, 0] = slow
    assert np.array_equal(send, expected)


def test_a_faulty_nic_also_stretches_its_stage_gradient_sync():
    source, ctx, plan, _ = _source({"nic_faults": [{"gpu": 0, "fraction": 0.5}]})
    scale = next(source.blocks(2)).sync_scale
    assert scale[:, 0] == pytest.approx([scale[0, 0]] * 2) and 1.0 < scale[0, 0] <= 2.0
    assert np.all(scale[:, 1] == 1.0)
    scenario, collectives = _scenario({"nic_faults": [{"gpu": 0, "fraction": 0.5}]})
    clean, _ = _scenario({})
    assert simulate_steps_des(scenario, collectives, contention=False).step_time_s > \
        simulate_steps_des(clean, collectives, contention=False).step_time_s


@pytest.mark.parametrize("noise,key", [
    ({"episodes": [{"factor": 2.0}]}, "noise.episodes.0"),
    ({"episodes": [{"gpu": 1, "node": 0, "factor": 2.0}]}, "noise.episodes.0"),
    ({"episodes": [{"gpu": 32, "factor": 2.0}]}, "noise.episodes.0.gpu"),
    ({"episodes": [{"node": 4, "factor": 2.0}]}, "noise.episodes.0.node"),
    ({"nic_faults": [{"gpu": 0, "peer": 40}]}, "noise.nic_faults.0.peer"),
    ({"nic_faults": [{"gpu": 0, "peer": 8}]}, "noise.nic_faults.0.peer"),
    ({"nic_faults": [{"gpu": 0, "fraction": 0.0}]}, "noise.nic_faults.0.fraction"),
    ({"fail_slow": [{"rate_per_hour": 1.0, "mean_duration_s": 0.0, "factor": 2.0}]},
     "noise.fail_slow.0.mean_duration_s"),
    ({"host_pause": {"probability": 1.5}}, "noise.host_pause.probability"),
])
def test_noise_mistakes_name_their_key(noise, key):
    """GPU 8 is replica 1 of stage 0 (dp 2): no pipeline link to GPU 0."""
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _scenario(noise)
