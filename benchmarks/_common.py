"""Shared helpers for the benchmark scripts (run them directly: python benchmarks/bench_x.py)."""

from __future__ import annotations

import resource
import time
from contextlib import contextmanager

from simulator.config import HardwareLibrary, resolve_cluster
from simulator.config.loader import scenario_from_mapping


def cluster_hw(node: str, nodes: int, link: str, topology: str = "fat-tree"):
    """Resolved hardware of ``nodes`` x ``node`` on a ``topology`` of ``link``."""
    data = {"name": f"{nodes}x{node}", "cluster": {
        "node": node, "nodes": nodes, "fabric": {"topology": topology, "link": link}}}
    library = HardwareLibrary()
    return resolve_cluster(scenario_from_mapping(data, "<benchmark>", library).cluster, library)


@contextmanager
def timed(label: str, results: dict):
    start = time.perf_counter()
    yield
    results[label] = time.perf_counter() - start


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
