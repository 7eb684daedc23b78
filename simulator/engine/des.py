"""The discrete-event engine (simpy): replay the pipeline task graph of every data-parallel
replica, then each stage's gradient synchronisation, with per-GPU noise and, optionally,
every transfer as a flow that shares links with the others.

Each (replica, stage) is one entity, its tensor-parallel GPUs collapsed (they synchronise
every layer, so the entity runs at the pace of its slowest GPU). Compute and in-line
collectives take the durations of the shared cost model
(:mod:`simulator.engine.stage_cost`). With ``contention`` on, stage-to-stage sends and the
data-parallel gradient collectives are flows over the routed links
(:mod:`simulator.engine.flows`, :mod:`simulator.engine.replay`), so gradient traffic of
every stage and the pipeline's sends meet on the NICs and switches they share; with it
off they take the cost model's alpha-beta times.

A stage's gradient synchronisation starts when all its replicas reach it: with their last
backward (``overlap_grad_reduce``) or after it
(:func:`simulator.engine.analytical.gradient_sync_start`). The optimizer step follows
the last stage to finish (Megatron's global gradient-norm all-reduce synchronises them).

Invariants (tests): without noise and contention the step equals the analytical step;
with contention the step is never faster than without (fixed per-stage task orders, and
every contended duration is at least its uncontended one).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import simpy

from simulator.collectives import Group, build_schedule
from simulator.collectives.concurrent import merge_schedules
from simulator.config.scenario import Fidelity, Scenario
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import Context, make_context
from simulator.engine.flows import FlowNetwork, Route, make_route
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.engine.in_layer import InLayerKind, entity_groups, in_layer_kinds, task_sequence
from simulator.engine.noise import entity_slowdown
from simulator.engine.replay import CollectiveReplay, FlowPhase, replay_of
from simulator.results import StepResult
from simulator.workload.taskgraph import Task, compiled_graph, stage_order

TIMELINE_COLUMNS = ("gpu", "stream", "kind", "name", "start_s", "end_s", "bytes")


@dataclass(frozen=True)
class StepPlan:
    """Everything one simulated step needs, priced once per scenario."""

    forward: np.ndarray        # seconds per forward chunk, per stage
    backward: np.ndarray
    p2p_s: float               # stage-to-stage transfer (alpha-beta, contention off)
    p2p_bytes: float
    p2p_latency_s: float
    sync_s: np.ndarray         # uncontended gradient synchronisation per stage
    sync_replays: tuple[tuple[PreparedReplay, ...], ...]     # per stage (contention on)
    optimizer_s: float
    in_layer: tuple[tuple[InLayerKind, ...], ...] = ()        # per stage, when replayed
    in_layer_replays: dict[tuple[int, int, int], PreparedReplay] | None = None  # (stage, kind, owner)


@dataclass(frozen=True)
class PreparedReplay:
    """A :class:`~simulator.engine.replay.CollectiveReplay` with its paths made routes."""

    latency_s: float
    phases: tuple[tuple[tuple[Route, ...], tuple[float, ...]], ...]
    floor_s: float

    @staticmethod
    def of(replay: CollectiveReplay, capacity: np.ndarray) -> PreparedReplay:
        return PreparedReplay(replay.latency_s, tuple(_prepared(p, capacity) for p in replay.phases),
                              replay.floor_s)


def _prepared(phase: FlowPhase, capacity: np.ndarray) -> tuple[tuple[Route, ...], tuple[float, ...]]:
    return tuple(make_route(p, capacity) for p in phase.paths), tuple(phase.nbytes.tolist())


def simulate_steps_des(scenario: Scenario, collectives: CollectiveModel, steps: int | None = None,
                       seed: int | None = None, contention: bool | None = None) -> StepResult:
    """Simulate ``steps`` steps (default: the scenario's) and report the distribution."""
    sim = scenario.simulate
    steps, seed = steps or sim.steps, sim.seed if seed is None else seed
    contention = sim.contention if contention is None else contention
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    plan = step_plan(ctx, base, contention)
    routes = SendRoutes(ctx) if contention else None
    rng = np.random.default_rng(seed)
    times = np.array([_one_step(ctx, plan, routes, rng, contention) for _ in range(steps)])
    return _with_times(base, times)


def _with_times(base: StepResult, times: np.ndarray) -> StepResult:
    """``base`` rescaled to the median simulated step, with the distribution attached."""
    p50, p95, p99 = (float(x) for x in np.percentile(times, [50, 95, 99]))
    scale = base.step_time_s / p50
    return replace(base, step_time_s=p50, step_time_p50_s=p50, step_time_p95_s=p95,
                   step_time_p99_s=p99, tokens_per_s=base.tokens_per_s * scale,
                   model_flops_per_gpu=base.model_flops_per_gpu * scale,
                   hardware_flops_per_gpu=base.hardware_flops_per_gpu * scale,
                   mfu=base.mfu * scale, step_times_s=times.tolist(),
                   contention_and_noise_s=p50 - base.step_time_s)


def step_plan(ctx: Context, base: StepResult, contention: bool) -> StepPlan:
    """Chunk durations, transfers and gradient synchronisation of ``ctx`` (see StepPlan)."""
    v = ctx.scenario.parallelism.virtual_stages
    forward = np.array([s.forward_s for s in base.stages]) / v
    backward = np.array([s.backward_s for s in base.stages]) / v
    p2p = base.stages[0].p2p_s
    nbytes = ctx.shape.tokens * ctx.shape.model.hidden * ctx.shape.dtype_bytes / ctx.shape.tp
    syncs = all_gradient_collectives(ctx)
    sync_s = np.array([sum(c.time_s for c in sync) for sync in syncs])
    capacity = _capacity(ctx)
    replays = tuple(tuple(PreparedReplay.of(_replay(ctx, s, c), capacity) for c in sync)
                    if contention else () for s, sync in enumerate(syncs))
    in_layer, in_layer_replays = _in_layer(ctx, contention)
    return StepPlan(forward, backward, p2p, nbytes, _p2p_latency(ctx, nbytes, p2p), sync_s,
                    replays, base.optimizer_s, in_layer, in_layer_replays)


def _in_layer(ctx: Context, contention: bool):
    """Cross-server in-layer collectives to replay (contention on, finer than tp-collapsed):
    per stage, their kinds; per (stage, kind, owner), the flows of the owner's groups. The
    owner is the replica (tensor and context parallel) or the expert-parallel block."""
    lay = ctx.layout
    if not contention or ctx.scenario.simulate.fidelity == Fidelity.TP_COLLAPSED:
        return (), None
    kinds = tuple(tuple(in_layer_kinds(ctx, s)) for s in range(lay.pp))
    if not any(kinds):
        return (), None
    replays, capacity = {}, _capacity(ctx)
    for s, stage_kinds in enumerate(kinds):
        for k, kind in enumerate(stage_kinds):
            step = lay.ep if kind.dimension == "ep" else 1
            for owner in range(lay.dp // step):
                groups = entity_groups(ctx, kind.dimension, owner * step, s)
                replays[s, k, owner] = PreparedReplay.of(
                    _merged_replay(ctx, kind.collective, groups), capacity)
    return kinds, replays


def _merged_replay(ctx: Context, priced, groups) -> CollectiveReplay:
    """``priced``'s algorithm run by all ``groups`` at once, as one replay."""
    cluster = ctx.collectives.cluster
    schedule = priced.terms.schedule
    merged = merge_schedules([build_schedule(schedule.op, schedule.algorithm, Group(cluster, g))
                              for g in groups])
    mode = "steps" if ctx.scenario.simulate.fidelity == Fidelity.PER_TRANSFER else "pairs"
    return replay_of(replace(priced.terms, schedule=merged), priced.size_bytes,
                     ctx.collectives.network.router, _p2p_efficiency(ctx), mode)


def _replay(ctx: Context, stage: int, collective) -> CollectiveReplay:
    fidelity = ctx.scenario.simulate.fidelity
    mode = "steps" if fidelity == Fidelity.PER_TRANSFER else "pairs"
    only = ctx.layout.stage_dp_groups(stage)[0] if fidelity == Fidelity.TP_COLLAPSED else None
    return replay_of(collective.terms, collective.size_bytes, ctx.collectives.network.router,
                     _p2p_efficiency(ctx), mode, only)


def _p2p_latency(ctx: Context, nbytes: float, p2p: float) -> float:
    """The alpha of the analytical transfer: its time minus the bandwidth part."""
    if ctx.layout.pp == 1:
        return 0.0
    src, dst = ctx.layout.pp_pair(0)
    path = _path(ctx, src, dst)
    bottleneck = ctx.collectives.cluster.bandwidth_Bps[path].min()
    return max(p2p - nbytes / (bottleneck * _p2p_efficiency(ctx)), 0.0)


def _capacity(ctx: Context) -> np.ndarray:
    """Edge capacities (B/s) the flows share: link bandwidth x point-to-point efficiency."""
    return ctx.collectives.cluster.bandwidth_Bps * _p2p_efficiency(ctx)


def _p2p_efficiency(ctx: Context) -> float:
    table = ctx.collectives.cluster.hw.protocols
    return table.bandwidth_efficiency["p2p"]["Simple"]


def _path(ctx: Context, src_gpu: int, dst_gpu: int) -> np.ndarray:
    cluster, router = ctx.collectives.cluster, ctx.collectives.network.router
    return np.array(router.path(cluster.gpu_vertex(src_gpu), cluster.gpu_vertex(dst_gpu)),
                    dtype=np.int64)


class SendRoutes:
    """Routes of every replica's stage-to-stage sends, prepared before the event loop.

    Fidelity ``tp-collapsed``: tensor-parallel rank 0's route stands for the ranks'
    parallel sends; finer levels: every rank sends its own flow over its own route.
    """

    def __init__(self, ctx: Context):
        lay = ctx.layout
        per_rank = ctx.scenario.simulate.fidelity != Fidelity.TP_COLLAPSED
        ranks = range(lay.tp) if per_rank else range(1)
        capacity = _capacity(ctx)
        self.routes: dict[tuple[int, int, int], tuple[Route, ...]] = {}
        for replica in range(lay.dp):
            for src in range(lay.pp):
                for dst in {(src + 1) % lay.pp, (src - 1) % lay.pp} - {src}:
                    self.routes[replica, src, dst] = tuple(
                        make_route(_path(ctx, lay.gpu(t, 0, replica, src), lay.gpu(t, 0, replica, dst)),
                                   capacity) for t in ranks)
        self.sizes = len(ranks)


def _one_step(ctx: Context, plan: StepPlan, routes: SendRoutes | None, rng, contention: bool,
              log: list | None = None) -> float:
    env = simpy.Environment()
    network = FlowNetwork(env, _capacity(ctx)) if contention else None
    run = _StepRun(env, ctx, plan, routes, network, log)
    slowdown = entity_slowdown(ctx, rng)
    for r in range(ctx.layout.dp):
        for s in range(ctx.layout.pp):
            env.process(run.stage(r, s, slowdown[r, s]))
    with _collector_paused():
        env.run()
    end = float(run.end.max())
    if log is not None:
        _log_optimizer(ctx, end, plan.optimizer_s, log)
    return end + plan.optimizer_s


@contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector during the event loop, then restore it.

    The loop allocates millions of short-lived events; with a large cluster graph alive,
    each full collection rescans it (a 16,384-GPU step ran 30% faster without them). The
    collector's previous state is restored, so nothing outlives the call.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _StepRun:
    """The shared state of one simulated step: task events, gradient barriers, end times."""

    def __init__(self, env, ctx: Context, plan: StepPlan, routes: SendRoutes | None, network, log):
        par, lay = ctx.scenario.parallelism, ctx.layout
        m, v = ctx.microbatches, par.virtual_stages
        graph = compiled_graph(par.schedule, lay.pp, m, v)
        self.env, self.ctx, self.plan, self.routes, self.network, self.log = (
            env, ctx, plan, routes, network, log)
        self.orders = [(stage_order(par.schedule, lay.pp, s, m, v), graph.ids[s], graph.deps[s],
                        graph.sends[s].tolist()) for s in range(lay.pp)]
        width = 2 * lay.pp * m * v
        self.finished = [[False] * width for _ in range(lay.dp)]   # by task id, per replica
        self.waiting: list[dict[int, simpy.Event]] = [{} for _ in range(lay.dp)]
        self.arrived = [0] * lay.pp
        self.barriers: dict[tuple[int, int, int, int, int], list] = {}
        self.synced = [env.event() if plan.sync_s[s] > 0 else None for s in range(lay.pp)]
        self.end = np.zeros((lay.dp, lay.pp))
        self.overlap = par.overlap_grad_reduce
        self.send_sizes = (plan.p2p_bytes,) * (routes.sizes if routes else 0)

    def stage(self, replica: int, stage: int, factor: float):
        """One entity: its tasks in order, then its stage's gradient synchronisation.

        A task waits for its dependency only if that has not finished yet; an event is
        made for it only then (most cross-stage dependencies are done before they are
        needed, so they cost no simpy event).
        """
        env, log, network = self.env, self.log, self.network
        finished, waiting = self.finished[replica], self.waiting[replica]
        order, ids, deps, sends_after = self.orders[stage]
        forward, backward = self.plan.forward[stage] * factor, self.plan.backward[stage] * factor
        kinds = self.plan.in_layer[stage] if self.plan.in_layer else ()
        if kinds:                            # compute segments between in-layer collectives
            sequences = (task_sequence(kinds, True), task_sequence(kinds, False))
            forward, backward = (_segment(self.plan.forward[stage], kinds, sequences[0], factor),
                                 _segment(self.plan.backward[stage], kinds, sequences[1], factor))
        p2p, gpu, last = self.plan.p2p_s, self.ctx.layout.gpu(dp_rank=replica, pp_rank=stage), len(ids) - 1
        for k, (task, tid, dep, send) in enumerate(zip(order, ids, deps, sends_after, strict=True)):
            if dep >= 0 and not finished[dep]:
                event = waiting.get(dep)
                if event is None:
                    event = waiting[dep] = env.event()
                yield event
            if k == last and self.overlap:
                self._arrive(stage)
            start = env.now
            if not kinds or not sequences[not task.forward]:
                yield env.timeout(forward if task.forward else backward)
            else:
                yield from self._in_layer(replica, stage, tid, sequences[not task.forward],
                                          forward if task.forward else backward)
            if log is not None:
                _log_compute(log, gpu, task, start, env.now)
            if send:
                if network is None and log is None:
                    yield env.timeout(p2p)
                else:
                    yield from self._send(replica, task, gpu)
            finished[tid] = True
            event = waiting.pop(tid, None)
            if event is not None:
                event.succeed()
        if not self.overlap:
            self._arrive(stage)
        if self.synced[stage] is not None:
            yield self.synced[stage]
        self.end[replica, stage] = env.now

    def _send(self, replica: int, task: Task, gpu: int):
        """A blocking send to the next stage: alpha-beta time, or flows that share links."""
        env, plan, start = self.env, self.plan, self.env.now
        if self.network is None:
            yield env.timeout(plan.p2p_s)
        else:
            yield env.timeout(plan.p2p_latency_s)
            routes = self.routes.routes[replica, task.stage, _next_stage(task, self.ctx.layout.pp)]
            yield self.network.start_all(routes, self.send_sizes)
        if self.log is not None:
            self.log.append((gpu, "comm", "send", f"send {'F' if task.forward else 'B'}"
                             f"{task.microbatch}", start, env.now, plan.p2p_bytes))

    def _in_layer(self, replica: int, stage: int, tid: int, sequence: list[int], segment: float):
        """A task with cross-server in-layer collectives: compute, then each collective."""
        kinds, replays = self.plan.in_layer[stage], self.plan.in_layer_replays
        for i, k in enumerate(sequence):
            yield self.env.timeout(segment)
            if kinds[k].dimension == "ep":
                yield self._exchange_barrier((stage, k, replica // self.ctx.layout.ep, tid, i))
            else:
                yield from run_replay(self.env, self.network, replays[stage, k, replica])

    def _exchange_barrier(self, key: tuple[int, int, int, int, int]) -> simpy.Event:
        """Event of the expert all-to-all ``key``; the last peer to arrive starts its flows."""
        state = self.barriers.get(key)
        if state is None:
            state = self.barriers[key] = [0, self.env.event()]
        state[0] += 1
        if state[0] == self.ctx.layout.ep:
            del self.barriers[key]
            self.env.process(self._exchange(self.plan.in_layer_replays[key[:3]], state[1]))
        return state[1]

    def _exchange(self, replay: PreparedReplay, done: simpy.Event):
        yield from run_replay(self.env, self.network, replay)
        done.succeed()

    def _arrive(self, stage: int) -> None:
        """A replica of ``stage`` is ready to synchronise; the last one starts it."""
        self.arrived[stage] += 1
        if self.arrived[stage] == self.ctx.layout.dp and self.synced[stage] is not None:
            self.env.process(self._synchronise(stage))

    def _synchronise(self, stage: int):
        env, start = self.env, self.env.now
        if self.network is None:
            yield env.timeout(self.plan.sync_s[stage])
        else:
            for replay in self.plan.sync_replays[stage]:
                yield from run_replay(env, self.network, replay)
        self.synced[stage].succeed()
        if self.log is not None:
            _log_sync(self.ctx, stage, start, env.now, self.log)


def _segment(duration: float, kinds, sequence: list[int], factor: float) -> float:
    """Compute before each of a task's in-layer collectives: the task's duration less their
    uncontended time, split evenly, slowed by the entity's noise ``factor``."""
    if not sequence:
        return duration * factor
    communication = sum(kinds[k].collective.time_s for k in sequence)
    return (duration - communication) * factor / len(sequence)


def run_replay(env, network: FlowNetwork, replay: PreparedReplay):
    """Run one collective's phases of flows (:mod:`simulator.engine.replay`)."""
    start = env.now
    yield env.timeout(replay.latency_s)
    for routes, sizes in replay.phases:
        yield network.start_all(routes, sizes)
    if env.now - start < replay.floor_s:
        yield env.timeout(replay.floor_s - (env.now - start))


def _next_stage(task: Task, p: int) -> int:
    return (task.stage + 1) % p if task.forward else (task.stage - 1) % p


def _log_compute(log: list, gpu: int, task: Task, start: float, end: float) -> None:
    kind = "forward" if task.forward else "backward"
    log.append((gpu, "compute", kind, f"{kind[0].upper()}{task.microbatch}.{task.chunk}",
                start, end, 0.0))


def _log_sync(ctx: Context, stage: int, start: float, end: float, log: list) -> None:
    for r in range(ctx.layout.dp):
        log.append((ctx.layout.gpu(dp_rank=r, pp_rank=stage), "comm", "dp", "gradient reduction",
                    start, end, 0.0))


def _log_optimizer(ctx: Context, start: float, seconds: float, log: list) -> None:
    for r in range(ctx.layout.dp):
        for s in range(ctx.layout.pp):
            log.append((ctx.layout.gpu(dp_rank=r, pp_rank=s), "compute", "optimizer",
                        "optimizer step", start, start + seconds, 0.0))


def timeline(scenario: Scenario, collectives: CollectiveModel, seed: int | None = None,
             contention: bool | None = None):
    """Every task of one simulated step as a pandas DataFrame (:data:`TIMELINE_COLUMNS`).

    ``gpu`` is the entity's tensor-parallel rank-0 GPU; streams are ``compute`` and
    ``comm``; kinds are forward, backward, send, dp and optimizer.
    """
    import pandas as pd

    sim = scenario.simulate
    contention = sim.contention if contention is None else contention
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    rng = np.random.default_rng(sim.seed if seed is None else seed)
    log: list = []
    routes = SendRoutes(ctx) if contention else None
    _one_step(ctx, step_plan(ctx, base, contention), routes, rng, contention, log)
    return pd.DataFrame(log, columns=list(TIMELINE_COLUMNS))
