"""Routes between graph vertices, as edge-id paths and as scipy.sparse incidence matrices.

Inside a server, paths minimise the sum of 1/bandwidth (NVLink before PCIe),
computed once on server 0 and shifted to the others. Between servers a flow
crosses the fabric over a shortest path (hop count) from a NIC of the source
server to the destination GPU's rail NIC: NCCL receives locally (NVIDIA/nccl
src/transport/net.cc; src/graph/paths.cc enables PXN "only in the GPU->NIC
direction ... to favor receiving locally and sending remotely").

Which NIC sends (see :meth:`Router.exit_nic`):

- by default, the source GPU's own rail NIC (GPU g -> NIC g*nics//gpus);
- on a rail-optimized fabric (or with PXN), the source server's NIC on the
  *destination's* rail if the source reaches it through its own PCIe switch (NCCL's PIX path type): that is
  how a ring channel leaves a server on the rail it entered by (search.cc,
  ``crossNic`` 0), and one of the NICs NCCL's point-to-point may use
  (``ncclTopoGetLocalNet`` spreads channels over the NICs closest to the GPU);
- with ``fabric.pxn`` (NCCL's PXN, ``NCCL_PXN_DISABLE=0``), the NIC on the destination's
  rail reached over NVLink through the source server's GPU with the destination's
  local index, which sits next to that NIC (paths.cc ``addInterStep`` GPU -> GPU -> NET;
  search.cc ``ncclTopoGetNetDev`` with ``NCCL_P2P_PXN_LEVEL=2``: the proxy rank is
  that GPU), so cross-rail traffic stays on one rail in the fabric.

Among equal-cost next hops the router picks by destination, D-mod-K style: at each
upward hop with k choices it takes ``d mod k`` and divides ``d`` by ``k`` (Zahavi et
al., "Optimized InfiniBand fat-tree routing for shift all-to-all communication
patterns", 2010; the routing InfiniBand subnet managers use). ``d`` is the destination
NIC's index: global on a fat-tree; on a rail-optimized fabric its index within its
rail (its server), as an ftree/D-mod-K ordering of each rail's leaf group gives, so one
rail's destinations spread over all spines. Shift patterns such as rings then never
collide on an uplink. On a chip-level torus (``fabric.chip_torus``, TPU ICI) the chips
themselves are the ports: a flow leaves its chip straight into the chip's router and
crosses the torus over a shortest path. Caches live on the :class:`Router` instance; there is no global
state.
"""

from __future__ import annotations

from functools import cached_property

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from simulator.config.fabric_size import leaf_ports
from simulator.config.hardware import HwClass
from simulator.config.scenario import TopologyKind
from simulator.topology.cluster import Cluster
from simulator.topology.graph import HW_CLASS_CODE, VertexKind

_FABRIC_KINDS = {VertexKind.LEAF, VertexKind.SPINE, VertexKind.CORE, VertexKind.ROUTER}
_NVLINK = HW_CLASS_CODE[HwClass.NVLINK]


def pcie_switches(cluster: Cluster) -> dict[int, int]:
    """Local vertex -> the local PCIe switch it hangs off, for server 0's GPUs and NICs."""
    graph, n = cluster.graph, cluster.layout.vertices
    kinds = (VertexKind.GPU, VertexKind.NIC)
    return {v: u for v in range(n) if graph.nodes[v]["kind"] in kinds
            for u in graph.successors(v) if graph.nodes[u]["kind"] == VertexKind.PCIE_SWITCH}


def _memo(cache: dict, key: tuple, compute):
    """``cache[key]``, computing it as ``compute(*key)`` on first use."""
    found = cache.get(key)
    if found is None:
        found = cache[key] = compute(*key)
    return found


