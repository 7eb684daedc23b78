"""Torus collectives: dimension by dimension, bidirectional rings along each axis (TPU ICI).

On a chip-level torus of shape ``p_1 x ... x p_d`` (``cluster.fabric.chip_torus``), an
all-reduce reduce-scatters along axis 1 (every line of chips along that axis is a ring),
then along axis 2 on the shard it holds, ..., then all-gathers back in reverse order. Each
ring is bidirectional: half of the data goes each way round, so both directions of every
link along the axis carry load. A ring reduce-scatter of ``D`` bytes over ``p`` chips moves
``(p-1)/p * D / 2`` bytes each way over every link of its axis in ``p - 1`` steps.

To keep all ``2d`` links of a chip busy, the message is cut into ``d`` parts and part ``k``
walks the axes in the order rotated by ``k`` (part 0: x, y, z; part 1: y, z, x; ...), as
the multi-dimensional torus all-reduces of Kumar et al. (2021, "Exploring the limits of
concurrency in ML training on Google TPUs", MLSys) and Ying et al. (2018, "Image
classification at supercomputer scale", arXiv:1811.06992, 2-D torus all-reduce) do. The
stages run one after another; in stage ``j`` the parts use different axes at once. With
``m`` axes longer than 1, all of length ``p``, ``P = p^m`` chips, ``a`` the latency of one
ring step and ``B`` a link's rate in one direction, an all-reduce of ``n`` bytes takes

    T = 2 m (p - 1) a + 2 * (n / m) / (2 B) * sum_{j<m} (p-1)/p * p^{-j}
      = 2 m (p - 1) a + n (1 - 1/P) / (m B),

so bus bandwidth ``busbw = algbw * 2(P-1)/P -> 2 m B``: every chip sends over its ``2m``
links at once (for a 16x16x16 TPU v4 pod, ``6 B`` per chip; Google quotes 1.1 PB/s of
all-reduce bandwidth per 4,096-chip pod, 270 GB/s per chip). Reduce-scatter and
all-gather are the halves. Groups whose chips form a Cartesian product of coordinate sets (a sub-torus,
or every other chip along an axis) run the same way over the chips they hold; the router
carries the rings' longer hops.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from simulator.collectives.group import Group
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.errors import InfeasibleError
from simulator.topology.fabric import torus_dims

_PHASES = {Op.ALL_REDUCE: ("rs", "ag"), Op.REDUCE_SCATTER: ("rs",), Op.ALL_GATHER: ("ag",)}


def torus_schedule(op: Op, group: Group) -> Schedule:
    """Dimension-by-dimension schedule of ``op`` on ``group`` (see the module docstring).

    Raises
    ------
    InfeasibleError
        If the cluster is not a chip-level torus, or the group's chips do not form a
        product of one coordinate set per axis.
    """
    if op not in _PHASES:
        raise KeyError(op)
    axes = torus_axes(group)
    active = [a for a, coords in enumerate(axes.coords) if len(coords) > 1]
    orders = [active[k:] + active[:k] for k in range(len(active))]
    steps = []
    if "rs" in _PHASES[op]:
        steps += [_stage(axes, orders, j, len(active)) for j in range(len(active))]
    if "ag" in _PHASES[op]:
        steps += [_stage(axes, orders, j, len(active)) for j in reversed(range(len(active)))]
    return Schedule(op, Algorithm.TORUS, group.size, tuple(steps), pipelined=False,
                    channels=2 * len(active))


class TorusAxes:
    """The group's chips as a grid: per axis, the sorted coordinates it holds."""

    def __init__(self, group: Group, dims: list[int]):
        coords = np.array(np.unravel_index(np.asarray(group.gpus), dims)).T
        self.coords = [sorted(set(coords[:, a].tolist())) for a in range(len(dims))]
        self.dims = dims
        self.vertices = group.cluster.gpu_vertices

    def lines(self, axis: int) -> list[np.ndarray]:
        """Every ring along ``axis``: the chips' vertices in coordinate order."""
        others = [c if a != axis else [None] for a, c in enumerate(self.coords)]
        rings = []
        for fixed in product(*others):
            points = [[*fixed[:axis], x, *fixed[axis + 1:]] for x in self.coords[axis]]
            flat = np.ravel_multi_index(np.array(points).T, self.dims)
            rings.append(self.vertices(flat))
        return rings


def torus_axes(group: Group) -> TorusAxes:
    """The group on its chip-level torus, or InfeasibleError (see :func:`torus_schedule`)."""
    hw = group.cluster.hw
    if not hw.fabric.chip_torus or hw.gpus_per_node != 1:
        raise InfeasibleError("torus needs a chip-level torus (cluster.fabric.chip_torus)")
    axes = TorusAxes(group, torus_dims(hw.fabric, hw.nodes))
    if int(np.prod([len(c) for c in axes.coords])) != group.size:
        raise InfeasibleError("torus needs the group's chips to form a grid: one set of "
                              "coordinates per axis, every combination present")
    return axes


def _stage(axes: TorusAxes, orders: list[list[int]], j: int, parts: int) -> Step:
    """Stage ``j``: part ``k`` reduces (or gathers) along axis ``orders[k][j]`` on the
    ``1 / (d prod_{l<j} p_l)`` of the message it holds; both ring directions carry half.

    The stage ends when its longest ring does, after ``max_k (p_k - 1)`` steps; a part on
    a shorter axis moves its ``(p_k - 1)`` steps' bytes within that many steps.
    """
    sizes = [len(c) for c in axes.coords]
    repeat = max(sizes[order[j]] - 1 for order in orders)
    flows = []
    for order in orders:
        axis, p = order[j], sizes[order[j]]
        held = 1.0 / (parts * float(np.prod([sizes[a] for a in order[:j]])))
        frac = held / p / 2.0 * (p - 1) / repeat
        for ring in axes.lines(axis):
            nxt = np.roll(ring, -1)
            flows += [(int(s), int(d), frac) for s, d in zip(ring, nxt, strict=True)]
            flows += [(int(d), int(s), frac) for s, d in zip(ring, nxt, strict=True)]
    return Step.of(flows, repeat=repeat, ring_like=True)
