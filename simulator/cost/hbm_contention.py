"""The HBM bandwidth an NCCL collective draws from the compute it runs beside.

A collective overlapped with compute takes two things from it. NCCL's CTAs hold a share
``f`` of the SMs (:mod:`simulator.cost.nccl_sms`), which slows the compute-bound kernels
(GEMMs, attention) beside it to ``1 - f`` of their pace. And the collective's data passes
through the GPU's HBM: in a ring step the GPU reads the chunk that arrived in its FIFO
buffer (written there by the peer's NVLink stores or the NIC's DMA), reads its own input
chunk, and writes the result to the buffer the next GPU or the NIC reads; the arriving and
departing bytes cross its HBM once more on the other side (NCCL's Simple protocol,
``src/device/prims_simple.h``; the P2P transport's FIFO, ``src/transport/p2p.cc``, "P2P/IPC/read"
or write). That is about :data:`HBM_ACCESSES_PER_SENT_BYTE` accesses per byte the GPU sends.

A memory-bound kernel (norms, activations, residual adds, fp8 casts, copies) is bound by HBM:
it runs at no more than the bandwidth the collective leaves, ``1 - h`` of its pace with ``h``
the collective's draw over the GPU's sustained HBM bandwidth. Whether the SMs NCCL holds slow it
too depends on how many loads each SM keeps in flight (an H100 SM that keeps 16 KB in flight at
~600 ns of latency streams ~25 GB/s, its share of 3.35 TB/s), which no measurement here gives;
so it keeps the SM share as its floor and loses ``max(f, h)``. A pass whose compute has a
memory-bound share ``m`` of its time therefore runs beside the collective at the pace of a
single effective share ``f'``:

    1 / (1 - f') = (1 - m) / (1 - f) + m / (1 - max(f, h)),

which :func:`beside_share` gives and :func:`simulator.cost.nccl_sms.overlap_slowed` prices
(the SM share alone where ``m`` = 0 or ``h <= f``, as before). A ring inside an NVSwitch
server runs near the NVLink rate (an H100's ~360 GB/s of bus bandwidth draws ~1.1 of its
~2.9 TB/s: ``h`` ~ 0.37, twice its ``f`` = 24/132); so does a ring over servers with a 400G
NIC per GPU, whose eight rings leave each server on eight NICs (``h`` ~ 0.35, ``f`` =
16/132); a group with one GPU per server sends at one NIC's rate (``h`` ~ 0.05). The
compute's own HBM traffic is taken to fit beside the collective's in its compute-bound
kernels: GEMMs and attention move far less than the bandwidth.

Priced where the collectives and the compute they overlap are both known: the ZeRO-3 / FSDP
units (:mod:`simulator.cost.sharding`) and the data-parallel reduction and weight gathers of
ZeRO 0-2 (:mod:`simulator.engine.dp_beside`). Not yet at the other overlap sites (the
expert-parallel all-to-alls, tensor-parallel overlap, context parallelism), which keep the
SM share alone.
"""

from __future__ import annotations

from simulator.collectives import BUS_FACTOR, Op
from simulator.config.hardware import GpuSpec
from simulator.workload.chunk_gathers import MAX_SHARE

HBM_ACCESSES_PER_SENT_BYTE = 3.0
"""HBM accesses per byte a GPU sends in a ring step (module docstring): the arriving chunk
written to and read from its buffer, or its own input read; the result written to the
buffer the next GPU or the NIC reads (an estimate read from NCCL's Simple protocol, not a
measurement)."""


def ring_sent_bytes(op: Op, nbytes: float, ranks: int) -> float:
    """Bytes one GPU sends in a ring collective ``op`` of ``nbytes`` (the gathered, reduced or
    all-reduced size) over ``ranks`` GPUs: its bus bytes, ``BUS_FACTOR[op](p) n`` ((p - 1) / p
    n for an all-gather or reduce-scatter, twice that for an all-reduce; 0 for one rank)."""
    return BUS_FACTOR[op](ranks) * nbytes if ranks > 1 else 0.0


def hbm_draw_share(gpu: GpuSpec, sent_bytes: float, seconds: float) -> float:
    """Share of ``gpu``'s sustained HBM bandwidth a collective takes while it sends
    ``sent_bytes`` in ``seconds``: ``a n / (t B f_mem)`` with ``a`` =
    :data:`HBM_ACCESSES_PER_SENT_BYTE`, ``B`` the HBM bandwidth and ``f_mem`` the share
    streaming kernels reach; at most :data:`MAX_SHARE`, 0 for no traffic."""
    if sent_bytes <= 0.0 or seconds <= 0.0:
        return 0.0
    sustained = gpu.hbm_bandwidth_Bps * gpu.compute.memory_bandwidth_fraction
    return min(HBM_ACCESSES_PER_SENT_BYTE * sent_bytes / seconds / sustained, MAX_SHARE)


def beside_share(sm_share: float, hbm_share: float, memory_share: float) -> float:
    """The one share ``f'`` of a pass's pace a collective takes, with ``f`` = ``sm_share`` of
    the SMs, ``h`` = ``hbm_share`` of the HBM bandwidth and ``m`` = ``memory_share`` of the
    pass's compute time in memory-bound kernels:
    ``1 - 1 / ((1 - m) / (1 - f) + m / (1 - max(f, h)))`` (module docstring; exactly ``f``
    where ``m`` = 0 or ``h <= f``)."""
    m = min(max(memory_share, 0.0), 1.0)
    if m == 0.0 or hbm_share <= sm_share:
        return sm_share
    slower = (1.0 - m) / (1.0 - min(sm_share, MAX_SHARE)) + m / (1.0 - min(hbm_share, MAX_SHARE))
    return 1.0 - 1.0 / slower
