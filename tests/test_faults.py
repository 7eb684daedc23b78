"""Degraded and failed fabric links (noise.links)."""

from __future__ import annotations

import pytest

from simulator.collectives import Algorithm, Op, whole_cluster
from simulator.config import scenario_from_mapping
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario


def _session(links, nodes=4, radix=8):
    data = {"cluster": {"node": "dgx-h100", "nodes": nodes,
                        "fabric": {"topology": "fat-tree", "link": "ib-ndr",
                                   "switch_radix": radix}},
            "noise": {"links": links}}
    return session_from_scenario(scenario_from_mapping(data, "faults.yaml"))


def _ring_time(session) -> float:
    group = whole_cluster(session.cluster)
    return float(session.collectives.sweep(Op.ALL_REDUCE, Algorithm.RING, group, [2**30]).time_s[0])


def test_degraded_uplink_slows_a_ring_that_crosses_it():
    healthy = _ring_time(_session([]))
    degraded = _ring_time(_session([{"between": ["fabric/leaf0", "fabric/spine0"],
                                     "fraction": 0.25}]))
    assert degraded > healthy


def test_failed_uplink_is_routed_around():
    session = _session([{"between": ["fabric/leaf0", "fabric/spine0"], "fraction": 0.0}])
    graph = session.cluster.graph
    labels = {label: v for v, label in graph.nodes(data="label")}
    assert not graph.has_edge(labels["fabric/leaf0"], labels["fabric/spine0"])
    assert _ring_time(session) >= _ring_time(_session([]))


@pytest.mark.parametrize("links,fragment", [
    ([{"between": ["fabric/leaf9", "fabric/spine0"]}], "no vertex labelled 'fabric/leaf9'"),
    ([{"between": ["fabric/leaf0", "fabric/leaf1"]}], "are not linked"),
    ([{"between": ["n0/nic0", "fabric/leaf0"]}], "only links between fabric switches can fail"),
    ([{"between": ["fabric/leaf0", f"fabric/spine{j}"]} for j in range(4)], "disconnects"),
])
def test_bad_link_faults_are_clear_errors(links, fragment):
    with pytest.raises(ConfigError, match=fragment):
        _session(links)


@pytest.mark.parametrize(("topology", "expected"), [
    ("rail-optimized", "(this cluster's fabric switches are 'fabric/rail0-leaf0', 'fabric/rail1-leaf0', "
     "'fabric/rail2-leaf0', ..., 'fabric/spine1', 'fabric/spine2', 'fabric/spine3')"),
    ("single-switch", "(this cluster's fabric switches are 'fabric/switch0')"),
])
def test_an_unknown_switch_is_answered_with_this_clusters_switch_names(topology, expected):
    """The hint named the fat-tree's 'fabric/leaf0' and 'fabric/spine1' whatever the topology,
    so a rail-optimized or single-switch scenario's user was pointed at names it does not have."""
    data = {"cluster": {"node": "dgx-h100", "nodes": 4,
                        "fabric": {"topology": topology, "link": "ib-ndr", "switch_radix": 8}},
            "noise": {"links": [{"between": ["fabric/leaf0", "fabric/spine0"], "fraction": 0.5}]}}
    with pytest.raises(ConfigError) as info:
        session_from_scenario(scenario_from_mapping(data, "faults.yaml"))
    assert info.value.key == "noise.links.0.between.0"
    assert info.value.message.startswith("no vertex labelled 'fabric/leaf0' (did you mean 'fabric/")
    assert info.value.message.endswith(expected)


def _rail_group_time(topology: str, oversubscription: float) -> float:
    """All-reduce among GPU 0 of 16 nodes (a data-parallel group), every rail at once."""
    from simulator.collectives import Op as _Op

    data = {"cluster": {"node": "dgx-h100", "nodes": 16,
                        "fabric": {"topology": topology, "link": "ib-ndr", "switch_radix": 32,
                                   "oversubscription": oversubscription}}}
    session = session_from_scenario(scenario_from_mapping(data, "rails.yaml"))
    groups = [tuple(node * 8 + rail for node in range(16)) for rail in range(8)]
    return session.collectives.concurrent_time(_Op.ALL_REDUCE, groups, 2**28)[0]


def test_rail_optimized_beats_an_oversubscribed_fat_tree_for_rail_aligned_traffic():
    """Same-rail NICs share a rail switch, so data-parallel rings never cross the
    oversubscribed uplinks that a fat-tree's mixed leaves must use."""
    fat_tree = _rail_group_time("fat-tree", 4.0)
    rails = _rail_group_time("rail-optimized", 4.0)
    assert rails < fat_tree
    assert _rail_group_time("fat-tree", 1.0) <= fat_tree


def test_groups_that_share_a_nic_share_its_bandwidth():
    """Two data-parallel groups (one per pipeline stage) whose GPUs leave through the same
    NIC take twice as long at large sizes as one group alone (analytical and DES price
    collectives this way)."""
    from simulator.collectives import Op as _Op

    data = {"cluster": {"node": "dgx-h100", "nodes": 2,
                        "fabric": {"topology": "fat-tree", "link": "ib-ndr", "nics_per_node": 1}}}
    session = session_from_scenario(scenario_from_mapping(data, "shared-nic.yaml"))
    size = 2**30
    alone = session.collectives.concurrent_time(_Op.ALL_REDUCE, [(0, 8)], size, Algorithm.RING)[0]
    shared = session.collectives.concurrent_time(_Op.ALL_REDUCE, [(0, 8), (1, 9)], size,
                                                 Algorithm.RING)[0]
    assert shared == pytest.approx(2 * alone, rel=0.02)
