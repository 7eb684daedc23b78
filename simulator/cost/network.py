"""The network half of the cost model: alpha-beta time of a collective schedule on a cluster.

For a schedule, each step's flows are routed (incidence matrix ``A``, flows x
edges) and each link's load is ``A.T @ frac`` (in units of the message size n).

- bandwidth term ``b`` (s/byte): pipelined schedules pay ``max_e sum_steps load_e / B_e``;
  others pay ``sum_steps max_e load_e / B_e`` (each step waits for its slowest link).
  Flows sharing a link share its bandwidth: that is what summing loads does.
- latency term ``a`` (s): the protocol's base latency plus, per step, the slowest
  flow's protocol hop latency (by NCCL hardware class: NVLink, PCI or network)
  plus its links' wire latency.

A protocol divides ``b`` by its bandwidth efficiency. Then ``T(n) = a + b n``, so
one pass over the schedule prices a whole array of message sizes; NVLink SHARP schedules add
their chunk loop's fill and synchronisation (:mod:`simulator.cost.nvls_chunks`).
Reference: NVIDIA/nccl src/graph/tuning.cc (latency and bandwidth model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.config.hardware import HwClass, Protocol, ProtocolTable
from simulator.cost.nccl_ceilings import floors_seconds_per_byte, nccl_host_vendor
from simulator.cost.nvls_chunks import ChunkPipeline, chunk_pipeline, tree_head_seconds_per_byte
from simulator.topology.cluster import Cluster
from simulator.topology.graph import HW_CLASS_CODE
from simulator.topology.routing import Router
from simulator.units import US

NVLS_FAMILIES = frozenset({"nvls", "nvls-tree"})
"""Protocol families that run on NVLink SHARP (the switch reduces and multicasts)."""


@dataclass(frozen=True)
class CostTerms:
    """``T(n) = latency_s + seconds_per_byte * n`` for one (schedule, protocol), plus the
    chunk loop's :meth:`extra_seconds` where the schedule has one (``chunks``)."""

    schedule: Schedule
    protocol: Protocol
    latency_s: float
    seconds_per_byte: float
    chunks: ChunkPipeline | None = None
    efficiency: float | None = None
    """The bandwidth efficiency ``seconds_per_byte`` was divided by (the protocol's, or less
    where NCCL's NVLS-Tree ceiling binds); None: the protocol table's."""
    size_factors: tuple[float, ...] | None = None
    """NCCL's tree correction: the bandwidth at ``n = 64 B x 2^i`` bytes is ``size_factors[i]``
    times the plain one (:func:`size_factor`); None: none (every schedule but the tree
    all-reduce)."""

    @property
    def linear(self) -> bool:
        """Whether the time is exactly ``a + b n`` (no chunk loop, no size correction)."""
        return self.chunks is None and self.size_factors is None

    def per_byte_at(self, size_bytes) -> np.ndarray | float:
        """Seconds per byte at ``size_bytes``: ``b / f(n)`` with NCCL's tree correction ``f``."""
        if self.size_factors is None:
            return self.seconds_per_byte
        return self.seconds_per_byte / size_factor(self.size_factors, size_bytes)

    def time(self, size_bytes) -> np.ndarray:
        n = np.asarray(size_bytes, dtype=np.float64)
        return self.latency_s + self.per_byte_at(n) * n + self.extra_seconds(n)

    def seconds(self, size_bytes: float) -> float:
        """:meth:`time` of one size, a Python float (the same floating-point operations)."""
        n = float(size_bytes)
        plain = self.latency_s + self.per_byte_at(n) * n
        return float(plain if self.chunks is None else plain + self.extra_seconds(n))

    def extra_seconds(self, size_bytes) -> np.ndarray | float:
        """What the chunk loop adds to ``a + b n`` at ``size_bytes`` (s; 0 without one)."""
        if self.chunks is None:
            return 0.0
        return self.chunks.extra_seconds(size_bytes, self.seconds_per_byte)

    def launched_latency_s(self, size_bytes: float, launches: int) -> float:
        """The fixed part of ``size_bytes`` sent in ``launches`` equal calls, each paying the
        latency and its chunk loop: ``k (a + extra(n/k))`` (s)."""
        return launches * (self.latency_s + float(self.extra_seconds(size_bytes / launches)))

    def launched_seconds(self, size_bytes: float, launches: int) -> float:
        """``size_bytes`` sent in ``launches`` equal calls: ``k (a + extra(n/k)) + b n / f(n/k)``
        (s), ``f`` the tree correction of one call's size."""
        per_byte = float(self.per_byte_at(size_bytes / launches))
        return self.launched_latency_s(size_bytes, launches) + per_byte * float(size_bytes)


