"""Build a whole cluster: servers, then fabric; the result the cost model routes over."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from simulator.config.resolved import ResolvedCluster
from simulator.topology.fabric import add_fabric
from simulator.topology.graph import GraphBuilder, VertexKind
from simulator.topology.server import ServerLayout, add_server


@dataclass(frozen=True)
class Cluster:
    """A built cluster.

    Attributes
    ----------
    hw : the resolved hardware it was built from.
    graph : networkx DiGraph (see :mod:`simulator.topology.graph`).
    layout : local vertex layout shared by every server.
    bandwidth_Bps, latency_s, hw_class : per directed edge, indexed by edge id.
    """

    hw: ResolvedCluster
    graph: nx.DiGraph
    layout: ServerLayout
    bandwidth_Bps: np.ndarray
    latency_s: np.ndarray
    hw_class: np.ndarray

    @property
    def servers(self) -> int:
        return self.hw.nodes

    @property
    def gpus(self) -> int:
        return self.hw.gpus

    def gpu_vertex(self, gpu: int) -> int:
        """Graph vertex of global GPU index ``gpu`` (server-major numbering)."""
        server, local = divmod(gpu, self.hw.gpus_per_node)
        return server * self.layout.vertices + self.layout.gpus[local]

    def gpu_vertices(self, gpus) -> np.ndarray:
        gpus = np.asarray(gpus, dtype=np.int64)
        server, local = np.divmod(gpus, self.hw.gpus_per_node)
        return server * self.layout.vertices + np.asarray(self.layout.gpus)[local]

    def server_of_vertex(self, vertex: int) -> int:
        return self.graph.nodes[vertex]["server"]

    def nvswitch_vertex(self, server: int) -> int | None:
        """The NVSwitch plane of ``server``, or None if it has none."""
        base = server * self.layout.vertices
        for v in range(base, base + self.layout.vertices):
            if self.graph.nodes[v]["kind"] == VertexKind.NVSWITCH:
                return v
        return None


def build_cluster(hw: ResolvedCluster) -> Cluster:
    """Build the graph of ``hw``: every server (same layout), then the fabric between NICs
    (between the chips themselves on a chip-level torus)."""
    builder = GraphBuilder()
    layout = None
    nics = []
    for server in range(hw.nodes):
        base = builder.vertex_count
        layout = add_server(builder, server, hw)
        ports = layout.gpus if hw.fabric.chip_torus else layout.nics
        nics.append([base + n for n in ports])
    if hw.nodes > 1:
        add_fabric(builder, nics, hw.fabric, hw.port_link)
    bandwidth, latency, hw_class = builder.edge_arrays()
    return Cluster(hw, builder.graph(), layout, bandwidth, latency, hw_class)
