"""Issue #4: straggler amplification. The same per-GPU noise (lognormal jitter, sigma 0.02,
and a 1.5x throttle with probability 2e-4 per GPU and step) on 8, 32, 128 and 512 A100
(Megatron 7.5B, tp 8, pp 1, 2 sequences per replica per step), 1,000 steps each: p50, p95,
p99 and p99/p50 of the step. Without noise p99/p50 is exactly 1 (tests/test_des.py).

Usage: python benchmarks/des_stragglers.py
"""

from __future__ import annotations

import time

from simulator.config import scenario_from_mapping
from simulator.engine.des import simulate_steps_des
from simulator.pipeline import session_from_scenario


def _session(nodes: int):
    data = {"name": f"{8 * nodes}xA100", "cluster": {
        "node": "dgx-a100-80gb", "nodes": nodes,
        "fabric": {"topology": "fat-tree", "link": "ib-hdr", "switch_radix": 16}},
        "model": {"preset": "megatron-7.5b"},
        "training": {"global_batch": 16 * nodes, "micro_batch": 1},
        "parallelism": {"tp": 8, "pp": 1},
        "simulate": {"engine": "des", "steps": 1000, "seed": 0},
        "noise": {"straggler": {"distribution": "lognormal", "sigma": 0.02},
                  "throttle": {"probability": 2e-4, "factor": 1.5}}}
    return session_from_scenario(scenario_from_mapping(data, "<benchmark>"))


if __name__ == "__main__":
    print("| GPUs | p50 (s) | p95 (s) | p99 (s) | p99/p50 | wall (s) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for nodes in (1, 4, 16, 64):
        session = _session(nodes)
        start = time.perf_counter()
        r = simulate_steps_des(session.scenario, session.collectives)
        wall = time.perf_counter() - start
        print(f"| {8 * nodes} | {r.step_time_p50_s:.4f} | {r.step_time_p95_s:.4f} | "
              f"{r.step_time_p99_s:.4f} | {r.step_time_p99_s / r.step_time_p50_s:.3f} | {wall:.1f} |",
              flush=True)