def size_factor(factors: tuple[float, ...], size_bytes) -> np.ndarray | float:
    """NCCL's tree correction at ``size_bytes``: ``factors[i]`` at ``n = 64 B x 2^i`` and 1 at
    32 B and at ``64 B x 2^len(factors)`` and beyond, linear in ``log2 n`` between.

    NCCL (``ncclTopoGetAlgoTime``, src/graph/tuning.cc) holds ``factors[floor(log2(n/64))]``
    over each octave, so its time ``a + b n / f`` drops where ``f`` steps up (from 0.6 to 0.8
    at 4 MiB for LL128): a larger message would take less time. Interpolating in ``log2 n``
    keeps NCCL's value at every power of two and ``n / f(n)`` increasing, since no entry
    more than doubles from one octave to the next.
    """
    if isinstance(size_bytes, float | int):          # one size (the pricing's hot path)
        return _one_size_factor(factors, float(size_bytes))
    n = np.asarray(size_bytes, dtype=np.float64)
    octave = np.log2(np.maximum(n, 1.0) / 64.0)
    knots = np.arange(-1.0, len(factors) + 1.0)
    out = np.interp(octave, knots, (1.0, *factors, 1.0))
    return float(out) if out.ndim == 0 else out


def _one_size_factor(factors: tuple[float, ...], size_bytes: float) -> float:
    """:func:`size_factor` of one size without numpy: ``np.interp``'s arithmetic,
    ``f_i + (f_{i+1} - f_i) (x - i)`` on unit-spaced knots, so the same bits."""
    octave = math.log2(max(size_bytes, 1.0) / 64.0)
    if octave <= -1.0 or octave >= len(factors):
        return 1.0
    i = math.floor(octave)
    left = 1.0 if i < 0 else factors[i]
    right = 1.0 if i + 1 >= len(factors) else factors[i + 1]
    return (right - left) * (octave - i) + left


@dataclass(frozen=True)
class _StepLoad:
    edge_load: np.ndarray      # fraction of n crossing each edge
    flow_class: np.ndarray     # NCCL hardware class code per flow
    flow_wire_s: np.ndarray    # summed wire latency per flow
    flow_frac: np.ndarray      # bytes per flow (weights of a ring step's mean latency)
    ring_like: bool


