"""Micro-batch versus latency: one scenario's step at several micro-batch sizes.

Large micro-batches keep the GPUs busy (GEMMs with more rows, fewer kernel launches and
pipeline sends per sample): more samples per second, "fast and furious". Small ones let a
sample through sooner: "responsive". For each micro-batch size ``b`` this sweep reports

- the step (analytical engine) and the throughput ``G s / T_step`` (``G`` sequences of
  ``s`` tokens per step);
- the *sample latency*: one micro-batch's forward and backward through every pipeline
  stage with its in-line communication and the ``2 (pp - 1)`` activation and gradient
  sends, on an idle pipeline, ``L(b) = sum_stages (t_fwd(b) + t_bwd(b)) + 2 (pp - 1) t_p2p(b)``
  (the time from a sample entering the pipeline to its gradient being ready; the
  optimizer applies it at the end of the step, after ``T_step``);
- memory per GPU, and the p50/p95/p99 step of the discrete-event engine's fast path
  (contention off, the scenario's noise, ``steps`` steps).

Two ways to change ``b`` (Megatron-LM's gradient accumulation: ``m = G / (b dp)``
microbatches per step):

- by default the scenario's ``m`` is kept and the global batch follows, ``G = b dp m``;
- ``global_batch_fixed``: ``G`` is kept and ``m = G / (b dp)`` shrinks as ``b`` grows (a
  ``b`` whose ``b dp`` does not divide ``G`` is reported infeasible, with the rule).

Points are planned as :class:`~simulator.sweep.scale.ScalePoint` and simulated by
:func:`~simulator.sweep.scale.simulate_point`, as ``clustersim scale`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from simulator.config import HardwareLibrary, Scenario, resolve_cluster
from simulator.config.checks import data_parallel_size
from simulator.errors import ConfigError
from simulator.results import StepResult
from simulator.sweep.scale import (
    OK,
    EngineChoice,
    ScalePoint,
    parse_integers,
    scale_records,
    simulate_point,
)

DEFAULT_STEPS = 200
"""Simulated steps per point when neither the caller nor the scenario asks for more."""

COLUMNS = [
    "micro_batch", "microbatches", "global_batch", "step_time_s", "samples_per_s", "tokens_per_s",
    "sample_latency_s", "mfu", "memory_per_gpu_bytes", "fits_in_memory", "step_time_p50_s",
    "step_time_p95_s", "step_time_p99_s", "status",
]
"""Columns of the frame returned by :func:`latency_sweep`, in order."""

_DTYPES = {"micro_batch": "int64", "microbatches": "Int64", "global_batch": "Int64",
           "fits_in_memory": "boolean", "status": "object"}


def parse_micro_batches(text: str) -> list[int]:
    """Micro-batch sizes from ``"1,2,4,8"``, distinct and ascending.

    Raises
    ------
    UsageError
        If the list is empty or an entry is not a positive integer.
    """
    return sorted(set(parse_integers(text, "--micro-batch", "sizes, e.g. 1,2,4,8", nonzero=True)))


def plan_micro_batches(scenario: Scenario, sizes: list[int], global_batch_fixed: bool,
                       library: HardwareLibrary) -> list[ScalePoint]:
    """The scenario at each micro-batch size (see the module docstring), contention off so
    that the discrete-event engine takes its fast path."""
    gpus = resolve_cluster(scenario.cluster, library).gpus
    dp = data_parallel_size(scenario, gpus)
    training = scenario.training
    accumulation = training.global_batch // (training.micro_batch * dp)
    base = scenario.model_dump(mode="json")
    points = []
    for size in sizes:
        batch = training.global_batch if global_batch_fixed else size * dp * accumulation
        mapping = {**base, "training": {**base["training"], "micro_batch": size,
                                        "global_batch": batch},
                   "simulate": {**base["simulate"], "contention": False}}
        points.append(ScalePoint(size, base["cluster"]["nodes"], dp, batch, mapping))
    return points


def latency_sweep(scenario: Scenario, sizes: list[int], global_batch_fixed: bool = False,
                  library: HardwareLibrary | None = None, steps: int | None = None,
                  seed: int | None = None,
                  advance: Callable[[int], None] | None = None) -> pd.DataFrame:
    """Simulate ``scenario`` at every micro-batch size of ``sizes``.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario with ``model`` and ``training`` sections.
    sizes : list of int
        Micro-batch sizes (sequences per microbatch).
    global_batch_fixed : bool, default False
        Keep ``training.global_batch`` (fewer accumulation steps as ``b`` grows) instead of
        the number of microbatches per step.
    library : HardwareLibrary, optional
        Hardware specs; the default library when omitted.
    steps, seed : int, optional
        Steps the discrete-event engine simulates per point (default: the scenario's
        ``simulate.steps`` or :data:`DEFAULT_STEPS`, whichever is larger) and its seed
        (default: the scenario's).
    advance : callable, optional
        Called with 1 after each point (a progress bar).

    Returns
    -------
    pandas.DataFrame
        One row per size, ascending, with the :data:`COLUMNS`; an infeasible size has its
        reason in ``status`` and missing values where nothing was simulated.
    """
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to simulate training",
                          key="model")
    library = library or HardwareLibrary()
    steps = steps or max(scenario.simulate.steps, DEFAULT_STEPS)
    run = EngineChoice("des", steps, seed)
    rows = []
    for point in plan_micro_batches(scenario, sorted(set(sizes)), global_batch_fixed, library):
        row = {**simulate_point(point, library, run, fields=latency_fields),
               "micro_batch": point.gpus}
        if row["status"] == OK:
            row["samples_per_s"] = row["global_batch"] / row["step_time_s"]
        rows.append(row)
        if advance is not None:
            advance(1)
    return pd.DataFrame(rows, columns=COLUMNS).astype(_DTYPES)


def latency_fields(result: StepResult) -> dict[str, Any]:
    """The :data:`COLUMNS` of one simulated point but ``samples_per_s`` (which needs the
    global batch); throughput from the analytical step, percentiles from the DES."""
    step = result.step_time_s - result.contention_and_noise_s     # the analytical step
    tokens = result.tokens_per_s * result.step_time_s             # tokens per step
    return {"microbatches": result.microbatches, "step_time_s": step, "tokens_per_s": tokens / step,
            "sample_latency_s": sample_latency(result),
            "mfu": result.mfu * result.step_time_s / step,
            "memory_per_gpu_bytes": result.memory_per_gpu_bytes,
            "fits_in_memory": result.fits_in_memory,
            "step_time_p50_s": result.step_time_p50_s, "step_time_p95_s": result.step_time_p95_s,
            "step_time_p99_s": result.step_time_p99_s}


def sample_latency(result: StepResult) -> float:
    """One micro-batch through the idle pipeline and back (s):
    ``sum_stages (forward + backward) + 2 (pp - 1) p2p`` (module docstring)."""
    stages = result.stages
    sends = 2 * (len(stages) - 1) * stages[0].p2p_s
    return sum(s.forward_s + s.backward_s for s in stages) + sends


def latency_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a :func:`latency_sweep` frame as plain Python values (missing -> None)."""
    return scale_records(frame)


__all__ = ["COLUMNS", "DEFAULT_STEPS", "OK", "latency_fields", "latency_records", "latency_sweep",
           "parse_micro_batches", "plan_micro_batches", "sample_latency"]
