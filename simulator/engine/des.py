"""The discrete-event engine (simpy): replay the pipeline task graph of every data-parallel
replica, with per-GPU noise and, optionally, pipeline transfers as flows that share links.

Fidelity: each (replica, stage) is one entity, its tensor-parallel GPUs collapsed (they
synchronise every layer, so the entity runs at the pace of its slowest GPU). Compute and
in-line collectives take the durations of the shared cost model
(:mod:`simulator.engine.stage_cost`); stage-to-stage sends are flows over the routed links
(:mod:`simulator.engine.flows`) when ``contention`` is on, fixed alpha-beta times when off.
The data-parallel reduction and optimizer step follow as in the analytical engine.

Invariants (tests): without noise and contention the pipeline finishes exactly at the task
graph's critical path (:func:`simulator.workload.taskgraph.critical_path`), which equals
the analytical closed form for uniform stages and never exceeds it; with contention the
step is never faster than without.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import simpy

from simulator.config.scenario import Fidelity, NoiseDistribution, Scenario
from simulator.cost import CollectiveModel
from simulator.engine.analytical import make_context, simulate_step
from simulator.engine.flows import FlowNetwork
from simulator.results import StepResult
from simulator.workload.taskgraph import Task, compiled_graph, stage_order


@dataclass(frozen=True)
class PipelineTiming:
    """Per-stage chunk durations and the stage-to-stage transfer."""

    forward: np.ndarray       # seconds per forward chunk, per stage
    backward: np.ndarray
    p2p_s: float              # fixed transfer time (alpha-beta, contention off)
    p2p_bytes: float
    p2p_latency_s: float


def simulate_steps_des(scenario: Scenario, collectives: CollectiveModel, steps: int | None = None,
                       seed: int | None = None, contention: bool | None = None) -> StepResult:
    """Simulate ``steps`` steps (default: the scenario's) and report the distribution."""
    sim = scenario.simulate
    steps, seed = steps or sim.steps, sim.seed if seed is None else seed
    contention = sim.contention if contention is None else contention
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    timing = _timing(base, ctx)
    rng = np.random.default_rng(seed)
    times = np.array([_one_step(ctx, timing, base, rng, contention) for _ in range(steps)])
    p50, p99 = np.percentile(times, [50, 99])
    return replace(base, step_time_s=float(p50), step_time_p50_s=float(p50),
                   step_time_p99_s=float(p99),
                   tokens_per_s=base.tokens_per_s * base.step_time_s / float(p50),
                   model_flops_per_gpu=base.model_flops_per_gpu * base.step_time_s / float(p50),
                   hardware_flops_per_gpu=base.hardware_flops_per_gpu * base.step_time_s / float(p50),
                   mfu=base.mfu * base.step_time_s / float(p50), step_times_s=times.tolist())


def _timing(base: StepResult, ctx) -> PipelineTiming:
    v = ctx.scenario.parallelism.virtual_stages
    forward = np.array([s.forward_s for s in base.stages]) / v
    backward = np.array([s.backward_s for s in base.stages]) / v
    p2p = base.stages[0].p2p_s
    nbytes = ctx.shape.tokens * ctx.shape.model.hidden * ctx.shape.dtype_bytes / ctx.shape.tp
    latency = _p2p_latency(ctx, nbytes, p2p)
    return PipelineTiming(forward, backward, p2p, nbytes, latency)


def _p2p_latency(ctx, nbytes: float, p2p: float) -> float:
    """The alpha of the analytical transfer: its time minus the bandwidth part."""
    if ctx.layout.pp == 1:
        return 0.0
    src, dst = ctx.layout.pp_pair(0)
    path = _path(ctx, src, dst)
    bottleneck = ctx.collectives.cluster.bandwidth_Bps[path].min()
    return max(p2p - nbytes / (bottleneck * _p2p_efficiency(ctx)), 0.0)


def _p2p_efficiency(ctx) -> float:
    table = ctx.collectives.cluster.hw.protocols
    return table.bandwidth_efficiency["p2p"]["Simple"]


def _path(ctx, src_gpu: int, dst_gpu: int) -> np.ndarray:
    cluster, router = ctx.collectives.cluster, ctx.collectives.network.router
    return np.array(router.path(cluster.gpu_vertex(src_gpu), cluster.gpu_vertex(dst_gpu)),
                    dtype=np.int64)


def _one_step(ctx, timing: PipelineTiming, base: StepResult, rng, contention: bool,
              log: list | None = None) -> float:
    slowdown = _entity_slowdown(ctx, rng)
    env = simpy.Environment()
    capacity = ctx.collectives.cluster.bandwidth_Bps * _p2p_efficiency(ctx)
    network = FlowNetwork(env, capacity) if contention else None
    finish = _run_pipelines(env, ctx, timing, slowdown, network, log)
    tail = base.step_time_s - base.pipeline_s
    if log is not None:
        _log_tail(ctx, base, finish, log)
    return finish + tail


def _log_tail(ctx, base: StepResult, start: float, log: list) -> None:
    """The data-parallel reduction and optimizer after the pipeline, on every entity."""
    for r in range(ctx.layout.dp):
        for s in range(ctx.layout.pp):
            gpu = ctx.layout.gpu(dp_rank=r, pp_rank=s)
            log.append((gpu, "comm", "dp", "gradient reduction", start,
                        start + base.dp_comm_exposed_s, 0.0))
            end = start + base.dp_comm_exposed_s
            log.append((gpu, "compute", "optimizer", "optimizer step", end,
                        end + base.optimizer_s, 0.0))


TIMELINE_COLUMNS = ("gpu", "stream", "kind", "name", "start_s", "end_s", "bytes")


def timeline(scenario: Scenario, collectives: CollectiveModel, seed: int | None = None,
             contention: bool | None = None):
    """Every task of one simulated step as a pandas DataFrame (:data:`TIMELINE_COLUMNS`).

    ``gpu`` is the entity's tensor-parallel rank-0 GPU; streams are ``compute`` and
    ``comm``; kinds are forward, backward, send, dp and optimizer.
    """
    import pandas as pd

    sim = scenario.simulate
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    rng = np.random.default_rng(sim.seed if seed is None else seed)
    log: list = []
    _one_step(ctx, _timing(base, ctx), base, rng,
              sim.contention if contention is None else contention, log)
    return pd.DataFrame(log, columns=list(TIMELINE_COLUMNS))


def _entity_slowdown(ctx, rng) -> np.ndarray:
    """(dp, pp) slowdown factors: the max over each entity's tp*cp GPUs of per-GPU noise.

    Per GPU and step: lognormal jitter ``exp(N(0, sigma))`` times, with probability
    ``throttle.probability``, a throttling ``factor``; ``slow_gpus`` are always slower.
    Tensor-parallel GPUs synchronise every layer, so an entity runs at the pace of its
    slowest GPU.
    """
    lay, noise = ctx.layout, ctx.scenario.noise
    shape = (lay.dp, lay.pp, lay.tp * lay.cp)
    factors = np.ones(shape)
    jitter = noise.straggler
    if jitter.distribution == NoiseDistribution.LOGNORMAL and jitter.sigma > 0:
        factors *= np.exp(rng.normal(0.0, jitter.sigma, size=shape))
    throttle = noise.throttle
    if throttle.probability > 0 and throttle.factor > 1:
        factors *= np.where(rng.random(shape) < throttle.probability, throttle.factor, 1.0)
    for slow in noise.slow_gpus:
        rest, within = divmod(slow.gpu, lay.tp * lay.cp)
        pp_rank, dp_rank = divmod(rest, lay.dp)
        factors[dp_rank, pp_rank, within] *= slow.factor
    return factors.max(axis=2)


def _run_pipelines(env, ctx, timing: PipelineTiming, slowdown, network, log=None) -> float:
    par, lay = ctx.scenario.parallelism, ctx.layout
    m, v = ctx.microbatches, par.virtual_stages
    graph = compiled_graph(par.schedule, lay.pp, m, v)
    orders = [stage_order(par.schedule, lay.pp, s, m, v) for s in range(lay.pp)]
    width = 2 * lay.pp * m * v
    done = [env.event() for _ in range(lay.dp * width)]
    finish = np.zeros((lay.dp, lay.pp))
    for r in range(lay.dp):
        for s in range(lay.pp):
            plan = (orders[s], graph.ids[s], graph.deps[s], graph.sends[s].tolist())
            env.process(_stage(env, ctx, timing, slowdown[r, s], network, done[r * width:][:width],
                               finish, r, s, plan, log))
    env.run()
    return float(finish.max())


def _stage(env, ctx, timing, factor, network, done, finish, replica, stage, plan, log=None):
    """Run one stage's tasks in order; ``done`` holds this replica's task events by id."""
    order, ids, deps, sends_after = plan
    gpu = ctx.layout.gpu(dp_rank=replica, pp_rank=stage)
    forward, backward = timing.forward[stage] * factor, timing.backward[stage] * factor
    for task, tid, dep, send in zip(order, ids, deps, sends_after, strict=True):
        if dep >= 0 and not done[dep].processed:
            yield done[dep]
        start = env.now
        yield env.timeout(forward if task.forward else backward)
        if log is not None:
            _log_compute(log, gpu, task, start, env.now)
        if send:
            start = env.now
            yield from _send(env, ctx, timing, network, replica, stage,
                             _next_stage(task, ctx.layout.pp))
            if log is not None:
                log.append((gpu, "comm", "send", f"send {'F' if task.forward else 'B'}"
                            f"{task.microbatch}", start, env.now, timing.p2p_bytes))
        done[tid].succeed()
    finish[replica, stage] = env.now


def _log_compute(log: list, gpu: int, task: Task, start: float, end: float) -> None:
    kind = "forward" if task.forward else "backward"
    log.append((gpu, "compute", kind, f"{kind[0].upper()}{task.microbatch}.{task.chunk}",
                start, end, 0.0))


def _next_stage(task: Task, p: int) -> int:
    return (task.stage + 1) % p if task.forward else (task.stage - 1) % p


def _send(env, ctx, timing: PipelineTiming, network, replica: int, src_stage: int, dst_stage: int):
    """A blocking send to the next stage: fixed alpha-beta time, or a flow that shares links.

    Fidelity ``tp-collapsed``: the tensor-parallel ranks' parallel sends are represented by
    rank 0's flow; ``per-rank``: every rank sends its own flow over its own route.
    """
    if network is None:
        yield env.timeout(timing.p2p_s)
        return
    lay = ctx.layout
    ranks = range(lay.tp) if ctx.scenario.simulate.fidelity == Fidelity.PER_RANK else range(1)
    flows = []
    for t in ranks:
        src = lay.gpu(tp_rank=t, dp_rank=replica, pp_rank=src_stage)
        dst = lay.gpu(tp_rank=t, dp_rank=replica, pp_rank=dst_stage)
        flows.append(env.process(network.transfer(_path(ctx, src, dst), timing.p2p_bytes,
                                                  timing.p2p_latency_s)))
    yield env.all_of(flows)
