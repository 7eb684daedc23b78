"""Translation symmetry of a cluster: shifts by whole servers that map its graph and its
routes onto themselves, so that groups of GPUs differing by such a shift cost the same.

The routes (:mod:`simulator.topology.routing`) choose a fabric path by D-mod-K: at the one
upward hop of a two-tier fabric (leaf to spine) a flow takes spine ``d mod k`` of the ``k``
spines, ``d`` being the destination NIC's global index (fat-tree) or its server's index within
its rail (rail-optimized); intra-server paths are the same in every server. A shift by
``Delta`` NICs therefore maps every route to a route, edge for edge, when it maps leaves to
leaves (``Delta`` a multiple of the NICs per leaf) and keeps ``d mod k`` (``Delta`` a multiple of
``k``); every link of a fabric has the scenario's one NIC link spec, so the shifted flows meet
the same bandwidths and their loads are a permutation of the unshifted ones.

Not claimed (:func:`translation_period` returns None): three-tier fabrics (the second upward
choice ``(d div k) mod k'`` shifts too), tori, clusters across sites, fabrics with a partial
leaf, and clusters with link faults (a degraded or removed link breaks the symmetry).
"""

from __future__ import annotations

from math import gcd, lcm

import numpy as np

from simulator.config.fabric_size import leaf_ports
from simulator.config.scenario import TopologyKind
from simulator.topology.cluster import Cluster
from simulator.topology.graph import VertexKind

_SWITCHES = (VertexKind.LEAF, VertexKind.SPINE, VertexKind.CORE, VertexKind.ROUTER)


def translation_period(cluster: Cluster) -> int | None:
    """The smallest shift in servers that maps ``cluster``'s routes onto themselves (see the
    module docstring), or None when none is claimed."""
    fabric, hw = cluster.hw.fabric, cluster.hw
    if fabric.chip_torus or fabric.topology == TopologyKind.TORUS or not _intact(cluster):
        return None
    kinds = {kind for _, kind in cluster.graph.nodes(data="kind")}
    if VertexKind.CORE in kinds or VertexKind.ROUTER in kinds:
        return None
    nics = hw.nic_ports
    if fabric.topology == TopologyKind.SINGLE_SWITCH or nics == 0 or VertexKind.SPINE not in kinds:
        return 1
    down, up = leaf_ports(fabric)
    if fabric.topology == TopologyKind.RAIL_OPTIMIZED:
        return lcm(down, up) if cluster.servers % down == 0 else None
    if (cluster.servers * nics) % down:
        return None
    step = lcm(down, up)
    return step // gcd(step, nics)


def _intact(cluster: Cluster) -> bool:
    """Whether every edge built is still in the graph and every switch port has one bandwidth."""
    if cluster.graph.number_of_edges() != len(cluster.bandwidth_Bps):
        return False
    graph = cluster.graph
    switches = [v for v, kind in graph.nodes(data="kind") if kind in _SWITCHES]
    ports = [eid for edges in (graph.out_edges(switches, data="eid"), graph.in_edges(switches, data="eid"))
             for _, _, eid in edges]       # every edge at a switch (those between two switches twice)
    return bool(ports) and bool(np.all(cluster.bandwidth_Bps[ports] == cluster.bandwidth_Bps[ports[0]]))


def canonical_stage(period: int | None, stage_stride: int, gpus_per_server: int, stage: int) -> int:
    """The first pipeline stage whose GPUs are ``stage``'s shifted by a multiple of ``period``
    servers (``stage`` itself when no period is claimed or the shift between neighbouring
    stages is not a whole number of servers). Stage ``s`` holds stage 0's GPUs shifted by
    ``s g`` (``g`` = ``stage_stride``, :attr:`simulator.workload.layout.Layout.stage_stride`)."""
    if period is None or stage_stride % gpus_per_server:
        return stage
    servers = stage_stride // gpus_per_server
    return stage % (period // gcd(period, servers))
