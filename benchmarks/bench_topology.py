"""Issue #2 targets: build a 1,024-GPU cluster in <= 2 s; 16,384 GPUs in <= 60 s and <= 4 GB.

Usage: python benchmarks/bench_topology.py [gpus ...]   (default 1024 16384)
Each size runs in a fresh process so peak memory is per build.
"""

from __future__ import annotations

import json
import subprocess
import sys

from _common import cluster_hw, peak_rss_gib, timed

from simulator.topology import build_cluster


def one(gpus: int) -> dict:
    results: dict = {}
    hw = cluster_hw("dgx-h100", gpus // 8, "ib-ndr")
    with timed("build_s", results):
        cluster = build_cluster(hw)
    results.update(gpus=gpus, vertices=cluster.graph.number_of_nodes(),
                   edges=cluster.graph.number_of_edges(), peak_rss_GiB=round(peak_rss_gib(), 3))
    return results


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        sys.exit(0)
    for size in [int(a) for a in sys.argv[1:]] or [1024, 16384]:
        done = subprocess.run([sys.executable, __file__, "--one", str(size)], check=True,
                              capture_output=True, text=True)
        print(done.stdout.strip())
