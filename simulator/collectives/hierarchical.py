"""Hierarchical (two-level) collectives, as NCCL and Horovod run them across servers.

All-reduce over N servers with g GPUs each: reduce-scatter inside each server
(ring, g-1 steps of n/g), all-reduce of each n/g shard across servers among the
GPUs with the same local index (ring, 2(N-1) steps of n/(gN)), all-gather inside
each server. The phases are pipelined over chunks, so each link's time is its
total load: T ~ max(2(g-1)/g * n/B_intra, 2(N-1)/N * n/(g B_inter)).
All-gather and reduce-scatter use the matching half.
The inter-server rings join the GPUs with the same position on every server, which
(for the usual layouts) share a rail, so on a rail-optimized fabric they stay on it.
"""

from __future__ import annotations

from simulator.collectives.group import Group, ring_pairs
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.errors import InfeasibleError


def hierarchical_schedule(op: Op, group: Group) -> Schedule:
    if op not in (Op.ALL_REDUCE, Op.ALL_GATHER, Op.REDUCE_SCATTER):
        raise KeyError(op)
    if group.servers < 2 or not group.uniform:
        raise InfeasibleError("hierarchical needs the group on two or more servers, "
                              "with the same number of its GPUs on each")
    g, n = len(group.by_server[0]), group.servers
    intra = [(s, d, 1.0 / g) for server in group.by_server for s, d in ring_pairs(server)]
    columns = [[server[j] for server in group.by_server] for j in range(g)]
    inter = [(s, d, 1.0 / (g * n)) for col in columns for s, d in ring_pairs(col)]
    inter_steps = {Op.ALL_REDUCE: 2 * (n - 1), Op.ALL_GATHER: n - 1, Op.REDUCE_SCATTER: n - 1}
    steps = []
    if g > 1 and op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER):
        steps.append(Step.of(intra, repeat=g - 1, ring_like=True))
    steps.append(Step.of(inter, repeat=inter_steps[op], ring_like=True))
    if g > 1 and op in (Op.ALL_REDUCE, Op.ALL_GATHER):
        steps.append(Step.of(intra, repeat=g - 1, ring_like=True))
    return Schedule(op, Algorithm.HIERARCHICAL, group.size, tuple(steps), pipelined=True,
                    channels=g)
