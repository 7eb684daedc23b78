"""The one place that wires the flow: scenario file -> hardware -> cluster graph -> cost model.

A scenario is named by its path, or by the bare name of a bundled example
(``gpt3-175b-1024xA100``: :func:`resolve_scenario`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from simulator.config import (
    HardwareLibrary,
    ResolvedCluster,
    Scenario,
    load_scenario,
    resolve_cluster,
)
from simulator.config.overlay import CalibratedLibrary, calibrated_library, overlay_sources
from simulator.config.yaml_io import did_you_mean
from simulator.cost import CollectiveModel
from simulator.cost.forced import bind, infeasible_error
from simulator.errors import ConfigError, InfeasibleError, UsageError
from simulator.topology import Cluster, build_cluster
from simulator.topology.faults import apply_link_faults

MAX_STEPS = 100_000
"""The most steps one run simulates (``simulate.steps`` and ``--steps`` share the bound)."""
MAX_SEED = 2**63 - 1
_PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ClusterSession:
    """A loaded scenario with its built cluster and collective cost model; ``calibration``
    names the calibration overlay file(s) in force ("" for none)."""

    scenario: Scenario
    hardware: ResolvedCluster
    cluster: Cluster
    collectives: CollectiveModel
    calibration: str = ""


def bundled_scenarios_dir() -> Path:
    """The example scenarios: the copy inside an installed wheel, else the checkout's."""
    packaged = _PACKAGE / "_data" / "scenarios"
    return packaged if packaged.is_dir() else _PACKAGE.parent / "scenarios"


def bundled_scenarios() -> list[str]:
    """Names (file stems) of the bundled example scenarios, sorted."""
    folder = bundled_scenarios_dir()
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def resolve_scenario(path: Path | str) -> Path:
    """The file ``path`` names: itself if it exists or looks like a file name, else the
    bundled example of that name (``gpt3-175b-1024xA100`` without ``.yaml``).

    Raises
    ------
    ConfigError
        A bare name that is neither a file nor a bundled scenario (the names are listed).
    """
    path = Path(path)
    text = str(path)
    if path.exists() or text.endswith((".yaml", ".yml")) or "/" in text or "\\" in text:
        return path
    candidate = bundled_scenarios_dir() / f"{text}.yaml"
    if candidate.is_file():
        return candidate
    names = bundled_scenarios()
    raise ConfigError(f"no such file, and no bundled scenario of that name{did_you_mean(text, names)}; "
                      f"bundled: {', '.join(names) or 'none'}", text)


def open_scenario(path: Path | str, library: HardwareLibrary | None = None) -> ClusterSession:
    """Load ``path``, resolve its hardware, build its cluster graph and cost model.

    The scenario's ``calibration:`` overlay applies unless ``library`` already is a
    :class:`~simulator.config.overlay.CalibratedLibrary` (``--calibration`` wins).
    """
    path = resolve_scenario(path)
    try:
        scenario, library = load_with_calibration(path, library)
        session = session_from_scenario(scenario, library)
    except ConfigError as exc:
        raise exc.with_source(str(path)) from None
    return replace(session, calibration=overlay_sources(library))


def load_with_calibration(path: Path | str, library: HardwareLibrary | None = None
                          ) -> tuple[Scenario, HardwareLibrary]:
    """The scenario at ``path`` (a file or a bundled name) and the library to simulate it with:
    ``library`` (default: the hardware library), with the overlay named by the scenario's
    ``calibration:`` key (relative to the scenario file) applied unless ``library`` is
    already calibrated."""
    path = resolve_scenario(path)
    library = library or HardwareLibrary()
    scenario = load_scenario(path, library)
    if scenario.calibration is None or isinstance(library, CalibratedLibrary):
        return scenario, library
    overlay = path.parent / scenario.calibration
    if not overlay.is_file():
        raise ConfigError(f"no calibration file at {overlay}", str(path), "calibration")
    library = calibrated_library(overlay, library)
    return load_scenario(path, library), library


def session_from_scenario(scenario: Scenario, library: HardwareLibrary | None = None
                          ) -> ClusterSession:
    """Resolve an already validated ``scenario``'s hardware, build its cluster (link faults
    applied) and cost model (with the scenario's ``collectives.algorithm`` bound to it)."""
    library = library or HardwareLibrary()
    hardware = resolve_cluster(scenario.cluster, library)
    cluster = apply_link_faults(build_cluster(hardware), scenario.noise.links)
    collectives = CollectiveModel(cluster)
    bind(collectives, scenario)
    return ClusterSession(scenario, hardware, cluster, collectives)


def check_run_options(steps: int | None, seed: int | None) -> None:
    """Refuse ``--steps`` outside 1..:data:`MAX_STEPS` and ``--seed`` outside 0..2**63-1."""
    if steps is not None and not 1 <= steps <= MAX_STEPS:
        raise UsageError(f"--steps must be between 1 and {MAX_STEPS:,} (got {steps:,})")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be between 0 and 2**63-1 (got {seed})")


