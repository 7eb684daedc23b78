"""Routes between graph vertices, as edge-id paths and as scipy.sparse incidence matrices.

Inside a server, paths minimise the sum of 1/bandwidth (NVLink before PCIe),
computed once on server 0 and shifted to the others. Between servers a flow
leaves through the source GPU's rail NIC, crosses the fabric over a shortest
path (hop count) and enters through the destination GPU's rail NIC. Among
equal-cost next hops the router picks by destination, D-mod-K style: at each
upward hop with k choices it takes ``d mod k`` and divides ``d`` by ``k``, where
``d`` is the destination NIC's index (Zahavi et al., "Optimized InfiniBand fat-tree
routing for shift all-to-all communication patterns", 2010; the routing InfiniBand
subnet managers use). Shift patterns such as rings then never collide on an uplink. Caches live on the
:class:`Router` instance; there is no global state.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from simulator.topology.cluster import Cluster
from simulator.topology.graph import VertexKind

_FABRIC_KINDS = {VertexKind.LEAF, VertexKind.SPINE, VertexKind.CORE, VertexKind.ROUTER}




class Router:
    """Shortest-path routing with deterministic ECMP over a :class:`Cluster`."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._graph = cluster.graph
        self._inv_bw = 1.0 / cluster.bandwidth_Bps
        self._intra: dict[tuple[int, int], tuple[int, ...]] = {}
        self._dist: dict[int, np.ndarray] = {}
        self._adjacency: sp.csr_matrix | None = None
        self._paths: dict[tuple[int, int], tuple[int, ...]] = {}
        self._hops: dict[tuple[int, int], list[int]] = {}
        nics = sorted(v for v, k in self._graph.nodes(data="kind") if k == VertexKind.NIC)
        self._nic_rank = {v: i for i, v in enumerate(nics)}
        switches = {v for v, k in self._graph.nodes(data="kind") if k in _FABRIC_KINDS}
        self._switches = switches
        self._fabric_adj = {v: sorted(u for u in self._graph.successors(v) if u in switches)
                            for v in switches}
        self._switch_index = {v: i for i, v in enumerate(sorted(self._fabric_adj))}

    def path(self, src: int, dst: int) -> tuple[int, ...]:
        """Edge ids from vertex ``src`` to vertex ``dst`` (empty if equal)."""
        key = (src, dst)
        found = self._paths.get(key)
        if found is None:
            found = self._route(src, dst)
            self._paths[key] = found
        return found

    def incidence(self, src: np.ndarray, dst: np.ndarray) -> sp.csr_matrix:
        """Flows x edges matrix with a 1 where flow ``i`` (src[i] -> dst[i]) crosses edge ``e``."""
        paths = [self.path(int(s), int(d)) for s, d in zip(src, dst, strict=True)]
        lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        indices = np.fromiter((e for p in paths for e in p), dtype=np.int64, count=int(indptr[-1]))
        data = np.ones(len(indices), dtype=np.float64)
        shape = (len(paths), len(self.cluster.bandwidth_Bps))
        return sp.csr_matrix((data, indices, indptr), shape=shape)

    # -- internals ---------------------------------------------------------------------------
    def _route(self, src: int, dst: int) -> tuple[int, ...]:
        if src == dst:
            return ()
        layout = self.cluster.layout
        s_srv, d_srv = src // layout.vertices, dst // layout.vertices
        if s_srv == d_srv:
            return self._intra_path(src, dst)
        src_nic = self._rail_nic(src)
        dst_nic = self._rail_nic(dst)
        return (self._intra_path(src, src_nic) + self._fabric_path(src_nic, dst_nic)
                + self._intra_path(dst_nic, dst))

    def _rail_nic(self, vertex: int) -> int:
        layout = self.cluster.layout
        server, local = divmod(vertex, layout.vertices)
        if local in layout.nics:
            return vertex
        gpu_index = layout.gpus.index(local) if local in layout.gpus else 0
        return server * layout.vertices + layout.nics[layout.rail_nic(gpu_index)]

    def _intra_path(self, src: int, dst: int) -> tuple[int, ...]:
        n = self.cluster.layout.vertices
        server = src // n
        key = (src - server * n, dst - server * n)
        local = self._intra.get(key)
        if local is None:
            local = self._intra_template(*key)
            self._intra[key] = local
        edges_per_server = self.cluster.layout.edges
        return tuple(e + server * edges_per_server for e in local)

    def _intra_template(self, src: int, dst: int) -> tuple[int, ...]:
        server0 = self._graph.subgraph(range(self.cluster.layout.vertices))

        def weight(u, v, data):
            return self._inv_bw[data["eid"]]

        try:
            nodes = nx.shortest_path(server0, src, dst, weight=weight)
        except nx.NetworkXNoPath:
            raise ValueError(f"no path inside a server from {src} to {dst}") from None
        return tuple(self._graph[u][v]["eid"] for u, v in zip(nodes, nodes[1:], strict=False))

    def _fabric_path(self, src_nic: int, dst_nic: int) -> tuple[int, ...]:
        graph = self._graph
        first = next(v for v in graph.successors(src_nic) if v in self._switches)
        last = next(v for v in graph.predecessors(dst_nic) if v in self._switches)
        edges = [graph[src_nic][first]["eid"]]
        here, key = first, self._nic_rank[dst_nic]
        while here != last:
            options = self._next_hops(here, last)
            key, pick = divmod(key, len(options))
            nxt = options[pick]
            edges.append(graph[here][nxt]["eid"])
            here = nxt
        edges.append(graph[last][dst_nic]["eid"])
        return tuple(edges)

    def _next_hops(self, here: int, target: int) -> list[int]:
        """Neighbours of switch ``here`` one hop closer to switch ``target`` (ECMP set)."""
        key = (here, target)
        options = self._hops.get(key)
        if options is None:
            to_target = self._distances_to(target)
            index = self._switch_index
            closer = to_target[index[here]] - 1
            options = [v for v in self._fabric_adj[here] if to_target[index[v]] == closer]
            self._hops[key] = options
        return options

    def _distances_to(self, switch: int) -> np.ndarray:
        """Hop counts from every fabric switch to ``switch`` (BFS in scipy, cached per target)."""
        dist = self._dist.get(switch)
        if dist is None:
            if self._adjacency is None:
                self._adjacency = self._switch_adjacency()
            dist = csgraph.shortest_path(self._adjacency, unweighted=True, directed=False,
                                         indices=self._switch_index[switch])
            self._dist[switch] = dist
        return dist

    def _switch_adjacency(self) -> sp.csr_matrix:
        index = self._switch_index
        rows = [index[v] for v in self._fabric_adj for _ in self._fabric_adj[v]]
        cols = [index[u] for v in self._fabric_adj for u in self._fabric_adj[v]]
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(index), len(index)))
