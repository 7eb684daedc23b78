"""Issue #4 targets for the discrete-event engine.

1. GPT-3 175B on 1,024 A100 (TP 8, PP 8, DP 16, 1F1B, batch 1536, microbatch 1), one step at
   the finest fidelity clustersim has (per-transfer: every rank's pipeline sends and every
   step of the gradient collectives as flows with link contention): <= 60 s, <= 4 GB.
2. >= 300,000 simulated events per second, against raw simpy's ~1,000,000 timeouts/s.
   Reported per second of the event loop (``Environment.run``; set-up, pricing and routing
   are in ``seconds``), counted two ways: simpy events scheduled, and model events (compute
   tasks plus transfers: every flow with contention, every send without). The raw simpy
   rate of this machine is measured first, as the reference.
3. Llama 3 405B on 16,384 H100 at the coarse fidelity (tp-collapsed): <= 5 minutes (the
   finest, per-transfer, is run too, for reference).

Usage: python benchmarks/bench_des.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import simpy
from _common import peak_rss_gib

from simulator.engine.context import make_context
from simulator.engine.des import simulate_steps_des
from simulator.engine.flows import FlowNetwork
from simulator.pipeline import open_scenario
from simulator.workload.taskgraph import compiled_graph

ROOT = Path(__file__).resolve().parent.parent


class _EventCounter:
    """Counts the events simpy schedules, read from each environment's event-id counter
    after the run (no per-event overhead; benchmark only, uses simpy's private ``_eid``),
    and the wall time spent inside ``Environment.run`` (the event loop, set-up excluded)."""

    def __init__(self):
        self.environments: list[simpy.Environment] = []
        self.networks: list[FlowNetwork] = []
        self.loop_seconds = 0.0
        self._original = simpy.Environment.__init__
        self._network = FlowNetwork.__init__
        self._run = simpy.Environment.run

    @property
    def count(self) -> int:
        return sum(next(env._eid) for env in self.environments)

    def __enter__(self):
        counter = self

        def init(env, *args, **kwargs):
            counter._original(env, *args, **kwargs)
            counter.environments.append(env)

        def run(env, *args, **kwargs):
            start = time.perf_counter()
            try:
                return counter._run(env, *args, **kwargs)
            finally:
                counter.loop_seconds += time.perf_counter() - start

        def network(net, *args, **kwargs):
            counter._network(net, *args, **kwargs)
            counter.networks.append(net)

        simpy.Environment.__init__ = init
        simpy.Environment.run = run
        FlowNetwork.__init__ = network
        return self

    def __exit__(self, *exc):
        simpy.Environment.__init__ = self._original
        simpy.Environment.run = self._run
        FlowNetwork.__init__ = self._network


def raw_simpy_timeouts_per_s(total: int = 500_000) -> float:
    """Reference: bare simpy processes doing nothing but ``yield env.timeout(1)``."""
    env = simpy.Environment()

    def sleeper(count: int):
        for _ in range(count):
            yield env.timeout(1.0)

    for _ in range(5):
        env.process(sleeper(total // 5))
    start = time.perf_counter()
    env.run()
    return total / (time.perf_counter() - start)


def model_events(ctx, counter_networks, contention: bool) -> int:
    """Compute tasks plus transfers (each flow, or each send without contention)."""
    par, lay = ctx.scenario.parallelism, ctx.layout
    graph = compiled_graph(par.schedule, lay.pp, ctx.microbatches, par.virtual_stages)
    tasks = lay.dp * sum(len(ids) for ids in graph.ids)
    if contention:
        return tasks + sum(n.flows_started for n in counter_networks)
    return tasks + lay.dp * int(sum(s.sum() for s in graph.sends)) + lay.pp

def one_step(name: str, fidelity: str, contention: bool = True) -> dict:
    session = open_scenario(ROOT / "scenarios" / f"{name}.yaml")
    simulate = session.scenario.simulate.model_copy(update={"fidelity": fidelity})
    scenario = session.scenario.model_copy(update={"simulate": simulate})
    with _EventCounter() as counter:
        start = time.perf_counter()
        result = simulate_steps_des(scenario, session.collectives, steps=1, contention=contention)
        elapsed = time.perf_counter() - start
    modelled = model_events(make_context(scenario, session.collectives), counter.networks,
                            contention)
    loop = counter.loop_seconds
    return {"scenario": name, "fidelity": fidelity, "contention": contention,
            "seconds": round(elapsed, 3), "event_loop_s": round(loop, 3),
            "simpy_events": counter.count, "simpy_events_per_s": round(counter.count / loop),
            "model_events": modelled, "model_events_per_s": round(modelled / loop),
            "step_time_s": result.step_time_s, "peak_rss_GiB": round(peak_rss_gib(), 3)}


if __name__ == "__main__":
    print(json.dumps({"raw_simpy_timeouts_per_s": round(raw_simpy_timeouts_per_s())}))
    print(json.dumps(one_step("gpt3-175b-1024xA100", "per-transfer")))
    print(json.dumps(one_step("gpt3-175b-1024xA100", "per-rank")))
    print(json.dumps(one_step("gpt3-175b-1024xA100", "tp-collapsed", contention=False)))
    print(json.dumps(one_step("llama3-405b-16384xH100", "tp-collapsed")))
    print(json.dumps(one_step("llama3-405b-16384xH100", "per-transfer")))
