"""The discrete-event engine (simpy): replay the pipeline task graph of every data-parallel
replica, then each stage's gradient synchronisation, with per-GPU noise and, optionally,
every transfer as a flow that shares links with the others.

Each (replica, stage) is one entity, its tensor-parallel GPUs collapsed (they synchronise
every layer, so the entity runs at the pace of its slowest GPU). Compute and in-line
collectives take the durations of the shared cost model
(:mod:`simulator.cost.layer`). With ``contention`` on, stage-to-stage sends, the
data-parallel gradient collectives and, at fidelities finer than tp-collapsed, in-layer
collectives that span servers are flows over the routed links
(:mod:`simulator.engine.flows`, :mod:`simulator.engine.replay`,
:mod:`simulator.engine.in_layer`), so they meet on the NICs and switches they share; with
it off they take the cost model's alpha-beta times. What is priced before the first event
is in :mod:`simulator.engine.des_plan`.

A stage's gradient synchronisation starts when all its replicas reach it: with their last
backward (``overlap_grad_reduce``) or after it
(:func:`simulator.engine.analytical.gradient_sync_start`), and ends no earlier than its
last bucket's reduction after the last replica's backward. The optimizer step follows
the last stage to finish (Megatron's global gradient-norm all-reduce synchronises them).

With contention off (and so no in-layer or ZeRO-3 replays), :func:`simulate_steps_des`
evaluates the steps with the max-plus fast path (:mod:`simulator.engine.fastpath`), which
does what the event replay does, vectorised over steps and replicas; both draw their noise
from one :class:`simulator.engine.noise_process.NoiseSource`, so a seed gives the same steps
on either path. With contention on, each step's contention-free prefix (until two flows meet
or a gradient synchronisation starts) is evaluated by the same recurrence and only the rest
is replayed as events (:mod:`simulator.engine.des_prefix`), with the full replay's result.

Invariants (tests): without noise and contention the step equals the analytical step;
with contention the step is never faster than without (fixed per-stage task orders, and
every contended duration is at least its uncontended one); the fast path equals the event
replay to 1e-9 relative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import simpy

from simulator.config.checks import data_parallel_size
from simulator.config.scenario import Fidelity, Scenario
from simulator.cost import CollectiveModel
from simulator.engine import des_prefix, des_what_ifs
from simulator.engine import training_what_ifs as what_ifs
from simulator.engine.analytical import simulate_step
from simulator.engine.collector import collector_paused
from simulator.engine.context import Context, make_context
from simulator.engine.des_plan import PreparedReplay, SendRoutes, StepPlan, capacity_of, step_plan
from simulator.engine.des_prefix import PrefixCutter, Resume
from simulator.engine.fastpath import step_times, sync_delays, sync_slow, sync_tail
from simulator.engine.flows import FlowNetwork
from simulator.engine.in_layer import task_sequence
from simulator.engine.noise_process import NoiseSource, StepNoise
from simulator.errors import ConfigError
from simulator.results import StepResult
from simulator.results.invariants import check_result
from simulator.workload.taskgraph import Task, stage_tasks

TIMELINE_COLUMNS = ("gpu", "stream", "kind", "name", "start_s", "end_s", "bytes")


PATHS = ("auto", "event", "fast")


def simulate_steps_des(scenario: Scenario, collectives: CollectiveModel, steps: int | None = None,
                       seed: int | None = None, contention: bool | None = None,
                       path: str = "auto", progress: Callable[[int], None] | None = None) -> StepResult:
    """Simulate ``steps`` steps (default: the scenario's) and report the distribution.

    ``path``: ``auto`` evaluates the steps with the max-plus fast path when contention is
    off and replays events otherwise; ``event`` always replays events; ``fast`` requires
    contention off. Both paths give the same steps for the same seed. ``progress(n)`` is
    called as each block of ``n`` steps is done (with training what-ifs, once at the end).
    """
    advance = progress or (lambda done: None)
    sim = scenario.simulate
    steps, contention = steps or sim.steps, sim.contention if contention is None else contention
    if path not in PATHS or (path == "fast" and contention):
        raise ValueError(f"path {path!r}: expected one of {PATHS}; 'fast' needs contention off")
    fast = path == "fast" or (path == "auto" and not contention)
    if not fast:
        check_event_budget(scenario, collectives, steps)
    base, ctx, plan, routes, source = _prepare(scenario, collectives, seed, contention)
    cutter = PrefixCutter(ctx, plan, routes) if contention and not fast and \
        des_prefix.applies(plan, routes) else None

    def run(chosen: StepPlan | list[StepPlan], block) -> np.ndarray:
        """A block's steps on one plan, or (event replay) on one plan per step."""
        if fast:
            return step_times(ctx, chosen, block)
        if cutter is not None and chosen is plan:
            return np.array([_one_step(ctx, plan, routes, block.step(i), contention, resume=resume)
                             for i, resume in enumerate(cutter.resumes(block))])
        plans = chosen if isinstance(chosen, list) else [chosen] * block.steps
        return np.array([_one_step(ctx, plans[i], routes, block.step(i), contention)
                         for i in range(block.steps)])

    if what_ifs.active(ctx):
        seed = sim.seed if seed is None else seed
        times, notes = des_what_ifs.step_times(ctx, base, plan, source, steps, run, fast, seed)
        advance(len(times))
        result = _with_times(base, times, mean=ctx.scenario.training.sync_every > 1)
        return check_result(replace(result, engine=_engine_name(sim, contention), what_if=notes),
                            analytical=False)
    times = np.concatenate([_advanced(run(plan, block), advance) for block in source.blocks(steps)])
    return check_result(replace(_with_times(base, times), engine=_engine_name(sim, contention)),
                        analytical=False)


def _engine_name(sim, contention: bool) -> str:
    return f"des ({Fidelity(sim.fidelity).value}{', contention' if contention else ''})"


MAX_TASK_EVENTS = 50_000_000
"""The most pipeline tasks the discrete-event engine replays in one run (about three minutes
at its 300k events/s); larger runs are refused before they start."""


def check_event_budget(scenario: Scenario, collectives: CollectiveModel, steps: int) -> None:
    """Refuse a run whose task count, ``dp x pp x 2 m v x steps``, passes :data:`MAX_TASK_EVENTS`.

    Raises
    ------
    ConfigError
        With the estimate and its factors, naming ``simulate.steps``.
    """
    par, training = scenario.parallelism, scenario.training
    gpus = collectives.cluster.gpus
    dp = data_parallel_size(scenario, gpus)
    m = training.global_batch // (training.micro_batch * dp)
    tasks = dp * par.pp * 2 * m * par.virtual_stages * steps
    if tasks > MAX_TASK_EVENTS:
        raise ConfigError(
            f"the discrete-event engine would replay about {tasks:,} tasks (dp {dp} x pp {par.pp} x "
            f"2 x {m:,} microbatches x v {par.virtual_stages} x {steps:,} steps), more than its "
            f"limit of {MAX_TASK_EVENTS:,}; use fewer steps or a smaller global batch, or the "
            "analytical engine", key="simulate.steps")


def _prepare(scenario: Scenario, collectives: CollectiveModel, seed: int | None, contention: bool):
    """(analytical step, context, plan, send routes, noise source) of one simulation."""
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    routes = SendRoutes(ctx) if contention else None
    plan = step_plan(ctx, base, contention)
    source = NoiseSource(ctx, plan, base.step_time_s, scenario.simulate.seed if seed is None else seed)
    return base, ctx, plan, routes, source


def _with_times(base: StepResult, times: np.ndarray, mean: bool = False) -> StepResult:
    """``base`` rescaled to the median simulated step (``mean``: the mean step, for periodic
    steps), with the distribution attached."""
    p50, p95, p99 = (float(x) for x in np.percentile(times, [50, 95, 99]))
    centre = float(times.mean()) if mean else p50
    scale = base.step_time_s / centre
    return replace(base, step_time_s=centre, step_time_p50_s=p50, step_time_p95_s=p95,
                   step_time_p99_s=p99, tokens_per_s=base.tokens_per_s * scale,
                   model_flops_per_gpu=base.model_flops_per_gpu * scale,
                   hardware_flops_per_gpu=base.hardware_flops_per_gpu * scale,
                   mfu=base.mfu * scale, step_times_s=times.tolist(),
                   contention_and_noise_s=centre - base.step_time_s)


def _advanced(times: np.ndarray, advance: Callable[[int], None]) -> np.ndarray:
    """``times``, after reporting their count to ``advance``."""
    advance(len(times))
    return times


def _one_step(ctx: Context, plan: StepPlan, routes: SendRoutes | None, noise: StepNoise,
              contention: bool, log: list | None = None, resume: Resume | None = None) -> float:
    """One step replayed as events; ``noise`` is that step's (a block of one step).

    ``resume``: replay only from each entity's first task at or after the step's
    contention-free prefix (:mod:`simulator.engine.des_prefix`); the same step to round-off.
    """
    env = simpy.Environment()
    network = FlowNetwork(env, capacity_of(ctx)) if contention else None
    run = _StepRun(env, ctx, plan, routes, network, log, noise, resume)
    factor = noise.factor[0]
    for r in range(ctx.layout.dp):
        for s in range(ctx.layout.pp):
            env.process(run.stage(r, s, float(factor[r, s])))
    with collector_paused():
        env.run()
    end = float(run.end.max())
    if log is not None:                 # the timeline shows one pipeline schedule's step
        _log_optimizer(ctx, end, plan.optimizer_s, log)
    return float(plan.step_seconds(end + plan.optimizer_s))


class _StepRun:
    """The shared state of one simulated step: task events, gradient barriers, end times."""

    def __init__(self, env, ctx: Context, plan: StepPlan, routes: SendRoutes | None, network, log,
                 noise: StepNoise, resume: Resume | None = None):
        par, lay = ctx.scenario.parallelism, ctx.layout
        m, v = ctx.microbatches, par.virtual_stages
        self.env, self.ctx, self.plan, self.routes, self.network, self.log = (
            env, ctx, plan, routes, network, log)
        self.tasks = stage_tasks(par.schedule, lay.pp, m, v)
        width = 2 * lay.pp * m * v
        self.finished = resume.done if resume else [[False] * width for _ in range(lay.dp)]
        self.resume = resume
        self.waiting: list[dict[int, simpy.Event]] = [{} for _ in range(lay.dp)]
        self.arrived = [0] * lay.pp
        self.done = [0] * lay.pp                    # replicas past their last task, per stage
        self.all_done = [env.event() for _ in range(lay.pp)]
        self.barriers: dict[tuple[int, int, int, int, int], list] = {}
        self.synced = [env.event() if plan.sync_s[s] > 0 else None for s in range(lay.pp)]
        self.after = sync_delays(plan, lay.pp)
        self.end = np.zeros((lay.dp, lay.pp))
        self.overlap = par.overlap_grad_reduce
        self.send_sizes = (plan.p2p_bytes,) * (routes.sizes if routes else 0)
        self.sent: dict[tuple[int, int, bool], simpy.Process] = {}   # overlapped sends in flight
        self.noise = noise
        self.pause_s = noise.pause_s if noise.pause_at is not None else 0.0

    def stage(self, replica: int, stage: int, factor: float):
        """One entity: its tasks in order, then its stage's gradient synchronisation.

        A task waits for its dependency only if that has not finished yet; an event is
        made for it only then (most cross-stage dependencies are done before they are
        needed, so they cost no simpy event).
        """
        env, log, network, overlap = self.env, self.log, self.network, self.overlap
        finished, waiting, tasks = self.finished[replica], self.waiting[replica], self.tasks[stage]
        forward, backward, sequences = self._durations(stage, factor)
        durations, timeout = (backward, forward), env.timeout
        p2p = self._send_seconds(replica, stage)
        gpu, last = self.ctx.layout.gpu(dp_rank=replica, pp_rank=stage), len(tasks) - 1
        sharded = self.plan.sharding[stage] if self.plan.sharding else None
        pause_at = int(self.noise.pause_at[0, replica, stage]) if self.pause_s > 0 else -1
        varies = self.noise.attention_delta is not None
        first, late = yield from self._resumed(replica, stage, last)
        for k in range(first, len(tasks)):
            tid, dep, is_forward, send, task = tasks[k]
            if k == pause_at:
                yield timeout(self.pause_s)     # the host stalls; a later input hides it
            if dep >= 0 and not finished[dep]:
                yield _waiter(env, waiting, dep)
            elif late is not None and dep in late and late[dep] > env.now:
                yield timeout(late[dep] - env.now)   # done before the prefix's cut, after our clock
            if (sending := self.sent.get((replica, stage, is_forward))) is not None and not sending.triggered:
                yield sending                        # the stage's previous send this way
            if k == last and overlap:
                self._arrive(stage)
            start = env.now
            scale = self._work(replica, stage, is_forward, task.microbatch, factor) if varies else None
            if sequences[is_forward]:
                segment = durations[is_forward] if scale is None else durations[is_forward] * scale[1]
                yield from self._in_layer(replica, stage, tid, sequences[is_forward], segment)
            elif sharded is not None:
                slowed = factor * (scale[1] if scale else 1.0)
                yield from self._sharded(sharded, stage, tid, is_forward, slowed)
            else:
                yield timeout(durations[is_forward] if scale is None else scale[0])
            if log is not None:
                _log_compute(log, gpu, task, start, env.now)
            if send and self.plan.sends_overlap:         # the stage goes on; the data follows
                self.sent[replica, stage, is_forward] = env.process(
                    self._delivered(replica, task, gpu, tid, p2p[is_forward]))
                continue
            if send:
                if network is None and log is None:
                    yield timeout(p2p[is_forward])
                else:
                    yield from self._send(replica, task, gpu, p2p[is_forward])
            finished[tid] = True
            if tid in waiting:
                waiting.pop(tid).succeed()
        self.done[stage] += 1
        if self.done[stage] == self.ctx.layout.dp:
            self.all_done[stage].succeed(env.now)
        if not overlap:
            self._arrive(stage)
        if self.synced[stage] is not None:
            yield self.synced[stage]
        self.end[replica, stage] = env.now

    def _resumed(self, replica: int, stage: int, last: int):
        """Without a :class:`~simulator.engine.des_prefix.Resume`: (0, None). With one: wait
        until the entity's clock at the prefix's cut, count its arrival if it reached its last
        task before it, and give (its first replayed task's position, the arrival times of
        skipped tasks its replica's replayed tasks depend on, or None). A skipped overlapped
        send still in flight at its clock is waited for by its next pass that way."""
        resume = self.resume
        if resume is None:
            return 0, None
        first = int(resume.first[replica, stage])
        if first:
            yield self.env.timeout(float(resume.clock[replica, stage]))
        for way in (False, True):
            if (at := resume.sent.get((replica, stage, way))) is not None:
                self.sent[replica, stage, way] = self.env.process(self._until(at))
        if first > last and self.overlap:
            self._arrive(stage)
        return first, resume.late[replica] or None

    def _until(self, at: float):
        """A process that ends at time ``at`` (a skipped send's arrival)."""
        yield self.env.timeout(at - self.env.now)

    def _durations(self, stage: int, factor: float) -> tuple[float, float, tuple[list, list]]:
        """(forward, backward) seconds of a chunk, or of each compute segment between its
        cross-server in-layer collectives, and those collectives (backward, forward: indexed
        by the task's ``forward`` flag)."""
        plan = self.plan
        kinds = plan.in_layer[stage] if plan.in_layer else ()
        if not kinds:
            return plan.forward[stage] * factor, plan.backward[stage] * factor, ([], [])
        sequences = (task_sequence(kinds, False), task_sequence(kinds, True))
        return (_segment(plan.forward[stage], kinds, sequences[1], factor),
                _segment(plan.backward[stage], kinds, sequences[0], factor), sequences)

    def _work(self, replica: int, stage: int, is_forward: bool, microbatch: int,
              factor: float) -> tuple[float, float]:
        """(seconds, their ratio to the mean chunk's) of a chunk of ``microbatch`` with
        documents: :func:`simulator.engine.fastpath.task_seconds` times the entity's factor,
        evaluated as the fast path does; in-layer segments and ZeRO-3 compute take the ratio."""
        plan, noise, f = self.plan, self.noise, int(is_forward)
        base = plan.forward[stage] if is_forward else plan.backward[stage]
        seconds = base + plan.attention_part[stage, f] * noise.attention_delta[0, replica, microbatch]
        if noise.token_delta is not None:
            seconds = seconds + plan.token_part[stage, f] * noise.token_delta[0, replica, microbatch]
        return float(seconds * factor), float(seconds / base) if base > 0 else 1.0

    def _send_seconds(self, replica: int, stage: int) -> tuple[float, float]:
        """(after a backward, after a forward) send seconds of an entity, contention off."""
        send = self.noise.send_s
        if send is None:
            return self.plan.p2p_s, self.plan.p2p_s
        return float(send[0, replica, stage, 0]), float(send[0, replica, stage, 1])

    def _delivered(self, replica: int, task: Task, gpu: int, tid: int, seconds: float):
        """A send that overlaps its stage's next pass (:mod:`simulator.workload.pipeline_sends`):
        :meth:`_send`, then its task counts as done for the receiver."""
        if self.network is None and self.log is None:
            yield self.env.timeout(seconds)
        else:
            yield from self._send(replica, task, gpu, seconds)
        self.finished[replica][tid] = True
        if tid in self.waiting[replica]:
            self.waiting[replica].pop(tid).succeed()

    def _send(self, replica: int, task: Task, gpu: int, seconds: float):
        """A send to the next stage: ``seconds`` (alpha-beta, a faulty NIC's with
        contention off), or flows that share links after the latency (a faulty NIC adds its
        latency and carries ``bytes / fraction``, its bandwidth share)."""
        env, plan, start = self.env, self.plan, self.env.now
        if self.network is None:
            yield env.timeout(seconds)
        else:
            extra, sizes = 0.0, self.send_sizes
            if self.noise.send_extra_s is not None:
                index = (0, replica, task.stage, int(task.forward))
                extra = float(self.noise.send_extra_s[index])
                sizes = tuple(n / float(self.noise.send_fraction[index]) for n in sizes)
            yield env.timeout(plan.p2p_latency_s + extra)
            routes = self.routes.routes[replica, task.stage, _next_stage(task, self.ctx.layout.pp)]
            yield self.network.start_all(routes, sizes)
        if self.log is not None:
            self.log.append((gpu, "comm", "send", f"send {'F' if task.forward else 'B'}"
                             f"{task.microbatch}", start, env.now, plan.p2p_bytes))

    def _in_layer(self, replica: int, stage: int, tid: int, sequence: list[int], segment: float):
        """A task with cross-server in-layer collectives: compute, then each collective."""
        env, log = self.env, self.log
        kinds, replays = self.plan.in_layer[stage], self.plan.in_layer_replays
        for i, k in enumerate(sequence):
            yield env.timeout(segment)
            start, kind = env.now, kinds[k]
            if kind.dimension == "ep":
                yield self._exchange_barrier((stage, k, replica // self.ctx.layout.expert_replicas, tid, i))
            else:
                yield from run_replay(env, self.network, replays[stage, k, replica])
            if log is not None:
                log.append((self.ctx.layout.gpu(dp_rank=replica, pp_rank=stage), "comm", kind.dimension,
                            f"{kind.collective.op.value} ({kind.dimension})", start, env.now,
                            kind.collective.size_bytes))

    def _exchange_barrier(self, key: tuple[int, int, int, int, int]) -> simpy.Event:
        """Event of the expert all-to-all ``key``; the last peer to arrive starts its flows."""
        state = self.barriers.get(key)
        if state is None:
            state = self.barriers[key] = [0, self.env.event()]
        state[0] += 1
        if state[0] == self.ctx.layout.expert_replicas:
            del self.barriers[key]
            self.env.process(self._exchange(self.plan.in_layer_replays[key[:3]], state[1]))
        return state[1]

    def _exchange(self, replay: PreparedReplay, done: simpy.Event):
        yield from run_replay(self.env, self.network, replay)
        done.succeed()

    def _sharded(self, plan, stage: int, tid: int, is_forward: bool, factor: float):
        """A task of a ZeRO-3 stage (:mod:`simulator.engine.sharding_replay`): its compute,
        and its exposure at the slowdown its sample collectives see once all replicas join."""
        env, start = self.env, self.env.now
        scale = yield self._shard_barrier(stage, tid, is_forward)
        exposed = plan.exposed(self.ctx, scale)[0 if is_forward else 1]
        compute = (plan.forward_compute if is_forward else plan.backward_compute) * factor
        yield env.timeout(max(0.0, start + compute + exposed - env.now))

    def _shard_barrier(self, stage: int, tid: int, is_forward: bool) -> simpy.Event:
        """Event of task ``tid``'s sharding collectives; the last replica to arrive starts them."""
        key = ("shard", stage, tid)
        state = self.barriers.get(key)
        if state is None:
            state = self.barriers[key] = [0, self.env.event()]
        state[0] += 1
        if state[0] == self.ctx.layout.dp:
            del self.barriers[key]
            priced = self.plan.sharding[stage].priced(self.ctx, is_forward)
            self.env.process(self._slowdown(self.plan.sharding_replays[stage, is_forward], priced,
                                            state[1]))
        return state[1]

    def _slowdown(self, replays: tuple[PreparedReplay, ...], priced: float, done: simpy.Event):
        """Run ``replays`` one after another; report their time over the ``priced`` time."""
        start = self.env.now
        for replay in replays:
            yield from run_replay(self.env, self.network, replay)
        done.succeed((self.env.now - start) / priced if priced > 0 else 1.0)

    def _arrive(self, stage: int) -> None:
        """A replica of ``stage`` is ready to synchronise; the last one starts it."""
        self.arrived[stage] += 1
        if self.arrived[stage] == self.ctx.layout.dp and self.synced[stage] is not None:
            self.env.process(self._synchronise(stage))

    def _synchronise(self, stage: int):
        """The stage's gradient synchronisation, stretched by a faulty NIC's ``sync_scale``
        (with flows: their time, times the scale)."""
        env = self.env
        after = float(self.after[stage])
        if after > 0.0:                 # the cool-down delay (simulator.engine.dp_overlap_sms)
            yield env.timeout(after)
        start = env.now
        scale = float(self.noise.sync_scale[0, stage]) if self.noise.sync_scale is not None else 1.0
        if self.network is None:
            yield env.timeout(self.plan.sync_s[stage] * scale)
        else:
            for replay in self.plan.sync_replays[stage]:
                yield from run_replay(env, self.network, replay)
            if scale != 1.0:
                yield env.timeout((env.now - start) * (scale - 1.0))
        tail = after + sync_slow(self.plan, stage) + sync_tail(self.plan, stage) * scale
        if tail > 0.0:
            finished = yield self.all_done[stage]
            yield env.timeout(max(0.0, finished + tail - env.now))
        self.synced[stage].succeed()
        if self.log is not None:
            _log_sync(self.ctx, stage, start, env.now, self.plan.sync_bytes[stage], self.log)


def _waiter(env, waiting: dict, tid: int) -> simpy.Event:
    """The event a task waits on until task ``tid`` finishes (made on first need)."""
    event = waiting.get(tid)
    if event is None:
        event = waiting[tid] = env.event()
    return event


def _segment(duration: float, kinds, sequence: list[int], factor: float) -> float:
    """Compute before each of a task's in-layer collectives: the task's duration less their
    uncontended time, split evenly, slowed by the entity's noise ``factor``.

    Exact when the chunk's layer count is whole; with ``layers / v`` fractional the rounded
    collective count may exceed the priced share, and the compute is then clamped at 0.
    """
    if not sequence:
        return duration * factor
    communication = sum(kinds[k].collective.time_s for k in sequence)
    return max(duration - communication, 0.0) * factor / len(sequence)


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


def _log_sync(ctx: Context, stage: int, start: float, end: float, nbytes: float, log: list) -> None:
    for r in range(ctx.layout.dp):
        log.append((ctx.layout.gpu(dp_rank=r, pp_rank=stage), "comm", "dp", "gradient reduction",
                    start, end, nbytes))


def _log_optimizer(ctx: Context, start: float, seconds: float, log: list) -> None:
    for r in range(ctx.layout.dp):
        for s in range(ctx.layout.pp):
            log.append((ctx.layout.gpu(dp_rank=r, pp_rank=s), "compute", "optimizer",
                        "optimizer step", start, start + seconds, 0.0))


def timeline(scenario: Scenario, collectives: CollectiveModel, seed: int | None = None,
             contention: bool | None = None):
    """Every task of one simulated step as a pandas DataFrame (:data:`TIMELINE_COLUMNS`).

    ``gpu`` is the entity's tensor-parallel rank-0 GPU; streams are ``compute`` and
    ``comm``; kinds are forward, backward, send, dp (the stage's gradient synchronisation,
    ``bytes`` the gradients of one GPU), optimizer and, when replayed, the in-layer
    collectives that span servers (tp, cp, ep; a forward or backward task then spans its
    compute segments and those collectives). With ``sync_every`` or ``cluster.sites`` the
    step shown synchronises (the outer optimizer and the WAN ring in the optimizer row).
    """
    import pandas as pd

    contention = scenario.simulate.contention if contention is None else contention
    check_event_budget(scenario, collectives, 1)
    base, ctx, plan, routes, source = _prepare(scenario, collectives, seed, contention)
    if what_ifs.active(ctx):
        plan = des_what_ifs.sync_step_plan(base, plan, ctx.scenario.training.sync_every)
    log: list = []
    _one_step(ctx, plan, routes, next(source.blocks(1)), contention, log)
    return pd.DataFrame(log, columns=list(TIMELINE_COLUMNS))
