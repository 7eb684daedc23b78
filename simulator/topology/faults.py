"""Degraded and failed fabric links, applied to a built cluster before routing.

A degraded link keeps ``fraction`` of its bandwidth in both directions; a failed link
(``fraction: 0``) is removed, so shortest-path routing goes around it. Only links
between fabric switches can fail (a NIC's only cable would strand its GPU's rail);
a failure that splits the fabric is a user error.
"""

from __future__ import annotations

from dataclasses import replace

import networkx as nx

from simulator.config.scenario import LinkFaultConfig
from simulator.config.yaml_io import did_you_mean
from simulator.errors import ConfigError
from simulator.topology.cluster import Cluster
from simulator.topology.graph import VertexKind

_SWITCHES = {VertexKind.LEAF, VertexKind.SPINE, VertexKind.CORE, VertexKind.ROUTER}


def apply_link_faults(cluster: Cluster, faults: list[LinkFaultConfig]) -> Cluster:
    """A copy of ``cluster`` with each fault applied (the input is not modified)."""
    if not faults:
        return cluster
    labels = {label: v for v, label in cluster.graph.nodes(data="label")}
    switches = [label for label, v in labels.items() if cluster.graph.nodes[v]["kind"] in _SWITCHES]
    graph, bandwidth = cluster.graph.copy(), cluster.bandwidth_Bps.copy()
    for i, fault in enumerate(faults):
        u, v = (_vertex(labels, switches, name, i, j) for j, name in enumerate(fault.between))
        if not graph.has_edge(u, v):
            raise ConfigError(f"{fault.between[0]} and {fault.between[1]} are not linked",
                              key=f"noise.links.{i}.between")
        if fault.fraction > 0:
            for a, b in ((u, v), (v, u)):
                bandwidth[graph[a][b]["eid"]] *= fault.fraction
            continue
        _check_can_fail(cluster, u, v, fault, i)
        graph.remove_edges_from([(u, v), (v, u)])
    _check_connected(graph, faults)
    return replace(cluster, graph=graph, bandwidth_Bps=bandwidth)


def _vertex(labels: dict, switches: list[str], name: str, index: int, side: int) -> int:
    """The vertex labelled ``name``; else a ConfigError naming this cluster's switches (a
    rail-optimized fabric's leaves are ``fabric/rail0-leaf0``, a single switch
    ``fabric/switch0``)."""
    if name not in labels:
        ends = switches if len(switches) <= 6 else [*switches[:3], None, *switches[-3:]]
        shown = ", ".join("..." if s is None else f"'{s}'" for s in ends)
        names = (f"this cluster's fabric switches are {shown}" if switches
                 else "this cluster has no fabric switch")
        raise ConfigError(f"no vertex labelled '{name}'{did_you_mean(name, switches)} ({names})",
                          key=f"noise.links.{index}.between.{side}")
    return labels[name]


def _check_can_fail(cluster: Cluster, u: int, v: int, fault: LinkFaultConfig, index: int) -> None:
    kinds = {cluster.graph.nodes[u]["kind"], cluster.graph.nodes[v]["kind"]}
    if not kinds <= _SWITCHES:
        raise ConfigError(f"only links between fabric switches can fail (got {fault.between}); "
                          "degrade others with a fraction > 0", key=f"noise.links.{index}.fraction")


def _check_connected(graph: nx.DiGraph, faults: list[LinkFaultConfig]) -> None:
    switches = [v for v, k in graph.nodes(data="kind") if k in _SWITCHES]
    if switches and not nx.is_weakly_connected(graph.subgraph(switches)):
        failed = [f.between for f in faults if f.fraction == 0]
        raise ConfigError(f"failing {failed} disconnects the fabric", key="noise.links")
