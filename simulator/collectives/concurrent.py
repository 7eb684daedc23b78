"""Several groups running the same collective at once (e.g. every stage's data-parallel
all-reduce): their schedules merge step by step, so flows of different groups that
share a link (a NIC, a leaf uplink) share its bandwidth in the cost model."""

from __future__ import annotations

import numpy as np

from simulator.collectives.schedule import Schedule, Step


def merge_schedules(schedules: list[Schedule]) -> Schedule:
    """One schedule whose step i holds step i of every input (same algorithm and shape)."""
    first = schedules[0]
    if any(len(s.steps) != len(first.steps) for s in schedules):
        raise ValueError("concurrent schedules must have the same number of steps")
    steps = []
    for i, step in enumerate(first.steps):
        parts = [s.steps[i] for s in schedules]
        steps.append(Step(np.concatenate([p.src for p in parts]),
                          np.concatenate([p.dst for p in parts]),
                          np.concatenate([p.frac for p in parts]), step.repeat, step.ring_like))
    return Schedule(first.op, first.algorithm, first.ranks, tuple(steps), first.pipelined,
                    first.channels)