class NetworkCostModel:
    """Prices schedules on one cluster; holds the router and its route caches."""

    def __init__(self, cluster: Cluster, router: Router | None = None):
        self.cluster = cluster
        self.router = router or Router(cluster)
        self.protocols: ProtocolTable = cluster.hw.protocols
        self._inv_bw = 1.0 / cluster.bandwidth_Bps
        self._priced: dict[tuple, list[tuple[Protocol, float, float, float]]] = {}
        self._hops: dict[tuple[str, Protocol], np.ndarray] = {}

    def terms(self, schedule: Schedule) -> list[CostTerms]:
        """Cost terms for every protocol the schedule's algorithm supports; priced once per
        distinct (algorithm, flows) (an all-gather and a reduce-scatter ring on the same
        groups move the same flows)."""
        key = _flows_key(schedule)
        priced = self._priced.get(key)
        if priced is None:
            priced = self._priced[key] = self._price(schedule)
        chunks = chunk_pipeline(schedule, self.protocols.nvls_chunking)
        return [CostTerms(schedule, proto, latency, per_byte, chunks, eff,
                          self._size_factors(schedule, proto))
                for proto, latency, per_byte, eff in priced]

    def _size_factors(self, schedule: Schedule, proto: Protocol) -> tuple[float, ...] | None:
        """NCCL's tree correction of ``proto`` for a tree all-reduce (the only collective NCCL
        runs as a tree), None for every other schedule."""
        family = self.protocols.algorithm_family.get(schedule.algorithm.value, "ring")
        if family != "tree" or schedule.op != Op.ALL_REDUCE:
            return None
        return self.protocols.tree_correction.get(proto)

    def _price(self, schedule: Schedule) -> list[tuple[Protocol, float, float, float]]:
        """(protocol, latency, seconds per byte, efficiency) of every protocol for
        ``schedule``; an NVLS-Tree schedule's efficiency is lowered where NCCL's per-head
        ceiling binds (:func:`~simulator.cost.nvls_chunks.tree_head_seconds_per_byte`), an
        LL ring's or tree's where NCCL's LL ceiling does, a tree's where its per-channel one does
        (:mod:`simulator.cost.nccl_ceilings`); a ring's steps across servers at no less than the
        hosts' net overhead (:meth:`_ring_step_floor`)."""
        loads = [(self._step_load(step), step.repeat) for step in schedule.steps]
        per_byte = self._seconds_per_byte(loads, schedule.pipelined)
        family = self.protocols.algorithm_family.get(schedule.algorithm.value, "ring")
        ceiling = tree_head_seconds_per_byte(schedule, self.protocols.nvls_chunking, self.cluster.hw.gpu)
        floors = floors_seconds_per_byte(schedule, self.cluster)
        spans_nodes = any(np.any(load.flow_class == HW_CLASS_CODE[HwClass.NET]) for load, _ in loads)
        plateau = spans_nodes and schedule.algorithm == Algorithm.RING and schedule.op == Op.ALL_REDUCE
        out = []
        for proto, eff in self._efficiencies(family).items():
            floor = self._ring_step_floor(schedule, proto) if spans_nodes else 0.0
            latency = self.protocols.base_latency_us[family][proto] * US
            latency += sum(rep * self._step_latency(load, family, proto, floor) for load, rep in loads)
            if plateau and proto == Protocol.SIMPLE:
                latency *= self.protocols.ring_plateau_latency_factor
            seconds = (self._switch_seconds_per_byte(loads, schedule.pipelined, eff)
                       if family in NVLS_FAMILIES else per_byte / eff)
            seconds = max(seconds, ceiling, floors.get(proto, 0.0))
            out.append((proto, latency, seconds, per_byte / seconds if seconds > 0.0 else eff))
        return out

    def _switch_seconds_per_byte(self, loads: list[tuple[_StepLoad, int]], pipelined: bool,
                                 switch_efficiency: float) -> float:
        """Seconds per byte of an NVLink SHARP schedule: ``max_e load_e / (B_e f_e)`` with
        ``f_e`` the switch's efficiency on NVLink edges and 1 on the others (PCIe, network),
        as NCCL's tuner prices NVLS-Tree: ``min(bwIntra x nvlsEfficiency, bwInter x (2 on two
        nodes))``, the efficiency on the intra-node part only (src/graph/tuning.cc). Inside
        one server every loaded edge is NVLink, so this is ``b / f``."""
        nvlink = self.cluster.hw_class == HW_CLASS_CODE[HwClass.NVLINK]
        return self._seconds_per_byte(loads, pipelined,
                                      np.where(nvlink, self._inv_bw / switch_efficiency, self._inv_bw))

    def _efficiencies(self, family: str) -> dict[Protocol, float]:
        """Bandwidth efficiency per protocol of ``family``: the protocol table's, with NVLink
        SHARP's at the GPU's own ``nvls_efficiency`` where the GPU states one."""
        table = self.protocols.bandwidth_efficiency[family]
        own = self.cluster.hw.gpu.nvls_efficiency
        if own is None or family not in NVLS_FAMILIES:
            return table
        return dict.fromkeys(table, own)

    def edge_loads(self, schedule: Schedule) -> np.ndarray:
        """Total fraction of n carried by each edge over the whole schedule."""
        total = np.zeros(len(self._inv_bw))
        for step in schedule.steps:
            total += step.repeat * self._step_load(step).edge_load
        return total

    def _step_load(self, step: Step) -> _StepLoad:
        indptr, edges = self.router.routes(step.src, step.dst)
        lengths = np.diff(indptr)
        edge_load = np.bincount(edges, weights=np.repeat(step.frac, lengths),
                                minlength=len(self._inv_bw))
        flow_class = _row_max(self.cluster.hw_class[edges], indptr)
        wire = _row_sums(self.cluster.latency_s[edges], indptr)
        return _StepLoad(edge_load, flow_class, wire, step.frac, step.ring_like)

    def _seconds_per_byte(self, loads: list[tuple[_StepLoad, int]], pipelined: bool,
                          inv_bw: np.ndarray | None = None) -> float:
        """``max_e sum_steps load_e / B_e`` (pipelined) or ``sum_steps max_e load_e / B_e``,
        with ``inv_bw`` (s/B per edge) for ``1 / B`` where given."""
        inv_bw = self._inv_bw if inv_bw is None else inv_bw
        if pipelined:
            total = sum(rep * load.edge_load for load, rep in loads)
            return float(np.max(total * inv_bw, initial=0.0))
        return float(sum(rep * np.max(load.edge_load * inv_bw, initial=0.0)
                         for load, rep in loads))

    def _ring_step_floor(self, schedule: Schedule, proto: Protocol) -> float:
        """NCCL's floor (s) on each step of a ring that spans nodes, the steps inside a node
        included: the host CPU vendor's net overhead, ``ring_net_overhead_simple_factor`` times
        it under Simple (``getNetOverhead``, src/graph/tuning.cc); 0 for other algorithms and
        for a ring broadcast or reduce, which NCCL prices apart."""
        if schedule.algorithm != Algorithm.RING or schedule.op in (Op.BROADCAST, Op.REDUCE):
            return 0.0
        floor_us = self.protocols.ring_net_overhead_us.get(nccl_host_vendor(self.cluster.hw), 0.0)
        if proto == Protocol.SIMPLE:
            floor_us *= self.protocols.ring_net_overhead_simple_factor
        return floor_us * US

    def _step_latency(self, load: _StepLoad, family: str, proto: Protocol, floor: float = 0.0) -> float:
        """Latency (s) of one step: the byte-weighted mean over its flows of their hop latency
        (at least ``floor``) plus their wires' for ring-like steps, else the slowest flow's."""
        if load.flow_class.size == 0:
            return 0.0
        per_flow = np.maximum(self._hop_table(family, proto)[load.flow_class], floor) + load.flow_wire_s
        if load.ring_like:
            return float(np.average(per_flow, weights=load.flow_frac))
        return float(np.max(per_flow))

    def _hop_table(self, family: str, proto: Protocol) -> np.ndarray:
        """Per NCCL hardware class code, its hop latency (s) for ``family`` and ``proto``;
        made once per pair."""
        hop = self._hops.get((family, proto))
        if hop is None:
            hop = self._hops[family, proto] = np.zeros(len(HW_CLASS_CODE))
            for cls, code in HW_CLASS_CODE.items():
                hop[code] = self._hop_latency(cls, family, proto)
        return hop

    def _hop_latency(self, cls: HwClass, family: str, proto: Protocol) -> float:
        override = self.cluster.hw.nic_link.protocol_latency_us
        if cls == HwClass.NET and override and proto in override:
            return override[proto] * US
        table = self.protocols.hop_latency_us[cls].get(family, {})
        return table.get(proto, 0.0) * US


