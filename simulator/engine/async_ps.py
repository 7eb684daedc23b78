"""Asynchronous SGD with parameter servers and bounded staleness (``training.sync: async``).

Each data-parallel replica (a *worker*: its tp x pp x cp GPUs) repeats: pull the parameters
from the ``S`` servers, run its pipeline on its ``G / dp`` sequences, push its gradient;
a server applies a gradient as it arrives (Li et al., "Scaling distributed machine learning
with the parameter server", OSDI 2014; Dean et al., "Large scale distributed deep
networks", NIPS 2012). There is no barrier; the price is staleness: the updates other
workers applied between a worker's pull and its push. A bound ``s`` (stale synchronous
parallel, Ho et al., NIPS 2013) lets a worker start iteration ``k`` only once the slowest
has finished ``k - s``; ``s = 0`` is bulk-synchronous training on the servers.

Costs, with ``P`` parameters of ``b`` bytes (the training dtype; fp8 keeps 16-bit weights),
``g`` GPUs per worker holding ``P / (tp pp)`` each behind a per-GPU NIC rate ``B_gpu``, and
each server's rate ``B_s`` per direction (full duplex):

- a push (pull) takes ``max(P b / (tp pp B_gpu), P b / (S B_s))``: the worker's own links or
  one server's share, whichever is slower; a server is busy ``P b / (S B_s)`` per push (pull);
- worker period ``T_w = T_c + T_pull + T_push``, ``T_c`` the replica's pipeline (bubble and
  in-layer communication included, no gradient reduction, the optimizer on the servers);
- server period ``T_s = dp P b / (S B_s)``: every worker's push into each server, in turn;
- analytical throughput ``G s_len / max(T_w, T_s)`` tokens/s: bound by the slower of the
  workers and the servers (servers' own update arithmetic not counted: bandwidth-bound).

The discrete-event replay (:func:`simulate_async_des`) runs every worker as a process with
its pipeline times from the scenario's noise (the fast path's per-replica pipelines, the
same draws the synchronous engine uses), the servers as two FIFO queues (pushes in, pulls
out), and the staleness gate; it reports throughput, iteration percentiles and the staleness
actually seen, and under the same noise the synchronous all-reduce step and ``s = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import simpy

from simulator.config.checks import data_parallel_size
from simulator.config.scenario import Scenario
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.des_plan import step_plan
from simulator.engine.fastpath import replica_times, step_times
from simulator.engine.noise_process import NoiseSource
from simulator.results import StepResult
from simulator.results.invariants import check_result
from simulator.units import GBPS_TO_BYTES_PER_S
from simulator.workload.params import parameter_count

PARAMETER_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 2}
"""Bytes per pushed gradient and pulled parameter element, by training dtype."""


@dataclass(frozen=True)
class AsyncCost:
    """Seconds of one worker iteration's parts and of the servers (module docstring)."""

    workers: int
    servers: int
    staleness: int
    compute_s: float
    worker_push_s: float
    worker_pull_s: float
    server_push_s: float
    server_pull_s: float

    @property
    def push_s(self) -> float:
        return max(self.worker_push_s, self.server_push_s)

    @property
    def pull_s(self) -> float:
        return max(self.worker_pull_s, self.server_pull_s)

    @property
    def worker_period_s(self) -> float:
        """``T_w = T_c + T_pull + T_push``."""
        return self.compute_s + self.pull_s + self.push_s

    @property
    def server_period_s(self) -> float:
        """``T_s = dp max(push, pull)`` of one server: one push and one pull per worker."""
        return self.workers * max(self.server_push_s, self.server_pull_s)

    @property
    def period_s(self) -> float:
        return max(self.worker_period_s, self.server_period_s)

    @property
    def bound(self) -> str:
        return "workers" if self.worker_period_s >= self.server_period_s else "servers"