def run_scenario(path: Path | str, engine: str | None = None,
                 library: HardwareLibrary | None = None, steps: int | None = None,
                 seed: int | None = None, progress: bool = False):
    """Load, build and simulate the scenario at ``path`` (see :class:`StepResult`), with its
    :mod:`warnings <simulator.results.warnings>`.

    ``engine``, ``steps`` and ``seed`` override the scenario's ``simulate`` section;
    ``progress`` draws a bar over the discrete-event steps (the CLI on a terminal).
    """
    from simulator.results.warnings import result_warnings

    check_run_options(steps, seed)
    session = open_scenario(path, library)
    scenario, source = session.scenario, str(resolve_scenario(path))
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to simulate training",
                          source, "model")
    chosen = engine or scenario.simulate.engine.value
    result = _simulate(session, chosen, steps, seed, progress, source)
    result = _with_baseline(session, result, chosen, steps, seed, source)
    found = result_warnings(scenario, result, chosen, session.hardware)
    result = replace(result, warnings=[*result.warnings, *found])
    return replace(result, calibration=session.calibration) if session.calibration else result


def _simulate_async(scenario, collectives, engine: str, steps: int | None, seed: int | None):
    """``training.sync: async``: parameter servers (:mod:`simulator.engine.async_ps`)."""
    from simulator.engine.async_ps import simulate_async_des, simulate_async_step

    if engine != "des":
        return simulate_async_step(scenario, collectives)
    return simulate_async_des(scenario, collectives, steps, seed)


def _simulate(session: ClusterSession, engine: str, steps: int | None, seed: int | None,
              show: bool, source: str):
    """One step (analytical) or the DES distribution; errors name ``source``."""
    from simulator.engine.analytical import simulate_step
    from simulator.engine.des import simulate_steps_des
    from simulator.report.progress import progress

    scenario = session.scenario
    try:
        if scenario.training.sync.value == "async":
            return _simulate_async(scenario, session.collectives, engine, steps, seed)
        if engine != "des":
            return simulate_step(scenario, session.collectives)
        total = steps or scenario.simulate.steps
        if not (show and total > 1):
            return simulate_steps_des(scenario, session.collectives, steps, seed)
        with progress(f"simulating {total:,} steps", total, True) as advance:
            return simulate_steps_des(scenario, session.collectives, steps, seed, progress=advance)
    except ConfigError as exc:          # e.g. the DES refusing a run past its event budget
        raise exc.with_source(source) from None
    except InfeasibleError as exc:      # e.g. a forced algorithm the cluster cannot run
        raise infeasible_error(exc, scenario, source) from None


def _with_baseline(session: ClusterSession, result, engine: str, steps: int | None,
                   seed: int | None, source: str):
    """A result with training what-ifs gets the same run without them: the net change."""
    from simulator.config.whatif_training import without_training_what_ifs

    if not result.what_if:
        return result
    plain = replace(session, scenario=without_training_what_ifs(session.scenario))
    base = _simulate(plain, engine, steps, seed, False, source)
    notes = {"baseline_step_time_s": base.step_time_s, "baseline_step_time_p99_s": base.step_time_p99_s,
             "step_time_change_s": result.step_time_s - base.step_time_s}
    if base.step_times_s:
        notes["baseline_step_time_mean_s"] = sum(base.step_times_s) / len(base.step_times_s)
    return replace(result, what_if={**result.what_if, **notes})


def quick_step(session: ClusterSession, source: str):
    """The analytical step of an opened scenario with its warnings (``clustersim check``)."""
    from simulator.results.warnings import result_warnings

    result = _simulate(session, "analytical", None, None, False, source)
    return replace(result, warnings=result_warnings(session.scenario, result, "analytical", session.hardware))


def write_timeline(path: Path | str, trace: Path | None, gantt: Path | None,
                   seed: int | None = None, library: HardwareLibrary | None = None) -> None:
    """Simulate one step of ``path`` with the discrete-event engine and write its timeline:
    a Chrome/Perfetto trace to ``trace`` and a Gantt chart of replica 0 to ``gantt``.

    The step shown is the first of the seed (``seed``, else ``simulate.seed``); in-layer
    collectives the engine folds into the passes are drawn as their share of each pass.
    """
    from simulator.engine.analytical import make_context, simulate_step
    from simulator.engine.des import timeline
    from simulator.export.chrome_trace import write_trace
    from simulator.export.timeline_rows import in_layer_rows, step_label
    from simulator.report.timeline_plot import write_gantt

    source = str(resolve_scenario(path))
    session = open_scenario(path, library)
    sc = session.scenario
    seed = sc.simulate.seed if seed is None else seed
    try:
        frame = timeline(sc, session.collectives, seed)
        stages = simulate_step(sc, session.collectives).stages
    except ConfigError as exc:
        raise exc.with_source(source) from None
    except InfeasibleError as exc:
        raise infeasible_error(exc, sc, source) from None
    layout = make_context(sc, session.collectives).layout
    frame = in_layer_rows(frame, stages, layout)
    label = step_label(sc.name, seed)
    if trace:
        write_trace(frame, session.hardware.gpus_per_node, trace, label)
    if gantt:
        stage_gpus = [layout.gpu(pp_rank=s) for s in range(sc.parallelism.pp)]
        write_gantt(frame, stage_gpus, f"{label}: replica 0", gantt)
