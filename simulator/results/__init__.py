"""Result records of a simulated step and the metrics derived from them."""

from simulator.results.step import StageBreakdown, StepResult

__all__ = ["StageBreakdown", "StepResult"]
