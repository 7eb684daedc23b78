"""The wavefront's levels by sweeps over the stages are the walk's, task for task."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.scenario import Schedule
from simulator.workload.wavefront import _task_levels, graph_tasks, one_f_one_b_levels, swept_levels

CASES = [(Schedule.GPIPE, p, m, 1) for p in (1, 2, 4) for m in (1, 3, 8)] + [
    (Schedule.ONE_F_ONE_B, p, m, 1) for p in (1, 2, 4, 8, 64) for m in (1, 2, 7, 16, 96)] + [
    (Schedule.INTERLEAVED, p, m, v) for p in (2, 4, 8) for m in (p, 2 * p, 6 * p) for v in (2, 3, 4)]


def _graph(schedule, p, m, v):
    total = 2 * p * m * v
    ids, deps, _ = graph_tasks(schedule, p, m, v)
    return ids, np.where(deps < 0, total, deps), total


@pytest.mark.parametrize(("schedule", "p", "m", "v"), CASES)
def test_swept_levels_are_the_walks(schedule, p, m, v):
    ids, deps, total = _graph(schedule, p, m, v)
    walked = _task_levels([i.tolist() for i in ids], [d.tolist() for d in deps], total)
    swept = swept_levels(ids, deps, total)
    assert swept is not None
    assert swept.tolist() == walked


def test_a_deadlock_never_settles():
    """Two stages each waiting for the other's second task: no order exists."""
    ids = np.array([[0, 1], [2, 3]])
    deps = np.array([[4, 3], [4, 1]])
    assert _task_levels([i.tolist() for i in ids], [d.tolist() for d in deps], 4) is None
    assert swept_levels(ids, deps, 4) is None


def test_too_few_sweeps_leave_it_to_the_walk():
    """Interleaved 1F1B settles in two sweeps, not one (1F1B in one)."""
    ids, deps, total = _graph(Schedule.INTERLEAVED, 8, 16, 2)
    assert swept_levels(ids, deps, total, sweeps=1) is None
    assert swept_levels(ids, deps, total, sweeps=2) is not None
    ids, deps, total = _graph(Schedule.ONE_F_ONE_B, 8, 16, 1)
    assert swept_levels(ids, deps, total, sweeps=1) is not None


@pytest.mark.parametrize(("p", "m"), [(p, m) for p in (1, 2, 3, 4, 8, 64) for m in (1, 2, 3, 7, 16, 96)])
def test_one_f_one_b_levels_in_closed_form_are_the_walks(p, m):
    """1F1B's levels in closed form (warm-up, steady and cool-down runs) are the walk's, and
    the sweeps take them as they are."""
    ids, deps, total = _graph(Schedule.ONE_F_ONE_B, p, m, 1)
    walked = _task_levels([i.tolist() for i in ids], [d.tolist() for d in deps], total)
    assert one_f_one_b_levels(p, m).tolist() == np.asarray(walked)[ids].tolist()
    assert swept_levels(ids, deps, total, sweeps=0, start=one_f_one_b_levels(p, m)).tolist() == walked


def test_a_wrong_start_is_left_for_the_sweeps():
    """Levels that do not solve the recurrence are not taken: the sweeps start from 0."""
    ids, deps, total = _graph(Schedule.INTERLEAVED, 4, 8, 2)
    walked = _task_levels([i.tolist() for i in ids], [d.tolist() for d in deps], total)
    wrong = np.asarray(walked)[ids] + 1
    assert swept_levels(ids, deps, total, start=wrong).tolist() == walked
    assert swept_levels(ids, deps, total, sweeps=0, start=wrong) is None
