"""A communicator: the GPUs of one collective, in rank order, on a built cluster."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import gcd

from simulator.config.hardware import IntraFabricKind
from simulator.topology.cluster import Cluster


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
        return [int(v) for v in self.cluster.gpu_vertices(self.gpus)]

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
        """Parallel rings/trees: one per NIC the group can use across servers (else 1),
        and at least one per stride on a fully connected mesh (see :meth:`ring_order`)."""
        local = min(len(s) for s in self.by_server)
        nics = 1 if self.servers == 1 else min(local, self.cluster.hw.nics_per_node)
        return max(1, nics, len(self._strides))

    @cached_property
    def _strides(self) -> list[int]:
        """Strides coprime with the GPUs per server: on a mesh each is its own Hamiltonian
        cycle over different links (AMD Infinity Fabric nodes; RCCL builds such rings)."""
        if self.cluster.hw.node.fabric.kind != IntraFabricKind.MESH:
            return []
        local = min(len(s) for s in self.by_server)
        return [k for k in range(1, local) if gcd(k, local) == 1] if local > 2 else []

    def ring_order(self, channel: int) -> list[int]:
        """Ring of channel ``c``: servers in order, each server's GPUs rotated by ``c``.

        Rotating makes channel ``c`` leave every server from a different GPU, so
        the rings' inter-server hops spread over the servers' NICs as NCCL's do. On a
        mesh the GPUs are also visited with stride ``strides[c]``, so that the channels'
        rings use different GPU-to-GPU links.
        """
        stride = self._strides[channel % len(self._strides)] if self._strides else 1
        order = []
        for server in self.by_server:
            g, shift = len(server), channel % len(server)
            order += [server[(shift + k * stride) % g] for k in range(g)]
        return order


def whole_cluster(cluster: Cluster) -> Group:
    """The group of all GPUs of ``cluster`` (nccl-tests' MPI_COMM_WORLD)."""
    return Group(cluster, tuple(range(cluster.gpus)))


def ring_pairs(order: list[int]) -> list[tuple[int, int]]:
    """(rank i -> rank i+1 mod p) pairs of a ring."""
    return list(zip(order, order[1:] + order[:1], strict=True))
