"""Sweeps over a scenario: the same training job on other cluster sizes (``scale``), and
the search over its layouts and hardware (``search``; on Dask with ``dask_runner``)."""

from simulator.sweep.scale import ScalePoint, plan_points, scale_sweep, simulate_point
from simulator.sweep.search import SearchResult, parse_sets, search, why_best

__all__ = ["ScalePoint", "SearchResult", "parse_sets", "plan_points", "scale_sweep", "search",
           "simulate_point", "why_best"]
