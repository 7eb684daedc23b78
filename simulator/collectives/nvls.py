"""NVLink SHARP (NVLS): all-reduce computed inside the NVSwitch (NCCL >= 2.17).

Reduce-scatter phase: head GPU i issues multimem loads of shard i, so the switch reads
shard i from every GPU (each GPU sends n in total) and returns the reduced n/h.
All-gather phase: head i multicasts its n/h shard, the switch writes it to every GPU
(each GPU receives n). A node has ``h = min(p, 32)`` heads (``NCCL_MAX_NVLS_ARITY``). Per head
link: n(1 + 1/h) each way, so T = a + n (1 + 1/h) / B_nvls and algbw = B_nvls h / (h + 1).
The two phases stream through the switch together (one step): the latency ``a`` is NVLS's
NVLink latency once, as NCCL's tuner prices it (src/graph/tuning.cc:
``latencies[NVLS] = intraLat``).
Reference: NVIDIA/nccl-tests#212 (8x H100: busbw ~480 GB/s, algbw ~275 GB/s).

NCCL's kernel loops over the message in chunks (:class:`NvlsLoop`): each channel's scatter,
switch-reduce and gather warp groups pass a chunk per head GPU along, three stages in series
(src/device/all_reduce.h ``RunWorkColl<ncclFuncAllReduce, T, RedOp, NCCL_ALGO_NVLS, ...>``),
priced by :mod:`simulator.cost.nvls_chunks`.
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.collectives.schedule import Algorithm, NvlsLoop, Op, Schedule, Step
from simulator.errors import InfeasibleError


def require_switch_reduction(op: Op, group: Group, algorithm: str) -> None:
    """Refuse anything but an all-reduce (KeyError) and a node without NVLink SHARP."""
    if op != Op.ALL_REDUCE:
        raise KeyError(op)
    node = group.cluster.hw.node
    if not node.fabric.in_switch_reduction:
        raise InfeasibleError(f"{algorithm} needs NVSwitch in-switch reduction, which node "
                              f"'{node.name}' does not have")


def nvls_schedule(op: Op, group: Group) -> Schedule:
    require_switch_reduction(op, group, "nvls")
    cluster = group.cluster
    if group.servers != 1:
        raise InfeasibleError(f"nvls is modelled inside one NVSwitch node; this group spans "
                              f"{group.servers} nodes (use tree, ring or hierarchical)")
    server = cluster.server_of_vertex(group.vertices[0])
    switch = cluster.nvswitch_vertex(server)
    p = group.size
    heads = group.vertices[:head_count(group, p)]
    h = len(heads)
    reduce = [(g, switch, 1.0) for g in group.vertices] + [(switch, g, 1.0 / h) for g in heads]
    multicast = [(g, switch, 1.0 / h) for g in heads] + [(switch, g, 1.0) for g in group.vertices]
    return Schedule(op, Algorithm.NVLS, p, (Step.of(reduce + multicast),), pipelined=True,
                    nvls_loop=nvls_loop(group, h, NVLS_STAGES))


def head_count(group: Group, candidates: int) -> int:
    """Head GPUs NCCL's NVLS gives a node: ``candidates`` (its GPUs in one node, its NICs'
    GPUs across nodes) at most ``NCCL_MAX_NVLS_ARITY`` (the protocol table's
    ``nvls_chunking.max_heads``; src/graph/search.cc caps the NVLS graph's channels so)."""
    spec = group.cluster.hw.protocols.nvls_chunking
    return candidates if spec is None else min(candidates, spec.max_heads)


NVLS_STAGES = 3
"""Warp groups a chunk passes in series in NCCL's one-node NVLS all-reduce: scatter into the
switch buffers, reduce and multicast through the switch, gather out of them."""


def nvls_loop(group: Group, heads: int, stages: int) -> NvlsLoop | None:
    """The NVLS loop NCCL runs on ``group`` with ``heads`` head GPUs per NVLink domain
    (:func:`head_count`) and ``stages`` warp groups in series: the GPU's NVLS channels inside
    one domain or across (its ``nvls_channels``, else the table's); None where the protocol
    table has no ``nvls_chunking``."""
    spec = group.cluster.hw.protocols.nvls_chunking
    if spec is None:
        return None
    own = group.cluster.hw.gpu.nvls_channels
    nodes = group.servers
    channels = (own[0] if nodes == 1 else own[1]) if own else spec.channels
    return NvlsLoop(channels, heads, stages, nodes)
