"""Run ``clustersim regress`` over scenario files: predict each, compare it with (or write)
its baseline, and say per scenario whether it passed, drifted, was updated or skipped."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from simulator.config import HardwareLibrary
from simulator.errors import ConfigError, UsageError
from simulator.regress.baseline import (
    FORMAT,
    VERSION,
    Baseline,
    CurvePoint,
    Tolerances,
    baseline_path,
    merged_tolerances,
    read_baseline,
    write_baseline,
)
from simulator.regress.compare import Drift, check_points, compare
from simulator.regress.measure import Measured, default_gpus, load_for_regress, measure


@dataclass(frozen=True)
class Outcome:
    """One scenario's result.

    Attributes
    ----------
    stem, path : str, Path
        The scenario file's stem (its baseline's name) and path.
    status : str
        ``passed``, ``drifted``, ``updated`` or ``skipped``.
    drifts : list of Drift
        Metrics outside their tolerance (with ``updated``: what the update changed).
    baseline : Baseline or None
        The baseline compared with (the old one for ``updated``; None if there was none).
    measured : Measured or None
        The prediction now (None when skipped).
    note : str
        Why it was skipped, or where the baseline was written.
    seconds : float
        Time taken.
    """

    stem: str
    path: Path
    status: str
    drifts: list[Drift] = field(default_factory=list)
    baseline: Baseline | None = None
    measured: Measured | None = None
    note: str = ""
    seconds: float = 0.0


def run_regress(paths: list[Path], folder: Path, cli: Tolerances, gpus: list[int] | None = None,
                update: bool = False, library: HardwareLibrary | None = None) -> list[Outcome]:
    """Compare every scenario of ``paths`` with its baseline in ``folder`` (or rewrite it).

    Parameters
    ----------
    paths : list of Path
        Scenario files; a file with no ``model``/``training`` is skipped.
    folder : Path
        The baseline folder (``--update`` creates it).
    cli : Tolerances
        Tolerances from the command line (they beat the baseline's).
    gpus : list of int, optional
        Curve GPU counts instead of the baseline's (``--gpus``).
    update : bool
        Rewrite the baselines of ``paths`` instead of failing on drift.
    library : HardwareLibrary, optional
        Hardware specs (``--calibration`` applied); the default library when omitted.

    Raises
    ------
    UsageError
        If ``folder`` does not exist and ``update`` is False, or two files share a stem.
    ConfigError
        For an invalid scenario, or a missing or unreadable baseline.
    """
    library = library or HardwareLibrary()
    _check_inputs(paths, folder, update)
    if update:
        Path(folder).mkdir(parents=True, exist_ok=True)
    return [_one(Path(p), Path(folder), cli, gpus, update, library) for p in paths]


def _check_inputs(paths: list[Path], folder: Path, update: bool) -> None:
    if not update and not Path(folder).is_dir():
        raise UsageError(f"--baseline: folder '{folder}' does not exist; write the baselines first "
                         "with --update")
    if Path(folder).exists() and not Path(folder).is_dir():
        raise UsageError(f"--baseline: '{folder}' is a file; give a folder")
    stems: dict[str, Path] = {}
    for path in paths:
        stem = Path(path).stem
        if stem in stems:
            raise UsageError(f"{stems[stem]} and {path} would share the baseline {stem}.json; "
                             "rename one")
        stems[stem] = Path(path)


def _one(path: Path, folder: Path, cli: Tolerances, gpus: list[int] | None, update: bool,
         library: HardwareLibrary) -> Outcome:
    start = time.perf_counter()
    try:
        scenario, scenario_library = load_for_regress(path, library)
    except ConfigError as exc:
        if exc.key == "model" and "no step to compare" in exc.message:
            return Outcome(path.stem, path, "skipped", note="no model/training: nothing to compare")
        raise
    target = baseline_path(folder, path)
    old = _existing(target) if update else read_baseline(target)
    if old is not None and gpus is not None and not update:
        check_points(old, gpus, str(target))
    counts = gpus or (old.gpus if old is not None else None) or default_gpus(scenario, scenario_library)
    measured = measure(scenario, scenario_library, counts)
    drifts = compare(path.stem, old, measured, cli) if old is not None else []
    elapsed = time.perf_counter() - start
    if update:
        stored = old.tolerances if old is not None else Tolerances()
        write_baseline(target, _baseline(path, measured, merged_tolerances(cli, stored)))
        return Outcome(path.stem, path, "updated", drifts, old, measured, str(target), elapsed)
    return Outcome(path.stem, path, "drifted" if drifts else "passed", drifts, old, measured,
                   seconds=elapsed)


def _existing(target: Path) -> Baseline | None:
    """The baseline being replaced, or None if there is none or it cannot be read (an
    update may repair a damaged file)."""
    if not target.exists():
        return None
    try:
        return read_baseline(target)
    except ConfigError:
        return None


def _baseline(path: Path, measured: Measured, tolerances: Tolerances) -> Baseline:
    return Baseline(format=FORMAT, version=VERSION, scenario=measured.name, file=path.name,
                    tolerances=tolerances, step=measured.step,
                    scaling=[CurvePoint(gpus=g, metrics=m) for g, m in measured.scaling])