def async_cost(scenario: Scenario, collectives: CollectiveModel, base: StepResult) -> AsyncCost:
    """The :class:`AsyncCost` of ``scenario``; ``base`` is its synchronous analytical step."""
    ps, par, hw = scenario.parameter_server, scenario.parallelism, collectives.cluster.hw
    size = parameter_count(scenario.model) * PARAMETER_BYTES[scenario.training.dtype.value]
    nic = hw.nic_link.effective_Bps
    per_gpu = nic * max(hw.nics_per_node, 1) / hw.gpus_per_node
    if ps.bandwidth_GBps is not None:
        server = ps.bandwidth_GBps * GBPS_TO_BYTES_PER_S
    else:
        server = nic * (max(hw.nics_per_node, 1) if ps.placement.value == "colocated" else 1)
    shard = size / (par.tp * par.pp)
    per_server = size / ps.servers / server
    return AsyncCost(data_parallel_size(scenario, base.gpus), ps.servers, ps.staleness,
                     base.pipeline_s, shard / per_gpu, shard / per_gpu, per_server, per_server)


def simulate_async_step(scenario: Scenario, collectives: CollectiveModel) -> StepResult:
    """Analytical: one round (every worker one iteration) takes ``max(T_w, T_s)``."""
    base = simulate_step(scenario, collectives)
    cost = async_cost(scenario, collectives, base)
    result = _as_async(base, cost, cost.period_s, [])
    return check_result(replace(result, parameter_server=summary(cost, base)), analytical=True)


def analytical_step(scenario: Scenario, collectives: CollectiveModel) -> StepResult:
    """The analytical step of any scenario: :func:`simulate_async_step` for
    ``training.sync: async``, else :func:`~simulator.engine.analytical.simulate_step`."""
    if scenario.training.sync.value == "async":
        return simulate_async_step(scenario, collectives)
    return simulate_step(scenario, collectives)


def simulate_async_des(scenario: Scenario, collectives: CollectiveModel, steps: int | None = None,
                       seed: int | None = None) -> StepResult:
    """Replay ``steps`` iterations of every worker under the scenario's noise (see the
    module docstring); the result's step is the round (:attr:`Replay.round_s`), its
    percentiles those of the workers' iterations, and ``parameter_server`` holds the staleness seen and the
    synchronous comparisons."""
    steps = steps or scenario.simulate.steps
    base = simulate_step(scenario, collectives)
    cost = async_cost(scenario, collectives, base)
    ctx = make_context(scenario, collectives)
    plan = step_plan(ctx, base, contention=False)
    source = NoiseSource(ctx, plan, base.step_time_s,
                         scenario.simulate.seed if seed is None else seed)
    compute, synced = [], []
    for block in source.blocks(steps):
        compute.append(replica_times(ctx, plan, block))
        synced.append(step_times(ctx, plan, block))
    compute = np.concatenate(compute)
    bounded, bsp = replay(cost, compute, cost.staleness), replay(cost, compute, 0)
    result = _as_async(base, cost, bounded.round_s, bounded.iterations_s.tolist())
    info = {**summary(cost, base), **bounded.summary(), "des_steps": steps,
            "sync_allreduce_step_s": float(np.mean(np.concatenate(synced))),
            "bulk_synchronous_round_s": bsp.round_s}
    engine = "des (async parameter servers)"
    result = replace(result, parameter_server=info, engine=engine,
                     contention_and_noise_s=bounded.round_s - cost.period_s)
    return check_result(result, analytical=False)


@dataclass(frozen=True)
class Replay:
    """What one replay saw: each worker iteration's length (apply to apply), the staleness
    of every applied gradient, the gradients applied by ``horizon_s`` (when the first worker
    ends its iterations, so that every worker was running until then), and the seconds a
    worker waited at the staleness gate on average.

    ``round_s = workers * horizon_s / applied``: the time per ``workers`` gradients, one
    synchronous step's worth, while all workers run.
    """

    iterations_s: np.ndarray
    staleness: np.ndarray
    horizon_s: float
    applied: float
    """Gradients applied by ``horizon_s``, counting the running iteration of each worker by
    the share of it already elapsed (no edge effect from the workers' staggered starts)."""
    workers: int
    gated_s: float

    @property
    def round_s(self) -> float:
        return self.workers * self.horizon_s / self.applied

    def summary(self) -> dict:
        stale = self.staleness
        p50, p95, p99 = (float(x) for x in np.percentile(stale, [50, 95, 99]))
        counts = np.bincount(stale)
        return {"staleness_mean": float(stale.mean()), "staleness_p50": p50,
                "staleness_p95": p95, "staleness_p99": p99, "staleness_max": int(stale.max()),
                "staleness_counts": {int(v): int(c) for v, c in enumerate(counts) if c},
                "gated_s": self.gated_s}


