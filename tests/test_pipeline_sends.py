"""Pipeline sends that overlap the sender's next pass (Megatron-Core's ``overlap_p2p_comm``
under the interleaved schedule; simulator/workload/pipeline_sends.py): the task graph's
closed form, the walkers agree bit for bit, and both engines price a scenario the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.scenario import Schedule
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.topology import build_cluster
from simulator.workload.chunk_gathers import _batch_finish, gathered_finish
from simulator.workload.pipeline_sends import path_sends
from simulator.workload.taskgraph import exact_clocks, stage_clocks
from simulator.workload.wavefront import batch_stage_clocks

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("p,v,m,lag", [(2, 2, 4, 0.01), (4, 4, 8, 0.2), (8, 3, 24, 0.05),
                                       (8, 6, 64, 0.06), (4, 2, 3000, 0.1)])
def test_uniform_interleaved_closed_form(p, v, m, lag):
    """Uniform stages, sends shorter than a chunk's pass: the steady state hides every send,
    and one microbatch's path through the ``p v`` chunks pays each of its ``2 (p v - 1)``:
    ``T = (m + (p - 1) / v) (f + b) + 2 (p v - 1) lag`` (the walk, the levels and, above
    2,048 microbatches, the steady state)."""
    f, b = np.full(p, 1.0), np.full(p, 2.0)
    expected = (m + (p - 1) / v) * 3.0 + path_sends(p, v) * lag
    walked = stage_clocks(Schedule.INTERLEAVED, f, b, m, v, 0.0, lag)[0].max()
    levels = batch_stage_clocks(Schedule.INTERLEAVED, f[None], b[None], m, v, np.zeros(1),
                                np.full(1, lag))[0].max()
    assert walked == pytest.approx(expected, rel=1e-12)
    assert levels == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("schedule", [Schedule.ONE_F_ONE_B, Schedule.GPIPE])
def test_one_microbatch_pays_every_send_either_way(schedule):
    """One microbatch through ``p`` stages: ``p (f + b) + 2 (p - 1) t`` whether the send holds
    its stage or only delays the receiver."""
    f, b = np.array([1.0, 1.5, 2.0, 1.0]), np.array([2.0, 3.0, 4.0, 2.0])
    expected = float((f + b).sum()) + 2 * 3 * 0.25
    assert exact_clocks(schedule, f, b, 1, 1, 0.25, 0.0)[0].max() == pytest.approx(expected)
    assert exact_clocks(schedule, f, b, 1, 1, 0.0, 0.25)[0].max() == pytest.approx(expected)


def test_passes_one_way_in_a_row_wait_for_the_last_send():
    """GPipe runs all forwards, then all backwards: each pass waits for its stage's previous
    send in the same direction, so overlapped sends cost what held ones do (Megatron-Core's
    warm-up and cool-down; NeMo: "fill and flush are still exposed")."""
    f, b = np.array([1.0, 1.5, 2.0, 1.0]), np.array([2.0, 3.0, 4.0, 2.0])
    for m in (1, 4, 9):
        held = exact_clocks(Schedule.GPIPE, f, b, m, 1, 0.3)[0]
        overlapped = exact_clocks(Schedule.GPIPE, f, b, m, 1, 0.0, 0.3)[0]
        assert overlapped.max() == pytest.approx(held.max(), rel=1e-12)


@pytest.mark.parametrize("schedule,p,m,v", [(Schedule.INTERLEAVED, 4, 8, 2), (Schedule.INTERLEAVED, 3, 9, 4),
                                            (Schedule.ONE_F_ONE_B, 4, 7, 1), (Schedule.GPIPE, 3, 5, 1)])
def test_levels_equal_the_walk_with_overlapped_sends(schedule, p, m, v):
    """Stages that differ, sends longer than some passes: the level-by-level evaluation gives
    the walk's clocks bit for bit, between the graph without sends and with held ones (GPipe
    and 1F1B's warm-up run their passes one way in a row, each waiting for the last send)."""
    rng = np.random.default_rng(p * 100 + m * 10 + v)
    forward, backward, lag = rng.uniform(1, 3, (4, p)), rng.uniform(2, 6, (4, p)), rng.uniform(0, 2, 4)
    finish, last = batch_stage_clocks(schedule, forward, backward, m, v, np.zeros(4), lag)
    for row in range(4):
        walked = exact_clocks(schedule, forward[row], backward[row], m, v, 0.0, float(lag[row]))
        assert np.array_equal(finish[row], walked[0]) and np.array_equal(last[row], walked[1])
        none = exact_clocks(schedule, forward[row], backward[row], m, v)[0].max()
        held = exact_clocks(schedule, forward[row], backward[row], m, v, float(lag[row]))[0].max()
        assert none <= walked[0].max() <= held * (1 + 1e-12)     # the same sum, in another order


