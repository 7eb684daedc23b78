"""The discrete-event engine's fast path: without link contention a noisy step is a max-plus
evaluation of the schedule's dependency graph, so many steps and all data-parallel replicas
are evaluated at once, with numpy vectors of shape (steps, replicas).

For every task, in the dependency-first order of
:func:`simulator.workload.taskgraph._evaluation_order` (the recurrence of
:func:`simulator.workload.taskgraph.exact_clocks`, Baccelli et al., "Synchronization and
Linearity", 1992, ch. 2):

    start  = max(clock[stage] + pause, done[dependency])
    finish = start + duration x factor (+ send)
    clock[stage] = done[task] = finish

(with sends that overlap the next pass, :mod:`simulator.workload.pipeline_sends`: ``finish``
without the send, ``done[task] = finish + send``, and a task starting no earlier than its
stage's previous send in the same direction arrived)

with the entity's compute slowdown ``factor``, its host ``pause`` before that task (0 for
most) and its send time (the plan's ``p2p_s`` or a faulty NIC's); with documents the duration
is the task's microbatch's (:func:`task_seconds`). Each stage then
synchronises its gradients when its last replica arrives (its last task's start with
``overlap_grad_reduce``, else its finish), for ``sync_s`` seconds and no earlier than the
last bucket's ``sync_tail_s`` after the last replica finishes; an entity ends at the later
of its finish and its stage's synchronisation, and the step is the latest end plus the
optimizer. This is what the event replay (:class:`simulator.engine.des._StepRun`) does with
contention off, operation for operation in the same floating-point order, so both paths
agree to round-off (tests/test_fastpath.py: to 1e-9 relative on every scenario, bit for bit
in practice). In-layer and ZeRO-3 replays exist only with contention, so they never apply.

Cost: one pass over the ``2 p m v`` tasks per block of steps, each a few vector operations
on (steps, replicas) arrays; memory holds only tasks still awaited by another stage.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from simulator.config.scenario import Schedule
from simulator.engine.context import Context
from simulator.engine.des_plan import StepPlan
from simulator.engine.dp_overlap_sms import cooldown_delays
from simulator.engine.noise_process import StepNoise
from simulator.workload.taskgraph import _evaluation_order, compiled_graph


def step_times(ctx: Context, plan: StepPlan, noise: StepNoise) -> np.ndarray:
    """Seconds of each of ``noise.steps`` steps (shape (k,)), contention off.

    Parameters
    ----------
    ctx : Context
        The scenario's layout and schedule.
    plan : StepPlan
        Chunk durations, send, synchronisation and optimizer seconds (contention off).
    noise : StepNoise
        Factors (k, dp, pp), pauses and send times of the steps.
    """
    par, lay = ctx.scenario.parallelism, ctx.layout
    order = _walk(par.schedule, lay.pp, ctx.microbatches, par.virtual_stages)
    finish, last_start = _pipeline(order, plan, noise, lay.pp, ctx.microbatches, par.virtual_stages)
    arrive = last_start if par.overlap_grad_reduce else finish
    return plan.step_seconds(_synchronised(plan, noise, finish, arrive) + plan.optimizer_s)


def replica_times(ctx: Context, plan: StepPlan, noise: StepNoise) -> np.ndarray:
    """Seconds of each replica's pipeline alone, shape (k, dp): its stages' latest finish,
    with no data-parallel synchronisation and no optimizer (asynchronous replicas,
    :mod:`simulator.engine.async_ps`)."""
    par, lay = ctx.scenario.parallelism, ctx.layout
    order = _walk(par.schedule, lay.pp, ctx.microbatches, par.virtual_stages)
    finish, _ = _pipeline(order, plan, noise, lay.pp, ctx.microbatches, par.virtual_stages)
    return np.max(np.stack(finish), axis=0)


def _pipeline(order, plan: StepPlan, noise: StepNoise, p: int, m: int, v: int):
    """(finish, start of the last task) per stage, each (k, dp): the max-plus recurrence
    (task ``tid``'s microbatch is ``(tid // v) mod m``, :func:`compiled_graph`'s numbering)."""
    factor = np.moveaxis(noise.factor, 2, 0)                      # (pp, k, dp)
    varies = noise.attention_delta is not None
    durations = [(plan.backward[s] * factor[s], plan.forward[s] * factor[s]) for s in range(p)] \
        if not varies else None
    sends = _sends(plan, noise, p)
    overlap = plan.sends_overlap
    sent: list[list] = [[None, None] for _ in range(p)]     # last send's arrival, per stage and way
    pauses = _pauses(noise)
    clock = [np.zeros(noise.factor.shape[:2]) for _ in range(p)]
    done: dict[int, np.ndarray] = {}
    last_start: list = [None] * p
    for tid, stage, dep, forward, send, position, kept, last in order:
        now = task_start(clock[stage], stage, position, dep, pauses, done)
        if sent[stage][forward] is not None:
            now = np.maximum(now, sent[stage][forward])
        if last:
            last_start[stage] = now
        if varies:
            now = now + task_seconds(plan, noise, stage, forward, (tid // v) % m) * factor[stage]
        else:
            now = now + durations[stage][forward]
        arrive = now
        if send:
            if overlap:
                arrive = sent[stage][forward] = now + sends[stage][forward]
            else:
                now = arrive = now + sends[stage][forward]
        if kept:
            done[tid] = arrive
        clock[stage] = now
    return clock, last_start


def task_start(clock: np.ndarray, stage: int, position: int, dep: int, pauses: dict,
               done: dict) -> np.ndarray:
    """When a task starts, shape (k, dp): its stage's clock, after a host pause scheduled at
    this ``position`` of the stage's sequence, and no earlier than its dependency ``dep``
    finished (``done[dep]``, consumed; ``dep < 0``: none)."""
    now = clock
    if pauses and (stage, position) in pauses:
        at, seconds = pauses[stage, position]
        now = now.copy()
        now[at] += seconds
    if dep >= 0:
        now = np.maximum(now, done.pop(dep))
    return now


def task_seconds(plan: StepPlan, noise: StepNoise, stage: int, forward: int, microbatch: int):
    """Seconds of one chunk of ``microbatch`` on ``stage`` before the entity's slowdown, per
    (step, replica): ``F + A (a - E[a]) + T (t - E[t])`` with ``F`` the plan's (mean)
    chunk, ``A`` and ``T`` its attention and per-token parts
    (:mod:`simulator.engine.document_work`). The event replay evaluates the same expression
    on the same numbers, in the same order."""
    base = plan.forward[stage] if forward else plan.backward[stage]
    seconds = base + plan.attention_part[stage, forward] * noise.attention_delta[:, :, microbatch]
    if noise.token_delta is not None:
        seconds = seconds + plan.token_part[stage, forward] * noise.token_delta[:, :, microbatch]
    return seconds


def _synchronised(plan: StepPlan, noise: StepNoise, finish: list, arrive: list) -> np.ndarray:
    """Latest end over entities (k,): each entity's finish or its stage's synchronisation
    (late by the cool-down delay and ending no earlier than the slowed last backward plus
    the last bucket, :func:`simulator.engine.dp_overlap_sms.synced_clocks`)."""
    latest = None
    after = sync_delays(plan, len(finish))
    for s, (done, ready) in enumerate(zip(finish, arrive, strict=True)):
        end = done
        if plan.sync_s[s] > 0:
            scale = noise.sync_scale[:, s] if noise.sync_scale is not None else 1.0
            synced = ready.max(axis=1) + after[s] + plan.sync_s[s] * scale
            tail = after[s] + sync_slow(plan, s) + sync_tail(plan, s) * scale
            if np.any(tail > 0.0):      # the event replay resumes at the later of the two
                finished = done.max(axis=1)
                resumed = np.maximum(synced, finished)
                gap = finished + tail - resumed
                synced = np.where(gap > 0.0, resumed + gap, resumed)
            end = np.maximum(done, synced[:, None])
        top = end.max(axis=1)
        latest = top if latest is None else np.maximum(latest, top)
    return latest


def sync_delays(plan: StepPlan, p: int) -> np.ndarray:
    """Per stage, seconds its synchronisation starts late: the cool-down delay of the
    stages' slowed last backwards (:func:`simulator.engine.dp_overlap_sms.cooldown_delays`)."""
    return cooldown_delays(plan.sync_slow_s) if plan.sync_slow_s is not None else np.zeros(p)


