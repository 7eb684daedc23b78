"""A group's ring hops built at once (``Group.ring_hops``) are, hop for hop, the pairs of
its channels' ring orders (``ring_pairs(Group.ring_order(c))``), on every fabric and on
uniform, ragged and random groups."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster
from test_network_pricing import FABRICS

from simulator.collectives.group import Group, ring_pairs

_CLUSTERS: dict = {}


def _cluster(name: str):
    if name not in _CLUSTERS:
        _CLUSTERS[name] = make_cluster(**FABRICS[name])
    return _CLUSTERS[name]


def _groups(gpus: int, per_node: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    out = [tuple(range(min(gpus, 16))), tuple(range(0, gpus, max(1, per_node // 2))),
           tuple(range(1, gpus, 3))]
    for _ in range(6):
        size = int(rng.integers(2, min(gpus, 24) + 1))
        out.append(tuple(int(g) for g in rng.choice(gpus, size, replace=False)))
    return [g for g in out if len(g) >= 2]


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_ring_hops_are_the_ring_orders_pairs(fabric):
    cluster = _cluster(fabric)
    rng = np.random.default_rng(7)
    for gpus in _groups(cluster.gpus, cluster.hw.gpus_per_node, rng):
        group = Group(cluster, gpus)
        for channels in sorted({1, 2, 3, group.channels}):
            pairs = [pair for c in range(channels) for pair in ring_pairs(group.ring_order(c))]
            src, dst = group.ring_hops(channels)
            assert src.tolist() == [s for s, _ in pairs]
            assert dst.tolist() == [d for _, d in pairs]
