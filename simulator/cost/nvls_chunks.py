"""NCCL's NVLink SHARP kernels run a collective as a loop over chunks; what that adds to
``a + b n``.

Each of ``C`` channels moves one chunk of ``c`` bytes per head GPU per loop, ``K = channels x
heads`` chunks in flight (``concurrentOps``), through ``D`` warp groups in series
(:class:`~simulator.collectives.schedule.NvlsLoop`). NCCL picks ``c`` from the message size
``n`` (src/enqueue.cc ``computeCollChunkInfo``, unchanged from 2.18 to 2.29), starting at
``c_max`` (``NCCL_NVLS_CHUNKSIZE``, 128 KiB):

- NVLS: ``c = 64 KiB`` if ``n < 64 K c``, then ``32 KiB`` if ``n < 8 K c``, then ``16 KiB`` if
  ``n < 2 K c`` (each test on the chunk the previous one left);
- NVLS-Tree: at most 64 KiB on 4 or more nodes, then ``64 KiB`` if ``n < 4 K c`` and
  ``32 KiB`` if ``n < K c``.

The pipeline fills and drains over ``D - 1`` loops, each ``K c`` bytes at the collective's
rate ``1/b`` (a message smaller than one loop, ``n`` bytes), and every loop of a channel pays
one synchronisation ``tau`` (a Simple step over NVLink), ``n / (K c)`` loops in all. The
library's NVLS efficiency was measured at ``c_max``, where the loops' synchronisation is already
in ``b``, so only the loops beyond those are added:

    T(n) = a + b n + (D - 1) min(K c(n), n) b + tau n / K (1 / c(n) - 1 / c_max)

(dimensions: ``b`` s/B, ``n``, ``c`` bytes, ``tau`` s). References: NVIDIA/nccl
src/enqueue.cc (chunk rule), src/device/all_reduce.h (the loop and its warp groups),
src/transport/nvls.cc (channels, chunk size), src/graph/tuning.cc (3.4 us per NVLink Simple
step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.collectives.schedule import Algorithm, NvlsLoop, Schedule
from simulator.config.hardware import GpuSpec, NvlsChunking
from simulator.units import GBPS_TO_BYTES_PER_S, KIB, US

NVLS_HALVINGS = ((64.0, 64 * KIB), (8.0, 32 * KIB), (2.0, 16 * KIB))
"""NVLS: (loops of ``K c`` below which, the chunk then), in NCCL's order."""
NVLS_TREE_HALVINGS = ((4.0, 64 * KIB), (1.0, 32 * KIB))
"""NVLS-Tree: the same rule's thresholds (its 256 KiB and 128 KiB tests never cut the
default 128 KiB chunk)."""
NVLS_TREE_WIDE_NODES = 4
"""Nodes from which NVLS-Tree caps its chunk at 64 KiB (``NCCL_NVLSTREE_MAX_CHUNKSIZE``
default)."""


@dataclass(frozen=True)
class ChunkPipeline:
    """One NVLS schedule's loop and its constants: what :func:`extra_seconds` needs."""

    concurrent_ops: int
    fill_loops: int
    largest_chunk: float
    reference_chunk: float
    halvings: tuple[tuple[float, float], ...]
    step_s: float

    def chunk_bytes(self, size_bytes) -> np.ndarray:
        """NCCL's chunk for messages of ``size_bytes`` (array), bytes."""
        n = np.asarray(size_bytes, dtype=np.float64)
        chunk = np.full(n.shape, self.largest_chunk)
        for loops, smaller in self.halvings:
            chunk = np.where((n < loops * self.concurrent_ops * chunk) & (chunk > smaller), smaller, chunk)
        return chunk

    def extra_seconds(self, size_bytes, seconds_per_byte: float) -> np.ndarray:
        """``(D - 1) min(K c, n) b + tau n / K (1/c - 1/c_max)`` for messages of ``size_bytes``
        (s; 0 for an empty message)."""
        n = np.maximum(np.asarray(size_bytes, dtype=np.float64), 0.0)
        chunk = self.chunk_bytes(n)
        fill = self.fill_loops * np.minimum(self.concurrent_ops * chunk, n) * seconds_per_byte
        steps = self.step_s * n / self.concurrent_ops * (1.0 / chunk - 1.0 / self.reference_chunk)
        return fill + steps


def chunk_pipeline(schedule: Schedule, spec: NvlsChunking | None) -> ChunkPipeline | None:
    """The chunk pipeline of an NVLS or NVLS-Tree ``schedule`` under ``spec``; None for any
    other schedule or without a spec."""
    loop: NvlsLoop | None = schedule.nvls_loop
    if loop is None or spec is None:
        return None
    largest = float(spec.chunk_bytes)
    tree = schedule.algorithm == Algorithm.NVLS_TREE
    if tree and loop.nodes >= NVLS_TREE_WIDE_NODES:
        largest = min(largest, 64 * KIB)
    return ChunkPipeline(loop.concurrent_ops, loop.stages - 1, largest, float(spec.chunk_bytes),
                         NVLS_TREE_HALVINGS if tree else NVLS_HALVINGS, spec.step_latency_us * US)


def tree_head_seconds_per_byte(schedule: Schedule, spec: NvlsChunking | None, gpu: GpuSpec) -> float:
    """The least seconds per byte of an NVLS-Tree ``schedule`` under NCCL's per-head ceiling:
    bus bandwidth at most ``heads x r`` (``r`` the GPU's, else the table's, ``tree_head_GBps``
    on two nodes or on more; src/graph/tuning.cc ``perChMaxNVLSTreeBws``), so
    ``2 (p - 1) / p / (heads r)`` over ``p`` ranks (0 for any other schedule or without a
    ceiling)."""
    loop = schedule.nvls_loop
    rates = gpu.nvls_tree_head_GBps or (spec.tree_head_GBps if spec else None)
    if schedule.algorithm != Algorithm.NVLS_TREE or loop is None or rates is None:
        return 0.0
    rate = rates[0] if loop.nodes <= 2 else rates[1]
    p = schedule.ranks
    return 2.0 * (p - 1) / p / (loop.heads * rate * GBPS_TO_BYTES_PER_S)