class _Templates:
    """Edge-id templates of intra-server paths, and the template each flow uses."""

    def __init__(self, paths: list[tuple[int, ...]], which: np.ndarray):
        sizes = np.array([len(p) for p in paths], dtype=np.int64)
        self.flat = np.array([e for p in paths for e in p], dtype=np.int64)
        self.start = np.concatenate(([0], np.cumsum(sizes)))[:-1]
        self.lengths = sizes[which] if len(which) else np.zeros(0, dtype=np.int64)
        self.which = which

    def expand(self, row_starts: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in the CSR index array, edge ids) for every flow's template path."""
        total = int(self.lengths.sum())
        first = np.repeat(np.cumsum(self.lengths) - self.lengths, self.lengths)
        within = np.arange(total) - first
        positions = np.repeat(row_starts, self.lengths) + within
        values = self.flat[np.repeat(self.start[self.which], self.lengths) + within]
        return positions, values + np.repeat(offsets, self.lengths)


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
        self._fabric_paths: dict[tuple[int, int], tuple[int, ...]] = {}
        self._switch_paths: dict[tuple[int, int], tuple[int, ...]] = {}
        self._local_rail = self._local_rails()
        fabric = cluster.hw.fabric
        self._rails = fabric.topology == TopologyKind.RAIL_OPTIMIZED
        self._pxn = fabric.pxn
        self._switch_of = pcie_switches(cluster) if self._rails or self._pxn else {}
        self._relay_ok: dict[tuple[int, int, int], bool] = {}
        ports = {VertexKind.NIC, VertexKind.GPU} if fabric.chip_torus else {VertexKind.NIC}
        nics = sorted(v for v, k in self._graph.nodes(data="kind") if k in ports)
        self._nic_rank = self._dmodk_keys(nics)
        switches = {v for v, k in self._graph.nodes(data="kind") if k in _FABRIC_KINDS}
        self._switches = switches
        self._fabric_adj = {v: sorted(u for u in self._graph.successors(v) if u in switches)
                            for v in switches}
        self._fabric_adj_set = {v: set(adj) for v, adj in self._fabric_adj.items()}
        self._switch_index = {v: i for i, v in enumerate(sorted(self._fabric_adj))}
        self._nic_port, self._switch_eid = self._fabric_ports()

    def path(self, src: int, dst: int) -> tuple[int, ...]:
        """Edge ids from vertex ``src`` to vertex ``dst`` (empty if equal)."""
        return _memo(self._paths, (src, dst), self._route)

    def incidence(self, src: np.ndarray, dst: np.ndarray) -> sp.csr_matrix:
        """Flows x edges matrix with a 1 where flow ``i`` (src[i] -> dst[i]) crosses edge ``e``
        (the rows of :meth:`routes`)."""
        indptr, indices = self.routes(src, dst)
        shape = (len(indptr) - 1, len(self.cluster.bandwidth_Bps))
        return sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=shape)

    def routes(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every flow's path as CSR arrays ``(indptr, edge ids)``: flow ``i`` (src[i] ->
        dst[i]) crosses ``edges[indptr[i]:indptr[i + 1]]``, in path order.

        Flows inside one server are routed in bulk from per-(local src, local dst)
        templates; flows between servers too where each leaves by its own rail NIC
        (:meth:`_between_servers`), else through :meth:`path` one by one.
        """
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n_vert, n_edge = self.cluster.layout.vertices, self.cluster.layout.edges
        server = src // n_vert
        inside = (server == dst // n_vert) & (src != dst)
        lengths = np.zeros(len(src), dtype=np.int64)
        template = self._templates(src[inside] % n_vert, dst[inside] % n_vert)
        lengths[inside] = template.lengths
        outside = np.flatnonzero(~inside)
        found = self._between_servers(src[outside], dst[outside])
        if found is None:
            paths = self._paths_of(src[outside].tolist(), dst[outside].tolist())
            found = (np.array([len(p) for p in paths], dtype=np.int64),
                     np.array([e for p in paths for e in p], dtype=np.int64))
        lengths[outside], flat = found
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        indices = np.empty(int(indptr[-1]), dtype=np.int64)
        rows = np.flatnonzero(inside)
        positions, values = template.expand(indptr[rows], server[rows] * n_edge)
        indices[positions] = values
        if len(flat):
            starts = indptr[outside]
            within = np.arange(len(flat)) - np.repeat(np.cumsum(lengths[outside]) - lengths[outside],
                                                      lengths[outside])
            indices[np.repeat(starts, lengths[outside]) + within] = flat
        return indptr, indices

    def _between_servers(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(path lengths, edge ids path after path) of flows ``src -> dst`` on different
        servers, the paths of :meth:`_route` in bulk: up from the source to its own rail NIC
        (an intra-server template), the NIC's uplink, the switches' walk to the destination
        NIC (:meth:`_switch_walk`, once per (first switch, destination NIC)), the downlink,
        and the template from that NIC to the destination. None when a flow needs
        :meth:`_route` itself: on a rail-optimized fabric or with PXN (the exit NIC depends
        on the destination), or for a flow within a server or from a vertex with no rail NIC."""
        if self._rails or self._pxn:
            return None
        if not len(src):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        n_vert, n_edge = self.cluster.layout.vertices, self.cluster.layout.edges
        s_srv, s_loc = np.divmod(src, n_vert)
        d_srv, d_loc = np.divmod(dst, n_vert)
        rail, (first, up_edge, down_edge) = self._rail_table, self._port_table
        s_rail, d_rail = rail[s_loc], rail[d_loc]
        if (s_rail < 0).any() or (d_rail < 0).any() or (s_srv == d_srv).any():
            return None
        src_nic, dst_nic = s_srv * n_vert + s_rail, d_srv * n_vert + d_rail
        switch = first[src_nic]
        if (switch < 0).any() or (first[dst_nic] < 0).any():
            return None
        up, down = self._templates(s_loc, s_rail), self._templates(d_rail, d_loc)
        span = len(first)                                   # vertices: (switch, NIC) as one key
        keys, which = np.unique(switch * span + dst_nic, return_inverse=True)
        walk = _Templates(self._switch_walks(*np.divmod(keys, span)), which.ravel())
        lengths = up.lengths + walk.lengths + down.lengths + 2
        starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
        out = np.empty(int(lengths.sum()), dtype=np.int64)
        positions, values = up.expand(starts, s_srv * n_edge)
        out[positions] = values
        at = starts + up.lengths
        out[at] = up_edge[src_nic]
        positions, values = walk.expand(at + 1, np.zeros(len(src), dtype=np.int64))
        out[positions] = values
        at += 1 + walk.lengths
        out[at] = down_edge[dst_nic]
        positions, values = down.expand(at + 1, d_srv * n_edge)
        out[positions] = values
        return lengths, out

    @cached_property
    def _rail_table(self) -> np.ndarray:
        """Local vertex -> the local NIC it leaves its server by (:meth:`_rail_nic`), -1 for
        a vertex that has none."""
        table = np.full(self.cluster.layout.vertices, -1, dtype=np.int64)
        for local, nic in self._local_rail.items():
            table[local] = nic
        return table

    @cached_property
    def _port_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per vertex, the fabric port of :meth:`_fabric_ports` as arrays: its switch, up edge
        and down edge (-1 for a vertex that is no port)."""
        out = np.full((3, self._graph.number_of_nodes()), -1, dtype=np.int64)
        for nic, port in self._nic_port.items():
            out[:, nic] = port
        return out[0], out[1], out[2]

    def _paths_of(self, src: list[int], dst: list[int]) -> list[tuple[int, ...]]:
        """:meth:`path` of each (src[i], dst[i])."""
        cache, out = self._paths, []
        for pair in zip(src, dst, strict=True):
            found = cache.get(pair)
            if found is None:
                found = cache[pair] = self._route(*pair)
            out.append(found)
        return out

    def _templates(self, local_src: np.ndarray, local_dst: np.ndarray) -> _Templates:
        n_vert = self.cluster.layout.vertices
        keys, inverse = np.unique(local_src * n_vert + local_dst, return_inverse=True)
        paths = []
        for key in keys.tolist():
            pair = divmod(key, n_vert)
            if pair not in self._intra:
                self._intra[pair] = self._intra_template(*pair)
            paths.append(self._intra[pair])
        return _Templates(paths, inverse.ravel())

    # -- internals ---------------------------------------------------------------------------
    def _route(self, src: int, dst: int) -> tuple[int, ...]:
        if src == dst:
            return ()
        layout = self.cluster.layout
        s_srv, d_srv = src // layout.vertices, dst // layout.vertices
        if s_srv == d_srv:
            return self._intra_path(src, dst)
        src_nic, relay = self.exit_nic(src, dst)
        dst_nic = self._rail_nic(dst)
        up = self._intra_path(src, src_nic) if relay == src else \
            self._intra_path(src, relay) + self._intra_path(relay, src_nic)
        return up + self._fabric_path(src_nic, dst_nic) + self._intra_path(dst_nic, dst)

    def exit_nic(self, src: int, dst: int) -> tuple[int, int]:
        """(NIC vertex a flow from ``src`` to ``dst`` on another server leaves by, the
        GPU that hands it to that NIC): see the module docstring.

        ``(own rail NIC, src)`` unless the fabric is rail-optimized or PXN is on; then
        the NIC of the source server on the destination's rail, handed over by ``src``
        itself if it shares the NIC's PCIe switch (NCCL path type PIX), else with PXN by
        the GPU with the destination's local index if ``src`` reaches it over NVLink
        only and it shares the NIC's PCIe switch (paths.cc conditions (1)-(3) for
        ``PATH_PXN``), else ``(own rail NIC, src)``: the flow crosses rails in the
        fabric, as NCCL's ``crossNic`` fallback and its non-PXN point-to-point do.
        """
        own = self._rail_nic(src)
        if not (self._rails or self._pxn):
            return own, src
        n = self.cluster.layout.vertices
        base = src - src % n
        want = base + self._local_rail[dst % n]
        if want == own or self._shares_switch(src % n, want % n):
            return want, src
        relay = base + dst % n
        if self._pxn and self._can_relay(src % n, relay % n, want % n):
            return want, relay
        return own, src

    def _rail_nic(self, vertex: int) -> int:
        """The NIC a GPU (or NIC) vertex uses to leave its server: GPU g -> NIC g*nics//gpus."""
        server, local = divmod(vertex, self.cluster.layout.vertices)
        return server * self.cluster.layout.vertices + self._local_rail[local]

    def _dmodk_keys(self, nics: list[int]) -> dict[int, int]:
        """D-mod-K key of each NIC: its index in the fabric's host order, leaf after leaf and
        port after port (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift
        Permutations on Real Life Fat Trees", 2010: the up port at level ``l`` is
        ``floor(D / (w_1 ... w_{l-1})) mod w_l``). On a fat-tree that is the NIC's global
        index; on a rail-optimized fabric, whose leaves hold one rail each, it is
        ``(leaf of the rail) x (a leaf's down ports) + the server's port on it``: on a
        non-blocking leaf (as many up ports as down) the first hop spreads a rail's flows over
        every up port by the destination server, as before, and the levels above by the
        destination's leaf (rail and leaf within it). Keying by the
        server alone repeated the same few values at the third tier, where every flow into
        one leaf group then met on two core switches."""
        if not self._rails:
            return {v: i for i, v in enumerate(nics)}
        kinds = self._graph.nodes(data="kind")
        leaf_of = {v: next((u for u in self._graph.successors(v) if kinds[u] in _FABRIC_KINDS), -1)
                   for v in nics}                  # -1: a NIC on no switch (one server)
        down = leaf_ports(self.cluster.hw.fabric)[0]
        rank = {leaf: i for i, leaf in enumerate(sorted(set(leaf_of.values())))}
        ports: dict[int, int] = {}
        keys = {}
        for v in nics:                                   # vertex order: a rail's servers in turn
            leaf = leaf_of[v]
            keys[v] = rank[leaf] * down + ports.get(leaf, 0)
            ports[leaf] = ports.get(leaf, 0) + 1
        return keys

    def _shares_switch(self, local_a: int, local_b: int) -> bool:
        switch = self._switch_of.get(local_a)
        return switch is not None and switch == self._switch_of.get(local_b)

    def _can_relay(self, src: int, relay: int, nic: int) -> bool:
        """PXN relay test on local vertices: ``relay`` is another GPU next to ``nic``
        (same PCIe switch) that ``src`` reaches over NVLink-class links only."""
        key = (src, relay, nic)
        found = self._relay_ok.get(key)
        if found is None:
            gpus = set(self.cluster.layout.gpus)
            found = (relay != src and relay in gpus and self._shares_switch(relay, nic)
                     and all(self.cluster.hw_class[e] == _NVLINK
                             for e in self._intra_path(src, relay)))
            self._relay_ok[key] = found
        return found

    def _local_rails(self) -> dict[int, int]:
        layout = self.cluster.layout
        rails = {nic: nic for nic in layout.nics}
        for index, gpu in enumerate(layout.gpus):
            rails[gpu] = layout.nics[layout.rail_nic(index)] if layout.nics else gpu
        return rails

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
        return _memo(self._fabric_paths, (src_nic, dst_nic), self._fabric_route)

    def _fabric_route(self, src_nic: int, dst_nic: int) -> tuple[int, ...]:
        first, up, _ = self._nic_port[src_nic]
        down = self._nic_port[dst_nic][2]
        return (up, *_memo(self._switch_paths, (first, dst_nic), self._switch_walk), down)

    def _switch_walk(self, first: int, dst_nic: int) -> tuple[int, ...]:
        """Edge ids from switch ``first`` to ``dst_nic``'s switch, each hop's ECMP choice by
        D-mod-K on ``dst_nic``'s key (the same from every NIC of ``first``)."""
        last = self._nic_port[dst_nic][0]
        edges = []
        here, key = first, self._nic_rank[dst_nic]
        while here != last:
            options = self._next_hops(here, last)
            key, pick = divmod(key, len(options))
            nxt = options[pick]
            edges.append(self._switch_eid[(here, nxt)])
            here = nxt
        return tuple(edges)

    def _switch_walks(self, firsts: np.ndarray, nics: np.ndarray) -> list[tuple[int, ...]]:
        """:meth:`_switch_walk` of every (``firsts[i]``, ``nics[i]``), kept in the same cache;
        those not kept yet are walked together, hop by hop: each walk's next switch is its
        ECMP set's (:meth:`_next_hops`) entry ``key mod k``, ``key`` the destination NIC's
        D-mod-K key divided by the sizes of the sets before (the same integers)."""
        cache = self._switch_paths
        pairs = list(zip(firsts.tolist(), nics.tolist(), strict=True))
        missing = [pair for pair in pairs if pair not in cache]
        if missing:
            cache.update(zip(missing, self._walk_together(missing), strict=True))
        return [cache[pair] for pair in pairs]

    def _walk_together(self, pairs: list[tuple[int, int]]) -> list[tuple[int, ...]]:
        """The switch walks of ``pairs`` (first switch, destination NIC), see
        :meth:`_switch_walks`: per hop, each distinct (switch, target) ECMP set and each
        distinct (switch, next switch) edge looked up once."""
        here = np.array([first for first, _ in pairs], dtype=np.int64)
        last = self._port_table[0][[nic for _, nic in pairs]]
        key = np.array([self._nic_rank[nic] for _, nic in pairs], dtype=np.int64)
        span = len(self._port_table[0])                     # vertices: (switch, switch) as one code
        hops = []
        while (moving := np.flatnonzero(here != last)).size:
            now = here[moving]
            sets, which = np.unique(now * span + last[moving], return_inverse=True)
            self._find_distances((sets % span).tolist())          # the targets' BFS in one call
            options = [self._next_hops(*divmod(code, span)) for code in sets.tolist()]
            table = np.full((len(options), max(len(o) for o in options)), -1, dtype=np.int64)
            for row, found in enumerate(options):
                table[row, :len(found)] = found
            which = which.ravel()
            key[moving], pick = np.divmod(key[moving], np.array([len(o) for o in options])[which])
            after = table[which, pick]
            edges, where = np.unique(now * span + after, return_inverse=True)
            step = np.full(len(pairs), -1, dtype=np.int64)
            step[moving] = np.array([self._switch_eid[divmod(code, span)] for code in edges.tolist()],
                                    dtype=np.int64)[where.ravel()]
            here[moving] = after
            hops.append(step)
        if not hops:
            return [() for _ in pairs]
        walks = np.stack(hops, axis=1)                      # a walk's hops: a prefix of its row
        return [tuple(row[:count]) for row, count in zip(walks.tolist(), (walks >= 0).sum(axis=1).tolist(),
                                                         strict=True)]

    def _fabric_ports(self) -> tuple[dict, dict]:
        """(NIC -> (its switch, up edge, down edge), (switch, switch) -> edge id)."""
        graph, switches = self._graph, self._switches
        ports = {}
        for nic in self._nic_rank:
            for sw in graph.successors(nic):
                if sw in switches:
                    ports[nic] = (sw, graph[nic][sw]["eid"], graph[sw][nic]["eid"])
        eids = {(u, v): graph[u][v]["eid"] for u in switches for v in self._fabric_adj[u]}
        return ports, eids

    def _next_hops(self, here: int, target: int) -> list[int]:
        """Neighbours of switch ``here`` one hop closer to switch ``target`` (ECMP set)."""
        key = (here, target)
        options = self._hops.get(key)
        if options is None and target in self._fabric_adj_set[here]:
            options = self._hops[key] = [target]   # a neighbour: the only switch at distance 0
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
            self._find_distances([switch])
            dist = self._dist[switch]
        return dist

    def _find_distances(self, switches) -> None:
        """:meth:`_distances_to` of every switch of ``switches`` not known yet, by one BFS call
        from all of them (the same hop counts)."""
        missing = [v for v in dict.fromkeys(switches) if v not in self._dist]
        if not missing:
            return
        if self._adjacency is None:
            self._adjacency = self._switch_adjacency()
        found = csgraph.shortest_path(self._adjacency, unweighted=True, directed=False,
                                      indices=[self._switch_index[v] for v in missing])
        self._dist.update(zip(missing, found, strict=True))

    def _switch_adjacency(self) -> sp.csr_matrix:
        index = self._switch_index
        rows = [index[v] for v in self._fabric_adj for _ in self._fabric_adj[v]]
        cols = [index[u] for v in self._fabric_adj for u in self._fabric_adj[v]]
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(index), len(index)))
