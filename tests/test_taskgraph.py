"""Pipeline task graphs: complete, deadlock-free, and their critical path against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import replay_1f1b

from simulator.config.scenario import Schedule
from simulator.workload.pipeline import pipeline_time
from simulator.workload.taskgraph import Task, critical_path, stage_order


@pytest.mark.parametrize("schedule,v", [(Schedule.GPIPE, 1), (Schedule.ONE_F_ONE_B, 1),
                                        (Schedule.INTERLEAVED, 2), (Schedule.INTERLEAVED, 3)])
def test_every_stage_runs_each_task_once(schedule, v):
    p, m = 4, 8
    for stage in range(p):
        order = stage_order(schedule, p, stage, m, v)
        expected = {Task(stage, fwd, j, c) for fwd in (True, False) for j in range(m)
                    for c in range(v)}
        assert len(order) == len(expected) and set(order) == expected


@pytest.mark.parametrize("schedule", [Schedule.GPIPE, Schedule.ONE_F_ONE_B])
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 32), (4, 2)])
def test_uniform_stages_match_the_closed_form(schedule, p, m):
    f, b = np.full(p, 1.0), np.full(p, 2.0)
    assert critical_path(schedule, f, b, m) == pytest.approx(pipeline_time(f + b, m)[0], rel=1e-12)


@pytest.mark.parametrize("p,m,v", [(2, 4, 2), (4, 8, 2), (4, 8, 4), (8, 16, 3)])
def test_interleaving_divides_the_uniform_bubble_by_v(p, m, v):
    f, b = np.full(p, 1.0), np.full(p, 2.0)
    exact = critical_path(Schedule.INTERLEAVED, f, b, m, v)
    assert exact == pytest.approx(m * 3.0 + (p - 1) * 3.0 / v, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.1, 4.0), min_size=2, max_size=6), st.integers(1, 10))
def test_task_graph_agrees_with_the_independent_1f1b_replay(work, m):
    f = np.array(work)
    assert critical_path(Schedule.ONE_F_ONE_B, f, 2 * f, m) == pytest.approx(
        replay_1f1b(f, 2 * f, m), rel=1e-12)


def test_p2p_adds_one_transfer_per_stage_boundary_to_the_fill():
    p, m = 4, 1
    exact = critical_path(Schedule.ONE_F_ONE_B, np.ones(p), np.ones(p), m, p2p=0.5)
    assert exact == pytest.approx(2 * p + 2 * (p - 1) * 0.5)


def test_blocking_sends_of_interior_stages_match_the_closed_form():
    """Interior stages send twice per microbatch; with equal ends it is the uniform formula."""
    p, m, f, b, x = 4, 8, 1.0, 2.0, 0.25
    work = np.array([f + b + x, f + b + 2 * x, f + b + 2 * x, f + b + x])
    exact = critical_path(Schedule.ONE_F_ONE_B, np.full(p, f), np.full(p, b), m, p2p=x)
    assert exact <= pipeline_time(work, m)[0] + 1e-12


@pytest.mark.parametrize(("schedule", "p", "v"), [
    (Schedule.ONE_F_ONE_B, 4, 1), (Schedule.ONE_F_ONE_B, 5, 1), (Schedule.GPIPE, 3, 1),
    (Schedule.INTERLEAVED, 4, 2),
])
def test_steady_state_extrapolation_equals_the_exact_walk(schedule, p, v):
    """Above EXACT_MICROBATCHES the clocks come from the max-plus steady state; they equal the
    exact task-by-task walk (uneven stages, a send on every cross-stage edge)."""
    from simulator.workload.taskgraph import EXACT_MICROBATCHES, exact_clocks, stage_clocks

    rng = np.random.default_rng(p * 10 + v)
    f, b = rng.uniform(1, 2, p), rng.uniform(2, 4, p)
    for m in (EXACT_MICROBATCHES + p, EXACT_MICROBATCHES + 3 * p):
        if schedule != Schedule.INTERLEAVED:
            m += 1                                    # not a multiple of p
        exact, fast = exact_clocks(schedule, f, b, m, v, 0.05), stage_clocks(schedule, f, b, m, v, 0.05)
        np.testing.assert_allclose(fast[0], exact[0], rtol=1e-12)
        np.testing.assert_allclose(fast[1], exact[1], rtol=1e-12)


def test_the_analytical_cost_does_not_grow_with_the_global_batch():
    """10^12 microbatches: the step comes from the steady state (no walk over the tasks) and
    equals m x (forward + backward) plus the (p - 1) warm-up and drain stages, to 1e-9."""
    from simulator.workload.taskgraph import stage_clocks

    finish, _ = stage_clocks(Schedule.ONE_F_ONE_B, np.ones(8), 2 * np.ones(8), 10**12)
    assert finish.max() == pytest.approx(3 * 10**12 + 7 * 3, rel=1e-9)


@pytest.mark.parametrize(("schedule", "p", "m", "v"), [
    (Schedule.GPIPE, 3, 5, 1), (Schedule.ONE_F_ONE_B, 4, 8, 1), (Schedule.ONE_F_ONE_B, 5, 3, 1),
    (Schedule.ONE_F_ONE_B, 1, 4, 1), (Schedule.INTERLEAVED, 4, 8, 2), (Schedule.INTERLEAVED, 2, 6, 3),
    (Schedule.INTERLEAVED, 4, 4, 2), (Schedule.ONE_F_ONE_B, 4, 2049, 1), (Schedule.GPIPE, 3, 2050, 1),
    (Schedule.INTERLEAVED, 4, 2052, 2),
])
def test_batched_clocks_are_the_walks_bit_for_bit(schedule, p, m, v):
    """Many layouts' clocks at once, level by level, equal each layout's task-by-task walk
    (and its steady state above EXACT_MICROBATCHES) exactly: uneven stages, various sends,
    layouts with the same durations."""
    from simulator.workload.taskgraph import stage_clocks
    from simulator.workload.wavefront import batch_stage_clocks

    rng = np.random.default_rng(p * 100 + m + v)
    f, b = rng.uniform(0.5, 2, (6, p)), rng.uniform(1, 4, (6, p))
    x = np.array([0.0, 0.01, 0.3, 1e-6, 2.0, 0.05])
    twins = [0, 4, 1, 2, 3, 4, 5, 1, 1]                        # rows repeated, in any order
    f, b, x = f[twins], b[twins], x[twins]
    finish, last_start = batch_stage_clocks(schedule, f, b, m, v, x)
    for row in range(len(x)):
        walk = stage_clocks(schedule, f[row], b[row], m, v, x[row])
        assert np.array_equal(finish[row], walk[0]) and np.array_equal(last_start[row], walk[1])


@pytest.mark.parametrize(("schedule", "p", "m", "v"), [
    (Schedule.GPIPE, 4, 6, 1), (Schedule.ONE_F_ONE_B, 4, 3, 1), (Schedule.ONE_F_ONE_B, 8, 20, 1),
    (Schedule.ONE_F_ONE_B, 1, 5, 1), (Schedule.INTERLEAVED, 4, 8, 2), (Schedule.INTERLEAVED, 4, 4, 3),
    (Schedule.INTERLEAVED, 8, 24, 4), (Schedule.INTERLEAVED, 2, 6, 1), (Schedule.INTERLEAVED, 1, 4, 2),
])
def test_array_task_lists_are_the_compiled_graph(schedule, p, m, v):
    """The wavefront's task lists, built with numpy, are the compiled graph's."""
    from simulator.workload.taskgraph import compiled_graph
    from simulator.workload.wavefront import stage_tasks

    graph = compiled_graph(schedule, p, m, v)
    for i in range(p):
        ids, deps, kinds = stage_tasks(schedule, p, m, v, i)
        assert ids.tolist() == graph.ids[i] and deps.tolist() == graph.deps[i]
        expected = 4 * i + 2 * graph.is_forward[i].astype(int) + (graph.sends[i] > 0)
        assert kinds.tolist() == expected.tolist()


@pytest.mark.parametrize(("schedule", "p", "m", "v"), [
    (Schedule.GPIPE, 4, 6, 1), (Schedule.ONE_F_ONE_B, 4, 3, 1), (Schedule.ONE_F_ONE_B, 1, 5, 1),
    (Schedule.INTERLEAVED, 4, 8, 2), (Schedule.INTERLEAVED, 1, 4, 2), (Schedule.INTERLEAVED, 2, 6, 1),
])
def test_send_counts_are_the_graphs(schedule, p, m, v):
    from simulator.workload.taskgraph import compiled_graph, stage_send_counts

    graph = compiled_graph(schedule, p, m, v)
    assert stage_send_counts(schedule, p, m, v).tolist() == [float(g.sum()) for g in graph.sends]
