"""Steady-state step time from a series of measured iteration times.

Warm-up rule
------------
The first iterations of a run are slow for reasons a performance model does not describe
(CUDA/ROCm graph capture and kernel autotuning, allocator growth, data-loader start, the
first all-reduce's communicator set-up; in the MI325X Primus log iteration 1 takes 306 s
against 6.4 s later). So:

1. drop the first ``ceil(10%)`` of the logged iterations, at least one;
2. of the rest, take the median m and also drop leading iterations until the first one
   within 5% of m (the run has "settled");
3. report the median of what remains (the median, not the mean, so that a checkpoint save
   or one slow iteration later in the run does not move it).

With a single logged iteration nothing is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WARMUP_FRACTION = 0.10
SETTLE_TOLERANCE = 0.05


@dataclass(frozen=True)
class SteadyState:
    """Median of the steady-state iterations and what was kept.

    Attributes
    ----------
    step_time_s : float
        Median iteration time over the kept iterations, seconds.
    kept : numpy.ndarray
        Boolean mask over the input series: True for steady-state iterations.
    spread : float
        (p90 - p10) / median of the kept times, a measure of run-to-run noise.
    """

    step_time_s: float
    kept: np.ndarray
    spread: float


def steady_state(times_s: np.ndarray) -> SteadyState:
    """Apply the module's warm-up rule to ``times_s`` (in iteration order)."""
    times = np.asarray(times_s, dtype=np.float64)
    count = len(times)
    if count == 0:
        raise ValueError("no iteration times")
    drop = max(1, math.ceil(WARMUP_FRACTION * count)) if count > 1 else 0
    rest = times[drop:]
    centre = float(np.median(rest))
    settled = np.flatnonzero(np.abs(rest - centre) <= SETTLE_TOLERANCE * centre)
    first = drop + (int(settled[0]) if len(settled) else 0)
    kept = np.zeros(count, dtype=bool)
    kept[first:] = True
    chosen = times[kept]
    median = float(np.median(chosen))
    p10, p90 = np.percentile(chosen, [10, 90])
    return SteadyState(median, kept, float((p90 - p10) / median) if median > 0 else 0.0)


@dataclass(frozen=True)
class Measured:
    """A training log's steady-state figures.

    Attributes
    ----------
    step_time_s : float
        Median elapsed time per iteration over the steady-state iterations, seconds.
    iterations : list of int
        The iteration numbers kept.
    logged : int
        How many iteration lines the log has.
    spread : float
        (p90 - p10) / median of the kept times.
    tflops_per_gpu : float or None
        Median of the logged "throughput per GPU (TFLOP/s/GPU)" over the kept iterations,
        None when the log does not print it (Megatron's ``--log-throughput``).
    tokens_per_gpu_s : float
        Median of the logged "tokens per GPU (tokens/s/GPU)" (Primus) when printed, else
        global_batch x seq_len / (step_time x world_size).
    tokens_logged : bool
        True when ``tokens_per_gpu_s`` is the logged value.
    """

    step_time_s: float
    iterations: list[int]
    logged: int
    spread: float
    tflops_per_gpu: float | None
    tokens_per_gpu_s: float
    tokens_logged: bool


def measure_log(iterations, global_batch: int, seq_len: int, world_size: int) -> Measured:
    """:class:`Measured` of a log's iteration frame (``iteration``, ``elapsed_s``,
    ``tflops_per_gpu``, ``tokens_per_gpu_s`` columns)."""
    steady = steady_state(iterations["elapsed_s"].to_numpy())
    kept = iterations[steady.kept]
    tflops = kept["tflops_per_gpu"].dropna()
    tokens = kept["tokens_per_gpu_s"].dropna()
    computed = global_batch * seq_len / (steady.step_time_s * world_size)
    return Measured(
        steady.step_time_s, [int(i) for i in kept["iteration"]], len(iterations), steady.spread,
        float(np.median(tflops)) if len(tflops) else None,
        float(np.median(tokens)) if len(tokens) else computed, bool(len(tokens)))