def _flows_key(schedule: Schedule) -> tuple:
    """Everything :meth:`NetworkCostModel.terms` prices of ``schedule``: its algorithm,
    whether it is pipelined, and each step's flows, repeats and kind."""
    return (schedule.algorithm, schedule.pipelined, *(
        (s.src.dtype.str, s.src.tobytes(), s.dst.dtype.str, s.dst.tobytes(), s.frac.dtype.str,
         s.frac.tobytes(), s.repeat, s.ring_like) for s in schedule.steps))


def _row_max(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Per CSR row, the largest of its ``values`` and 0 (0 for an empty row): the row
    maxima of a sparse matrix, whose rows hold implicit zeros (int64)."""
    out = np.zeros(len(indptr) - 1, dtype=np.int64)
    full = np.flatnonzero(indptr[1:] > indptr[:-1])
    if full.size:
        out[full] = np.maximum(np.maximum.reduceat(values, indptr[full]), 0)
    return out


def _row_sums(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Per CSR row, ``0.0 + v_0 + v_1 + ...`` added left to right: the same floating-point
    operations, in the same order, as a sparse matrix-vector product (scipy's ``csr_matvec``)
    of a 0/1 matrix; numpy's own reductions add in another order."""
    lengths = np.diff(indptr)
    out = np.zeros(len(lengths))
    for k in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > k)
        out[rows] += values[indptr[rows] + k]
    return out
