"""Issue #2 targets for the cost core.

1. One 1 GiB all-reduce over 4,096 GPUs (512 DGX H100 on an NDR fat-tree),
   cluster build + routing + schedule + auto choice included: <= 1 s.
2. >= 1,000,000 (algorithm, size) evaluations per second on a 1,024-GPU group
   once routes are built (``CollectiveModel.sweep`` over many sizes).

Usage: python benchmarks/bench_collectives.py
"""

from __future__ import annotations

import json
import time

import numpy as np
from _common import cluster_hw, timed

from simulator.collectives import Op, whole_cluster
from simulator.cost import CollectiveModel
from simulator.topology import build_cluster


def one_allreduce_4096() -> dict:
    results: dict = {}
    hw = cluster_hw("dgx-h100", 512, "ib-ndr")
    with timed("total_s", results):
        model = CollectiveModel(build_cluster(hw))
        sweep = model.sweep(Op.ALL_REDUCE, None, whole_cluster(model.cluster), [2**30])
    results.update(algorithm=str(sweep.algorithm[0]), time_s=float(sweep.time_s[0]),
                   busbw_GBps=float(sweep.busbw_Bps[0]) / 1e9)
    return results


def evaluations_per_second_1024() -> dict:
    model = CollectiveModel(build_cluster(cluster_hw("dgx-h100", 128, "ib-ndr")))
    group = whole_cluster(model.cluster)
    model.sweep(Op.ALL_REDUCE, None, group, [1.0])          # routes and schedules built here
    sizes = np.logspace(0, 34, 1_000_000, base=2.0)
    start = time.perf_counter()
    sweep = model.sweep(Op.ALL_REDUCE, None, group, sizes)
    elapsed = time.perf_counter() - start
    candidates = len(model.terms(Op.ALL_REDUCE, None, group))
    return {"sizes": sizes.size, "candidates": candidates, "seconds": elapsed,
            "evaluations_per_s": sizes.size * candidates / elapsed,
            "chosen": sorted(set(sweep.algorithm.tolist()))}


if __name__ == "__main__":
    print(json.dumps({"allreduce_1GiB_4096gpus": one_allreduce_4096()}))
    print(json.dumps({"evaluations_1024gpus": evaluations_per_second_1024()}))
