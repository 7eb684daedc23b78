"""Pipeline task graphs: every (stage, microbatch, chunk) forward and backward, in the order
each stage runs them, with their cross-stage dependencies.

Orders (Narayanan et al. SC21, sec. 2.2; Megatron-LM ``schedules.py``):

- GPipe: all forwards, then all backwards in reverse microbatch order.
- 1F1B: stage i runs ``min(p - i - 1, m)`` warm-up forwards, then alternates one forward
  and one backward, then drains the remaining backwards.
- interleaved 1F1B (v chunks per stage): microbatches advance in groups of p; stage i
  runs ``(p - i - 1) * 2 + (v - 1) * p`` warm-up forward chunks, then alternates.

Dependencies: forward (j, c) on stage i needs forward (j, c) on stage i-1, or forward
(j, c-1) on the last stage when i = 0; backward mirrors this, and the last chunk's
backward on the last stage needs its own forward. A transfer of ``p2p`` seconds sits on
every cross-stage edge: held by the sender (``p2p``) or, when the send overlaps the next
pass, only on the receiver's side (``lag``; :mod:`simulator.workload.pipeline_sends`).
:func:`critical_path` is the exact finish time of the graph
(a longest path, evaluated in the stages' own order), the oracle for the closed form
in :mod:`simulator.workload.pipeline` and the graph the discrete-event engine replays.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simulator.config.scenario import Schedule
from simulator.workload.warmup import interleaved_warmup


@dataclass(frozen=True)
class Task:
    stage: int
    forward: bool
    microbatch: int
    chunk: int


def stage_order(schedule: Schedule, p: int, stage: int, m: int, v: int = 1) -> list[Task]:
    """Tasks of ``stage`` in execution order."""
    if schedule == Schedule.GPIPE:
        return ([Task(stage, True, j, 0) for j in range(m)]
                + [Task(stage, False, j, 0) for j in reversed(range(m))])
    if schedule == Schedule.INTERLEAVED and v > 1:
        return _interleaved_order(p, stage, m, v)
    warmup = min(p - stage - 1, m)
    order = [Task(stage, True, j, 0) for j in range(warmup)]
    for j in range(m - warmup):
        order += [Task(stage, True, warmup + j, 0), Task(stage, False, j, 0)]
    return order + [Task(stage, False, j, 0) for j in range(m - warmup, m)]


def _interleaved_order(p: int, stage: int, m: int, v: int) -> list[Task]:
    """Megatron's interleaved order: chunk k of all m*v is (microbatch, chunk) by groups of p."""
    total = m * v
    forwards = [_chunk_task(stage, k, p, v, True) for k in range(total)]
    backwards = [_chunk_task(stage, k, p, v, False) for k in range(total)]
    warmup = interleaved_warmup(p, stage, m, v)
    order = forwards[:warmup]
    for k in range(total - warmup):
        order += [forwards[warmup + k], backwards[k]]
    return order + backwards[total - warmup:]


def _chunk_task(stage: int, k: int, p: int, v: int, forward: bool) -> Task:
    group, within = divmod(k, p * v)
    chunk = within // p
    microbatch = group * p + within % p
    return Task(stage, forward, microbatch, chunk if forward else v - 1 - chunk)


def dependency(task: Task, p: int, v: int) -> Task | None:
    """The task on another stage that ``task`` waits for (None for the very first ones)."""
    i, j, c = task.stage, task.microbatch, task.chunk
    if task.forward:
        if i > 0:
            return Task(i - 1, True, j, c)
        return Task(p - 1, True, j, c - 1) if c > 0 else None
    if i < p - 1:
        return Task(i + 1, False, j, c)
    return Task(0, False, j, c + 1) if c < v - 1 else Task(i, True, j, c)


def sends(task: Task, p: int, v: int) -> bool:
    """Whether ``task``'s output goes to another stage (a blocking send after it); with one
    stage, interleaved chunks pass their output to the same GPU, which sends nothing."""
    if p == 1:
        return False
    if task.forward:
        return task.stage < p - 1 or task.chunk < v - 1
    return task.stage > 0 or task.chunk > 0


def critical_path(schedule: Schedule, forward, backward, m: int, v: int = 1,
                  p2p: float = 0.0, lag: float = 0.0) -> float:
    """Exact finish time of the task graph (the latest of :func:`stage_clocks`' finishes)."""
    return float(stage_clocks(schedule, forward, backward, m, v, p2p, lag)[0].max())


