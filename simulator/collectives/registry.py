"""Which algorithm serves which collective, and how to build its schedule."""

from __future__ import annotations

from collections.abc import Callable

from simulator.collectives.direct import direct_schedule
from simulator.collectives.group import Group
from simulator.collectives.halving_doubling import halving_doubling_schedule
from simulator.collectives.hierarchical import hierarchical_schedule
from simulator.collectives.nvls import nvls_schedule
from simulator.collectives.nvls_tree import nvls_tree_schedule
from simulator.collectives.ring import ring_schedule
from simulator.collectives.schedule import POINT_TO_POINT, Algorithm, Op, Schedule
from simulator.collectives.torus import torus_schedule
from simulator.collectives.tree import tree_schedule
from simulator.errors import InfeasibleError

Builder = Callable[[Op, Group], Schedule]

_REDUCTIONS = {Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER}

ALGORITHMS: dict[Algorithm, tuple[Builder, frozenset[Op]]] = {
    Algorithm.RING: (ring_schedule, frozenset(_REDUCTIONS | {Op.BROADCAST, Op.REDUCE})),
    Algorithm.TREE: (tree_schedule, frozenset({Op.ALL_REDUCE})),
    Algorithm.HALVING_DOUBLING: (halving_doubling_schedule, frozenset(_REDUCTIONS)),
    Algorithm.DIRECT: (direct_schedule, frozenset(Op)),
    Algorithm.HIERARCHICAL: (hierarchical_schedule, frozenset(_REDUCTIONS)),
    Algorithm.NVLS: (nvls_schedule, frozenset({Op.ALL_REDUCE})),
    Algorithm.NVLS_TREE: (nvls_tree_schedule, frozenset({Op.ALL_REDUCE})),
    Algorithm.TORUS: (torus_schedule, frozenset(_REDUCTIONS)),
}


def build_schedule(op: Op, algorithm: Algorithm, group: Group) -> Schedule:
    """The schedule of ``op`` with ``algorithm`` over ``group``.

    Raises
    ------
    InfeasibleError
        If the algorithm cannot serve this operation or group (with the reason).
    """
    builder, ops = ALGORITHMS[algorithm]
    if op not in ops:
        served = ", ".join(sorted(o.value for o in ops))
        raise InfeasibleError(f"algorithm '{algorithm.value}' does not implement {op.value} "
                              f"(it serves: {served})")
    if group.size < 2:
        raise InfeasibleError("a collective needs at least two ranks")
    if algorithm in NVLS_ALGORITHMS and not group.cluster.hw.fabric.nvls:
        raise InfeasibleError(f"'{algorithm.value}' needs NVLink SHARP, which cluster.fabric.nvls "
                              "false turns off (NCCL_NVLS_ENABLE=0)")
    return builder(op, group)


NVLS_ALGORITHMS = frozenset({Algorithm.NVLS, Algorithm.NVLS_TREE})
"""The algorithms on NVSwitch's in-switch reduction (NVLink SHARP), both of which NCCL leaves out
under ``NCCL_NVLS_ENABLE=0``: ``ncclNvlsInit`` then leaves ``nvlsSupport`` 0
(NVIDIA/nccl v2.29.7 src/transport/nvls.cc) and the tuner skips ``NCCL_ALGO_NVLS`` and
``NCCL_ALGO_NVLS_TREE`` without it (src/enqueue.cc ``updateCollCostTable``)."""


NCCL_ALGORITHMS = frozenset({Algorithm.RING, Algorithm.TREE, Algorithm.NVLS, Algorithm.NVLS_TREE})
"""What NCCL itself runs for collectives (all-to-all and sendrecv are its direct p2p)."""

AUTO_ALGORITHMS = NCCL_ALGORITHMS | {Algorithm.TORUS}
"""What ``auto`` chooses among: NCCL's algorithms, and on a chip-level torus (TPU ICI) the
torus algorithm, which XLA's collectives resemble; it refuses every other cluster at once."""


def candidate_schedules(op: Op, group: Group) -> list[Schedule]:
    """Schedules ``auto`` chooses among: the ones NCCL would consider for ``op`` on ``group``.

    Like NCCL's tuner, auto picks among NCCL's own algorithms (ring, tree, NVLS;
    direct peer-to-peer for all-to-all and sendrecv), and torus on a chip-level torus. Halving-doubling,
    hierarchical and direct all-reduce are available by name for what-ifs.
    """
    schedules = []
    for algorithm, (_, ops) in ALGORITHMS.items():
        native = algorithm in AUTO_ALGORITHMS or op in POINT_TO_POINT
        if op not in ops or not native:
            continue
        try:
            schedules.append(build_schedule(op, algorithm, group))
        except InfeasibleError:
            continue
    return schedules
