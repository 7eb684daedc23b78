"""Recursive halving-doubling (Rabenseifner; Thakur, Rabenseifner & Gropp 2005).

For p a power of two, all-reduce is a reduce-scatter by recursive halving
(step k exchanges n/2^(k+1) with the partner at distance p/2^(k+1)) and an
all-gather by recursive doubling: T = 2 log2(p) a + 2(p-1)/p * n/B.
For other p, the first 2r ranks (r = p - 2^floor(log2 p)) first fold pairwise
(odd rank sends its whole buffer to the even one), the 2^k survivors run the
algorithm, and the result is sent back: two extra steps of n bytes.
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step


def halving_doubling_schedule(op: Op, group: Group) -> Schedule:
    ranks = group.vertices
    core, extras = _fold(ranks)
    halving = _halving_steps(core)
    steps: list[Step] = []
    if extras:
        steps.append(Step.of([(odd, even, 1.0) for even, odd in extras]))
    if op in (Op.ALL_REDUCE, Op.REDUCE_SCATTER):
        steps += halving
    if op in (Op.ALL_REDUCE, Op.ALL_GATHER):
        steps += reversed(halving)
    if extras:
        back = 1.0 if op == Op.ALL_REDUCE else 1.0 / len(ranks)
        steps.append(Step.of([(even, odd, back) for even, odd in extras]))
    return Schedule(op, Algorithm.HALVING_DOUBLING, len(ranks), tuple(steps), pipelined=False)


def _fold(ranks: list[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """Survivors (a power of two) and the (even, odd) pairs folded into them."""
    p = len(ranks)
    power = 1 << (p.bit_length() - 1)
    r = p - power
    extras = [(ranks[2 * i], ranks[2 * i + 1]) for i in range(r)]
    core = [ranks[2 * i] for i in range(r)] + ranks[2 * r:]
    return core, extras


def _halving_steps(core: list[int]) -> list[Step]:
    p = len(core)
    steps, distance, share = [], p // 2, 0.5
    while distance >= 1:
        flows = [(core[i], core[i ^ distance], share) for i in range(p)]
        steps.append(Step.of(flows))
        distance, share = distance // 2, share / 2
    return steps
