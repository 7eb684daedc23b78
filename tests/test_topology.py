"""Cluster graph builders and routing: counts, oversubscription, ECMP determinism, incidence."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from conftest import make_cluster

from simulator.topology import Router
from simulator.topology.fabric import leaf_ports


def _kinds(cluster) -> Counter:
    return Counter(kind for _, kind in cluster.graph.nodes(data="kind"))


def test_dgx_h100_server_has_its_parts(h100_node):
    kinds = _kinds(h100_node)
    assert kinds["gpu"] == 8 and kinds["nic"] == 8 and kinds["nvswitch"] == 1
    assert kinds["pcie-switch"] == 4 and kinds["cpu"] == 2


def test_every_link_has_two_directions_with_equal_bandwidth(h100_node):
    graph, bw = h100_node.graph, h100_node.bandwidth_Bps
    for u, v, eid in graph.edges(data="eid"):
        assert bw[graph[v][u]["eid"]] == bw[eid]


def test_gpu_to_gpu_inside_a_node_uses_nvlink(h100_node):
    router = Router(h100_node)
    path = router.path(h100_node.gpu_vertex(0), h100_node.gpu_vertex(5))
    assert len(path) == 2 and set(h100_node.hw_class[list(path)]) == {0}


def test_fat_tree_two_tiers_are_non_blocking_at_oversubscription_one():
    cluster = make_cluster(nodes=8, switch_radix=32)          # 64 NICs, 16 down per leaf
    kinds = _kinds(cluster)
    assert kinds["leaf"] == 4 and kinds["spine"] == 16


@pytest.mark.parametrize("ratio", [2.0, 4.0])
def test_oversubscription_sets_the_down_to_up_ratio(ratio):
    from simulator.config.scenario import FabricConfig
    down, up = leaf_ports(FabricConfig(oversubscription=ratio, switch_radix=60))
    assert down / up == pytest.approx(ratio, rel=0.05)


def test_three_tiers_when_leaves_exceed_the_spine_radix():
    cluster = make_cluster(nodes=16, switch_radix=8)          # 128 NICs -> 32 leaves > 8
    assert _kinds(cluster)["core"] > 0


def test_rail_optimized_puts_nic_k_of_every_node_on_rail_k():
    cluster = make_cluster(nodes=4, topology="rail-optimized")
    graph = cluster.graph
    for v, label in graph.nodes(data="label"):
        if graph.nodes[v]["kind"] == "nic":
            rail = int(label.split("nic")[1])
            leaves = [graph.nodes[u]["label"] for u in graph.successors(v)
                      if graph.nodes[u]["kind"] == "leaf"]
            assert leaves and leaves[0].startswith(f"fabric/rail{rail}-")


def test_torus_routes_over_neighbours():
    cluster = make_cluster(nodes=9, topology="torus", torus_dims=[3, 3])
    router = Router(cluster)
    path = router.path(cluster.gpu_vertex(0), cluster.gpu_vertex(8 * 4))   # node 0 -> node 4
    net_hops = int((cluster.hw_class[list(path)] == 2).sum())
    assert net_hops == 4            # nic->router, 2 router hops (diagonal), router->nic


def test_ecmp_is_deterministic_and_spreads_over_spines():
    cluster = make_cluster(nodes=8, switch_radix=16)        # 64 NICs, 8 leaves, 8 spines
    first, second = Router(cluster), Router(cluster)
    spines_used = set()
    for src in range(0, 64, 8):
        for dst in range(4, 64, 8):
            a = first.path(cluster.gpu_vertex(src), cluster.gpu_vertex(dst))
            assert a == second.path(cluster.gpu_vertex(src), cluster.gpu_vertex(dst))
            spines_used |= {e for e in a if cluster.graph.nodes[_head(cluster, e)]["kind"] == "spine"}
    assert len(spines_used) > 1


def _head(cluster, eid):
    for _, v, e in cluster.graph.edges(data="eid"):
        if e == eid:
            return v
    raise KeyError(eid)


def test_incidence_matrix_counts_each_flow_edge_once(h100_node):
    router = Router(h100_node)
    src = h100_node.gpu_vertices([0, 1, 2])
    dst = h100_node.gpu_vertices([1, 2, 0])
    inc = router.incidence(src, dst)
    assert inc.shape == (3, len(h100_node.bandwidth_Bps))
    assert np.all(np.asarray(inc.sum(axis=1)).ravel() == 2)
