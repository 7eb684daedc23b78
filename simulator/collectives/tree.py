"""NCCL's double binary tree all-reduce (Sanders, Speck & Träff 2009; NCCL 2.4).

Inside each server the GPUs form a chain ending at the channel's head GPU;
between servers two binary trees each carry half the data, built as NCCL builds
them (src/graph/trees.cc), so that the inner vertices of one are mostly leaves of
the other. Reduce flows up (chains, then
tree levels, deepest first), broadcast flows back down; both are pipelined,
so T = 2((g-1) a_intra + d a_inter) + n/B_tree, with g GPUs per server, N servers
and d = ceil(log2 N) the bit-built tree's depth (NCCL's tuner, src/graph/tuning.cc, counts
floor(log2 N); on three servers NCCL's tree is the chain 0 - 2 - 1).
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.errors import InfeasibleError


def tree_schedule(op: Op, group: Group) -> Schedule:
    if op != Op.ALL_REDUCE:
        raise KeyError(op)
    if not group.uniform:
        raise InfeasibleError("tree needs the same number of group GPUs on every server")
    channels = group.channels
    share = 1.0 / (2 * channels)
    up: list[list[tuple[int, int, float]]] = []
    for c in range(channels):
        heads, chains = _chains(group, c)
        for tree in double_binary_tree(len(heads)):
            merge_levels(up, _chain_up(chains, share) + tree_up(tree, heads, share))
    up_steps = [Step.of(flows) for flows in up if flows]
    down_steps = [Step.of([(d, s, f) for s, d, f in step_flows(st)]) for st in reversed(up_steps)]
    return Schedule(op, Algorithm.TREE, group.size, tuple(up_steps + down_steps),
                    pipelined=True, channels=channels)


def step_flows(step: Step) -> list[tuple[int, int, float]]:
    return list(zip(step.src.tolist(), step.dst.tolist(), step.frac.tolist(), strict=True))


def _chains(group: Group, channel: int) -> tuple[list[int], list[list[int]]]:
    """Per server, the chain of GPUs ending at the channel's head.

    The head is the GPU the channel's ring enters the server at (``Group.segments``):
    next to the channel's NIC, which NCCL's tree uses both up and down (search.cc
    ``ncclTopoSearchCheckNet``: "Trees are symmetric"), so on a rail-optimized fabric
    the tree's network hops stay on that rail. The chain follows the ring's segment
    from its second GPU round to the head; on a mesh that walks the links of the
    channel's mesh ring, so the channels' chains spread over all GPU-to-GPU links.
    """
    chains = [segment[1:] + segment[:1] for segment in group.segments(channel)]
    return [chain[-1] for chain in chains], chains


def _chain_up(chains: list[list[int]], share: float) -> list[list[tuple[int, int, float]]]:
    length = len(chains[0])
    return [[(chain[i], chain[i + 1], share) for chain in chains] for i in range(length - 1)]


def tree_up(tree: dict[int, int], heads: list[int], share: float) -> list[list]:
    """Child -> parent flows grouped by the child's depth, deepest level first."""
    depth = {v: _depth(v, tree) for v in tree}
    levels = sorted({d for d in depth.values()}, reverse=True)
    return [[(heads[v], heads[tree[v]], share) for v in tree if depth[v] == lv] for lv in levels]


def _depth(vertex: int, parent: dict[int, int]) -> int:
    d = 0
    while vertex in parent:
        vertex, d = parent[vertex], d + 1
    return d


def merge_levels(into: list[list], levels: list[list]) -> None:
    """Add ``levels`` position-wise into ``into``: concurrent channels and trees share steps."""
    for i, flows in enumerate(levels):
        if i < len(into):
            into[i] += flows
        else:
            into.append(list(flows))


def double_binary_tree(n: int) -> list[dict[int, int]]:
    """NCCL's two parent maps over 0..n-1 (src/graph/trees.cc ``ncclGetDtree``): the bit-built
    binary tree of :func:`nccl_btree_parent` rooted at 0, and its mirror (``n - 1 - i``, n even)
    or its shift by one (``i + 1 mod n``, n odd), so that most inner vertices of one are leaves
    of the other."""
    if n == 1:
        return [{}, {}]
    first = {rank: nccl_btree_parent(n, rank) for rank in range(1, n)}
    mapping = (lambda i: n - 1 - i) if n % 2 == 0 else (lambda i: (i + 1) % n)
    second = {mapping(c): mapping(p) for c, p in first.items()}
    return [first, second]


def nccl_btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` (> 0) in NCCL's binary tree over ``n`` ranks (``ncclGetBtree``): with
    ``bit`` its lowest set bit, ``(rank ^ bit) | (bit << 1)``, or ``rank ^ bit`` where that is
    out of range. The root 0 has one child, the largest power of two below ``n``; the tree is
    ``ceil(log2 n)`` deep (three ranks: the chain 0 - 2 - 1)."""
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit
