"""Issue #4 targets for the discrete-event engine.

1. GPT-3 175B on 1,024 A100 (TP 8, PP 8, DP 16, 1F1B, batch 1536, microbatch 1), one step at
   the finest fidelity clustersim has (per-transfer: every rank's pipeline sends and every
   step of the gradient collectives as flows with link contention): <= 60 s, <= 4 GB.
2. >= 300,000 simulated events per second (events = simpy events scheduled; wall time of
   the whole call, set-up included).
3. Llama 3 405B on 16,384 H100 at the coarse fidelity (tp-collapsed): <= 5 minutes.

Usage: python benchmarks/bench_des.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import simpy
from _common import peak_rss_gib

from simulator.engine.des import simulate_steps_des
from simulator.pipeline import open_scenario

ROOT = Path(__file__).resolve().parent.parent


class _EventCounter:
    """Counts the events simpy schedules, read from each environment's event-id counter
    after the run (no per-event overhead; benchmark only, uses simpy's private ``_eid``)."""

    def __init__(self):
        self.environments: list[simpy.Environment] = []
        self._original = simpy.Environment.__init__

    @property
    def count(self) -> int:
        return sum(next(env._eid) for env in self.environments)

    def __enter__(self):
        counter = self

        def init(env, *args, **kwargs):
            counter._original(env, *args, **kwargs)
            counter.environments.append(env)

        simpy.Environment.__init__ = init
        return self

    def __exit__(self, *exc):
        simpy.Environment.__init__ = self._original


def one_step(name: str, fidelity: str, contention: bool = True) -> dict:
    session = open_scenario(ROOT / "scenarios" / f"{name}.yaml")
    simulate = session.scenario.simulate.model_copy(update={"fidelity": fidelity})
    scenario = session.scenario.model_copy(update={"simulate": simulate})
    with _EventCounter() as counter:
        start = time.perf_counter()
        result = simulate_steps_des(scenario, session.collectives, steps=1, contention=contention)
        elapsed = time.perf_counter() - start
    return {"scenario": name, "fidelity": fidelity, "contention": contention,
            "seconds": elapsed, "events": counter.count, "events_per_s": counter.count / elapsed,
            "step_time_s": result.step_time_s, "peak_rss_GiB": round(peak_rss_gib(), 3)}


if __name__ == "__main__":
    print(json.dumps(one_step("gpt3-175b-1024xA100", "per-transfer")))
    print(json.dumps(one_step("gpt3-175b-1024xA100", "per-rank")))
    print(json.dumps(one_step("gpt3-175b-1024xA100", "tp-collapsed", contention=False)))
    print(json.dumps(one_step("llama3-405b-16384xH100", "tp-collapsed")))
