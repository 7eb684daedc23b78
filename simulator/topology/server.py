"""Builders for the inside of one server: GPUs, NVSwitch plane or mesh or bridges, PCIe tree, NICs.

Every server is built with the same vertex and edge order, so vertex ``v`` of
server ``s`` is ``layout.first_vertex + s * layout.vertices`` (likewise edges);
routing computes intra-server paths once, on server 0, and shifts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from simulator.config.hardware import IntraFabricKind
from simulator.config.resolved import ResolvedCluster
from simulator.topology.graph import GraphBuilder, VertexKind


@dataclass(frozen=True)
class ServerLayout:
    """Local vertex indices of one server (add ``s * vertices`` for server ``s``)."""

    gpus: tuple[int, ...]
    nics: tuple[int, ...]
    vertices: int
    edges: int

    def rail_nic(self, local_gpu: int) -> int:
        """Index (0..nics-1) of the NIC that GPU ``local_gpu`` uses: GPU g -> NIC g*nics//gpus."""
        return local_gpu * len(self.nics) // len(self.gpus)


def add_server(b: GraphBuilder, server: int, hw: ResolvedCluster) -> ServerLayout:
    """Add server ``server``'s vertices and links to ``b``; return its local layout."""
    v0, e0 = b.vertex_count, b.edge_count
    tag = f"n{server}"
    gpus = [b.vertex(VertexKind.GPU, f"{tag}/gpu{i}", server) for i in range(hw.gpus_per_node)]
    nics = [b.vertex(VertexKind.NIC, f"{tag}/nic{i}", server) for i in range(hw.nic_ports)]
    _add_gpu_fabric(b, server, gpus, hw)
    _add_pcie_tree(b, server, gpus, nics, hw)
    local = tuple(g - v0 for g in gpus), tuple(n - v0 for n in nics)
    return ServerLayout(*local, b.vertex_count - v0, b.edge_count - e0)


def _add_gpu_fabric(b: GraphBuilder, server: int, gpus: list[int], hw: ResolvedCluster) -> None:
    fabric = hw.node.fabric
    lanes = fabric.links_per_gpu
    if fabric.kind == IntraFabricKind.NVSWITCH and len(gpus) > 1:
        switch = b.vertex(VertexKind.NVSWITCH, f"n{server}/nvswitch", server)
        for g in gpus:
            b.link(g, switch, hw.intra_link, lanes)
    elif fabric.kind == IntraFabricKind.MESH:
        for i, g in enumerate(gpus):
            for h in gpus[i + 1:]:
                b.link(g, h, hw.intra_link, lanes)
    elif fabric.kind == IntraFabricKind.NVLINK_BRIDGE:
        for g, h in zip(gpus[0::2], gpus[1::2], strict=False):
            b.link(g, h, hw.intra_link, lanes)


def _add_pcie_tree(b: GraphBuilder, server: int, gpus: list[int], nics: list[int],
                   hw: ResolvedCluster) -> None:
    per_switch = hw.node.pcie.gpus_per_switch
    n_switch = max(ceil(len(gpus) / per_switch), 1)
    sockets = min(hw.node.pcie.sockets, n_switch)
    switches = [b.vertex(VertexKind.PCIE_SWITCH, f"n{server}/pcie{i}", server) for i in range(n_switch)]
    cpus = [b.vertex(VertexKind.CPU, f"n{server}/cpu{i}", server) for i in range(sockets)]
    for i, g in enumerate(gpus):
        b.link(g, switches[i // per_switch], hw.gpu_link or hw.pcie_link)
    for k, nic in enumerate(nics):
        b.link(nic, switches[k * n_switch // len(nics)], hw.pcie_link, hw.nic_lanes)
    for p, sw in enumerate(switches):
        b.link(sw, cpus[p * sockets // n_switch], hw.pcie_link)
    for a, c in zip(cpus, cpus[1:], strict=False):
        b.link(a, c, hw.pcie_link, 2.0)
