"""Issue 15, item 6: statistics need hundreds of noisy steps.

GPT-3 175B on 1,024 A100 (scenarios/gpt3-175b-1024xA100.yaml: tp 8, pp 8, dp 16, 96
microbatches), lognormal jitter sigma 0.02 and a 1.5x throttle with probability 2e-4 per GPU
and step; 1,000 steps. Targets: <= 2 s on the max-plus fast path (contention off), <= 60 s
with the event replay (contention on); memory bounded as steps grow.

Measured here:
1. fast path, 1,000 steps (and 10,000, for memory: the peak RSS must not grow with steps);
2. the event replay without contention (what ``simulate_steps_des`` ran before the fast path
   existed), ``--event-steps`` steps, extrapolated to 1,000;
3. the event replay with contention (tp-collapsed), ``--event-steps`` steps, extrapolated.
Set-up (pricing, routes) is timed once and reported apart. ``--full`` runs 1,000 event steps;
``--contention-only`` runs only row 3 (with ``--full``: the target's 1,000 steps, measured).

The contention-on replay evaluates each step's contention-free prefix with the max-plus
recurrence and replays events only after it (simulator/engine/des_prefix.py).

Usage: python benchmarks/bench_stragglers_fast.py [--event-steps 20] [--full] [--contention-only]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import peak_rss_gib

from simulator.engine.des import simulate_steps_des
from simulator.pipeline import open_scenario

ROOT = Path(__file__).resolve().parent.parent
NOISE = {"straggler": {"distribution": "lognormal", "sigma": 0.02},
         "throttle": {"probability": 2e-4, "factor": 1.5}}


def _session():
    session = open_scenario(ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml")
    scenario = session.scenario.model_copy(update={"noise": session.scenario.noise.model_validate(NOISE)})
    return scenario, session.collectives


def _run(scenario, collectives, steps: int, contention: bool, path: str) -> tuple[float, list[float]]:
    start = time.perf_counter()
    result = simulate_steps_des(scenario, collectives, steps=steps, contention=contention, path=path)
    return time.perf_counter() - start, result.step_times_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--event-steps", type=int, default=20)
    parser.add_argument("--full", action="store_true", help="run 1,000 steps on the event paths too")
    parser.add_argument("--contention-only", action="store_true",
                        help="only the event replay with contention (row 3)")
    args = parser.parse_args()
    event_steps = 1000 if args.full else args.event_steps
    scenario, collectives = _session()
    setup = {c: _run(scenario, collectives, 1, c, "event")[0] for c in (False, True)}
    print("| what | steps run | wall (s) | per 1,000 steps (s) | target | peak RSS (GiB) |")
    print("|---|---:|---:|---:|---|---:|")
    rows = (("event replay, contention off (before)", False), ("event replay, contention on", True))
    if args.contention_only:
        _event_rows(scenario, collectives, setup, event_steps, rows[1:], None)
        return
    wall, fast = _run(scenario, collectives, 1000, False, "fast")
    print(f"| fast path (contention off) | 1000 | {wall:.2f} | {wall:.2f} | <= 2 s: "
          f"{'met' if wall <= 2 else 'not met'} | {peak_rss_gib():.2f} |", flush=True)
    wall10, _ = _run(scenario, collectives, 10_000, False, "fast")
    print(f"| fast path (contention off) | 10000 | {wall10:.2f} | {wall10 / 10:.2f} | memory bounded | "
          f"{peak_rss_gib():.2f} |", flush=True)
    _event_rows(scenario, collectives, setup, event_steps, rows, fast)
    print(f"\nset-up per run: {setup[False]:.2f} s (contention off), {setup[True]:.2f} s (on); "
          f"fast path p50 {np.median(fast):.3f} s, p99 {np.percentile(fast, 99):.3f} s, "
          f"p99/p50 {np.percentile(fast, 99) / np.median(fast):.3f}")


def _event_rows(scenario, collectives, setup: dict, event_steps: int, rows, fast) -> None:
    """The event replay's rows: wall, and per 1,000 steps extrapolated (set-up counted once)."""
    for label, contention in rows:
        wall, times = _run(scenario, collectives, event_steps, contention, "event")
        per = (wall - setup[contention]) / event_steps * 1000 + setup[contention]
        target = f"<= 60 s: {'met' if per <= 60 else 'not met'}" if contention else "-"
        print(f"| {label} | {event_steps} | {wall:.2f} | {per:.0f} | {target} | {peak_rss_gib():.2f} |",
              flush=True)
        if not contention:
            same = np.array_equal(np.array(times), np.array(fast[:event_steps]))
            print(f"|   (same {event_steps} steps as the fast path: {same}) | | | | | |")


if __name__ == "__main__":
    main()
