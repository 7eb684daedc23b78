"""What ``clustersim regress`` compares: a scenario's step metrics and its scaling curve,
predicted now by the analytical engine.

The step is the scenario as written (its ``calibration:`` overlay applied); the curve is
:func:`simulator.sweep.scale.scale_sweep` (strong scaling, tp, pp, cp and ep kept) at the
baseline's GPU counts. A scenario whose ``simulate.engine`` is ``des`` is compared on the
analytical engine too: the DES adds sampled noise, which a regression gate should not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config import HardwareLibrary, Scenario, resolve_cluster, scenario_from_mapping
from simulator.config.scenario import Engine
from simulator.engine.async_ps import analytical_step
from simulator.errors import ConfigError
from simulator.pipeline import load_with_calibration, session_from_scenario
from simulator.regress.baseline import rounded
from simulator.sweep.scale import OK, plan_points, scale_records, scale_sweep

STEP_METRICS = ["step_time_s", "tokens_per_s", "mfu", "hardware_flops_per_gpu", "bubble_fraction",
                "comm_exposed_s", "dp_comm_exposed_s", "optimizer_s", "memory_per_gpu_bytes",
                "fits_in_memory"]
"""Fields of :class:`~simulator.results.StepResult` kept in a baseline, plus ``exposed_<dim>_s``."""
CURVE_METRICS = ["step_time_s", "tokens_per_s_per_gpu", "mfu", "bubble_fraction", "comm_exposed_s",
                 "memory_per_gpu_bytes", "fits_in_memory", "status"]
"""Columns of :func:`~simulator.sweep.scale.scale_sweep` kept per point of the curve."""
SMALLER_POINTS = 2
"""GPU counts below the scenario's own that a new baseline stores (halving each time)."""


@dataclass(frozen=True)
class Measured:
    """One scenario predicted now.

    Attributes
    ----------
    name : str
        The scenario's ``name``.
    step : dict
        :data:`STEP_METRICS` (and exposed communication per dimension), rounded.
    scaling : list of (int, dict)
        Per GPU count, :data:`CURVE_METRICS`, rounded.
    """

    name: str
    step: dict[str, Any]
    scaling: list[tuple[int, dict[str, Any]]]


def _exposed(dim: str) -> str:
    """The baseline's name of the communication exposed in parallel dimension ``dim``."""
    return f"exposed_{dim}_s"


def metric_names() -> list[str]:
    """The names ``regress --rtol-metric`` takes: the step metrics a baseline holds (exposed
    communication per dimension included) and the curve's, alone or as ``scale.NAME``."""
    from simulator.measure.breakdown import DIMENSIONS

    step = [*STEP_METRICS, *(_exposed(dim) for dim in DIMENSIONS)]
    curve = [name for name in CURVE_METRICS if name != "status"]
    return list(dict.fromkeys([*step, *curve, *(f"scale.{name}" for name in curve)]))


def load_for_regress(path: Path, library: HardwareLibrary) -> tuple[Scenario, HardwareLibrary]:
    """The scenario at ``path`` on the analytical engine, and its (calibrated) library.

    Raises
    ------
    ConfigError
        If the file is invalid, or it has no ``model`` and ``training`` (nothing to predict).
    """
    scenario, library = load_with_calibration(path, library)
    if scenario.model is None or scenario.training is None:
        raise ConfigError("has no 'model' and 'training' sections: no step to compare", str(path),
                          "model")
    simulate = scenario.simulate.model_copy(update={"engine": Engine.ANALYTICAL})
    return scenario.model_copy(update={"simulate": simulate}), library


def measure(scenario: Scenario, library: HardwareLibrary, gpus: list[int]) -> Measured:
    """Predict the step of ``scenario`` and its strong-scaling curve at ``gpus``."""
    result = analytical_step(scenario, session_from_scenario(scenario, library).collectives)
    step = {name: rounded(getattr(result, name)) for name in STEP_METRICS}
    for dim, seconds in sorted(result.exposed_by_dimension.items()):
        step[_exposed(dim)] = rounded(seconds)
    curve = scale_records(scale_sweep(scenario, gpus, weak=False, library=library))
    scaling = [(int(row["gpus"]), {k: rounded(row[k]) for k in CURVE_METRICS}) for row in curve]
    return Measured(scenario.name, step, scaling)


def default_gpus(scenario: Scenario, library: HardwareLibrary) -> list[int]:
    """GPU counts of a new baseline's curve: the scenario's own, and the
    :data:`SMALLER_POINTS` largest halvings of it that make a valid scenario (so the curve
    stays cheap to recompute for the largest clusters)."""
    own = resolve_cluster(scenario.cluster, library).gpus
    chosen, count = [own], own
    while len(chosen) <= SMALLER_POINTS and count % 2 == 0 and count > 1:
        count //= 2
        if _valid_at(scenario, count, library):
            chosen.append(count)
    return sorted(chosen)


def _valid_at(scenario: Scenario, gpus: int, library: HardwareLibrary) -> bool:
    point = plan_points(scenario, [gpus], False, library)[0]
    if point.mapping is None:
        return False
    try:
        scenario_from_mapping(point.mapping, "<regress>", library)
    except ConfigError:
        return False
    return True


def feasible(metrics: dict[str, Any]) -> bool:
    """Whether a curve point was simulated (its ``status`` is ok)."""
    return metrics.get("status") == OK
