"""The pipeline task graph's exact clocks for many sets of stage durations at once.

Layouts that share a schedule, stage count ``p``, microbatch count ``m`` and virtual
stages ``v`` share one task graph (:mod:`simulator.workload.taskgraph`); only the task
durations differ. The graph's longest path is the max-plus recurrence of
:func:`~simulator.workload.taskgraph.exact_clocks`,

    done[task] = max(done[previous task of its stage], done[dependency]) + duration,

evaluated here level by level (a task's level is one more than the larger of its
predecessor's and its dependency's, so no level holds two tasks of one stage and every
level depends only on earlier ones: Baccelli et al., "Synchronization and Linearity",
1992, ch. 2). Each level is a few numpy operations on a (tasks of the level, layouts)
array, so ``n`` layouts cost about as much as one. Every task performs the same
floating-point operations in the same order as the task-by-task walk, so the clocks are
bit for bit those of :func:`~simulator.workload.taskgraph.stage_clocks`
(``tests/test_taskgraph.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simulator.config.scenario import Schedule
from simulator.workload.taskgraph import EXACT_MICROBATCHES, stage_send_counts
from simulator.workload.warmup import interleaved_warmup


@dataclass(frozen=True)
class Wavefront:
    """The task graph in levels, tasks numbered level after level (a level's tasks are the
    rows ``start:stop`` of the clocks; row ``tasks``: none, zeros): per level ``start``,
    ``stop``, its size and its tasks' stage predecessors followed by their dependencies;
    every task's duration kind (index ``4 * stage + 2 * forward + sends`` of the duration
    table); each stage's last task and its kind; each task id's row; per task (level
    order), 1.0 where its dependency sends its output to it (a cross-stage edge), else 0.0;
    per task (level order), the row of its stage's previous task in the same direction (the
    none row if it has none) and 1.0 where that task sends, else 0.0."""

    levels: tuple[tuple[int, int, int, np.ndarray], ...]
    kinds: np.ndarray
    last_task: np.ndarray
    last_kind: np.ndarray
    tasks: int
    positions: np.ndarray
    dep_sends: np.ndarray
    same_rows: np.ndarray
    same_sends: np.ndarray


@lru_cache(maxsize=256)
def wavefront(schedule: Schedule, p: int, m: int, v: int) -> Wavefront:
    """The levels of the task graph of ``schedule`` with ``p`` stages, ``m`` microbatches
    and ``v`` virtual stages (a pure function of its arguments, memoised).

    A task's level is the longest path to it (:func:`swept_levels`, or where sweeps do not
    settle the walk of :func:`_task_levels`: the same levels).

    Raises
    ------
    RuntimeError
        If the stage orders deadlock (no valid order exists).
    """
    total = 2 * p * m * v
    ids, deps, kinds = graph_tasks(schedule, p, m, v)
    deps = np.where(deps < 0, total, deps)
    plain = schedule == Schedule.ONE_F_ONE_B or (schedule == Schedule.INTERLEAVED and v == 1)
    level = swept_levels(ids, deps, total, start=one_f_one_b_levels(p, m) if plain else None)
    if level is None:
        level = _task_levels(ids.tolist(), deps.tolist(), total)
    if level is None:
        raise RuntimeError(f"{schedule.value} order deadlocks with p={p}, m={m}, v={v}")
    before = np.concatenate([np.full((p, 1), total, ids.dtype), ids[:, :-1]], axis=1)
    flat, kind = ids.ravel(), kinds.ravel().astype(np.int64)      # kinds index the tables: intp
    return _levels(np.asarray(level)[flat], flat, (before.ravel(), deps.ravel()), kind,
                   (ids[:, -1].tolist(), kinds[:, -1].tolist()), total,
                   same_direction_before(ids, kinds, total).ravel())


def same_direction_before(ids: np.ndarray, kinds: np.ndarray, total: int) -> np.ndarray:
    """Per stage and task (shape of ``ids``), the id of the stage's previous task in the same
    direction (forward or backward; ``total``: none)."""
    out = np.full(ids.shape, total, ids.dtype)
    forward = (kinds >> 1) & 1
    for i in range(ids.shape[0]):
        for way in (0, 1):
            at = np.flatnonzero(forward[i] == way)
            out[i, at[1:]] = ids[i, at[:-1]]
    return out


SWEEPS = 16
"""Sweeps :func:`swept_levels` tries before leaving the levels to the walk (pipeline
schedules settle in one or two)."""


def swept_levels(ids: np.ndarray, deps: np.ndarray, total: int, sweeps: int = SWEEPS,
                 start: np.ndarray | None = None) -> np.ndarray | None:
    """Level of every task (index ``total``: none, level 0), as :func:`_task_levels`, by
    sweeps over the stages, first to last and back, until the levels solve the recurrence.

    ``ids`` and ``deps`` (shape (stages, tasks of a stage)) are each stage's tasks in
    execution order and their dependencies. Given the levels ``D`` of its tasks'
    dependencies, a stage's ``k``-th task is at ``max(level of task k-1, D[k]) + 1 = k + 1 +
    max over j <= k of (D[j] - j)``: a cumulative maximum. Starting from 0 the levels only
    grow and never pass the longest paths; a stage's dependencies lie on its neighbours, so
    a few sweeps reach them. After each sweep every stage's cumulative maximum is checked at
    once (:func:`_settled`): levels that solve the recurrence are the longest paths (its one
    solution on an acyclic graph). None if ``sweeps`` sweeps do not settle them (or the
    orders deadlock: no solution). ``start``: levels to try first (shape of ``ids``, e.g.
    :func:`one_f_one_b_levels`): taken when they solve the recurrence, else the sweeps start
    from 0.
    """
    p, n = ids.shape
    position = np.full(total + 1, p * n)          # task id -> its place in stage order; none -> the 0
    position[ids.ravel()] = np.arange(p * n)
    flat = np.zeros(p * n + 1, np.int64)          # levels in stage order, then the level 0 of none
    rows = flat[:-1].reshape(p, n)
    waits = position[deps]
    count = np.arange(n)
    after = count + 1
    order = [*range(p), *range(p - 1, -1, -1)]
    if start is not None:
        rows[:] = start
        if _settled(flat, rows, waits, count):
            return _placed(ids, rows, total)
        rows[:] = 0
    for _ in range(sweeps):
        for i in order:
            mine = rows[i]
            np.maximum.accumulate(flat.take(waits[i]) - count, out=mine)
            mine += after
        if _settled(flat, rows, waits, count):
            return _placed(ids, rows, total)
    return None


def _placed(ids: np.ndarray, rows: np.ndarray, total: int) -> np.ndarray:
    """The levels ``rows`` of the tasks ``ids`` (stages by tasks) by task id (index ``total``:
    none, level 0)."""
    level = np.zeros(total + 1, np.int64)
    level[ids] = rows
    return level


def one_f_one_b_levels(p: int, m: int) -> np.ndarray:
    """Each stage's task levels in execution order, shape (p, 2m), of 1F1B with ``p`` stages
    and ``m`` microbatches, in closed form: stage ``i`` runs ``w = min(p - i - 1, m)``
    warm-up forwards at levels ``i + 1 .. i + w``; then, if ``w < m``, its first steady
    forward at level ``p`` and the rest of its ``2 (m - w)`` steady tasks one level apart
    from level ``2 p - i``; its ``w`` cool-down backwards two levels apart after the last.
    (:func:`swept_levels` checks them: they are taken only where they solve the recurrence.)"""
    stage, k = np.arange(p)[:, None], np.arange(2 * m)[None, :]
    w = np.minimum(p - stage - 1, m)
    cool = 2 * m - w                                 # the first cool-down backward
    steady = 2 * p - stage + (k - w - 1)
    return np.where(k < w, stage + 1 + k, np.where((k == w) & (w < m), p, np.where(
        k < cool, steady, 2 * p - stage + (cool - w - 2) + 2 * (k - cool + 1))))


def _settled(flat: np.ndarray, rows: np.ndarray, waits: np.ndarray, count: np.ndarray) -> bool:
    """Whether the levels ``rows`` (a view of ``flat``, stages by tasks) solve the recurrence
    of :func:`swept_levels` on every stage at once (``waits``: each task's dependency's place
    in ``flat``)."""
    found = np.maximum.accumulate(flat.take(waits) - count, axis=1)
    found += count + 1
    return bool(np.array_equal(found, rows))


def _task_levels(ids: list[list[int]], deps: list[list[int]], total: int) -> list[int] | None:
    """Level of every task (index ``total``: none, level 0): one more than the larger of its
    stage predecessor's and its dependency's, each stage walked in order until it waits for
    a task not yet reached; None if the stage orders deadlock."""
    p = len(ids)
    level, waiter = [-1] * total + [0], [-1] * (total + 1)
    cursor, previous, ready = [0] * p, [total] * p, list(range(p))
    while ready:
        i = ready.pop()
        mine, needs, k, before = ids[i], deps[i], cursor[i], previous[i]
        here, count = level[before], len(mine)
        while k < count:
            at = level[needs[k]]
            if at < 0:
                waiter[needs[k]] = i
                break
            here = (here if here > at else at) + 1
            before = mine[k]
            level[before] = here
            if waiter[before] >= 0:
                ready.append(waiter[before])
            k += 1
        cursor[i], previous[i] = k, before
    return None if any(cursor[i] < len(ids[i]) for i in range(p)) else level


def _levels(level: np.ndarray, task: np.ndarray, sources: tuple[np.ndarray, np.ndarray],
            kinds: np.ndarray, last: tuple[list[int], list[int]], total: int,
            same: np.ndarray) -> Wavefront:
    """Tasks ``task`` at ``level``, with their (predecessors, dependencies) ``sources`` and
    duration ``kinds``, cut into levels, the tasks renumbered in level order; ``last``: each
    stage's last task and its kind; ``same``: each task's stage's previous task in the same
    direction."""
    order = np.argsort(_narrow(level), kind="stable")
    level = level[order]
    renumber = np.empty(total + 1, np.int64)       # every task id is written (``task`` holds them all)
    renumber[total] = total
    renumber[task[order]] = np.arange(total)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(level)) + 1, [total]])
    sizes = np.diff(bounds)
    row = np.arange(total)
    flat = np.empty(2 * total, np.int64)         # level after level: its predecessors, its dependencies
    flat[np.repeat(bounds[:-1], sizes) + row] = renumber[sources[0][order]]
    flat[np.repeat(bounds[1:], sizes) + row] = renumber[sources[1][order]]
    edges = bounds.tolist()
    levels = tuple((a, b, b - a, flat[2 * a:2 * b]) for a, b in zip(edges[:-1], edges[1:], strict=True))
    kind_of = np.zeros(total + 1, np.int64)        # task id -> kind; none -> 0 (sends nothing)
    kind_of[task] = kinds
    dep_sends = (kind_of[sources[1][order]] & 1).astype(float)
    same_sends = (kind_of[same[order]] & 1).astype(float)
    return Wavefront(levels, kinds[order], renumber[last[0]], np.array(last[1]), total, renumber[:total],
                     dep_sends, renumber[same[order]], same_sends)


def _narrow(level: np.ndarray) -> np.ndarray:
    """``level`` as int16 when it fits (numpy's stable sort of 16-bit integers is a radix sort:
    the same order, sooner)."""
    return level.astype(np.int16) if len(level) and level.max() < 2**15 else level


def stage_tasks(schedule: Schedule, p: int, m: int, v: int, stage: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(task ids, dependency ids or -1, duration kinds) of ``stage``'s tasks in execution
    order: row ``stage`` of :func:`graph_tasks`."""
    ids, deps, kinds = graph_tasks(schedule, p, m, v)
    return ids[stage], deps[stage], kinds[stage]