def test_chunk_gather_walks_agree_with_overlapped_sends():
    """The chunk-ahead weight gathers' level walk and its task-by-task oracle, with overlapped
    sends: the same finish times bit for bit; with no gathers, the plain graph's."""
    rng = np.random.default_rng(7)
    p, m, v = 4, 8, 3
    forward, backward = rng.uniform(1, 3, (5, p)), rng.uniform(2, 6, (5, p))
    lag, gather = rng.uniform(0, 0.5, 5), rng.uniform(0, 4, (5, p))
    levels = _batch_finish(forward, backward, m, v, np.zeros(5), gather, lag=lag)
    for row in range(5):
        walked = gathered_finish(forward[row], backward[row], m, v, 0.0, gather[row], lag=float(lag[row]))
        assert np.array_equal(levels[row], walked)
        plain = gathered_finish(forward[row], backward[row], m, v, 0.0, np.zeros(p), lag=float(lag[row]))
        assert np.array_equal(plain, exact_clocks(Schedule.INTERLEAVED, forward[row], backward[row], m, v,
                                                  0.0, float(lag[row]))[0])


def _scenario(schedule: str, virtual: int, overlap: bool | None):
    stack = {"base": "megatron-core"} if overlap is None else \
        {"base": "megatron-core", "pipeline": {"overlap_p2p": overlap}}
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": 8,
                                     "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"preset": "gpt3-175b", "seq_len": 2048},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": "bf16", "stack": stack},
            "parallelism": {"tp": 8, "pp": 8, "schedule": schedule, "virtual_stages": virtual}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def test_megatron_core_overlaps_interleaved_sends_only():
    """The megatron-core profile overlaps the sends of its interleaved schedule (faster than
    with them held, by at most the held sends' time) and leaves 1F1B's held; the result
    reports the overlapped sends' fill and drain, ``2 (p v - 1) t``, under pp."""
    default = simulate_step(*_scenario("interleaved-1f1b", 4, None))
    held = simulate_step(*_scenario("interleaved-1f1b", 4, False))
    p2p = default.stages[0].p2p_s
    assert p2p > 0 and default.step_time_s < held.step_time_s
    sends = 2 * 64 * 4 * p2p                 # each stage's chunk sends: held, on its busy time
    assert held.step_time_s - default.step_time_s <= sends
    assert default.exposed_by_dimension["pp"] == pytest.approx(path_sends(8, 4) * p2p)
    assert default.pp_in_bubble_s == default.exposed_by_dimension["pp"] <= default.bubble_s
    assert held.pp_in_bubble_s == 0.0
    plain = simulate_step(*_scenario("1f1b", 1, None))
    assert plain.step_time_s == simulate_step(*_scenario("1f1b", 1, True)).step_time_s
    assert plain.exposed_by_dimension["pp"] == pytest.approx(2 * p2p * (64 + 8 - 1))
    assert plain.pp_in_bubble_s == 0.0


def test_engines_agree_with_overlapped_sends():
    """Contention off and no noise: the event replay and the fast path give the analytical
    step (the sends delivered after the stage has moved on)."""
    scenario, collectives = _scenario("interleaved-1f1b", 4, None)
    analytical = simulate_step(scenario, collectives).step_time_s
    for path in ("event", "fast"):
        steps = simulate_steps_des(scenario, collectives, steps=2, contention=False, path=path).step_times_s
        assert steps == pytest.approx([analytical] * 2, rel=1e-9)
