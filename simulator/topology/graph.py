"""The cluster graph: a networkx DiGraph plus flat numpy arrays of its edges.

Vertices are integers with attributes ``kind`` (:class:`VertexKind`), ``server``
(the node index, -1 for fabric switches) and ``label``. Every physical link is
two directed edges, one per direction, each with an integer ``eid`` indexing
the arrays ``bandwidth_Bps`` (achievable per-direction rate), ``latency_s``
and ``hw_class`` (0 NVLink-class, 1 PCIe, 2 network), as NCCL distinguishes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import networkx as nx
import numpy as np

from simulator.config.hardware import HwClass, LinkSpec

HW_CLASS_CODE = {HwClass.NVLINK: 0, HwClass.PCI: 1, HwClass.NET: 2}


class VertexKind(StrEnum):
    GPU = "gpu"
    NVSWITCH = "nvswitch"
    PCIE_SWITCH = "pcie-switch"
    CPU = "cpu"
    NIC = "nic"
    LEAF = "leaf"
    SPINE = "spine"
    CORE = "core"
    ROUTER = "router"


@dataclass
class GraphBuilder:
    """Accumulates vertices and directed edges, then builds the graph and arrays in bulk."""

    _vertices: list[tuple[int, dict]] = field(default_factory=list)
    _edges: list[tuple[int, int, dict]] = field(default_factory=list)
    _bandwidth: list[float] = field(default_factory=list)
    _latency: list[float] = field(default_factory=list)
    _hw: list[int] = field(default_factory=list)
    _link_values: dict = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return len(self._vertices)

    @property
    def edge_count(self) -> int:
        return len(self._bandwidth)

    def vertex(self, kind: VertexKind, label: str, server: int = -1) -> int:
        vid = len(self._vertices)
        self._vertices.append((vid, {"kind": kind, "label": label, "server": server}))
        return vid

    def link(self, u: int, v: int, spec: LinkSpec, lanes: float = 1.0,
             switch_hop: bool = False) -> None:
        """Add the two directions of a link of ``lanes`` parallel ``spec`` links.

        Only ``switch_hop`` links (switch to switch) carry wire latency: the
        protocol's per-hop latency (NCCL's hwLat) already covers one hop from
        a GPU or NIC through its first switch, so extra latency comes only
        from the deeper tiers a route climbs.
        """
        key = (spec.name, lanes, switch_hop)
        values = self._link_values.get(key)
        if values is None:
            values = (spec.effective_Bps * lanes, spec.latency_s if switch_hop else 0.0,
                      HW_CLASS_CODE[spec.hw_class])
            self._link_values[key] = values
        rate, latency, code = values
        eid = len(self._bandwidth)
        self._edges += ((u, v, {"eid": eid}), (v, u, {"eid": eid + 1}))
        self._bandwidth += (rate, rate)
        self._latency += (latency, latency)
        self._hw += (code, code)

    def graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_nodes_from(self._vertices)
        graph.add_edges_from(self._edges)
        return graph

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.asarray(self._bandwidth, dtype=np.float64),
                np.asarray(self._latency, dtype=np.float64),
                np.asarray(self._hw, dtype=np.int8))
