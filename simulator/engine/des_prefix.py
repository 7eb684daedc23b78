"""The contention-free prefix of an event-replayed step (contention on, tp-collapsed sends).

Until two flows first meet on a link, every flow runs alone at its path's bottleneck, so
the step so far is the max-plus recurrence of :mod:`simulator.engine.fastpath` with each
pipeline send taking

    latency + extra + (bytes / fraction) / bottleneck(route)

(the plan's latency, a faulty NIC's added latency and bandwidth share, the route's
bottleneck capacity in B/s; Bertsekas & Gallager, "Data Networks", sec. 6.5.2: a flow
alone on its path gets the path's minimum capacity). This module evaluates that recurrence
for a block of steps, vectorised over steps and replicas, and finds per step the cut
``t*``: the earlier of

- the first instant two sends of different entities overlap on a shared link (in the
  recurrence's timeline, where each send is the interval from its first to its last byte);
- the first start of a stage's gradient synchronisation (its last replica reaching its
  last task with ``overlap_grad_reduce``, else finishing it), before which no
  synchronisation flow exists.

Everything that finishes before ``t*`` is exactly what the event replay would compute: up to
the first meeting of two flows the replay's flows are alone. The event replay
(:func:`simulator.engine.des._one_step`) then starts each entity at its first task that
finishes at or after ``t*`` (:class:`Resume`), at the finish of its previous task, with the
earlier tasks marked done; a resumed task whose dependency finished before ``t*`` but later
than the entity's clock waits for that finish. An entity done before ``t*`` only counts
itself in its stage's arrivals and waits for the synchronisation (a stage's last arrival
and last finish come after ``t*``, so the replayed entities start it). Flows of the
skipped tasks end before ``t*`` and meet no other flow, so leaving them out changes no
rate. The replayed suffix is what sees contention (the last tasks and the gradient
synchronisation); the result is the full replay's to round-off (tests/test_des_prefix.py).

With sends that overlap the next pass (:mod:`simulator.workload.pipeline_sends`) a task's
data arrives after its compute ends: a task is replayed unless its send too has arrived
before ``t*``, dependants and the entity's next pass in the same direction wait for the
arrival (``late``, ``sent``), and an entity's own sends in the two directions count as two
streams that may meet on its NIC.

Applies with contention on when every send is one flow (``tp-collapsed`` or ``tp = 1``) and
nothing is replayed inside tasks (no in-layer collectives, no ZeRO-3 traffic).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from simulator.engine.context import Context
from simulator.engine.des_plan import SendRoutes, StepPlan
from simulator.engine.fastpath import _pauses, _walk, task_seconds, task_start
from simulator.engine.noise_process import StepNoise
from simulator.workload.taskgraph import compiled_graph

SUB_BLOCK_TASK_STEPS = 2_000_000
"""Task-steps (tasks x replicas x steps) evaluated at once; bounds the recurrence's arrays
(three float64 arrays of this many entries, 48 MB)."""

MARGIN = 1e-9
"""Relative margin below the cut: a task finishing within it of ``t*`` is replayed too."""


@dataclass(frozen=True)
class Resume:
    """Where one step's event replay starts each entity (arrays indexed replica, stage).

    ``first``: position of its first replayed task in its stage's order; ``clock``: the
    finish (s) of the task before it (0 when ``first`` is 0); ``done``: per replica, task id
    -> True for the tasks not replayed; ``late``: per replica, task id -> arrival (s; its
    finish, or its overlapped send's end) of the tasks not replayed that a replayed task
    depends on; ``sent``: per (replica, stage, forward), the arrival (s) of the entity's last
    overlapped send not replayed in that direction, where it is later than ``clock``.
    """

    first: np.ndarray
    clock: np.ndarray
    done: list
    late: list
    sent: dict = field(default_factory=dict)


def applies(plan: StepPlan, routes: SendRoutes | None) -> bool:
    """Whether a step's prefix can be evaluated here (see the module doc)."""
    return (routes is not None and routes.sizes == 1 and not plan.in_layer
            and not plan.in_layer_replays and not plan.sharding_replays)


class PrefixCutter:
    """Evaluates the contention-free prefix of steps for one scenario (see the module doc).

    Parameters
    ----------
    ctx : Context
        The scenario's layout and schedule.
    plan : StepPlan
        Its step plan (contention on).
    routes : SendRoutes
        Its pipeline sends' routes (one route per send).
    """

    def __init__(self, ctx: Context, plan: StepPlan, routes: SendRoutes):
        par, lay = ctx.scenario.parallelism, ctx.layout
        self.ctx, self.plan = ctx, plan
        self.p, self.m, self.v, self.dp = lay.pp, ctx.microbatches, par.virtual_stages, lay.dp
        self.overlap = par.overlap_grad_reduce
        self.order = _walk(par.schedule, self.p, self.m, self.v)
        graph = compiled_graph(par.schedule, self.p, self.m, self.v)
        self.width = 2 * self.p * self.m * self.v
        self.n = len(graph.ids[0])
        self.tids = np.array(graph.ids)                                   # (pp, n)
        self.deps = np.array(graph.deps)                                  # (pp, n)
        self.where = np.empty((self.width, 2), dtype=np.int64)            # tid -> (stage, position)
        for s in range(self.p):
            self.where[self.tids[s], 0], self.where[self.tids[s], 1] = s, np.arange(self.n)
        self.sends = np.array(graph.sends) > 0                            # (pp, n)
        self.last_way = _last_of_each_way(np.array(graph.is_forward))     # (pp, 2, n)
        self.bottleneck = _bottlenecks(routes, self.dp, self.p)          # (dp, pp, 2)
        self.groups = _send_groups(routes, graph, self.p, self.dp, plan.sends_overlap)   # (G, L, 3)

    def resumes(self, noise: StepNoise) -> Iterator[Resume]:
        """One :class:`Resume` per step of ``noise``, made as needed (the recurrence runs in
        sub-blocks of steps, so memory does not grow with the block)."""
        k = noise.factor.shape[0]
        size = max(1, SUB_BLOCK_TASK_STEPS // (self.p * self.n * self.dp))
        for lo in range(0, k, size):
            yield from self._block(_sliced(noise, lo, min(k, lo + size)))

    def _block(self, noise: StepNoise) -> Iterator[Resume]:
        finish, arrival, flow_start, last_start = self._recurrence(noise)
        arrive = last_start if self.overlap else finish[:, -1]          # (pp, k, dp)
        cut = np.min(np.max(arrive, axis=2), axis=0)                    # (k,) first sync start
        if self.groups is not None:
            cut = np.minimum(cut, self._first_meeting(arrival, flow_start))
        cut = cut - MARGIN * np.abs(cut)
        before = arrival < cut[None, None, :, None]                     # (pp, n, k, dp)
        first = np.where(before.all(axis=1), self.n, np.argmin(before, axis=1))   # (pp, k, dp)
        for i in range(noise.factor.shape[0]):
            yield self._resume(finish[:, :, i, :], arrival[:, :, i, :], first[:, i, :])

    def _recurrence(self, noise: StepNoise):
        """(finish, arrival: the finish or the overlapped send's end, first byte of the send
        or NaN, start of the last task): the max-plus recurrence of
        :func:`simulator.engine.fastpath._pipeline` with flow-alone sends, in the event
        replay's floating-point order; shapes (pp, n, k, dp) and (pp, k, dp)."""
        plan, p = self.plan, self.p
        factor = np.moveaxis(noise.factor, 2, 0)                        # (pp, k, dp)
        k = factor.shape[1]
        varies = noise.attention_delta is not None
        latency, seconds = self._send_parts(noise)
        pauses = _pauses(noise)
        finish = np.empty((p, self.n, k, self.dp))
        flow_start = np.full((p, self.n, k, self.dp), np.nan)
        clock = [np.zeros((k, self.dp)) for _ in range(p)]
        done: dict[int, np.ndarray] = {}
        last_start = np.empty((p, k, self.dp))
        overlap, sent = plan.sends_overlap, [[None, None] for _ in range(p)]
        arrival = np.empty_like(finish) if overlap else finish
        for tid, stage, dep, forward, send, position, kept, last in self.order:
            now = task_start(clock[stage], stage, position, dep, pauses, done)
            if sent[stage][forward] is not None:
                now = np.maximum(now, sent[stage][forward])
            if last:
                last_start[stage] = now
            if varies:
                base = task_seconds(plan, noise, stage, forward, (tid // self.v) % self.m)
                now = now + base * factor[stage]
            else:
                now = now + (plan.forward[stage] if forward else plan.backward[stage]) * factor[stage]
            if overlap:
                finish[stage, position] = arrival[stage, position] = now
                if send:
                    starts = flow_start[stage, position] = now + latency[stage][forward]
                    arrival[stage, position] = sent[stage][forward] = starts + seconds[stage][forward]
                if kept:
                    done[tid] = arrival[stage, position]
                clock[stage] = now
                continue
            if send:
                now = now + latency[stage][forward]
                flow_start[stage, position] = now
                now = now + seconds[stage][forward]
            finish[stage, position] = now
            if kept:
                done[tid] = now
            clock[stage] = now
        return finish, arrival, flow_start, last_start

    def _send_parts(self, noise: StepNoise) -> tuple[list, list]:
        """Per stage, (backward, forward) send latency (s) and bytes over the bottleneck (s),
        scalars or (k, dp) arrays: ``latency + extra`` and ``(bytes / fraction) / bottleneck``."""
        plan, b = self.plan, self.bottleneck
        latency, seconds = [], []
        for s in range(self.p):
            if noise.send_extra_s is None:
                latency.append((plan.p2p_latency_s, plan.p2p_latency_s))
                seconds.append((plan.p2p_bytes / b[:, s, 0], plan.p2p_bytes / b[:, s, 1]))
                continue
            latency.append(tuple(plan.p2p_latency_s + noise.send_extra_s[:, :, s, f] for f in (0, 1)))
            seconds.append(tuple((plan.p2p_bytes / noise.send_fraction[:, :, s, f]) / b[:, s, f]
                                 for f in (0, 1)))
        return latency, seconds

    def _first_meeting(self, arrival: np.ndarray, flow_start: np.ndarray) -> np.ndarray:
        """Per step (k,), the first instant two sends of different streams are on one link
        at once (inf if never): sort each link group's intervals by start; an interval that
        starts before the latest end so far overlaps an earlier one."""
        g = self.groups
        stage, position, replica = g[..., 0], g[..., 1], g[..., 2]
        pad = stage < 0
        starts = flow_start[stage, position, :, replica]               # (G, L, k)
        ends = arrival[stage, position, :, replica]
        starts[pad], ends[pad] = np.inf, -np.inf
        order = np.argsort(starts, axis=1, kind="stable")   # sorted runs (one per stream): merges
        starts = np.take_along_axis(starts, order, axis=1)
        ends = np.maximum.accumulate(np.take_along_axis(ends, order, axis=1), axis=1)
        met = np.where(starts[:, 1:] < ends[:, :-1], starts[:, 1:], np.inf)
        return met.min(axis=(0, 1))

    def _resume(self, finish: np.ndarray, arrival: np.ndarray, first: np.ndarray) -> Resume:
        """One step's :class:`Resume`; ``finish`` and ``arrival`` (pp, n, dp), ``first`` (pp, dp)."""
        dp, n = self.dp, self.n
        rows = np.arange(dp)
        clock = np.zeros((dp, self.p))
        done = np.zeros((dp, self.width), dtype=bool)
        late: list[dict[int, float]] = [{} for _ in range(dp)]
        positions = np.arange(n)
        for s in range(self.p):
            f = first[s]
            has = f > 0
            clock[has, s] = finish[s, f[has] - 1, rows[has]]
            skipped = positions[None, :] < f[:, None]                   # (dp, n)
            done[:, self.tids[s]] = skipped
            r, q = np.nonzero(~skipped & (self.deps[s][None, :] >= 0))
            dep = self.deps[s, q]
            ds, dq = self.where[dep, 0], self.where[dep, 1]
            pre = dq < first[ds, r]
            for rr, d, t in zip(r[pre].tolist(), dep[pre].tolist(),
                                arrival[ds[pre], dq[pre], r[pre]].tolist(), strict=True):
                late[rr][d] = t
        sent = self._pending_sends(arrival, first, clock) if self.plan.sends_overlap else {}
        return Resume(first.T.copy(), clock, done.tolist(), late, sent)

    def _pending_sends(self, arrival: np.ndarray, first: np.ndarray, clock: np.ndarray) -> dict:
        """Per (replica, stage, forward), the arrival of the entity's last skipped send that
        way where it is later than the entity's clock: only the last skipped task of each
        direction can be (each pass waits for the previous send its way), and the entity's
        next pass that way waits for it."""
        out, replicas = {}, np.arange(self.dp)
        for s in range(self.p):
            f = first[s]
            for way in (0, 1):
                q = np.where(f > 0, self.last_way[s, way][np.maximum(f - 1, 0)], -1)   # (dp,)
                ok = q >= 0
                at = arrival[s, np.maximum(q, 0), replicas]
                ok &= self.sends[s][np.maximum(q, 0)] & (at > clock[:, s])
                for r in np.flatnonzero(ok).tolist():
                    out[r, s, bool(way)] = float(at[r])
        return out

def _last_of_each_way(forward: np.ndarray) -> np.ndarray:
    """Per stage, direction (0 backward, 1 forward) and position ``q``, the position of the
    last task at or before ``q`` that runs that way (-1: none), shape (pp, 2, n)."""
    positions = np.arange(forward.shape[1])
    ways = np.stack([forward == 0, forward == 1], axis=1)                # (pp, 2, n)
    return np.maximum.accumulate(np.where(ways, positions, -1), axis=2)


def _sliced(noise: StepNoise, lo: int, hi: int) -> StepNoise:
    """Steps ``lo .. hi - 1`` of ``noise`` (views)."""
    def part(a):
        return None if a is None else a[lo:hi]
    return StepNoise(noise.factor[lo:hi], noise.pause_s, part(noise.pause_at), part(noise.send_s),
                     part(noise.send_extra_s), part(noise.send_fraction), part(noise.sync_scale),
                     part(noise.attention_delta), part(noise.token_delta))


def _bottlenecks(routes: SendRoutes, dp: int, p: int) -> np.ndarray:
    """(dp, pp, 2) bottleneck capacity (B/s) of each entity's [backward, forward] send."""
    out = np.full((dp, p, 2), np.inf)
    for r in range(dp):
        for s in range(p):
            for f, dst in ((0, (s - 1) % p), (1, (s + 1) % p)):
                if (r, s, dst) in routes.routes:
                    out[r, s, f] = routes.routes[r, s, dst][0].bottleneck
    return out


def _send_groups(routes: SendRoutes, graph, p: int, dp: int, overlapped: bool = False) -> np.ndarray | None:
    """The sends to check for meetings, as (G, L, 3) rows of (stage, position, replica),
    padded with -1: one group per distinct set of send streams (entity, direction) that
    share a link, with streams of at least two entities (an entity's held sends never
    overlap) or, with ``overlapped`` sends, at least two streams (an entity's sends in the
    two directions may be in flight at once; two of one direction never are, each pass
    waiting for the previous one's); None if no link is shared."""
    streams = defaultdict(set)
    for r in range(dp):
        for s in range(p):
            for f, dst in ((0, (s - 1) % p), (1, (s + 1) % p)):
                if (r, s, dst) in routes.routes:
                    for e in routes.routes[r, s, dst][0].edges:
                        streams[e].add((r, s, f))
    sets = {frozenset(v) for v in streams.values()
            if len(v if overlapped else {(r, s) for r, s, _ in v}) > 1}
    if not sets:
        return None
    rows = []
    for group in sorted(sorted(x) for x in sets):
        rows.append([(s, q, r) for r, s, f in group
                     for q in np.nonzero((graph.sends[s] > 0) & (graph.is_forward[s] == f))[0].tolist()])
    rows = [x for x in rows if x]           # streams no task of the schedule sends on
    if not rows:
        return None
    width = max(len(x) for x in rows)
    out = np.full((len(rows), width, 3), -1, dtype=np.int64)
    for i, x in enumerate(rows):
        out[i, :len(x)] = x
    return out
