"""The one place that wires the flow: scenario file -> hardware -> cluster graph -> cost model."""

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
from simulator.cost import CollectiveModel
from simulator.errors import ConfigError, UsageError
from simulator.topology import Cluster, build_cluster
from simulator.topology.faults import apply_link_faults


@dataclass(frozen=True)
class ClusterSession:
    """A loaded scenario with its built cluster and collective cost model; ``calibration``
    names the calibration overlay file(s) in force ("" for none)."""

    scenario: Scenario
    hardware: ResolvedCluster
    cluster: Cluster
    collectives: CollectiveModel
    calibration: str = ""


def open_scenario(path: Path | str, library: HardwareLibrary | None = None) -> ClusterSession:
    """Load ``path``, resolve its hardware, build its cluster graph and cost model.

    The scenario's ``calibration:`` overlay applies unless ``library`` already is a
    :class:`~simulator.config.overlay.CalibratedLibrary` (``--calibration`` wins).
    """
    try:
        scenario, library = load_with_calibration(path, library)
        session = session_from_scenario(scenario, library)
    except ConfigError as exc:
        raise exc.with_source(str(path)) from None
    return replace(session, calibration=overlay_sources(library))


def load_with_calibration(path: Path | str, library: HardwareLibrary | None = None
                          ) -> tuple[Scenario, HardwareLibrary]:
    """The scenario at ``path`` and the library to simulate it with: ``library`` (default:
    the hardware library), with the overlay named by the scenario's ``calibration:`` key
    (relative to the scenario file) applied unless ``library`` is already calibrated."""
    library = library or HardwareLibrary()
    scenario = load_scenario(path, library)
    if scenario.calibration is None or isinstance(library, CalibratedLibrary):
        return scenario, library
    overlay = Path(path).parent / scenario.calibration
    if not overlay.is_file():
        raise ConfigError(f"no calibration file at {overlay}", str(path), "calibration")
    library = calibrated_library(overlay, library)
    return load_scenario(path, library), library


def session_from_scenario(scenario: Scenario, library: HardwareLibrary | None = None
                          ) -> ClusterSession:
    """Resolve an already validated ``scenario``'s hardware, build its cluster (link faults
    applied) and cost model."""
    library = library or HardwareLibrary()
    hardware = resolve_cluster(scenario.cluster, library)
    cluster = apply_link_faults(build_cluster(hardware), scenario.noise.links)
    return ClusterSession(scenario, hardware, cluster, CollectiveModel(cluster))


def run_scenario(path: Path | str, engine: str | None = None,
                 library: HardwareLibrary | None = None, steps: int | None = None,
                 seed: int | None = None):
    """Load, build and simulate the scenario at ``path`` (see :class:`StepResult`).

    ``engine``, ``steps`` and ``seed`` override the scenario's ``simulate`` section.
    """
    from simulator.engine.analytical import simulate_step
    from simulator.engine.des import simulate_steps_des

    session = open_scenario(path, library)
    scenario = session.scenario
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to simulate training",
                          str(path), "model")
    chosen = engine or scenario.simulate.engine.value
    if steps is not None and steps < 1:
        raise UsageError(f"--steps must be at least 1 (got {steps})")
    if seed is not None and seed < 0:
        raise UsageError(f"--seed must be non-negative (got {seed})")
    try:
        if chosen == "des":
            result = simulate_steps_des(scenario, session.collectives, steps, seed)
        else:
            result = simulate_step(scenario, session.collectives)
    except ConfigError as exc:          # e.g. the DES refusing a run past its event budget
        raise exc.with_source(str(path)) from None
    return replace(result, calibration=session.calibration) if session.calibration else result


def write_timeline(path: Path | str, trace: Path | None, gantt: Path | None,
                   seed: int | None = None, library: HardwareLibrary | None = None) -> None:
    """Simulate one step of ``path`` with the discrete-event engine and write its timeline."""
    from simulator.engine.des import timeline
    from simulator.export.chrome_trace import write_trace
    from simulator.report.timeline_plot import write_gantt

    session = open_scenario(path, library)
    frame = timeline(session.scenario, session.collectives, seed)
    if trace:
        write_trace(frame, session.hardware.gpus_per_node, trace)
    if gantt:
        par = session.scenario.parallelism
        from simulator.engine.analytical import make_context
        layout = make_context(session.scenario, session.collectives).layout
        stage_gpus = [layout.gpu(pp_rank=s) for s in range(par.pp)]
        write_gantt(frame, stage_gpus, f"{session.scenario.name}: replica 0", gantt)
