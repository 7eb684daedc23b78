"""Schedules of groups moved by whole servers are the unmoved groups' schedules shifted
(``simulator.collectives.concurrent.shift_schedule``), bit for bit, on many group sets and
fabrics; and the collective model's concurrent prices, built once per shape, are those of
schedules built for each group set."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster
from test_network_pricing import FABRICS

from simulator.collectives import Group, Op, build_schedule
from simulator.collectives.concurrent import SHIFT_EQUIVARIANT, merge_schedules, shift_schedule
from simulator.cost import CollectiveModel
from simulator.errors import InfeasibleError

_CLUSTERS: dict = {}
OPS = (Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.BROADCAST, Op.REDUCE, Op.ALL_TO_ALL)


def _cluster(name: str):
    if name not in _CLUSTERS:
        _CLUSTERS[name] = make_cluster(**FABRICS[name])
    return _CLUSTERS[name]


def _shapes(per_node: int, servers: int, rng: np.random.Generator) -> list[list[tuple[int, ...]]]:
    """Group sets on the first ``servers`` servers: blocks, strides, ragged and random."""
    gpus = per_node * servers
    out = []
    for size in (2, 3, 4, 8, 16):
        if size > gpus:
            continue
        count = gpus // size
        out.append([tuple(range(i * size, (i + 1) * size)) for i in range(count)])
        out.append([tuple(range(i, count * size, count)) for i in range(count)])
        for _ in range(2):
            perm = rng.permutation(gpus).tolist()
            out.append([tuple(perm[i * size:(i + 1) * size]) for i in range(min(count, 3))])
    return out


def _built(cluster, op, algorithm, groups):
    try:
        return merge_schedules([build_schedule(op, algorithm, Group(cluster, g)) for g in groups])
    except (InfeasibleError, KeyError, ValueError):
        return None


def _same(a, b) -> bool:
    if (a is None) != (b is None):
        return False
    if a is None:
        return True
    fields = (a.op, a.algorithm, a.ranks, a.pipelined, a.channels, a.notes, len(a.steps))
    if fields != (b.op, b.algorithm, b.ranks, b.pipelined, b.channels, b.notes, len(b.steps)):
        return False
    return all(x.repeat == y.repeat and x.ring_like == y.ring_like
               and all(u.dtype == v.dtype and u.tobytes() == v.tobytes()
                       for u, v in ((x.src, y.src), (x.dst, y.dst), (x.frac, y.frac)))
               for x, y in zip(a.steps, b.steps, strict=True))


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_moved_groups_have_the_shifted_schedule(fabric):
    cluster = _cluster(fabric)
    per_node, servers = cluster.hw.gpus_per_node, cluster.servers
    rng = np.random.default_rng(11)
    span = max(1, servers // 2)
    checked = 0
    for groups in _shapes(per_node, span, rng):
        for algorithm in SHIFT_EQUIVARIANT:
            for op in OPS:
                base = _built(cluster, op, algorithm, groups)
                for k in range(1, servers - span + 1):
                    moved = [tuple(g + k * per_node for g in group) for group in groups]
                    direct = _built(cluster, op, algorithm, moved)
                    shifted = None if base is None else shift_schedule(base, k * cluster.layout.vertices)
                    assert _same(direct, shifted), (fabric, groups, op, k)
                    checked += direct is not None
    assert checked > 50


@pytest.mark.parametrize("fabric", ["fat-tree", "rail-pxn", "mesh", "torus"])
def test_concurrent_prices_built_once_per_shape_are_the_direct_ones(fabric):
    cluster = _cluster(fabric)
    model, per_node = CollectiveModel(cluster), cluster.hw.gpus_per_node
    rng = np.random.default_rng(3)
    for groups in _shapes(per_node, 2, rng)[:12]:
        for k in range(cluster.servers - 1):
            moved = [tuple(g + k * per_node for g in group) for group in groups]
            for op in (Op.ALL_GATHER, Op.ALL_REDUCE, Op.REDUCE_SCATTER):
                fresh = CollectiveModel(cluster)      # every group set built for itself
                fresh._merged = lambda op, algorithm, groups: _built(cluster, op, algorithm, groups)
                for size in (1e3, 1e6, 1e9):
                    got = model.concurrent_terms(op, moved, size)
                    want = fresh.concurrent_terms(op, moved, size)
                    assert (got.latency_s, got.seconds_per_byte, got.protocol) == \
                        (want.latency_s, want.seconds_per_byte, want.protocol)
                    assert _same(got.schedule, want.schedule)


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_ring_reduce_scatter_is_the_all_gather_renamed(fabric):
    """``SAME_RING_STEPS``: the collective model builds a ring reduce-scatter as the ring
    all-gather's schedule with its op renamed; built directly, it is the same."""
    from dataclasses import replace

    from simulator.collectives import Algorithm
    from simulator.collectives.ring import SAME_RING_STEPS

    cluster = _cluster(fabric)
    rng = np.random.default_rng(5)
    for groups in _shapes(cluster.hw.gpus_per_node, max(1, cluster.servers // 2), rng):
        for op, twin in SAME_RING_STEPS.items():
            direct = _built(cluster, op, Algorithm.RING, groups)
            renamed = _built(cluster, twin, Algorithm.RING, groups)
            assert _same(direct, None if renamed is None else replace(renamed, op=op)), (fabric, groups)
