"""NCCL's ceilings on a ring's and a tree's bandwidth (src/graph/tuning.cc
``ncclTopoTuneModel``), measured figures NCCL's tuner caps its model with.

- **LL** (``llMaxBws``): the LL protocol's bus bandwidth of a ring or tree, inside one node by
  GPU generation (Ampere 87.7, Hopper 141, Blackwell 282 GB/s), across nodes by the hosts' CPU
  vendor (Intel and every other host 39.0 GB/s on two nodes and 20.4 on three or more, AMD
  22.5 and 19.0; "avg of ring & tree"), unchanged from 2.21 to 2.29. LL moves 8-byte lines of
  4 data bytes and a flag the receiver polls; across nodes the proxy forwards them through
  host-visible buffers, so the host sets the rate.
- **Tree, per channel** (``perChMaxTreeBws`` for every protocol, ``perChMaxTreeLL128Bws`` for
  LL128 besides): a tree's bus bandwidth is at most ``nChannels x`` a per-channel figure by GPU
  generation, on two nodes and on three or more. NVIDIA lowered Blackwell's in 2.28 (Simple
  82.8 -> 42.8 GB/s on two nodes, LL128 73.4 -> 31.67), from twice Hopper's to figures of
  their own. The channels: NCCL's search finds one per NIC and doubles them where a channel's
  bandwidth allows (src/graph/search.cc ``ncclTopoDupChannels``), the protocol table's
  ``tree_channels_per_nic``.

In seconds per byte of the message: a ring of ``p`` ranks moves ``nsteps / p`` of it per
bus byte (``nsteps = 2 (p - 1)`` for an all-reduce, ``p - 1`` for a reduce-scatter or
all-gather, ``p`` otherwise: NCCL's busBw-to-algBw ratio), a tree twice it (its ratio 0.5).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from simulator.collectives.schedule import BUS_FACTOR, Algorithm, Schedule
from simulator.config.hardware import CpuVendor, Protocol
from simulator.topology.cluster import Cluster
from simulator.units import GBPS_TO_BYTES_PER_S


def floors_seconds_per_byte(schedule: Schedule, cluster: Cluster) -> dict[Protocol, float]:
    """Per protocol, the seconds per byte below which a ring or tree of ``schedule`` cannot run
    on ``cluster`` under NCCL's ceilings (LL's, and a tree's per channel across nodes); empty
    for other algorithms. The communicator's node count is read once."""
    gpu = cluster.hw.gpu
    if schedule.algorithm not in (Algorithm.RING, Algorithm.TREE) or (
            gpu.nccl_ll_max_busbw_GBps is None and gpu.nccl_tree_channel_GBps is None):
        return {}
    nodes = communicator_nodes(schedule, cluster)
    floors = {}
    ll = ll_ceiling_GBps(cluster, nodes)
    if ll is not None:
        floors[Protocol.LL] = _bus_bytes_per_byte(schedule) / (ll * GBPS_TO_BYTES_PER_S)
    if schedule.algorithm == Algorithm.TREE:
        for protocol, busbw in _tree_ceilings_GBps(cluster, nodes).items():
            channels = cluster.hw.protocols.tree_channels_per_nic * max(cluster.hw.nics_per_node, 1)
            floor = 2.0 / (channels * busbw * GBPS_TO_BYTES_PER_S)
            floors[protocol] = max(floors.get(protocol, 0.0), floor)
    return floors


def nccl_host_vendor(hw) -> CpuVendor:
    """The host CPU vendor NCCL's tuner keys its tables by: AMD for AMD hosts, Intel for every
    other, Arm included (src/graph/tuning.cc: ``cpuVendor == AMD`` for ``llMaxBws``, x86 AMD for
    ``getNetOverhead``, the Intel value otherwise)."""
    return CpuVendor.AMD if hw.node.cpu_vendor == CpuVendor.AMD else CpuVendor.INTEL


def ll_ceiling_GBps(cluster: Cluster, nodes: int) -> float | None:
    """NCCL's LL bus-bandwidth ceiling for a communicator over ``nodes`` nodes (GB/s): the
    GPU generation's on one node, the hosts' CPU vendor's across nodes; None where the GPU
    states none."""
    hw = cluster.hw
    if hw.gpu.nccl_ll_max_busbw_GBps is None:
        return None
    if nodes <= 1:
        return hw.gpu.nccl_ll_max_busbw_GBps
    row = hw.protocols.ll_max_busbw_GBps.get(nccl_host_vendor(hw))
    if row is None:
        return None
    return row[0] if nodes == 2 else row[1]


def _tree_ceilings_GBps(cluster: Cluster, nodes: int) -> dict[Protocol, float]:
    """Per protocol, a tree channel's bus-bandwidth ceiling across ``nodes`` nodes (none on one)."""
    per_channel = cluster.hw.gpu.nccl_tree_channel_GBps
    if per_channel is None or nodes <= 1:
        return {}
    return {protocol: pair[0] if nodes == 2 else pair[1] for protocol, pair in per_channel.items()}


def _bus_bytes_per_byte(schedule: Schedule) -> float:
    """Bus bytes per message byte: a tree's 2 (NCCL's ratio 0.5), a ring's ``nsteps / p``,
    nccl-tests' bus factor (:data:`~simulator.collectives.schedule.BUS_FACTOR`)."""
    if schedule.algorithm == Algorithm.TREE:
        return 2.0
    return BUS_FACTOR.get(schedule.op, lambda p: 1.0)(schedule.ranks)


def communicator_nodes(schedule: Schedule, cluster: Cluster) -> int:
    """Servers (NVLink domains) of one communicator of ``schedule``: the most any connected
    set of its flows touches (a merged schedule holds every concurrent group's flows; a ring
    or tree connects each group's ranks and no two groups)."""
    src = np.concatenate([s.src for s in schedule.steps] or [np.zeros(0, np.int64)])
    dst = np.concatenate([s.dst for s in schedule.steps] or [np.zeros(0, np.int64)])
    if src.size == 0:
        return 1
    per_server = cluster.layout.vertices
    if np.array_equal(src // per_server, dst // per_server):      # no flow leaves its server
        return 1
    vertices, index = np.unique(np.concatenate((src, dst)), return_inverse=True)
    pairs = index.reshape(2, -1)
    graph = coo_matrix((np.ones(pairs.shape[1]), (pairs[0], pairs[1])), shape=(vertices.size,) * 2)
    _, group = connected_components(graph, directed=False)
    servers = vertices // per_server
    span = int(servers.max()) + 1
    touched = np.unique(group.astype(np.int64) * span + servers)   # one per (group, server)
    return int(np.bincount(touched // span).max())
