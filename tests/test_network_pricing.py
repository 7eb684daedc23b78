"""The network cost model's numpy pricing gives, bit for bit, what the sparse-matrix
formulation gives (``A.T @ frac``, row maxima of ``A * class``, ``A @ latency``), on many
group sets, algorithms and fabrics."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster

from simulator.collectives import ALGORITHMS, Group, Op, build_schedule
from simulator.collectives.concurrent import merge_schedules
from simulator.collectives.schedule import Step
from simulator.cost import CollectiveModel
from simulator.errors import InfeasibleError

FABRICS = {
    "fat-tree": dict(nodes=8, topology="fat-tree", switch_radix=8),
    "fat-tree-3-tier": dict(nodes=16, topology="fat-tree", switch_radix=8, tiers=3),
    "oversubscribed": dict(nodes=8, topology="fat-tree", switch_radix=8, oversubscription=3),
    "rail-optimized": dict(nodes=8, topology="rail-optimized", switch_radix=8),
    "rail-pxn": dict(nodes=8, topology="rail-optimized", switch_radix=8, pxn=True),
    "torus": dict(nodes=8, topology="torus", torus_dims=[2, 4]),
    "single-switch": dict(nodes=4, topology="single-switch"),
    "mesh": dict(node="mi300x-platform", nodes=4, topology="fat-tree", switch_radix=8),
    "pcie": dict(node="pcie-a100x8", nodes=4, topology="rail-optimized", switch_radix=8),
    "chip-torus": dict(node="tpu-v4-chip", nodes=16, link="ici-v4", topology="torus",
                       torus_dims=[2, 2, 4], chip_torus=True),
}
_MODELS: dict = {}


def _model(name: str) -> CollectiveModel:
    if name not in _MODELS:
        _MODELS[name] = CollectiveModel(make_cluster(**FABRICS[name]))
    return _MODELS[name]


def _reference_load(model: CollectiveModel, step: Step) -> tuple:
    """The sparse-matrix formulation the numpy pricing replaces."""
    cluster = model.cluster
    inc = model.network.router.incidence(step.src, step.dst)
    edge_load = inc.T @ step.frac
    codes = inc.multiply(cluster.hw_class.astype(np.float64)).max(axis=1)
    flow_class = np.asarray(codes.todense()).ravel().astype(np.int64)
    return edge_load, flow_class, inc @ cluster.latency_s


def _group_sets(gpus: int, rng: np.random.Generator) -> list[list[tuple[int, ...]]]:
    """Strided, blocked and random sets of disjoint groups."""
    sets = []
    for size in (2, 4, 8, 16):
        if size > gpus:
            continue
        count = gpus // size
        sets.append([tuple(range(i * size, (i + 1) * size)) for i in range(count)])
        sets.append([tuple(range(i, gpus, count)) for i in range(count)])
        perm = rng.permutation(gpus).tolist()
        sets.append([tuple(perm[i * size:(i + 1) * size]) for i in range(min(count, 3))])
    return sets


def _schedules(model: CollectiveModel, rng: np.random.Generator):
    for groups in _group_sets(model.cluster.gpus, rng):
        for op in (Op.ALL_REDUCE, Op.ALL_GATHER, Op.ALL_TO_ALL, Op.BROADCAST):
            for algorithm in ALGORITHMS:
                try:
                    yield merge_schedules([build_schedule(op, algorithm, Group(model.cluster, g))
                                           for g in groups])
                except (InfeasibleError, KeyError, ValueError):
                    continue


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_numpy_step_loads_are_the_sparse_products_bit_for_bit(fabric):
    model = _model(fabric)
    rng = np.random.default_rng(7)
    count = 0
    for schedule in _schedules(model, rng):
        for step in schedule.steps:
            load = model.network._step_load(step)
            edge_load, flow_class, wire = _reference_load(model, step)
            assert load.edge_load.tobytes() == np.asarray(edge_load, dtype=np.float64).tobytes()
            assert load.flow_class.tobytes() == flow_class.tobytes()
            assert load.flow_wire_s.tobytes() == np.asarray(wire, dtype=np.float64).tobytes()
            count += 1
    assert count > 20


def test_flows_without_a_path_load_nothing():
    model = _model("fat-tree")
    src = np.array([0, 5, 3], dtype=np.int64)
    step = Step(model.cluster.gpu_vertices(src), model.cluster.gpu_vertices([0, 40, 3]),
                np.array([0.5, 0.25, 1.0]))
    load = model.network._step_load(step)
    edge_load, flow_class, wire = _reference_load(model, step)
    assert load.edge_load.tobytes() == edge_load.tobytes()
    assert load.flow_class.tolist() == flow_class.tolist() == [0, 2, 0]
    assert load.flow_wire_s.tobytes() == wire.tobytes()


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_routes_in_bulk_are_the_paths_one_by_one(fabric):
    """``Router.routes`` (flows between servers in bulk where each leaves by its own rail
    NIC) gives every flow :meth:`Router.path`'s edges, in order, on every fabric."""
    from simulator.topology.graph import VertexKind

    model = _model(fabric)
    router, graph = model.network.router, model.cluster.graph
    ports = [v for v, kind in graph.nodes(data="kind") if kind in (VertexKind.GPU, VertexKind.NIC)]
    rng = np.random.default_rng(7)
    for size in (1, 5, 200):
        src, dst = rng.choice(ports, size), rng.choice(ports, size)
        for keep in (np.ones(size, bool), src != dst, src // model.cluster.layout.vertices
                     != dst // model.cluster.layout.vertices):
            indptr, edges = router.routes(src[keep], dst[keep])
            want = [router.path(int(s), int(d)) for s, d in zip(src[keep], dst[keep], strict=True)]
            assert [tuple(edges[a:b].tolist()) for a, b in zip(indptr[:-1], indptr[1:], strict=True)] == want


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_switch_walks_together_are_the_walks_one_by_one(fabric):
    """The fabric walks :meth:`Router.routes` takes hop by hop for all flows at once are
    :meth:`Router._switch_walk`'s, walk by walk."""
    from simulator.topology.graph import VertexKind
    from simulator.topology.routing import Router

    cluster = _model(fabric).cluster
    router = Router(cluster)
    ports = [v for v, kind in cluster.graph.nodes(data="kind") if kind in (VertexKind.GPU, VertexKind.NIC)]
    src, dst = np.array(ports * len(ports)), np.repeat(ports, len(ports))
    apart = src // cluster.layout.vertices != dst // cluster.layout.vertices
    router.routes(src[apart], dst[apart])
    assert all(router._switch_walk(first, nic) == walk for (first, nic), walk in router._switch_paths.items())