EXACT_MICROBATCHES = 2048
"""Above this many microbatches :func:`stage_clocks` and :func:`stage_send_counts` use the
schedule's steady state instead of walking every task, so their cost does not grow with
the global batch."""


def stage_clocks(schedule: Schedule, forward, backward, m: int, v: int = 1,
                 p2p: float = 0.0, lag: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(finish, start of the last task) of every stage, in seconds (see :func:`exact_clocks`).

    For ``m`` above :data:`EXACT_MICROBATCHES` the finish times come from the steady state:
    the task graph is a max-plus linear system whose finish times grow, after a transient,
    by a constant per group of ``p`` microbatches (Baccelli et al., "Synchronization and
    Linearity", 1992, ch. 3). The increment is measured at the end of the exact range
    (``m0, m0 + p, m0 + 2p``, up to the limit) and used only if it is constant there and,
    for 1F1B and interleaved 1F1B, equals the bottleneck bound (the busiest stage's work
    per microbatch, ``f + b`` plus its sends): the rate the steady state settles to when the
    busiest stage is never idle. Otherwise the exact walk runs.
    """
    if m <= EXACT_MICROBATCHES:
        return exact_clocks(schedule, forward, backward, m, v, p2p, lag)
    f, b = np.atleast_1d(np.asarray(forward, float)), np.atleast_1d(np.asarray(backward, float))
    p = len(f)
    m0 = (EXACT_MICROBATCHES // p - 2) * p
    found = [exact_clocks(schedule, f, b, m0 + i * p, v, p2p, lag) for i in range(3)]
    step = found[1][0] - found[0][0]
    steady = np.allclose(found[2][0] - found[1][0], step, rtol=1e-12, atol=1e-15 * found[2][0].max())
    if schedule != Schedule.GPIPE:
        busiest = float(np.max(f + b + p2p * stage_send_counts(schedule, p, p, v) / p))
        steady = steady and abs(step.max() / p - busiest) <= 1e-9 * busiest
    if not steady:
        return exact_clocks(schedule, f, b, m, v, p2p, lag)
    finish = found[0][0] + (m - m0) / p * step
    return finish, finish - (found[0][0] - found[0][1])


def stage_send_counts(schedule: Schedule, p: int, m: int, v: int = 1) -> np.ndarray:
    """Sends each stage makes in one step: linear in ``m`` (each microbatch sends the same
    on each stage), so counted on ``p`` microbatches and scaled above the exact limit."""
    counted = m if m <= EXACT_MICROBATCHES else p
    return np.array(_send_counts(schedule, p, counted, v), dtype=float) * m / counted


@lru_cache(maxsize=1024)
def _send_counts(schedule: Schedule, p: int, m: int, v: int) -> tuple[float, ...]:
    """Sends each stage makes with ``m`` microbatches: every stage runs the forward and the
    backward of each microbatch once per chunk it holds (every chunk with interleaving,
    chunk 0 otherwise), and :func:`sends` says which of them send."""
    chunks = range(v) if schedule == Schedule.INTERLEAVED and v > 1 else range(1)
    return tuple(float(m * sum(sends(Task(i, True, 0, c), p, v) + sends(Task(i, False, 0, c), p, v)
                               for c in chunks))
                 for i in range(p))


def exact_clocks(schedule: Schedule, forward, backward, m: int, v: int = 1,
                 p2p: float = 0.0, lag: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(finish, start of the last task) of every stage, in seconds: the exact task graph.

    Stage i's chunk forward takes ``forward[i] / v`` (backward alike); a task whose output
    goes to another stage then spends ``p2p`` sending it (Megatron's blocking send/recv),
    and the receiver may start once the send is done, or ``lag`` after that (a send that
    overlaps the sender's next pass: ``p2p`` 0, ``lag`` its seconds;
    :mod:`simulator.workload.pipeline_sends`). A task starts at the later of its
    stage's clock and its dependency's finish: a longest path, evaluated in a fixed order
    in which every dependency comes first (:func:`_evaluation_order`).
    """
    f, b = np.asarray(forward, float) / v, np.asarray(backward, float) / v
    p = len(f)
    order, last_kind = _evaluation_order(schedule, p, m, v)
    # duration of each task kind: index 4 * stage + 2 * forward + sends
    table = (np.stack([b, b + p2p, f, f + p2p], axis=1)).ravel().tolist()
    done, clock = [0.0] * (2 * p * m * v), [0.0] * p
    if lag > 0.0:
        _lagged_walk(order, table, [0.0, lag] * (2 * p), done, clock)
    else:
        for tid, stage, dep, kind in order:
            now = clock[stage]
            if dep >= 0:
                at = done[dep]
                if at > now:
                    now = at
            now += table[kind]
            done[tid] = now
            clock[stage] = now
    finish = np.array(clock)
    return finish, finish - np.array([table[k] for k in last_kind])


def _lagged_walk(order, table: list, arrive: list, done: list, clock: list) -> None:
    """:func:`exact_clocks`' walk with each task's dependants waiting ``arrive[kind]`` more
    than its stage (``lag`` for a sending kind, 0 otherwise): ``done`` holds arrivals; and a
    stage's pass starting no earlier than the arrival of its previous pass in the same
    direction (Megatron-Core waits for a send's handle before the next pass that way:
    :mod:`simulator.workload.pipeline_sends`)."""
    sent = [0.0] * (2 * len(clock))           # per stage and direction, the last send's arrival
    for tid, stage, dep, kind in order:
        way = kind >> 1                        # 2 stage + forward
        now = max(clock[stage], sent[way], done[dep] if dep >= 0 else 0.0) + table[kind]
        done[tid] = now + arrive[kind]
        if kind & 1:
            sent[way] = done[tid]
        clock[stage] = now


@lru_cache(maxsize=64)
def _evaluation_order(schedule: Schedule, p: int, m: int, v: int) -> tuple[list, list[int]]:
    """Every task as ``(id, stage, dependency id or -1, kind)`` in an order where each
    dependency precedes its dependants, and each stage's last task kind (see
    :func:`stage_clocks`). Each stage runs until it needs a task not yet reached and
    resumes when that is reached, so every task is visited once.

    Raises
    ------
    RuntimeError
        If the stage orders deadlock (no valid order exists).
    """
    graph = compiled_graph(schedule, p, m, v)
    kinds = [(4 * i + 2 * graph.is_forward[i] + (graph.sends[i] > 0)).tolist() for i in range(p)]
    reached, waiter = [False] * (2 * p * m * v), [-1] * (2 * p * m * v)
    cursor, ready, order = [0] * p, list(range(p)), []
    while ready:
        i = ready.pop()
        ids, deps, k = graph.ids[i], graph.deps[i], cursor[i]
        while k < len(ids):
            dep = deps[k]
            if dep >= 0 and not reached[dep]:
                waiter[dep] = i
                break
            tid = ids[k]
            order.append((tid, i, dep, kinds[i][k]))
            reached[tid] = True
            if waiter[tid] >= 0:
                ready.append(waiter[tid])
            k += 1
        cursor[i] = k
    if any(cursor[i] < len(graph.ids[i]) for i in range(p)):
        raise RuntimeError(f"{schedule.value} order deadlocks with p={p}, m={m}, v={v}")
    return order, [kinds[i][-1] for i in range(p)]


@dataclass(frozen=True)
class CompiledGraph:
    """Per stage: task ids in execution order, the id each waits for (-1: none), flags."""

    ids: tuple[list[int], ...]
    deps: tuple[list[int], ...]
    is_forward: tuple[np.ndarray, ...]
    sends: tuple[np.ndarray, ...]


@lru_cache(maxsize=64)
def compiled_graph(schedule: Schedule, p: int, m: int, v: int) -> CompiledGraph:
    """Integer form of the task graph (a pure function of its arguments, memoised)."""
    def tid(t: Task) -> int:
        return ((t.stage * 2 + t.forward) * m + t.microbatch) * v + t.chunk

    ids, deps, fwd, snd = [], [], [], []
    for i in range(p):
        order = stage_order(schedule, p, i, m, v)
        ids.append([tid(t) for t in order])
        deps.append([-1 if (d := dependency(t, p, v)) is None else tid(d) for t in order])
        fwd.append(np.array([t.forward for t in order]))
        snd.append(np.array([sends(t, p, v) for t in order], dtype=float))
    return CompiledGraph(tuple(ids), tuple(deps), tuple(fwd), tuple(snd))


@lru_cache(maxsize=64)
def stage_tasks(schedule: Schedule, p: int, m: int, v: int) -> tuple[tuple[tuple, ...], ...]:
    """Per stage, in execution order: ``(id, dependency id or -1, forward, sends, Task)``."""
    graph = compiled_graph(schedule, p, m, v)
    return tuple(tuple(zip(graph.ids[i], graph.deps[i], graph.is_forward[i].tolist(),
                           (graph.sends[i] > 0).tolist(), stage_order(schedule, p, i, m, v),
                           strict=True))
                 for i in range(p))
