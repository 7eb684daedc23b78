"""Issue #4: the error of each discrete-event fidelity level against the finest.

For each case, one step with link contention at every level of ``simulate.fidelity``
(per-transfer, per-rank, tp-collapsed); prints the step time, its error against
per-transfer and the wall time of each run, as a markdown table (docs/engines.md).

Usage: python benchmarks/des_fidelity.py
"""

from __future__ import annotations

import time
from pathlib import Path

from simulator.config import scenario_from_mapping
from simulator.engine.des import simulate_steps_des
from simulator.pipeline import open_scenario, session_from_scenario

ROOT = Path(__file__).resolve().parent.parent
LEVELS = ("per-transfer", "per-rank", "tp-collapsed")


def _fat_tree_case(ratio: float, node: str = "dgx-a100-80gb"):
    """64 A100 (8 servers), Megatron 7.5B with tp 2, pp 4, dp 8 on a radix-16 fat-tree."""
    data = {"name": f"64xA100 {ratio:g}:1", "cluster": {
        "node": node, "nodes": 8,
        "fabric": {"topology": "fat-tree", "link": "ib-hdr", "oversubscription": ratio,
                   "switch_radix": 16}},
        "model": {"preset": "megatron-7.5b"}, "training": {"global_batch": 128, "micro_batch": 1},
        "parallelism": {"tp": 2, "pp": 4}}
    return session_from_scenario(scenario_from_mapping(data, "<benchmark>"))


def _cases():
    yield "GPT-3 175B, 1,024 A100, fat-tree 1:1", open_scenario(
        ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml")
    yield "Llama 3 70B, 1,024 H100", open_scenario(ROOT / "scenarios" / "llama3-70b-1024xH100.yaml")
    yield "Llama 3 8B, 64 H100 (pp 1)", open_scenario(ROOT / "scenarios" / "llama3-8b-64xH100.yaml")
    yield ("Mixtral 8x7B, 64 H100 (ep 8 across 2 servers), rail-optimized",
           open_scenario(ROOT / "scenarios" / "mixtral-8x7b-64xH100.yaml"))
    for ratio in (1.0, 2.0, 4.0):
        yield f"Megatron 7.5B, 64 A100 (tp 2, pp 4), fat-tree {ratio:g}:1", _fat_tree_case(ratio)
    yield ("Megatron 7.5B, 64 PCIe A100 (4 NICs per 8 GPUs), fat-tree 1:1",
           _fat_tree_case(1.0, "pcie-a100x8"))


def _step(session, level: str) -> tuple[float, float]:
    simulate = session.scenario.simulate.model_copy(update={"fidelity": level})
    scenario = session.scenario.model_copy(update={"simulate": simulate})
    start = time.perf_counter()
    step = simulate_steps_des(scenario, session.collectives, steps=1, contention=True).step_time_s
    return step, time.perf_counter() - start


if __name__ == "__main__":
    print("| case | level | step (s) | error vs per-transfer | wall (s) |")
    print("|---|---|---:|---:|---:|")
    for name, session in _cases():
        reference = None
        for level in LEVELS:
            step, wall = _step(session, level)
            reference = reference or step
            print(f"| {name} | {level} | {step:.5f} | {100 * (step / reference - 1):+.3f}% "
                  f"| {wall:.2f} |", flush=True)
