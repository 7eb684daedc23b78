"""NVLS-Tree all-reduce across NVSwitch servers (NCCL >= 2.18, ``NCCL_ALGO=NVLSTree``).

Inside each server the switch reduces (NVLink SHARP, as :mod:`simulator.collectives.nvls`):
every GPU's data goes up to the switch once and each of the server's ``h`` head GPUs (one per
NIC, the GPU a channel enters the server at) receives the reduced ``n/h`` shard it owns.
Between servers the heads of one rank index form a double binary tree, as NCCL's tree
(:mod:`simulator.collectives.tree`), reducing up and broadcasting down ``n/(2h)`` per tree.
Then each head multicasts its finished shard through the switch to every GPU. All phases are
pipelined, so every GPU's NVLink port carries ``n (1 + 1/h)`` each way, as single-server NVLS,
and each head's NIC ``n/h`` each way on two servers, 2 to 3 ``n/h`` on more (an inner vertex
sends to its parent and two children, and the tree and its mirror leave some heads inner in
both). Reference: NVIDIA/nccl src/device/all_reduce.h
``runTreeSplit``/``RunWorkColl<ncclFuncAllReduce, T, RedOp, NCCL_ALGO_NVLS_TREE, ...>``, and
src/graph/tuning.cc, which prices it at ``min(NVLS intra-server bandwidth, inter-server
bandwidth x (2 on two servers))``.

A chunk passes ``2 d + 3`` warp groups in series on a tree of depth ``d``: scatter and the
switch reduce at a leaf, a reduce at each level up to the root (which multicasts), a
broadcast at each level down, the gather (the same kernel's scatter, reduce, broadcast and
gather warps; the network legs between them are the proxy's, several steps deep, and add no
loop), priced by :mod:`simulator.cost.nvls_chunks`. The switch's reduce and multicast are one
step (their loads add up in a pipelined schedule either way): NVLS's NVLink latency is paid
once, and each tree level's network latency up and down, as NCCL's tuner prices NVLS-Tree
(``intraLat + 2 log2(nodes) interLat``).
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.collectives.nvls import head_count, nvls_loop, require_switch_reduction
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.collectives.tree import double_binary_tree, merge_levels, tree_up
from simulator.errors import InfeasibleError


def nvls_tree_schedule(op: Op, group: Group) -> Schedule:
    require_switch_reduction(op, group, "nvls-tree")
    cluster = group.cluster
    if group.servers < 2:
        raise InfeasibleError("nvls-tree joins servers; inside one server NCCL runs nvls")
    if not group.uniform:
        raise InfeasibleError("nvls-tree needs the same number of group GPUs on every server")
    heads = head_count(group, group.channels)
    entries = [[segment[0] for segment in group.segments(c)] for c in range(heads)]   # per channel
    owners = [list(row) for row in zip(*entries, strict=True)]                           # per server
    switches = [cluster.nvswitch_vertex(cluster.server_of_vertex(server[0]))
                for server in group.by_server]
    share = 1.0 / heads
    reduce = [(g, sw, 1.0) for server, sw in zip(group.by_server, switches, strict=True)
              for g in server]
    reduce += [(sw, h, share) for row, sw in zip(owners, switches, strict=True) for h in row]
    up: list[list[tuple[int, int, float]]] = []
    for column in entries:
        for tree in double_binary_tree(len(column)):
            merge_levels(up, tree_up(tree, column, share / 2))
    broadcast = [(h, sw, share) for row, sw in zip(owners, switches, strict=True) for h in row]
    broadcast += [(sw, g, 1.0) for server, sw in zip(group.by_server, switches, strict=True)
                  for g in server]
    down = [[(d, s, f) for s, d, f in flows] for flows in reversed(up)]
    steps = [Step.of(reduce + broadcast), *(Step.of(f) for f in up if f), *(Step.of(f) for f in down if f)]
    stages = 2 * sum(1 for f in up if f) + 3
    return Schedule(op, Algorithm.NVLS_TREE, group.size, tuple(steps), pipelined=True,
                    channels=heads, nvls_loop=nvls_loop(group, heads, stages))
