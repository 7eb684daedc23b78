"""Issue #10 speed of ``clustersim search``: layouts per second for GPT-3 175B on 1,024 A100
(the default search space of the scenario), cold and warm, in this process and on Dask
LocalClusters of 1 and 2 single-threaded workers.

- cold: the first search after the scenario is opened (routes, collective prices and
  kernel prices computed on first use);
- warm: the same search again in the same process, given the first one's session cache
  (those caches filled), the best of three. On Dask, the first search includes each
  worker building its cluster; the second reuses it (each worker keeps its own cache).

Wall-clock rates are given with CPU rates (``*_per_cpu_s``: layouts per second of this
process's CPU time; on Dask ``*_per_worker_cpu_s``, of the workers' CPU time summed), since
other jobs on a shared machine slow the wall clock.

The target of the issue is 10,000 layouts/s on one core; see docs/search.md for where
the time goes.

Usage: python benchmarks/bench_search.py [--no-dask]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from simulator.pipeline import open_scenario
from simulator.sweep.search import search
from simulator.sweep.session_cache import SessionCache

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml"


def _timed(scenario, **kwargs) -> tuple[float, int, int]:
    start = time.perf_counter()
    result = search(scenario, **kwargs)
    return time.perf_counter() - start, len(result.frame), int(result.frame["feasible"].sum())


def _cpu_timed(scenario, **kwargs) -> tuple[float, float, int, int]:
    """(wall seconds, this process's CPU seconds, layouts, feasible) of one search: on a
    shared machine the CPU time is what one core spends, whatever else runs."""
    start = time.process_time()
    wall, layouts, feasible = _timed(scenario, **kwargs)
    return wall, time.process_time() - start, layouts, feasible


def one_core(repeat: int = 3) -> dict:
    """Cold once, warm the best of ``repeat`` searches (the least disturbed by other jobs),
    the warm ones given the cold one's session cache, as a notebook would."""
    scenario = open_scenario(SCENARIO).scenario
    cache = SessionCache()
    cold, cold_cpu, layouts, feasible = _cpu_timed(scenario, cache=cache)
    runs = [_cpu_timed(scenario, cache=cache) for _ in range(repeat)]
    warm, warm_cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    return {"layouts": layouts, "feasible": feasible, "cold_layouts_per_s": layouts / cold,
            "warm_layouts_per_s": layouts / warm, "cold_layouts_per_cpu_s": layouts / cold_cpu,
            "warm_layouts_per_cpu_s": layouts / warm_cpu}


def _workers_cpu(client) -> float:
    """CPU seconds the Dask workers' processes have used so far, summed."""
    return sum(client.run(time.process_time).values())


def dask_workers(workers: int) -> dict:
    import distributed

    scenario = open_scenario(SCENARIO).scenario
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.run(lambda: __import__("simulator.sweep.search"))        # import once per worker
        start = _workers_cpu(client)
        cold, layouts, _ = _timed(scenario, client=client)
        middle = _workers_cpu(client)
        warm, _, _ = _timed(scenario, client=client)
        end = _workers_cpu(client)
    return {"workers": workers, "layouts": layouts, "cold_layouts_per_s": layouts / cold,
            "warm_layouts_per_s": layouts / warm,
            "cold_layouts_per_worker_cpu_s": layouts / (middle - start),
            "warm_layouts_per_worker_cpu_s": layouts / (end - middle)}


if __name__ == "__main__":
    print(json.dumps({"search_one_core": one_core()}))
    if "--no-dask" not in sys.argv:
        for count in (1, 2):
            print(json.dumps({f"search_dask_{count}_workers": dask_workers(count)}))