def _task_int(p: int, m: int, v: int) -> type:
    """The integer type of a graph's task ids, orders and kinds: int32 where its ``2 p m v``
    task ids fit (half the memory of int64: a large graph's arrays stay in cache)."""
    return np.int32 if 2 * p * m * v < 2**31 else np.int64


def graph_tasks(schedule: Schedule, p: int, m: int, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(task ids, dependency ids or -1, duration kinds) of every stage's tasks in execution
    order, shape (stages, tasks of a stage): the graph of
    :func:`~simulator.workload.taskgraph.compiled_graph` (same ids
    ``((stage * 2 + forward) * m + microbatch) * v + chunk``, same orders and dependencies,
    module docstring there), built without a task object per task."""
    forward, microbatch, chunk = _orders(schedule, p, m, v)
    stage = np.arange(p, dtype=_task_int(p, m, v))[:, None]
    task = microbatch * v + chunk                   # the id within its (stage, pass) block
    block = lambda i, f: (i * 2 + f) * (m * v)      # noqa: E731  (one column per stage)
    back = np.where(stage < p - 1, block(stage + 1, 0) + task,
                    np.where(chunk < v - 1, task + 1, block(stage, 1) + task))
    ahead = np.where(stage > 0, block(stage - 1, 1) + task,
                     np.where(chunk > 0, block(p - 1, 1) + task - 1, -1))
    deps = np.where(forward == 1, ahead, back)
    sends = np.where(forward == 1, (stage < p - 1) | (chunk < v - 1), (stage > 0) | (chunk > 0)) & (p > 1)
    return block(stage, 0) + forward * (m * v) + task, deps, 4 * stage + 2 * forward + sends


def _orders(schedule: Schedule, p: int, m: int, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(forward flag, microbatch, chunk) of every stage's tasks in execution order, shape
    (stages, tasks of a stage) (:func:`~simulator.workload.taskgraph.stage_order`): ``w``
    warm-up forwards, ``total - w`` forward-backward pairs, ``w`` cool-down backwards."""
    integer = _task_int(p, m, v)
    if schedule == Schedule.GPIPE:
        count = np.arange(m, dtype=integer)
        rows = (np.repeat(np.array([1, 0], integer), m), np.concatenate([count, count[::-1]]),
                np.zeros(2 * m, integer))
        return tuple(np.tile(row, (p, 1)) for row in rows)
    stage = np.arange(p, dtype=integer)[:, None]
    interleaved = schedule == Schedule.INTERLEAVED and v > 1
    total = m * v if interleaved else m
    warmup = interleaved_warmup(p, stage, m, v) if interleaved else np.minimum(p - stage - 1, m)
    steady = total - warmup
    k = np.arange(2 * total, dtype=integer)[None, :]
    pair = k - warmup                       # position among the steady pairs
    half, odd = pair >> 1, pair & 1         # pair // 2, pair % 2 (both floor, as for negatives)
    warm = pair < 0
    paired = ~warm & (pair < 2 * steady)
    forward = np.where(warm, 1, np.where(paired, 1 - odd, 0))
    index = np.where(warm, k, np.where(paired, np.where(odd == 0, warmup + half, half), pair - steady))
    if not interleaved:
        return forward, index, np.zeros_like(index)
    group, within = np.divmod(index, p * v)
    chunk = within // p
    return forward, group * p + within % p, np.where(forward == 1, chunk, v - 1 - chunk)


def batch_exact_clocks(schedule: Schedule, forward: np.ndarray, backward: np.ndarray, m: int,
                       v: int, p2p: np.ndarray, lag: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(finish, start of the last task) of every stage of every layout, in seconds.

    Parameters
    ----------
    schedule : Schedule
        The pipeline schedule all layouts share.
    forward, backward : ndarray, shape (n, p)
        Forward and backward seconds of one microbatch on each stage of each layout.
    m, v : int
        Microbatches and virtual stages (all layouts).
    p2p : ndarray, shape (n,)
        Seconds of one stage-to-stage send of each layout that hold its stage.
    lag : ndarray, shape (n,), optional
        Seconds of one overlapped send of each layout (the receiver's wait only).

    Returns
    -------
    finish, last_start : ndarray, shape (n, p)
        Exactly :func:`~simulator.workload.taskgraph.exact_clocks` of each row.
    """
    f = np.asarray(forward, float) / v
    b = np.asarray(backward, float) / v
    n, p = f.shape
    x = np.asarray(p2p, float).reshape(n, 1)
    table = np.stack([b, b + x, f, f + x], axis=2).reshape(n, 4 * p).T     # (4p, n)
    graph = wavefront(schedule, p, m, v)
    done = duration_rows(table, graph)
    relax_levels(done, graph.levels, lagged(graph, lag))
    finish = done[graph.last_task].T
    return finish, finish - table[graph.last_kind].T


def duration_rows(table: np.ndarray, graph: Wavefront) -> np.ndarray:
    """What :func:`relax_levels` fills: each task's duration (the row of ``table``, kinds by
    layouts, of its kind) in level order, then the none row of zeros."""
    done = np.empty((graph.tasks + 1, table.shape[1]))
    table.take(graph.kinds, axis=0, out=done[:graph.tasks], mode="clip")   # valid indices: unbuffered
    done[graph.tasks] = 0.0
    return done


def relax_levels(done: np.ndarray, levels, lags: Lags | None = None) -> None:
    """Make the rows of ``levels`` (:class:`Wavefront`'s, or the last of them: their sources
    are then already done) of ``done`` (rows: tasks in level order, then the none row of
    zeros; columns: layouts), which hold their tasks' durations (:func:`duration_rows`),
    their finish times, level after level: ``duration + max(done[predecessor],
    done[dependency])`` (a task's sources lie on earlier levels, done by then); with
    overlapped sends (``lags``, :func:`lagged`) :meth:`Lags.begin`."""
    take, maximum = done.take, np.maximum          # bound once: thousands of levels
    if lags is not None:
        for start, stop, size, sources in levels:
            now = done[start:stop]
            now += lags.begin(done, start, stop, size, sources)
        return
    for start, stop, size, sources in levels:
        waited = take(sources, axis=0)
        now = done[start:stop]
        now += maximum(waited[:size], waited[size:])


@dataclass(frozen=True)
class Lags:
    """Overlapped sends on one graph: the graph (its per-task flags, :class:`Wavefront`) and
    each layout's send seconds ``lag`` (shape (1, n)), applied level by level (no array of
    tasks by layouts is kept)."""

    graph: Wavefront
    lag: np.ndarray

    def begin(self, done: np.ndarray, start: int, stop: int, size: int, sources: np.ndarray) -> np.ndarray:
        """When the level's tasks (rows ``start:stop``) begin: ``max(done[predecessor],
        done[dependency] + its send, done[previous pass this way] + its send)`` (a send adds
        ``lag`` where the flag is 1, nothing where it is 0)."""
        graph, lag = self.graph, self.lag
        waited = done.take(sources, axis=0)
        arrived = waited[size:]
        arrived += graph.dep_sends[start:stop, None] * lag
        sent = done.take(graph.same_rows[start:stop], axis=0)
        sent += graph.same_sends[start:stop, None] * lag
        return np.maximum(np.maximum(waited[:size], arrived), sent)


def lagged(graph: Wavefront, lag: np.ndarray | None) -> Lags | None:
    """The :class:`Lags` of ``lag`` (per layout) on ``graph``, or None when no layout's sends
    overlap (the plain recurrence, bit for bit)."""
    if lag is None or not np.any(np.asarray(lag) > 0.0):
        return None
    return Lags(graph, np.asarray(lag, float)[None, :])


def batch_stage_clocks(schedule: Schedule, forward: np.ndarray, backward: np.ndarray, m: int,
                       v: int, p2p: np.ndarray, lag: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~simulator.workload.taskgraph.stage_clocks` of every row of ``forward`` and
    ``backward`` (shape (n, p)) with sends ``p2p`` and overlapped sends ``lag`` (shape (n,);
    None: none): the exact graph up to
    :data:`~simulator.workload.taskgraph.EXACT_MICROBATCHES` microbatches, above it the
    max-plus steady state where, row by row, it is established (same test, same numbers).
    Rows equal in every duration are computed once."""
    f, b = np.asarray(forward, float), np.asarray(backward, float)
    x = np.asarray(p2p, float)
    y = np.zeros_like(x) if lag is None else np.asarray(lag, float)
    rows = np.concatenate([f, b, x[:, None], y[:, None]], axis=1)
    first, inverse = distinct_rows(rows)
    if len(first) < len(rows):                       # layouts alike, bit for bit, in every duration
        p, distinct = f.shape[1], rows[first]
        finish, last_start = batch_stage_clocks(schedule, distinct[:, :p], distinct[:, p:2 * p], m, v,
                                                distinct[:, 2 * p], distinct[:, 2 * p + 1])
        return finish[inverse], last_start[inverse]
    if m <= EXACT_MICROBATCHES:
        return batch_exact_clocks(schedule, f, b, m, v, x, y)
    p = f.shape[1]
    m0 = (EXACT_MICROBATCHES // p - 2) * p
    found = [batch_exact_clocks(schedule, f, b, m0 + i * p, v, x, y) for i in range(3)]
    step = found[1][0] - found[0][0]
    steady = _steady(schedule, f, b, x, step, found[2][0] - found[1][0], found[2][0], p, v)
    finish = found[0][0] + (m - m0) / p * step
    last_start = finish - (found[0][0] - found[0][1])
    if not steady.all():
        walked = batch_exact_clocks(schedule, f[~steady], b[~steady], m, v, x[~steady], y[~steady])
        finish[~steady], last_start[~steady] = walked
    return finish, last_start


def distinct_rows(rows: np.ndarray) -> tuple[list[int], np.ndarray]:
    """(the first row of each distinct bit pattern of ``rows``, in order; per row, the position
    of its pattern among them): rows alike bit for bit are evaluated once."""
    first: dict[bytes, int] = {}                     # row bytes -> first row with them
    found = [first.setdefault(row.tobytes(), i) for i, row in enumerate(rows)]
    positions = list(first.values())
    return positions, np.searchsorted(positions, found)


def _steady(schedule: Schedule, f: np.ndarray, b: np.ndarray, x: np.ndarray, step: np.ndarray,
            later: np.ndarray, last: np.ndarray, p: int, v: int) -> np.ndarray:
    """Per row, whether the increment per ``p`` microbatches is constant (``np.allclose``
    as :func:`~simulator.workload.taskgraph.stage_clocks` tests it) and, for 1F1B and
    interleaved 1F1B, equal to the bottleneck bound."""
    atol = 1e-15 * last.max(axis=1, keepdims=True)
    steady = (np.abs(later - step) <= atol + 1e-12 * np.abs(step)).all(axis=1)
    if schedule != Schedule.GPIPE:
        sends = stage_send_counts(schedule, p, p, v)
        busiest = np.max(f + b + x[:, None] * sends / p, axis=1)
        steady &= np.abs(step.max(axis=1) / p - busiest) <= 1e-9 * busiest
    return steady