def sync_tail(plan: StepPlan, stage: int) -> float:
    """Seconds of ``stage``'s last gradient bucket after its backward (0 without)."""
    return plan.sync_tail_s[stage] if plan.sync_tail_s is not None else 0.0


def sync_slow(plan: StepPlan, stage: int) -> float:
    """Seconds ``stage``'s last backward loses to NCCL's SMs (0 without)."""
    return plan.sync_slow_s[stage] if plan.sync_slow_s is not None else 0.0


def _sends(plan: StepPlan, noise: StepNoise, p: int) -> list:
    """Per stage, (backward, forward) send seconds: the plan's scalar, or (k, dp) arrays."""
    if noise.send_s is None:
        return [(plan.p2p_s, plan.p2p_s)] * p
    return [(noise.send_s[:, :, s, 0], noise.send_s[:, :, s, 1]) for s in range(p)]


def _pauses(noise: StepNoise) -> dict:
    """{(stage, task position): ((step indices, replica indices), pause seconds)}."""
    if noise.pause_at is None or noise.pause_s <= 0:
        return {}
    k, r, s = np.nonzero(noise.pause_at >= 0)
    if k.size == 0:
        return {}
    positions = noise.pause_at[k, r, s]
    out = {}
    for key in set(zip(s.tolist(), positions.tolist(), strict=True)):
        hit = (s == key[0]) & (positions == key[1])
        out[key] = ((k[hit], r[hit]), noise.pause_s)
    return out


@lru_cache(maxsize=32)
def _walk(schedule: Schedule, p: int, m: int, v: int) -> tuple[tuple, ...]:
    """The evaluation order as ``(id, stage, dependency, forward, sends, position in the
    stage's order, awaited by another task, last of its stage)`` (memoised)."""
    order, _ = _evaluation_order(schedule, p, m, v)
    graph = compiled_graph(schedule, p, m, v)
    awaited = {d for deps in graph.deps for d in deps if d >= 0}
    counts = [len(ids) for ids in graph.ids]
    seen = [0] * p
    out = []
    for tid, stage, dep, kind in order:
        position = seen[stage]
        seen[stage] += 1
        out.append((tid, stage, dep, (kind >> 1) & 1, kind & 1, position, tid in awaited,
                    position == counts[stage] - 1))
    return tuple(out)
