"""Sweeps over a scenario: the same training job on other cluster sizes."""

from simulator.sweep.scale import ScalePoint, plan_points, scale_sweep, simulate_point

__all__ = ["ScalePoint", "plan_points", "scale_sweep", "simulate_point"]
