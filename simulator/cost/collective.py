"""Collective times over message sizes, with NCCL-style automatic algorithm choice.

``CollectiveModel.sweep`` prices one operation on one group for a whole array
of sizes: each candidate (algorithm, protocol) contributes ``T = a + b n``; the
chosen one per size is the fastest (``auto``), as NCCL's tuner picks the
minimum of its modelled times (src/graph/tuning.cc, ``ncclTopoGetAlgoTime``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from simulator.collectives import (
    ALGORITHMS,
    BUS_FACTOR,
    Algorithm,
    Group,
    Op,
    Schedule,
    Step,
    build_schedule,
    candidate_schedules,
)
from simulator.collectives.concurrent import SHIFT_EQUIVARIANT, merge_schedules, shift_schedule
from simulator.collectives.registry import AUTO_ALGORITHMS
from simulator.collectives.ring import SAME_RING_STEPS
from simulator.collectives.schedule import POINT_TO_POINT
from simulator.cost.network import CostTerms, NetworkCostModel
from simulator.errors import InfeasibleError
from simulator.topology import symmetry
from simulator.topology.cluster import Cluster


@dataclass(frozen=True)
class CollectiveSweep:
    """One collective priced over ``size_bytes``; arrays share the sizes' shape."""

    op: Op
    ranks: int
    size_bytes: np.ndarray
    time_s: np.ndarray
    algorithm: np.ndarray   # chosen algorithm name per size
    protocol: np.ndarray    # chosen protocol name per size

    @property
    def algbw_Bps(self) -> np.ndarray:
        """Algorithm bandwidth, size / time (nccl-tests' algbw), in B/s."""
        return self.size_bytes / self.time_s

    @property
    def busbw_Bps(self) -> np.ndarray:
        """Bus bandwidth, algbw * factor(op, p) (nccl-tests' busbw), in B/s."""
        return self.algbw_Bps * BUS_FACTOR[self.op](self.ranks)

    def records(self) -> list[dict]:
        """JSON-ready rows with the keys of SCENARIO_FORMAT.md (GB/s = 1e9 B/s)."""
        return [
            {"size_bytes": int(s), "time_s": float(t), "algbw_GBps": float(a) / 1e9,
             "busbw_GBps": float(b) / 1e9, "algorithm": str(alg), "protocol": str(pr)}
            for s, t, a, b, alg, pr in zip(self.size_bytes, self.time_s, self.algbw_Bps,
                                           self.busbw_Bps, self.algorithm, self.protocol,
                                           strict=True)
        ]


@dataclass(frozen=True)
class PricedCollective:
    """One collective on ``size_bytes`` per rank and the cost terms chosen for it;
    ``expert``: run by the stage's expert-data-parallel groups, not its data-parallel ones;
    ``launches``: the separate NCCL calls the bytes go out in (one per gradient bucket where
    the runtime reduces bucket by bucket), each paying the latency."""

    op: Op
    size_bytes: float
    terms: CostTerms
    expert: bool = False
    launches: int = 1

    @property
    def time_s(self) -> float:
        """``k a + b n`` (s) of the chosen terms over the ``k`` launches (and each launch's
        chunk loop, :meth:`CostTerms.launched_seconds`)."""
        return self.terms.launched_seconds(self.size_bytes, self.launches)

    @property
    def launched_terms(self) -> CostTerms:
        """The terms with the latency (and chunk loop) of every launch: what a replay of the
        whole waits."""
        if self.launches == 1:
            return self.terms
        terms = replace(self.terms, latency_s=self.terms.launched_latency_s(self.size_bytes, self.launches),
                        chunks=None)
        if terms.size_factors is None:
            return terms
        per_byte = float(terms.per_byte_at(self.size_bytes / self.launches))   # one call's
        factor = terms.seconds_per_byte / per_byte
        return replace(terms, seconds_per_byte=per_byte, size_factors=None,
                       efficiency=None if terms.efficiency is None else terms.efficiency * factor)


