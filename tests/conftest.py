"""Shared fixtures: small clusters built from inline scenarios."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.topology import build_cluster


def make_cluster(node="dgx-h100", nodes=1, link="ib-ndr", topology="fat-tree", **fabric):
    """Build a cluster of ``nodes`` x ``node`` (extra keys go to the fabric section)."""
    gpus_per_node = fabric.pop("gpus_per_node", None)
    cluster = {"node": node, "nodes": nodes,
               "fabric": {"topology": topology, "link": link, **fabric}}
    if gpus_per_node:
        cluster["gpus_per_node"] = gpus_per_node
    library = HardwareLibrary()
    scenario = scenario_from_mapping({"cluster": cluster}, "<test>", library)
    return build_cluster(resolve_cluster(scenario.cluster, library))


@pytest.fixture(scope="module")
def h100_node():
    return make_cluster()


@pytest.fixture(scope="module")
def h100_node_model(h100_node):
    return CollectiveModel(h100_node)
