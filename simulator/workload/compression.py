"""What a gradient compressor sends, computes and keeps, per GPU and step (docs/what_ifs.md).

Notation: ``n`` gradient elements on the GPU, ``g`` bytes per gradient element (the
reduce dtype), ``p`` data-parallel ranks. Collective sizes follow nccl-tests (an
all-gather's size is its whole output, an all-to-all's the buffer each rank holds).

- **Top-K** (ratio ``k``; Aji and Heafield 2017; Lin et al. 2018, "Deep Gradient
  Compression"): each rank keeps its ``K = ceil(k n)`` largest entries, values (``g`` bytes)
  and int32 indices (4 bytes), ``c = K (g + 4)`` bytes. Sparse tensors with different
  indices do not all-reduce, so the ranks all-gather them (``p c`` bytes of output) and each
  scatter-adds the ``p K`` entries into a dense buffer.
- **PowerSGD** (rank ``r``; Vogels et al., NeurIPS 2019, Algorithm 1 with warm start;
  ``torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.powerSGD_hook``, steady state
  after ``start_powerSGD_iter``): a matrix
  ``M`` (a x b) is compressed when ``(a + b) r m < a b`` (``m`` = ``min_compression_rate``,
  2 in the hook); the rest (vectors, small matrices) is all-reduced uncompressed. Per step:
  ``P = M Q``, all-reduce every ``P`` (``sum a r`` elements), orthogonalise ``P``
  (Gram-Schmidt), ``Q = M^T P``, all-reduce every ``Q`` (``sum b r``), ``M ~ P Q^T``.
  The hook keeps ``P``, ``Q`` (warm start) and, with error feedback, the error of the
  whole bucket and a copy of it.
- **8-bit / 1-bit quantisation with error feedback** (Seide et al., Interspeech 2014,
  "1-Bit Stochastic Gradient Descent"; Tang et al., ICML 2021, "1-bit Adam",
  DeepSpeed ``compressed_allreduce``): ``q`` = 1 or 1/8 bytes per element plus one fp32
  scale per chunk. The worker compresses (adding and updating its error), an all-to-all
  gives each rank its ``n/p`` chunk from every rank, the rank averages, re-compresses with
  its server error and all-gathers the result: ``n q`` bytes each way.

Memory-bound kernels are listed as (bytes moved, count); GEMMs as (m, n, k, count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.collectives.schedule import BUS_FACTOR, Op
from simulator.config.whatif_training import CompressionMethod, GradientCompressionConfig

INDEX_BYTES = 4          # int32 indices of Top-K
SCALE_BYTES = 4          # one fp32 scale per quantised chunk
QUANTISED_BYTES = {CompressionMethod.INT8: 1.0, CompressionMethod.ONE_BIT: 1.0 / 8.0}


@dataclass(frozen=True)
class Compression:
    """One stage's compressed gradient exchange on one GPU.

    Attributes
    ----------
    collectives : tuple of (Op, float)
        The collectives in order, with nccl-tests sizes in bytes.
    kernels : tuple of (float, float)
        Memory-bound kernels: (bytes each moves, how many), per step.
    gemms : tuple of (float, float, float, float)
        GEMMs (m, n, k, count) per step.
    buffer_bytes : float
        Extra memory: error-feedback buffers, send/receive and low-rank buffers.
    """

    collectives: tuple[tuple[Op, float], ...]
    kernels: tuple[tuple[float, float], ...]
    gemms: tuple[tuple[float, float, float, float], ...]
    buffer_bytes: float


def compression(cfg: GradientCompressionConfig, n: float, matrices, g: float, p: int,
                buckets: int = 1) -> Compression:
    """The :class:`Compression` of ``n`` gradient elements of ``g`` bytes over ``p`` ranks.

    ``matrices`` are (rows, columns, count) of the weight matrices among the ``n``
    (:func:`simulator.workload.matrices.stage_matrices`); ``buckets`` is how many buckets
    the elementwise kernels run per (each moves its share of the bytes).
    """
    if cfg.method == CompressionMethod.TOPK:
        return _topk(cfg, n, g, p, buckets)
    if cfg.method == CompressionMethod.POWERSGD:
        return _powersgd(cfg, n, matrices, g, buckets)
    return _quantised(cfg, n, g, p, buckets)


def _per_bucket(kernels, buckets: int) -> list[tuple[float, float]]:
    """Kernels over the whole gradient, run once per bucket on its share of the bytes."""
    return [(b / buckets, c * buckets) for b, c in kernels]


def _topk(cfg: GradientCompressionConfig, n: float, g: float, p: int, buckets: int) -> Compression:
    """Top-K: EF add ``3 g n``, selection (two passes) ``2 g n + c``, EF update ``2 g n``,
    decompress: zero ``g n``, read the gathered ``p c`` and add ``2 p K g``."""
    kept = math.ceil(cfg.ratio * n)
    c = kept * (g + INDEX_BYTES)
    ef = cfg.error_feedback
    kernels = [(2 * g * n + c, 1), (g * n, 1), (p * c + 2 * p * kept * g, 1)]
    if ef:
        kernels += [(3 * g * n, 1), (2 * g * n, 1)]
    buffers = c + p * c + (g * n if ef else 0.0)
    return Compression(((Op.ALL_GATHER, p * c),), tuple(_per_bucket(kernels, buckets)), (), buffers)


def powersgd_split(cfg: GradientCompressionConfig, matrices) -> tuple[list, float]:
    """(compressed matrices, their elements): those with ``(a + b) r m < a b``."""
    r, m = cfg.rank, cfg.min_compression_rate
    kept = [(a, b, k) for a, b, k in matrices if (a + b) * r * m < a * b]
    return kept, float(sum(a * b * k for a, b, k in kept))


def _powersgd(cfg: GradientCompressionConfig, n: float, matrices, g: float, buckets: int) -> Compression:
    """PowerSGD: GEMMs ``M Q``, ``M^T P``, ``P Q^T``; Gram-Schmidt on each ``P`` (a x r) as in
    the hook's ``_orthogonalize``: per column ``i`` a normalisation (``2 a g``), the dot
    products with the later columns (``(r - i) a g``) and their update (``2 (r - i - 1) a g``),
    ``3 r`` kernels moving ``a g (1.5 r^2 + 1.5 r)`` bytes per matrix; error feedback over
    each bucket: add ``3 g n``, copy ``2 g n``, subtract ``3 g n``."""
    r = cfg.rank
    kept, dense = powersgd_split(cfg, matrices)
    p_elems = sum(a * r * k for a, _, k in kept)
    q_elems = sum(b * r * k for _, b, k in kept)
    rest = max(n - dense, 0.0)
    ops = ([(Op.ALL_REDUCE, rest * g)] if rest > 0 else []) + (
        [(Op.ALL_REDUCE, p_elems * g), (Op.ALL_REDUCE, q_elems * g)] if kept else [])
    gemms = tuple(shape for a, b, k in kept for shape in ((a, r, b, k), (b, r, a, k), (a, b, r, k)))
    kernels = [(a * g * (1.5 * r * r + 1.5 * r) / (3 * r), 3 * r * k) for a, _, k in kept]
    buffers = (p_elems + q_elems) * g
    if cfg.error_feedback:
        kernels += _per_bucket([(3 * g * n, 1), (2 * g * n, 1), (3 * g * n, 1)], buckets)
        buffers += 2 * g * n
    return Compression(tuple(ops), tuple(kernels), gemms, buffers)


def _quantised(cfg: GradientCompressionConfig, n: float, g: float, p: int, buckets: int) -> Compression:
    """8/1-bit: worker scale ``g n`` and compress ``(g + q) n`` (EF ``(3 g + q) n``); server
    reads ``n q``, re-compresses its chunk ``(g + q) n/p`` (EF ``+ 2 g n/p``); decompress
    ``n (q + g)``."""
    q = QUANTISED_BYTES[cfg.method]
    ef = cfg.error_feedback
    wire = n * q + SCALE_BYTES * p
    worker = (3 * g + q) * n if ef else (g + q) * n
    server = n * q + (g + q + (2 * g if ef else 0.0)) * n / p
    kernels = _per_bucket([(g * n, 1), (worker, 1), (server, 1), (n * (q + g), 1)], buckets)
    buffers = 3 * wire + ((g * n + g * n / p) if ef else 0.0)
    return Compression(((Op.ALL_TO_ALL, wire), (Op.ALL_GATHER, wire)), tuple(kernels), (), buffers)


def wire_bytes(collectives, p: int) -> float:
    """Bytes one rank sends for ``collectives`` (nccl-tests bus factor x size)."""
    return float(sum(BUS_FACTOR[op](p) * size for op, size in collectives))
