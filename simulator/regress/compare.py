"""Compare a scenario predicted now with its baseline, metric by metric.

A number drifts when ``|now - baseline| > rtol * |baseline|`` (plus :data:`ATOL` so that
two zeros, or round-off around zero, agree); a flag or a status drifts when it changes;
a metric present on one side only drifts too (the baseline was written by another
clustersim: rewrite it with ``--update``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError
from simulator.regress.baseline import Baseline, Tolerances, tolerance_for
from simulator.regress.measure import Measured

ATOL = 1e-12
"""Absolute slack added to every relative tolerance (round-off around zero)."""


@dataclass(frozen=True)
class Drift:
    """One metric outside its tolerance.

    Attributes
    ----------
    scenario : str
        The scenario file's stem (the baseline's name).
    metric : str
        A step metric, or ``scale.NAME`` for a point of the curve.
    gpus : int or None
        The curve point's GPU count; None for a step metric.
    baseline, now : value
        The stored and the predicted value (None where one side has none).
    rtol : float
        The tolerance that was applied.
    """

    scenario: str
    metric: str
    gpus: int | None
    baseline: Any
    now: Any
    rtol: float

    @property
    def change(self) -> str:
        """The change as text: ``+2.31%``, or ``a -> b`` for values that are not numbers."""
        if _is_number(self.baseline) and _is_number(self.now):
            if self.baseline == 0:
                return f"{self.now - self.baseline:+.3g} (from 0)"
            return f"{(self.now - self.baseline) / abs(self.baseline):+.2%}"
        return f"{value_text(self.baseline)} -> {value_text(self.now)}"


def compare(stem: str, baseline: Baseline, measured: Measured, cli: Tolerances) -> list[Drift]:
    """Every metric of ``measured`` that drifted from ``baseline`` (empty: all within)."""
    stored = baseline.tolerances
    drifts = _compare_mapping(stem, None, "", baseline.step, measured.step, cli, stored)
    now = dict(measured.scaling)
    for point in baseline.scaling:
        if point.gpus in now:
            drifts += _compare_mapping(stem, point.gpus, "scale.", point.metrics, now[point.gpus],
                                       cli, stored)
    return drifts


def check_points(baseline: Baseline, gpus: list[int], source: str) -> None:
    """Refuse ``--gpus`` counts that the baseline has no point for.

    Raises
    ------
    ConfigError
        Naming the missing counts and how to add them.
    """
    missing = sorted(set(gpus) - set(baseline.gpus))
    if missing:
        have = ", ".join(map(str, baseline.gpus)) or "none"
        raise ConfigError(f"no curve point at {', '.join(map(str, missing))} GPUs (the baseline has "
                          f"{have}); add them with --update --gpus", source, "scaling")


def _compare_mapping(stem: str, gpus: int | None, prefix: str, stored: dict[str, Any],
                     now: dict[str, Any], cli: Tolerances, tolerances: Tolerances) -> list[Drift]:
    drifts = []
    for name in sorted(set(stored) | set(now)):
        metric = prefix + name
        rtol = tolerance_for(metric, cli, tolerances)
        old, new = stored.get(name), now.get(name)
        if not within(old, new, rtol):
            drifts.append(Drift(stem, metric, gpus, old, new, rtol))
    return drifts


def within(old: Any, new: Any, rtol: float) -> bool:
    """Whether ``new`` agrees with ``old``: numbers within ``rtol``, anything else equal."""
    if _is_number(old) and _is_number(new):
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        return abs(new - old) <= rtol * abs(old) + ATOL
    return old == new


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
