"""Several groups running the same collective at once (e.g. every stage's data-parallel
all-reduce): their schedules merge step by step, so flows of different groups that
share a link (a NIC, a leaf uplink) share its bandwidth in the cost model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.collectives.schedule import Algorithm, Schedule, Step

SHIFT_EQUIVARIANT = frozenset({Algorithm.RING})
"""Algorithms whose schedules move with their groups: see :func:`shift_schedule`."""


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
                    first.channels, nvls_loop=first.nvls_loop)


def shift_schedule(schedule: Schedule, vertices: int) -> Schedule:
    """``schedule`` with every flow's source and destination moved by ``vertices``.

    For an algorithm in :data:`SHIFT_EQUIVARIANT`, the schedule of groups moved by ``k``
    whole servers (every GPU index plus ``k x gpus_per_node``) is, array for array and bit
    for bit, its schedule on the unmoved groups shifted by ``k x V`` vertices (``V``
    vertices per server), whichever the cluster:

    - every server has the same local layout, so a GPU's vertex moves by ``k V``;
    - :class:`~simulator.collectives.group.Group` reads its GPUs only through their
      servers' order of first appearance and the number of its GPUs on each
      (``by_server``, ``channels``), and their local vertices (``vertex mod V``: rails,
      PCIe switches of server 0, mesh rings), all unchanged by the move; so each channel's
      ring order moves by ``k V``, and so do the ring's (and chain's) flows, with the same
      fractions in the same order;
    - :meth:`~simulator.collectives.schedule.Step.of` keeps pairs in order of first
      appearance and sums duplicates in input order: which pairs are duplicates, and the
      lexicographic order of the pairs it sorts by, do not change when every vertex moves
      by the same amount, so its arrays move by ``k V`` and its fractions are the same;
    - feasibility (``Group.size``, ``uniform``) does not change either.

    ``tests/test_concurrent_shift.py`` checks it on many group sets and fabrics.
    """
    steps = tuple(Step(s.src + vertices, s.dst + vertices, s.frac, s.repeat, s.ring_like)
                  for s in schedule.steps)
    return replace(schedule, steps=steps)