def _built(op: Op, algorithm: Algorithm, cluster: Cluster, groups) -> Schedule | None:
    """The merged schedule of ``op`` with ``algorithm`` on all ``groups``, or None if the
    algorithm refuses them."""
    try:
        return merge_schedules([build_schedule(op, algorithm, Group(cluster, g)) for g in groups])
    except (InfeasibleError, KeyError, ValueError):
        return None


def _refusals(op: Op, candidates, cluster: Cluster, group) -> str:
    """Why each algorithm ``auto`` would choose among refused ``op`` on ``group`` (the first
    group of a set), as a sentence to append to an error; "" when none says."""
    reasons = []
    for algorithm in candidates:
        serves = op in ALGORITHMS[algorithm][1]
        if not serves or (algorithm not in AUTO_ALGORITHMS and op not in POINT_TO_POINT):
            continue
        try:
            build_schedule(op, algorithm, Group(cluster, group))
        except (InfeasibleError, KeyError, ValueError) as refusal:
            reasons.append(f"{algorithm.value}: {refusal}")
    return f" ({'; '.join(reasons)})" if reasons else ""


class CollectiveModel:
    """Times of collectives on one cluster (routes and schedules cached per instance)."""

    def __init__(self, cluster: Cluster, network: NetworkCostModel | None = None):
        self.cluster = cluster
        self.network = network or NetworkCostModel(cluster)
        self._terms: dict[tuple, list[CostTerms]] = {}
        self._concurrent: dict[tuple, tuple[list[CostTerms], list[float], list[float], bool]] = {}
        self._by_groups: dict[tuple, tuple[list[CostTerms], list[float], list[float], bool]] = {}
        self._shapes: dict[tuple, Schedule | None] = {}
        self._group_shapes: dict[tuple, Schedule] = {}
        self._built_schedules: dict = {}

    @cached_property
    def translation_period(self) -> int | None:
        """Servers by which a shift maps the cluster's routes onto themselves, or None
        (:func:`simulator.topology.symmetry.translation_period`)."""
        return symmetry.translation_period(self.cluster)

    def canonical_stage(self, layout, stage: int) -> int:
        """The first pipeline stage of ``layout`` whose groups are ``stage``'s shifted by a
        symmetry of the cluster (:mod:`simulator.topology.symmetry`): collectives on their
        groups cost the same, so a stage is priced on the canonical stage's groups."""
        return symmetry.canonical_stage(self.translation_period, layout.stage_stride,
                                        self.cluster.hw.gpus_per_node, stage)

    def terms(self, op: Op, algorithm: Algorithm | None, group: Group) -> list[CostTerms]:
        """Cost terms of every (algorithm, protocol) allowed; ``algorithm=None`` means auto."""
        key = (op, algorithm, group.gpus)
        if key not in self._terms:
            if algorithm is None:
                schedules = candidate_schedules(op, group)
                if not schedules:
                    raise InfeasibleError(f"no algorithm can run {op.value} on {group.size} ranks")
            else:
                schedules = [build_schedule(op, algorithm, group)]
            self._terms[key] = [t for s in schedules for t in self.network.terms(s)]
        return self._terms[key]

    def schedule_terms(self, key, build) -> list[CostTerms]:
        """Cost terms of every protocol for the schedule ``build()`` returns (a schedule no
        registered algorithm builds, e.g. :func:`simulator.cost.ep_dedup.dedup_schedule`),
        cached under ``key``; ``build`` runs on a cache miss only and may return None (no
        schedule: an empty list)."""
        found = self._built_schedules.get(key)
        if found is None:
            schedule = build()
            found = self._built_schedules[key] = [] if schedule is None else self.network.terms(schedule)
        return found

    def concurrent_time(self, op: Op, groups, size_bytes: float,
                        algorithm: Algorithm | None = None, key=None) -> tuple[float, str]:
        """Time of ``op`` run by all ``groups`` at once, each on ``size_bytes``, and the
        chosen ``"algorithm/protocol"`` (see :meth:`concurrent_terms`)."""
        best = self.concurrent_terms(op, groups, size_bytes, algorithm, key)
        return (best.seconds(size_bytes),
                f"{best.schedule.algorithm.value}/{best.protocol.value}")

    def concurrent_terms(self, op: Op, groups, size_bytes: float,
                         algorithm: Algorithm | None = None, key=None) -> CostTerms:
        """Fastest (algorithm, protocol) for ``op`` run by all ``groups`` at once.

        Every candidate algorithm is priced with all groups' flows merged (they share
        links); the returned terms carry the merged schedule, which the discrete-event
        engine replays. ``groups`` may be a callable returning the groups, evaluated only
        on a cache miss; ``key`` then names the set of groups (e.g. the layout) for the cache.
        """
        key = ("concurrent", op, algorithm, key if key is not None else tuple(groups))
        found = self._concurrent.get(key)
        if found is None:
            found = self._concurrent[key] = self._concurrent_priced(op, groups, algorithm)
        terms, latency, per_byte, chunked = found
        size = float(size_bytes)
        if chunked:
            return min(terms, key=lambda t: t.seconds(size))
        best = min(range(len(terms)), key=lambda i: latency[i] + per_byte[i] * size)
        return terms[best]

    def _concurrent_priced(self, op: Op, groups, algorithm: Algorithm | None
                           ) -> tuple[list[CostTerms], list[float], list[float], bool]:
        """Candidate terms of ``op`` on ``groups`` with their latencies and seconds per byte, and
        whether any is not ``a + b n`` (a chunk loop, the tree correction: then priced by
        ``seconds``), cached by the groups
        themselves: different names for one set of groups (a stage's data-parallel groups are
        its ZeRO-3 shard groups without context parallelism) share one pricing."""
        groups = groups() if callable(groups) else groups
        key = (op, algorithm, tuple(tuple(g) for g in groups))
        found = self._by_groups.get(key)
        if found is None:
            terms = self._concurrent_candidates(op, groups, algorithm)
            found = self._by_groups[key] = (terms, [t.latency_s for t in terms],
                                            [t.seconds_per_byte for t in terms],
                                            not all(t.linear for t in terms))
        return found

    def _concurrent_candidates(self, op: Op, groups, algorithm: Algorithm | None) -> list[CostTerms]:
        candidates = [algorithm] if algorithm else list(ALGORITHMS)
        terms = []
        for algo in candidates:
            native = algo in AUTO_ALGORITHMS or op in POINT_TO_POINT
            if algorithm is None and not native:
                continue
            merged = self._merged(op, algo, groups)
            if merged is not None:
                terms += self.network.terms(merged)
        if not terms:
            why = _refusals(op, candidates, self.cluster, groups[0])
            raise InfeasibleError(f"no algorithm can run {op.value} on groups of {len(groups[0])} ranks{why}")
        return terms

    def _merged(self, op: Op, algorithm: Algorithm, groups) -> Schedule | None:
        """The merged schedule of ``op`` with ``algorithm`` on all ``groups`` at once, or None
        if the algorithm refuses them. Algorithms whose schedules move with their groups
        (:func:`~simulator.collectives.concurrent.shift_schedule`) build it once per shape:
        for the groups moved down to start on server 0, then shifted back; and each group's
        own schedule once per group shape (:meth:`_group_shape`). A ring reduce-scatter is
        the ring all-gather's schedule renamed
        (:data:`~simulator.collectives.ring.SAME_RING_STEPS`)."""
        if algorithm not in SHIFT_EQUIVARIANT or not all(len(g) for g in groups):
            return _built(op, algorithm, self.cluster, groups)
        if algorithm == Algorithm.RING and op in SAME_RING_STEPS:    # the twin's, op renamed
            found = self._merged(SAME_RING_STEPS[op], algorithm, groups)
            return None if found is None else replace(found, op=op)
        servers, moved = self._moved_down(groups)
        key = (op, algorithm, moved)
        if key not in self._shapes:
            self._shapes[key] = self._merged_shifted(op, algorithm, moved)
        found = self._shapes[key]
        if found is None or servers == 0:
            return found
        return shift_schedule(found, servers * self.cluster.layout.vertices)

    def _moved_down(self, groups) -> tuple[int, tuple[tuple[int, ...], ...]]:
        """(whole servers before the first of ``groups``' GPUs, the groups moved down by them
        to start on server 0)."""
        per_node = self.cluster.hw.gpus_per_node
        servers = min(min(g) for g in groups) // per_node
        first = servers * per_node
        return servers, tuple(tuple(gpu - first for gpu in g) for g in groups)

    def _merged_shifted(self, op: Op, algorithm: Algorithm, groups) -> Schedule | None:
        """:func:`_built` for an algorithm whose schedules move with their groups: each group's
        schedule its shape's shifted (:meth:`_group_shape`), merged step by step as
        :func:`~simulator.collectives.concurrent.merge_schedules` merges those of
        :func:`~simulator.collectives.concurrent.shift_schedule`: the same arrays."""
        try:
            parts = [self._group_shape(op, algorithm, g) for g in groups]
        except (InfeasibleError, KeyError, ValueError):
            return None
        first = parts[0][0]
        if any(len(shape.steps) != len(first.steps) for shape, _ in parts):
            return None                     # merge_schedules refuses them
        steps = tuple(Step(np.concatenate([shape.steps[i].src + moved for shape, moved in parts]),
                           np.concatenate([shape.steps[i].dst + moved for shape, moved in parts]),
                           np.concatenate([shape.steps[i].frac for shape, _ in parts]),
                           step.repeat, step.ring_like) for i, step in enumerate(first.steps))
        return Schedule(first.op, first.algorithm, first.ranks, steps, first.pipelined, first.channels,
                        nvls_loop=first.nvls_loop)

    def _group_shape(self, op: Op, algorithm: Algorithm, gpus: tuple[int, ...]) -> tuple[Schedule, int]:
        """(the schedule of ``op`` with ``algorithm`` (one of
        :data:`~simulator.collectives.concurrent.SHIFT_EQUIVARIANT`) on the group ``gpus`` moved
        down to start on server 0, built once per such shape; the vertices to shift it by to
        give the group's own, :func:`~simulator.collectives.concurrent.shift_schedule`)."""
        servers, (shape,) = self._moved_down((gpus,))
        key = (op, algorithm, shape)
        found = self._group_shapes.get(key)
        if found is None:
            found = self._group_shapes[key] = build_schedule(op, algorithm, Group(self.cluster, shape))
        return found, servers * self.cluster.layout.vertices

    def sweep(self, op: Op, algorithm: Algorithm | None, group: Group,
              size_bytes) -> CollectiveSweep:
        """Fastest allowed (algorithm, protocol) and its time for every size."""
        sizes = np.asarray(size_bytes, dtype=np.float64)
        terms = self.terms(op, algorithm, group)
        latency = np.array([t.latency_s for t in terms])[:, None]
        per_byte = np.array([t.seconds_per_byte for t in terms])[:, None]
        times = latency + per_byte * sizes[None, :]
        for i, t in enumerate(terms):
            if not t.linear:
                times[i] = t.time(sizes)
        best = np.argmin(times, axis=0)
        names = np.array([t.schedule.algorithm.value for t in terms])
        protocols = np.array([t.protocol.value for t in terms])
        return CollectiveSweep(op, group.size, sizes, times[best, np.arange(sizes.size)],
                               names[best], protocols[best])
