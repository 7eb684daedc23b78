"""Ring algorithms (NCCL's default for bandwidth), one ring per channel.

All-reduce over p ranks: reduce-scatter then all-gather, 2(p-1) steps each moving
n/p per rank: T = 2(p-1) a + 2(p-1)/p * n/B (Patarasuk & Yuan 2009; Thakur et al. 2005).
Reduce-scatter and all-gather: (p-1) steps, T = (p-1) a + (p-1)/p * n/B.
Broadcast and reduce: a pipelined chain from (to) the root, T = (p-1) a + n/B.

Each channel is one ring (``Group.channels``, ``Group.ring_order``), sharing n equally.
Across servers a channel enters and leaves every server through one NIC, so on a
rail-optimized fabric its network hops stay on one rail (NVIDIA/nccl src/graph/search.cc,
``crossNic``); with one NIC per channel, B = k B_nic for k NICs in use per server. On a
fully connected mesh the channels are RCCL's all-link rings (ROCm/rccl
src/graph/rome_models.cc; :mod:`simulator.collectives.mesh`): B = (g-1) B_link for g GPUs.
"""

from __future__ import annotations

import numpy as np

from simulator.collectives.group import Group, ring_pairs
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step

_STEPS = {Op.ALL_REDUCE: lambda p: 2 * (p - 1), Op.REDUCE_SCATTER: lambda p: p - 1,
          Op.ALL_GATHER: lambda p: p - 1}

SAME_RING_STEPS = {Op.REDUCE_SCATTER: Op.ALL_GATHER}
"""Ops whose ring schedule is another op's with only ``op`` changed: a reduce-scatter ring
moves the all-gather's flows, ``p - 1`` steps of ``n / (p c)`` on every hop of every channel
(:func:`ring_schedule`)."""


def ring_schedule(op: Op, group: Group) -> Schedule:
    p, channels = group.size, group.channels
    if op in _STEPS:
        src, dst = group.ring_hops(channels)
        steps = (Step.of_arrays(src, dst, np.full(len(src), 1.0 / (p * channels)), repeat=_STEPS[op](p),
                                ring_like=True),)
    elif op in (Op.BROADCAST, Op.REDUCE):
        steps = _chain_steps(group, reverse=op == Op.REDUCE)
    else:
        raise KeyError(op)
    return Schedule(op, Algorithm.RING, p, steps, pipelined=True, channels=channels)


def _chain_steps(group: Group, reverse: bool) -> tuple[Step, ...]:
    channels = group.channels
    hops = [ring_pairs(group.ring_order(c))[:-1] for c in range(channels)]
    steps = []
    for i in range(group.size - 1):
        flows = [(d, s, 1.0 / channels) if reverse else (s, d, 1.0 / channels)
                 for chain in hops for s, d in [chain[i]]]
        steps.append(Step.of(flows))
    return tuple(reversed(steps)) if reverse else tuple(steps)
