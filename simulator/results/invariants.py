"""Invariants every step result must satisfy before anything is printed or written.

A result that breaks one is a bug in the model, never a property of the input: the check
raises :class:`simulator.errors.ModelError` (exit status 3), so an impossible number never
leaves with exit status 0. Checked once per result, at the end of each engine.

- every time, rate, FLOP count and byte count finite and non-negative (each stage's memory
  parts too); the step, its percentiles and tokens/s positive;
- MFU and hardware-FLOPs utilisation (model FLOP/s and hardware FLOP/s per GPU over the
  GPU's dense peak at the training dtype) in (0, 1];
- the bubble a fraction in [0, 1);
- with the analytical engine, the pipeline at least as long as the busiest stage's work
  (microbatches x (forward + backward)), and the step at least the pipeline.
"""

from __future__ import annotations

import math

from simulator.errors import ModelError
from simulator.results.step import StepResult

_POSITIVE = ("step_time_s", "step_time_p50_s", "step_time_p95_s", "step_time_p99_s",
             "tokens_per_s", "model_flops_per_gpu", "hardware_flops_per_gpu", "mfu")
_NON_NEGATIVE = ("bubble_fraction", "comm_exposed_s", "memory_per_gpu_bytes", "pipeline_s",
                 "bubble_s", "dp_comm_s", "dp_comm_exposed_s", "optimizer_s",
                 "memory_capacity_bytes", "dp_sm_slowdown_s", "dp_in_pipeline_s", "pp_in_bubble_s")
_SLACK = 1e-9


def check_result(result: StepResult, analytical: bool, busiest: float | None = None) -> StepResult:
    """Return ``result`` if it is physically possible (module docstring); else raise.

    ``busiest`` is the busiest stage's work, ``microbatches x (forward + backward)`` (s),
    for a result that carries no stages; by default it comes from ``result.stages``.
    A plain pass over the values decides (:func:`_plausible`, as strict as the checks);
    only a result it refuses goes through the checks one by one, which name what is wrong.
    """
    if not _plausible(result, analytical, busiest):
        _check_each(result, analytical, busiest)
    return result


def _plausible(result: StepResult, analytical: bool, busiest: float | None) -> bool:
    """Whether ``result`` passes every check of :func:`_check_each`, without naming a failure."""
    values = [getattr(result, name) for name in _POSITIVE]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values):
        return False
    values = [*(getattr(result, name) for name in _NON_NEGATIVE), *result.exposed_by_dimension.values()]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values):
        return False
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in result.step_times_s):
        return False
    if not all(math.isfinite(v) and v >= 0 for stage in result.stages for v in stage.memory.values()):
        return False
    hfu = result.mfu * result.hardware_flops_per_gpu / result.model_flops_per_gpu
    if not (result.mfu <= 1 + _SLACK and math.isfinite(hfu) and hfu <= 1 + _SLACK
            and result.bubble_fraction < 1):
        return False
    if not analytical:
        return True
    busiest = _busiest(result) if busiest is None else busiest
    return (result.pipeline_s >= busiest * (1 - _SLACK)
            and result.step_time_s >= result.pipeline_s * (1 - _SLACK))


def _check_each(result: StepResult, analytical: bool, busiest: float | None) -> None:
    """Every check in turn; raise at the first that fails."""
    for name in _POSITIVE:
        _require(result, name, getattr(result, name), lambda v: v > 0, "positive and finite")
    for name in _NON_NEGATIVE:
        _require(result, name, getattr(result, name), lambda v: v >= 0, "finite and >= 0")
    for name, value in result.exposed_by_dimension.items():
        _require(result, f"exposed_by_dimension.{name}", value, lambda v: v >= 0, "finite and >= 0")
    for value in result.step_times_s:
        _require(result, "step_times_s", value, lambda v: v > 0, "positive and finite")
    for stage in result.stages:
        for part, value in stage.memory.items():
            _require(result, f"stage {stage.stage} memory part {part}", value, lambda v: v >= 0,
                     "finite and >= 0")
    hfu = result.mfu * result.hardware_flops_per_gpu / result.model_flops_per_gpu
    _require(result, "mfu", result.mfu, lambda v: v <= 1 + _SLACK, "at most 1")
    _require(result, "hardware FLOPs utilisation", hfu, lambda v: v <= 1 + _SLACK, "at most 1")
    _require(result, "bubble_fraction", result.bubble_fraction, lambda v: v < 1, "below 1")
    if analytical:
        _check_pipeline(result, busiest)


def _check_pipeline(result: StepResult, busiest: float | None) -> None:
    busiest = _busiest(result) if busiest is None else busiest
    _require(result, "pipeline_s", result.pipeline_s,
             lambda v: v >= busiest * (1 - _SLACK), f"at least the busiest stage's work ({busiest:.6g} s)")
    _require(result, "step_time_s", result.step_time_s,
             lambda v: v >= result.pipeline_s * (1 - _SLACK), "at least the pipeline time")


def _busiest(result: StepResult) -> float:
    """The busiest stage's work per step, ``microbatches x (forward + backward)`` (s)."""
    return max(result.microbatches * (s.forward_s + s.backward_s) for s in result.stages)


def _require(result: StepResult, name: str, value: float, ok, expected: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and ok(value)):
        raise ModelError(f"{result.name}: the model produced {name} = {value!r}, which is not "
                         f"{expected}; this is a bug in clustersim, please report it with the scenario")
