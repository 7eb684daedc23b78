"""Direct (all-pairs) algorithms: every rank talks to every peer in one step.

All-to-all: each rank sends n/p to each of the p-1 others, T = a + (p-1)/p * n/B
when the fabric is non-blocking. All-gather / reduce-scatter: the same pattern.
All-reduce: reduce-scatter then all-gather, T = 2a + 2(p-1)/p * n/B.
Broadcast / reduce: the root sends (receives) n to (from) each peer.
Sendrecv: rank i sends n to rank i+1 (nccl-tests' sendrecv_perf pattern).

These are NCCL's point-to-point transfers; which NIC a cross-server send leaves by is
the router's choice (:meth:`simulator.topology.routing.Router.exit_nic`): the sender's
own rail NIC, or with ``fabric.pxn`` the NIC on the receiver's rail, reached over NVLink
through the GPU next to it (NCCL PXN: src/graph/search.cc ``ncclTopoGetNetDev``,
``NCCL_P2P_PXN_LEVEL=2``), which keeps cross-rail all-to-all traffic off the spines.
"""

from __future__ import annotations

from simulator.collectives.group import Group, ring_pairs
from simulator.collectives.schedule import Algorithm, Op, Schedule, Step
from simulator.errors import InfeasibleError

MAX_ALL_PAIRS_RANKS = 1024


def direct_schedule(op: Op, group: Group) -> Schedule:
    p, ranks = group.size, group.vertices
    if op == Op.SENDRECV:
        steps = (Step.of([(s, d, 1.0) for s, d in ring_pairs(ranks)]),)
    elif op in (Op.BROADCAST, Op.REDUCE):
        root = ranks[0]
        flows = [(root, r, 1.0) if op == Op.BROADCAST else (r, root, 1.0) for r in ranks[1:]]
        steps = (Step.of(flows),)
    else:
        steps = _all_pairs_steps(op, ranks)
    return Schedule(op, Algorithm.DIRECT, p, steps, pipelined=False)


def _all_pairs_steps(op: Op, ranks: list[int]) -> tuple[Step, ...]:
    p = len(ranks)
    if p > MAX_ALL_PAIRS_RANKS:
        advice = "" if op == Op.ALL_TO_ALL else ": use ring or hierarchical"
        raise InfeasibleError(f"the direct algorithm schedules p*(p-1) flows; {p} ranks exceeds its "
                              f"{MAX_ALL_PAIRS_RANKS}-rank limit{advice}")
    exchange = Step.of([(s, d, 1.0 / p) for s in ranks for d in ranks if s != d])
    return (exchange, exchange) if op == Op.ALL_REDUCE else (exchange,)
