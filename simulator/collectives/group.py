"""A communicator: the GPUs of one collective, in rank order, on a built cluster.

Channels and their rings follow NCCL's graph search (NVIDIA/nccl src/graph/search.cc):
an inter-node ring is ``NET n -> GPU a -> ... -> GPU x -> NET n``, entering each server
through a NIC at the GPU next to it and leaving through a NIC again; a tree is
``NET n -> GPU a -> ... -> GPU x`` with the same NIC up and down. On fully connected
meshes the rings are RCCL's kind, loading every GPU-to-GPU link (:mod:`.mesh`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import lcm

import numpy as np

from simulator.collectives.mesh import mesh_rings
from simulator.config.hardware import IntraFabricKind
from simulator.config.scenario import TopologyKind
from simulator.topology.cluster import Cluster
from simulator.topology.routing import pcie_switches


@dataclass(frozen=True)
class Group:
    """GPUs ``gpus`` (global indices, rank order) of ``cluster``."""

    cluster: Cluster
    gpus: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.gpus)

    @cached_property
    def vertices(self) -> list[int]:
        return self.cluster.gpu_vertices(self.gpus).tolist()

    @cached_property
    def by_server(self) -> list[list[int]]:
        """Vertices grouped by server, servers in order of first appearance."""
        groups: dict[int, list[int]] = {}
        per_node = self.cluster.hw.gpus_per_node
        for gpu, vertex in zip(self.gpus, self.vertices, strict=True):
            groups.setdefault(gpu // per_node, []).append(vertex)
        return list(groups.values())

    @property
    def servers(self) -> int:
        return len(self.by_server)

    @property
    def uniform(self) -> bool:
        """Every server holds the same number of the group's GPUs."""
        return len({len(s) for s in self.by_server}) == 1

    @property
    def channels(self) -> int:
        """Parallel rings/trees: one per NIC the group can use across servers (else 1).

        On a fully connected mesh, one per mesh ring (:func:`~.mesh.mesh_rings`) on one
        server; across servers, one per (mesh ring, entry GPU) pair, ``g x rings``: a
        channel's ring crosses each server along its mesh ring opened at the entry GPU,
        and opening every ring at every GPU leaves every GPU-to-GPU link equally loaded
        and every GPU (so every NIC) leaving the server equally often.
        """
        local = min(len(s) for s in self.by_server)
        nics = 1 if self.servers == 1 else min(local, self.cluster.hw.nic_ports)
        if not self._mesh:
            return max(1, nics)
        rings = lcm(*(len(mesh_rings(len(s))) for s in self.by_server))
        return rings if self.servers == 1 else lcm(max(1, nics), local) * rings

    def ring_order(self, channel: int) -> list[int]:
        """Ring of channel ``c``: servers in order, each server's GPUs as :meth:`segments`."""
        return [v for segment in self.segments(channel) for v in segment]

    def segments(self, channel: int) -> list[list[int]]:
        """Per server, the GPUs channel ``c`` visits, from the one it enters at to the one
        it leaves from.

        The entry GPU is position ``c mod g`` (``g`` GPUs of the group on the server), so
        the channels enter each server at different GPUs and spread over its NICs. On a
        mesh the GPUs follow ring ``c`` of :func:`~.mesh.mesh_rings`, so the channels
        cover every GPU-to-GPU link; elsewhere they follow rank order.

        On a rail-optimized fabric, or with PXN, a channel's network hops stay on one
        rail, as NCCL keeps them (NCCL_CROSS_NIC=2, the default, first searches rings
        with ``crossNic`` 0: search.cc ``ncclTopoSearchCheckNet`` requires the leaving
        NIC to be on the entering NIC's rail; only if no ring is found does it allow
        crossing): channel ``c`` enters each server at the group's GPU next to the NIC of
        its rail (the group's rails taken in turn) and, on NVSwitch or PCIe nodes, leaves
        from a GPU behind the same PCIe switch as that NIC when the group has one
        (search.cc tries the inter-node path types from PIX upwards, so such a GPU is
        preferred). The router then sends from the leaving GPU through the rail's NIC,
        directly or with PXN over NVLink through the entry GPU; without either, the hop
        crosses rails (:meth:`~simulator.topology.routing.Router.exit_nic`). Mesh rings
        are not reordered, to keep their links evenly loaded.
        """
        return [self._segment(server, channel) for server in self.by_server]

    def ring_hops(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """(sources, destinations) of every hop of the rings of channels ``0 .. channels - 1``,
        channel after channel, each ring's hops in :func:`ring_pairs`' order (vertex arrays).
        Rings in rank order (no mesh, no rail alignment: :meth:`_segment`) are built at once:
        channel ``c`` enters a server of ``g`` GPUs at position ``c mod g``."""
        if self._mesh or self._rail_aligned:
            pairs = [pair for c in range(channels) for pair in ring_pairs(self.ring_order(c))]
            return (np.array([s for s, _ in pairs], dtype=np.int64),
                    np.array([d for _, d in pairs], dtype=np.int64))
        sizes = [len(server) for server in self.by_server]
        vertices = np.array([v for server in self.by_server for v in server], dtype=np.int64)
        g = np.repeat(sizes, sizes)                               # per rank, its server's GPUs
        first = np.repeat(np.cumsum(sizes) - sizes, sizes)        # per rank, its server's first
        local = np.arange(len(vertices)) - first
        order = vertices[first + (local + np.arange(channels)[:, None] % g) % g]   # (channels, p)
        nxt = np.roll(np.arange(len(vertices)), -1)
        return order.ravel(), order[:, nxt].ravel()

    # -- internals ---------------------------------------------------------------------------
    @cached_property
    def _mesh(self) -> bool:
        return self.cluster.hw.node.fabric.kind == IntraFabricKind.MESH

    @cached_property
    def _rail_aligned(self) -> bool:
        hw = self.cluster.hw
        return (self.servers > 1 and hw.nic_ports > 0
                and (hw.fabric.topology == TopologyKind.RAIL_OPTIMIZED or hw.fabric.pxn))

    def _segment(self, server: list[int], channel: int) -> list[int]:
        g = len(server)
        if not (self._mesh or self._rail_aligned):      # rank order, entered at ``c mod g``
            start = channel % g
            return server[start:] + server[:start]
        cycle = self._mesh_ring(g, channel) if self._mesh else list(range(g))
        start = self._head(server, channel) if self._rail_aligned else channel % g
        i = cycle.index(start)
        order = cycle[i:] + cycle[:i]
        if self._rail_aligned and not self._mesh:
            order = self._leave_near_nic(server, order)
        return [server[p] for p in order]

    def _mesh_ring(self, g: int, channel: int) -> list[int]:
        """Mesh ring of channel ``c``: ring ``c`` on one server; across servers ring
        ``c // g_min``, so consecutive channels open one ring at every entry GPU."""
        rings = mesh_rings(g)
        spread = 1 if self.servers == 1 else min(len(s) for s in self.by_server)
        return list(rings[(channel // spread) % len(rings)])

    @cached_property
    def _local(self) -> dict[int, int]:
        """Local vertex -> local GPU index."""
        return {v: i for i, v in enumerate(self.cluster.layout.gpus)}

    def _rail(self, vertex: int) -> int:
        """Rail (local NIC index) of a GPU vertex: GPU g -> NIC g*nics//gpus."""
        layout = self.cluster.layout
        return layout.rail_nic(self._local[vertex % layout.vertices])

    @cached_property
    def _rails(self) -> list[int]:
        """Distinct rails of the group's GPUs on its first server, in rank order."""
        return list(dict.fromkeys(self._rail(v) for v in self.by_server[0]))

    def _head(self, server: list[int], channel: int) -> int:
        """Position of the GPU channel ``c`` enters at: next to the NIC of its rail."""
        rails = self._rails
        rail = rails[channel % len(rails)]
        on_rail = [p for p, v in enumerate(server) if self._rail(v) == rail]
        if not on_rail:
            return channel % len(server)
        return on_rail[(channel // len(rails)) % len(on_rail)]

    def _leave_near_nic(self, server: list[int], order: list[int]) -> list[int]:
        """``order`` with a GPU that reaches the entry GPU's NIC without crossing the CPU
        (its own rail, or the NIC's PCIe switch) moved last, if the group has one."""
        rail = self._rail(server[order[0]])
        nic = self.cluster.layout.nics[rail]
        switch = self._switch_of
        n = self.cluster.layout.vertices

        def near(p: int) -> int:
            v = server[p] % n
            if self._rail(v) == rail:
                return 2
            return int(switch.get(v) is not None and switch.get(v) == switch.get(nic))

        if len(order) < 3 or near(order[-1]):
            return order
        best = max(order[1:], key=near)
        if not near(best):
            return order
        return [p for p in order if p != best] + [best]

    @cached_property
    def _switch_of(self) -> dict[int, int]:
        return pcie_switches(self.cluster)


def whole_cluster(cluster: Cluster) -> Group:
    """The group of all GPUs of ``cluster`` (nccl-tests' MPI_COMM_WORLD)."""
    return Group(cluster, tuple(range(cluster.gpus)))


def ring_pairs(order: list[int]) -> list[tuple[int, int]]:
    """(rank i -> rank i+1 mod p) pairs of a ring."""
    return list(zip(order, order[1:] + order[:1], strict=True))