def replay(cost: AsyncCost, compute: np.ndarray, staleness: int) -> Replay:
    """Event replay of ``compute`` (iterations x workers, seconds) with bound ``staleness``."""
    env = simpy.Environment()
    pushes, pulls = simpy.Resource(env, 1), simpy.Resource(env, 1)
    steps, workers = compute.shape
    state = {"version": 0, "advanced": env.event()}
    clocks = [0] * workers
    seen: list[int] = []
    applied: list[list[float]] = [[] for _ in range(workers)]
    gated = [0.0]

    def worker(r: int):
        for k in range(steps):
            arrived = env.now
            while min(clocks) < k - staleness:
                yield state["advanced"]
            gated[0] += env.now - arrived
            with pulls.request() as request:
                yield request
                version = state["version"]
                yield env.timeout(cost.server_pull_s)
            yield env.timeout(cost.pull_s - cost.server_pull_s + float(compute[k, r]))
            with pushes.request() as request:
                yield request
                yield env.timeout(cost.server_push_s)
            yield env.timeout(cost.push_s - cost.server_push_s)
            seen.append(state["version"] - version)
            state["version"] += 1
            applied[r].append(env.now)
            clocks[r] += 1
            done, state["advanced"] = state["advanced"], env.event()
            done.succeed()

    for r in range(workers):
        env.process(worker(r))
    env.run()
    times = np.concatenate([np.diff([0.0, *a]) for a in applied])
    horizon = min(a[-1] for a in applied)
    count = sum(_progress(a, horizon) for a in applied)
    return Replay(times, np.asarray(seen, dtype=np.int64), horizon, count, workers,
                  gated[0] / workers)


def _progress(applied: list[float], horizon: float) -> float:
    """Iterations of one worker done by ``horizon``: whole ones plus the elapsed share of the
    running one."""
    done = int(np.searchsorted(applied, horizon, side="right"))
    if done == len(applied):
        return float(done)
    previous = applied[done - 1] if done else 0.0
    return done + (horizon - previous) / (applied[done] - previous)


def summary(cost: AsyncCost, base: StepResult) -> dict:
    """The analytical figures: both periods, which bounds, the parts, the synchronous step."""
    return {"workers": cost.workers, "servers": cost.servers, "staleness_bound": cost.staleness,
            "bound": cost.bound, "worker_period_s": cost.worker_period_s,
            "server_period_s": cost.server_period_s, "compute_s": cost.compute_s,
            "push_s": cost.push_s, "pull_s": cost.pull_s, "sync_step_s": base.step_time_s}


def _as_async(base: StepResult, cost: AsyncCost, round_s: float, times: list[float]) -> StepResult:
    """``base`` (the synchronous step) re-timed to one asynchronous round of ``round_s``:
    push and pull are the data-parallel communication, the optimizer runs on the servers."""
    scale = base.step_time_s / round_s
    exposed = max(0.0, round_s - base.pipeline_s)
    dims = {**base.exposed_by_dimension, "dp": exposed}
    p50, p95, p99 = ((float(x) for x in np.percentile(times, [50, 95, 99])) if times
                     else (round_s,) * 3)
    return replace(base, step_time_s=round_s, step_time_p50_s=p50, step_time_p95_s=p95,
                   step_time_p99_s=p99, tokens_per_s=base.tokens_per_s * scale,
                   model_flops_per_gpu=base.model_flops_per_gpu * scale,
                   hardware_flops_per_gpu=base.hardware_flops_per_gpu * scale,
                   mfu=base.mfu * scale, dp_comm_s=cost.push_s + cost.pull_s,
                   dp_comm_exposed_s=exposed,
                   comm_exposed_s=base.comm_exposed_s - base.dp_comm_exposed_s + exposed,
                   exposed_by_dimension=dims, optimizer_s=0.0, step_times_s=times)
