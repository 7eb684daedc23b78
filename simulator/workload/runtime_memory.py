"""Memory a training process holds besides model state and activations: the CUDA context,
NCCL's buffers per communicator, and the caching allocator's fragmentation.

References
----------
.. [PT] pytorch/pytorch#86509 (PyTorch 1.13, CUDA_MODULE_LOADING=LAZY by default): a bare
   CUDA context takes 287,047,680 bytes with lazy module loading, 666,632,192 without.
.. [NC] NCCL environment variables, NCCL_BUFFSIZE: 4 MiB (4194304 bytes) by default, the
   buffer of the Simple protocol per connection; per channel a ring connects to 2 peers
   (NVIDIA/nccl#986: memory grows linearly with channels, "Ring ... only has 2 connections
   regardless of the scale"; an all-to-all connects to every peer, NVIDIA/nccl#1685).
"""

from __future__ import annotations

from simulator.config.scenario import ParallelismConfig
from simulator.memo import remembered

__all__ = ["CUDA_CONTEXT_BYTES", "FRAGMENTATION", "NCCL_BUFFER_BYTES", "NCCL_CHANNELS",
           "communicator_peers", "expert_shard_size", "runtime_bytes", "shard_group_size"]

CUDA_CONTEXT_BYTES = 0.4 * 2**30
"""Estimate: the CUDA context and library handles of one training process, between the
287 MB (lazy module loading, PyTorch's default) and 667 MB (eager) of a bare context [PT]."""
NCCL_BUFFER_BYTES = 4 * 2**20   # NCCL_BUFFSIZE default, per connection and channel [NC]
NCCL_CHANNELS = 16
"""Estimate: channels per communicator (NCCL opens 8 to 32 on NVLink and InfiniBand servers,
e.g. 32 per pair for an intra-node H100 all-to-all in NVIDIA/nccl#1685)."""
FRAGMENTATION = 0.004
"""Estimate: share of the activations the PyTorch caching allocator holds reserved but
unused (blocks rounded to 512 B, large segments to 2 MiB; c10/cuda/CUDACachingAllocator.cpp).
Kept small: the activation model is already an upper bound (the torchtitan rows of
validation/torchtitan_fsdp.csv report peaks 13-18 GiB below it); workloads that churn
many sizes can lose several percent, which ``expandable_segments`` mostly recovers."""


def communicator_peers(par: ParallelismConfig, dp: int) -> list[int]:
    """Peers each of a GPU's NCCL communicators connects to: 2 for ring collectives and the
    pipeline's send/receive (previous and next stage), ``ep - 1`` for the expert all-to-all."""
    peers = [2] * sum((par.tp > 1, par.pp > 1, par.cp > 1, dp * par.cp > 1))
    shard = shard_group_size(par, dp)
    if shard < dp * par.cp:          # hybrid sharding: one more group across the shards
        peers.append(2)
    if par.ep > 1:
        peers.append(par.ep - 1)
    return peers


def runtime_bytes(par: ParallelismConfig, dp: int, dynamic: float, memo: dict | None = None
                  ) -> tuple[float, float, float]:
    """(CUDA context, NCCL buffers, fragmentation) bytes of one GPU.

    NCCL: ``NCCL_BUFFSIZE x channels x peers`` per communicator [NC]
    (:func:`communicator_peers`, :data:`NCCL_CHANNELS`); fragmentation: :data:`FRAGMENTATION`
    of ``dynamic``, the memory allocated and freed every microbatch (activations, workspace).
    ``memo`` (:mod:`simulator.memo`) keeps the NCCL buffers per communicator layout.
    """
    key = ("nccl_buffers", par.tp, par.pp, par.cp, par.ep, par.shard_size, dp)
    nccl = remembered(memo, key, lambda: float(sum(NCCL_BUFFER_BYTES * NCCL_CHANNELS * peers
                                                   for peers in communicator_peers(par, dp))))
    return CUDA_CONTEXT_BYTES, nccl, FRAGMENTATION * dynamic


def shard_group_size(par: ParallelismConfig, dp: int) -> int:
    """Ranks that share one copy of the model state: the data- and context-parallel ranks
    (Megatron and FSDP shard over dp x cp), or the hybrid-sharding group ``shard_size``
    (FSDP HYBRID_SHARD / HSDP: shard inside the group, replicate across groups)."""
    return par.shard_size or dp * par.cp


def expert_shard_size(par: ParallelismConfig, shard: int) -> int:
    """Ranks the experts' model state is sharded over when the dense state is sharded over
    ``shard`` ranks (:func:`shard_group_size`): the expert-data-parallel share of them,
    ``shard t / (etp ep)`` (at least 1; ``shard / ep`` with ``etp = t``)."""
    return max(shard * par.tp // (par.expert_tp * par.ep), 1)
