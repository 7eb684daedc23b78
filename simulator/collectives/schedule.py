"""Collective schedules: explicit point-to-point transfers, sized as fractions of the message.

A :class:`Step` is a set of concurrent flows ``src[i] -> dst[i]`` (graph
vertices) moving ``frac[i] * n`` bytes for a message of ``n`` bytes; it runs
``repeat`` times in a row. Steps run one after another. In a *pipelined*
schedule (NCCL's chunked rings and trees) the steps' transfers overlap in
steady state, so a link's bandwidth time is its total load over all steps;
otherwise each step waits for its slowest link. Keeping sizes as fractions
makes one schedule serve every message size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np


class Op(StrEnum):
    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    ALL_TO_ALL = "all_to_all"
    SENDRECV = "sendrecv"


POINT_TO_POINT = frozenset({Op.ALL_TO_ALL, Op.SENDRECV})
"""Operations NCCL runs as point-to-point sends and receives, outside its choice of collective
algorithm (NCCL_ALGO): ``ncclAlltoAll`` appends one ``ncclFuncSend`` and one ``ncclFuncRecv``
task per peer (NVIDIA/nccl ``src/enqueue.cc``), as nccl-tests' grouped ncclSend/ncclRecv do."""


class Algorithm(StrEnum):
    RING = "ring"
    TREE = "tree"
    HALVING_DOUBLING = "halving-doubling"
    DIRECT = "direct"
    HIERARCHICAL = "hierarchical"
    NVLS = "nvls"
    NVLS_TREE = "nvls-tree"
    TORUS = "torus"


BUS_FACTOR = {
    Op.ALL_REDUCE: lambda p: 2.0 * (p - 1) / p,
    Op.REDUCE_SCATTER: lambda p: (p - 1) / p,
    Op.ALL_GATHER: lambda p: (p - 1) / p,
    Op.ALL_TO_ALL: lambda p: (p - 1) / p,
    Op.BROADCAST: lambda p: 1.0,
    Op.REDUCE: lambda p: 1.0,
    Op.SENDRECV: lambda p: 1.0,
}
"""busbw = algbw * BUS_FACTOR[op](p), nccl-tests' convention (doc/PERFORMANCE.md)."""


@dataclass(frozen=True)
class Step:
    """Concurrent flows; ``ring_like`` steps are the hops of pipelined rings.

    A chunk crosses one hop of a ring per step, so a ring step's latency is the
    byte-weighted *mean* hop latency of its flows (NCCL: intra- and inter-node
    steps counted separately); any other step waits for its slowest flow (max).
    """

    src: np.ndarray
    dst: np.ndarray
    frac: np.ndarray
    repeat: int = 1
    ring_like: bool = False

    @staticmethod
    def of(flows: list[tuple[int, int, float]], repeat: int = 1, ring_like: bool = False) -> Step:
        """A step from ``(src, dst, frac)`` triples, merging duplicate (src, dst) pairs."""
        if len(flows) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return Step(empty, empty, np.zeros(0), repeat, ring_like)
        triples = np.array(flows, dtype=np.float64)
        return Step.of_arrays(triples[:, 0].astype(np.int64), triples[:, 1].astype(np.int64), triples[:, 2],
                              repeat, ring_like)

    @staticmethod
    def of_arrays(src: np.ndarray, dst: np.ndarray, frac: np.ndarray, repeat: int = 1,
                  ring_like: bool = False) -> Step:
        """:meth:`of` from the flows' arrays (int64 vertices, float fractions)."""
        keep = (src != dst) & (frac > 0)
        src, dst, frac = src[keep], dst[keep], frac[keep]
        if len(src) == 0:
            return Step(src, dst, frac, repeat, ring_like)
        base = int(dst.max()) + 1                   # one integer per pair, ordered as (src, dst)
        keys, first, inverse = np.unique(src * base + dst, return_index=True, return_inverse=True)
        order = np.argsort(first)                   # keep first-appearance order
        sums = np.bincount(inverse.ravel(), weights=frac, minlength=len(keys))
        return Step(keys[order] // base, keys[order] % base, sums[order], repeat, ring_like)

    @property
    def sent_fraction(self) -> float:
        return float(self.frac.sum()) * self.repeat


@dataclass(frozen=True)
class NvlsLoop:
    """How NCCL's NVLink SHARP kernel loops over a collective on one group: ``channels``
    CTAs, each moving one chunk per ``heads`` head GPU per loop (``concurrentOps`` in
    src/enqueue.cc), through ``stages`` warp groups in series (src/device/all_reduce.h); on
    ``nodes`` NVLink domains (NVLS-Tree when more than one)."""

    channels: int
    heads: int
    stages: int
    nodes: int = 1

    @property
    def concurrent_ops(self) -> int:
        """Chunks in flight per loop over all channels: ``channels x heads``."""
        return self.channels * self.heads


@dataclass(frozen=True)
class Schedule:
    """An algorithm's plan for one collective over one group; ``nvls_loop``: how NCCL's NVLS
    kernels cut it into chunks (None for every other algorithm)."""

    op: Op
    algorithm: Algorithm
    ranks: int
    steps: tuple[Step, ...]
    pipelined: bool
    channels: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)
    nvls_loop: NvlsLoop | None = None

    @property
    def step_count(self) -> int:
        return sum(s.repeat for s in self.steps)
