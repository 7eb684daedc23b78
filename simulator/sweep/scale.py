"""Strong and weak scaling: one scenario's training step simulated on other GPU counts.

Each point keeps the scenario's tp, pp, cp and ep, sets ``cluster.nodes`` and
``parallelism.dp`` for its GPU count and (weak scaling only) grows
``training.global_batch`` with dp. A pipelined scenario that runs several pipeline schedules a
step (``parallelism.pipeline_flushes`` above 1) keeps each schedule's microbatches and runs as
many schedules as a data-parallel rank's microbatches fill, as torchtitan and NeMo AutoModel
derive their gradient accumulation from a held local batch (``gradient_accumulation_steps =
global_batch / (local_batch dp)``, torchtitan ``trainer.py`` @ b5bcd76c6); a point whose
microbatches are not a whole number of schedules is infeasible. The changed scenario goes back through
:func:`~simulator.config.scenario_from_mapping`, so every validation rule runs again;
a point that breaks one is reported as infeasible with the rule's message instead of
stopping the sweep.

Each point runs the analytical engine, or the discrete-event engine (``engine="des"``: its
``step_time_s`` is then the median simulated step over ``steps``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simulator.config import HardwareLibrary, Scenario, resolve_cluster, scenario_from_mapping
from simulator.config.checks import data_parallel_size
from simulator.cost.forced import infeasible_error
from simulator.engine.analytical import simulate_step
from simulator.errors import ConfigError, InfeasibleError, UsageError
from simulator.pipeline import session_from_scenario
from simulator.results import StepResult
from simulator.sweep.layouts import plain_value

OK = "ok"
"""The ``status`` of a point that was simulated."""

COLUMNS = [
    "gpus", "nodes", "dp", "global_batch", "pipeline_flushes", "step_time_s", "tokens_per_s",
    "tokens_per_s_per_gpu",
    "model_flops_per_gpu", "mfu", "bubble_fraction", "comm_exposed_s", "memory_per_gpu_bytes",
    "fits_in_memory", "scaling_efficiency", "status",
]
"""Columns of the frame returned by :func:`scale_sweep`, in order."""

_DTYPES = {"gpus": "int64", "nodes": "Int64", "dp": "Int64", "global_batch": "Int64",
           "pipeline_flushes": "Int64",
           "fits_in_memory": "boolean", "status": "object"}
_RESULT_FIELDS = ["step_time_s", "tokens_per_s", "model_flops_per_gpu", "mfu", "bubble_fraction",
                  "comm_exposed_s", "memory_per_gpu_bytes", "fits_in_memory"]


@dataclass(frozen=True)
class ScalePoint:
    """One planned GPU count: its layout, and either a scenario mapping or why it cannot run.

    Attributes
    ----------
    gpus : int
        GPU count of the point.
    nodes, dp, global_batch : int or None
        The scaled values; None when the GPU count does not determine them.
    mapping : dict or None
        The scenario to validate and simulate (JSON types); None when infeasible.
    reason : str or None
        Why the point is infeasible; None when it was planned.
    flushes : int or None
        Pipeline schedules a step (``parallelism.pipeline_flushes``); None when not planned.
    """

    gpus: int
    nodes: int | None = None
    dp: int | None = None
    global_batch: int | None = None
    mapping: dict[str, Any] | None = None
    reason: str | None = None
    flushes: int | None = None


def parse_gpu_list(text: str) -> list[int]:
    """GPU counts from a comma-separated list such as ``"256,512,1024"``.

    Raises
    ------
    UsageError
        If an entry is not a positive integer or the list is empty.
    """
    return check_gpu_counts(parse_integers(text, "--gpus", "GPU counts, e.g. 256,512,1024"))


def parse_integers(text: str, option: str, example: str, nonzero: bool = False) -> list[int]:
    """The integers of a comma-separated ``option`` value, in order (``example`` completes
    the message for an empty list).

    Raises
    ------
    UsageError
        If the list is empty or an entry is not a non-negative (``nonzero``: positive) integer.
    """
    entries = [e.strip() for e in text.split(",")]
    if not any(entries):
        raise UsageError(f"{option}: expected a comma-separated list of {example}")
    values = []
    for entry in entries:
        if not entry.isdecimal() or not entry.isascii() or (nonzero and int(entry) == 0):
            raise UsageError(f"{option}: '{entry}' is not a positive integer")
        values.append(int(entry))
    return values


MAX_GPU_COUNT = 10 ** 9
"""The largest GPU count a sweep takes (a scenario's ``cluster.nodes`` stops at a million)."""


def check_gpu_counts(counts: list[int]) -> list[int]:
    """The distinct GPU counts, ascending.

    Raises
    ------
    UsageError
        If ``counts`` is empty or holds a non-integer or non-positive count.
    """
    if not counts:
        raise UsageError("--gpus: expected at least one GPU count")
    for count in counts:
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise UsageError(f"--gpus: '{count}' is not a positive integer")
        if count > MAX_GPU_COUNT:
            raise UsageError(f"--gpus: {count} is more than {MAX_GPU_COUNT:,} GPUs")
    return sorted(set(counts))


ENGINES = ("analytical", "des")


@dataclass(frozen=True)
class EngineChoice:
    """How each point is simulated: ``engine`` (None: the scenario's), and for the
    discrete-event engine ``steps`` and ``seed`` (None: the scenario's)."""

    engine: str | None = None
    steps: int | None = None
    seed: int | None = None


def scale_sweep(scenario: Scenario, gpus: list[int], weak: bool = False,
                library: HardwareLibrary | None = None, run: EngineChoice | None = None,
                advance: Callable[[int], None] | None = None) -> pd.DataFrame:
    """Simulate one training step of ``scenario`` at every GPU count of ``gpus``.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario with ``model`` and ``training`` sections.
    gpus : list of int
        GPU counts (any order; duplicates are dropped).
    weak : bool, default False
        Weak scaling (global batch grows with dp) instead of strong (global batch kept).
    library : HardwareLibrary, optional
        Hardware specs; the default library when omitted.
    run : EngineChoice, optional
        The engine (and DES steps and seed); the scenario's ``simulate`` section when omitted.
    advance : callable, optional
        Called with 1 after each point (a progress bar).

    Returns
    -------
    pandas.DataFrame
        One row per GPU count, ascending, with the :data:`COLUMNS`. Infeasible points have
        their reason in ``status`` and missing values where nothing was simulated;
        ``scaling_efficiency`` is relative to the smallest feasible point.

    Raises
    ------
    ConfigError
        If the scenario has no ``model`` or ``training`` section.
    UsageError
        For a bad GPU list or an unknown engine.
    """
    library = library or HardwareLibrary()
    run = _engine_choice(scenario, run or EngineChoice())
    points = plan_points(scenario, check_gpu_counts(list(gpus)), weak, library)
    rows = []
    for point in points:
        rows.append(simulate_point(point, library, run))
        if advance is not None:
            advance(1)
    return _with_efficiency(pd.DataFrame(rows, columns=COLUMNS))


def plan_points(scenario: Scenario, gpus: list[int], weak: bool,
                library: HardwareLibrary) -> list[ScalePoint]:
    """The scaled scenario mapping (or the reason it cannot exist) for each GPU count."""
    hardware = resolve_cluster(scenario.cluster, library)
    base_dp = data_parallel_size(scenario, hardware.gpus)
    base = scenario.model_dump(mode="json")
    per_schedule = scenario.schedule_microbatches(base_dp)
    return [_plan(base, count, hardware.gpus_per_node, base_dp, weak, per_schedule) for count in gpus]


def _plan(base: dict[str, Any], gpus: int, gpus_per_node: int, base_dp: int,
          weak: bool, per_schedule: int) -> ScalePoint:
    par = base["parallelism"]
    per_replica = par["tp"] * par["pp"] * par["cp"]
    nodes, dp = gpus // gpus_per_node, gpus // per_replica
    if gpus % gpus_per_node:
        return ScalePoint(gpus, reason=f"{gpus} GPUs is not a multiple of {gpus_per_node} GPUs "
                                       "per node")
    if gpus % per_replica:
        return ScalePoint(gpus, nodes, reason=f"{gpus} GPUs is not a multiple of tp*pp*cp = "
                                              f"{par['tp']}*{par['pp']}*{par['cp']} = {per_replica}")
    batch = base["training"]["global_batch"]
    if weak:  # exact: a valid scenario's global_batch is a multiple of its dp
        batch = batch // base_dp * dp
    flushes = _schedules(base, per_schedule, dp, batch)
    if isinstance(flushes, str):
        return ScalePoint(gpus, nodes, dp, batch, reason=flushes)
    mapping = {**base, "cluster": {**base["cluster"], "nodes": nodes,
                                   **_chip_torus_shape(base["cluster"], nodes)},
               "parallelism": {**par, "dp": dp, "pipeline_flushes": flushes},
               "training": {**base["training"], "global_batch": batch}}
    return ScalePoint(gpus, nodes, dp, batch, mapping, flushes=flushes)


def _schedules(base: dict[str, Any], per_schedule: int, dp: int, batch: int) -> int | str:
    """Pipeline schedules a step at data-parallel size ``dp`` and global batch ``batch``: the
    base's when it runs one, or no pipeline; else ``M / m`` with ``m`` = ``per_schedule``, the
    base's microbatches per schedule (:meth:`Scenario.schedule_microbatches`), and ``M`` the
    point's per data-parallel rank (the reason, when ``m`` does not divide ``M``)."""
    par, micro = base["parallelism"], base["training"]["micro_batch"]
    flushes = par["pipeline_flushes"]
    if flushes == 1 or par["pp"] == 1 or batch % (micro * dp):
        return flushes                 # the scenario's rules judge a batch that does not divide
    microbatches = batch // (micro * dp)
    if microbatches % per_schedule or not microbatches:
        return (f"{microbatches} microbatches per data-parallel rank are not a whole number of "
                f"pipeline schedules of {per_schedule} (the scenario's parallelism.pipeline_flushes "
                f"{flushes} over {per_schedule * flushes}; each schedule keeps its microbatches)")
    return microbatches // per_schedule


def _chip_torus_shape(cluster: dict[str, Any], nodes: int) -> dict[str, Any]:
    """A chip-level torus (TPU) at another chip count keeps its number of axes, reshaped as
    evenly as the count allows (:func:`~simulator.topology.fabric.balanced_dims`); other
    fabrics are kept as written."""
    fabric = cluster.get("fabric") or {}
    if not fabric.get("chip_torus") or not fabric.get("torus_dims"):
        return {}
    from simulator.topology.fabric import balanced_dims

    return {"fabric": {**fabric, "torus_dims": balanced_dims(nodes, len(fabric["torus_dims"]))}}


def simulate_point(point: ScalePoint, library: HardwareLibrary,
                   run: EngineChoice | None = None,
                   fields: Callable[[StepResult], dict[str, Any]] | None = None) -> dict[str, Any]:
    """One row of :func:`scale_sweep` (without ``scaling_efficiency``) for ``point``;
    ``fields`` picks the result's columns (default: the :data:`COLUMNS` it holds)."""
    row = {"gpus": point.gpus, "nodes": point.nodes, "dp": point.dp,
           "global_batch": point.global_batch, "pipeline_flushes": point.flushes,
           "status": point.reason}
    if point.mapping is None:
        return row
    source = f"{point.mapping.get('name', 'scenario')} at {point.gpus} GPUs"
    try:
        scenario = scenario_from_mapping(point.mapping, source, library)
        collectives = session_from_scenario(scenario, library).collectives
        result = _simulate(scenario, collectives, run or EngineChoice("analytical"))
    except InfeasibleError as exc:
        return {**row, "status": _reason(infeasible_error(exc, scenario))}
    except ConfigError as exc:
        return {**row, "status": _reason(exc)}
    return {**row, **(fields or _result_fields)(result), "status": OK}


def _simulate(scenario: Scenario, collectives, run: EngineChoice) -> StepResult:
    if scenario.training.sync.value == "async":
        from simulator.engine.async_ps import analytical_step, simulate_async_des

        if run.engine == "des":
            return simulate_async_des(scenario, collectives, run.steps, run.seed)
        return analytical_step(scenario, collectives)
    if run.engine == "des":
        from simulator.engine.des import simulate_steps_des

        return simulate_steps_des(scenario, collectives, run.steps, run.seed)
    return simulate_step(scenario, collectives)


def scale_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a :func:`scale_sweep` frame as plain Python values (missing -> None)."""
    return [{key: plain_value(value) for key, value in row.items()}
            for row in frame.to_dict(orient="records")]


def _engine_choice(scenario: Scenario, run: EngineChoice) -> EngineChoice:
    """``run`` with the scenario's engine filled in; refuses what cannot be swept."""
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to simulate training",
                          key="model")
    engine = run.engine or scenario.simulate.engine.value
    if engine not in ENGINES:
        raise UsageError(f"--engine: '{engine}' is not one of {', '.join(ENGINES)}")
    return EngineChoice(engine, run.steps, run.seed)


def _result_fields(result: StepResult) -> dict[str, Any]:
    fields = {name: getattr(result, name) for name in _RESULT_FIELDS}
    fields["tokens_per_s_per_gpu"] = result.tokens_per_s / result.gpus
    return fields


def _reason(exc: ConfigError | InfeasibleError) -> str:
    """The error without the (synthetic) source: ``key: message``."""
    if isinstance(exc, ConfigError):
        return exc.render(with_source=False)
    return str(exc)


def _with_efficiency(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.astype(_DTYPES)
    ok = frame.loc[frame["status"] == OK, "tokens_per_s_per_gpu"]
    baseline = ok.iloc[0] if len(ok) else math.nan
    frame["scaling_efficiency"] = frame["tokens_per_s_per_gpu"] / baseline
    return frame


