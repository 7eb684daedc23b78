"""Regression gate: scenarios' predictions against baselines kept in a folder
(``clustersim regress``)."""

from simulator.regress.baseline import Baseline, Tolerances, read_baseline, write_baseline
from simulator.regress.compare import Drift, compare
from simulator.regress.runner import Outcome, run_regress

__all__ = ["Baseline", "Drift", "Outcome", "Tolerances", "compare", "read_baseline", "run_regress",
           "write_baseline"]
