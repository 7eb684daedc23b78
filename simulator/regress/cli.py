"""``clustersim regress``: compare scenarios' predictions with baselines kept in a folder.

Exit status 0 when every metric is within its tolerance, 1 when something drifted (the
table names each metric with its baseline, its value now and the change), 2 on a user
error (no baseline, unreadable file, bad option).
"""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from simulator.config.overlay import calibrated_library
from simulator.config.yaml_io import did_you_mean
from simulator.errors import ClusterSimError, UsageError
from simulator.measure.files import check_output_path
from simulator.regress.baseline import Tolerances
from simulator.regress.output import drift_table, write_curve_pngs, write_junit
from simulator.regress.runner import Outcome, run_regress

out = Console()


def parse_metric_tolerances(entries: tuple[str, ...]) -> dict[str, float]:
    """``NAME=VALUE`` pairs of ``--rtol-metric`` as a mapping.

    Raises
    ------
    UsageError
        For an entry without ``=``, an empty name, a name that is no metric a baseline holds
        (:func:`~simulator.regress.measure.metric_names`; a misspelt one would otherwise be
        ignored without a word), or a value that is not a number in [0, 10].
    """
    from simulator.regress.measure import metric_names

    metrics = {}
    known = metric_names()
    for entry in entries:
        name, sep, value = entry.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--rtol-metric: expected NAME=VALUE (e.g. mfu=0.02), got '{entry}'")
        if name not in known:
            raise UsageError(f"--rtol-metric: no metric named '{name}'{did_you_mean(name, known)}; "
                             f"known: {', '.join(known)}")
        metrics[name] = _fraction(value, f"--rtol-metric {name}")
    return metrics


def _fraction(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{option}: '{text}' is not a number") from None
    if not 0.0 <= value <= 10.0:
        raise UsageError(f"{option}: {text} is outside 0..10 (a relative tolerance; 0.01 is 1%)")
    return value


@click.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", "folder", required=True, type=click.Path(path_type=Path),
              help="folder of baseline files, one <scenario file stem>.json per scenario")
@click.option("--rtol", type=str, default=None,
              help="relative tolerance of every metric (default: the baseline's, else 0.01)")
@click.option("--rtol-metric", "rtol_metric", multiple=True, metavar="NAME=VALUE",
              help="tolerance of one metric (step metric, or scale.NAME on the curve); repeatable")
@click.option("--gpus", "gpus_text", default=None,
              help="GPU counts of the scaling curve (default: those stored in the baseline)")
@click.option("--update", is_flag=True, help="rewrite the baselines of the scenarios named")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="write JUnit XML (one test case per scenario)")
@click.option("--png", "png_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="folder for one plot per drifted scaling curve, baseline against now")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
def regress(scenarios: tuple[Path, ...], folder: Path, rtol: str | None, rtol_metric: tuple[str, ...],
            gpus_text: str | None, update: bool, junit: Path | None, png_dir: Path | None,
            calibration: Path | None) -> None:
    """Compare each scenario's step and scaling curve with its baseline (exit 1 on drift)."""
    from simulator.sweep.scale import parse_gpu_list

    cli = Tolerances(rtol=None if rtol is None else _fraction(rtol, "--rtol"),
                     metrics=parse_metric_tolerances(rtol_metric))
    gpus = parse_gpu_list(gpus_text) if gpus_text is not None else None
    if junit is not None:
        check_output_path(junit, "--junit")
    if png_dir is not None and not png_dir.is_dir():
        raise UsageError(f"--png: folder '{png_dir}' does not exist; create it first")
    start = time.perf_counter()
    outcomes = run_regress(list(scenarios), folder, cli, gpus, update, calibrated_library(calibration))
    _report(outcomes, update)
    if junit is not None:
        write_junit(junit, outcomes, time.perf_counter() - start)
    if png_dir is not None:
        for path in write_curve_pngs(png_dir, outcomes):
            out.print(f"wrote {escape(str(path))}")
    drifted = [o for o in outcomes if o.status == "drifted"]
    if drifted:
        metrics = sum(len(o.drifts) for o in drifted)
        raise DriftError(f"{metrics} metric(s) drifted in {len(drifted)} of {len(outcomes)} "
                         "scenario(s) (table above); accept a change with --update")


class DriftError(ClusterSimError):
    """Some metric is outside its tolerance: the CLI prints one line and exits with status 1."""

    exit_code = 1


def _report(outcomes: list[Outcome], update: bool) -> None:
    for o in outcomes:
        detail = {"passed": "within tolerance", "drifted": f"{len(o.drifts)} metric(s) drifted",
                  "updated": f"wrote {o.note}" + (f" ({len(o.drifts)} metric(s) changed)"
                                                   if o.drifts else ""),
                  "skipped": o.note}[o.status]
        style = {"passed": "green", "drifted": "bold red", "updated": "cyan", "skipped": "yellow"}
        out.print(f"[{style[o.status]}]{o.status:>7}[/] {escape(o.stem)}: {escape(detail)} "
                  f"[dim]({o.seconds:.1f} s)[/]", highlight=False)
    drifts = [d for o in outcomes for d in o.drifts]
    if drifts:
        table = drift_table(drifts)
        if update:
            table.title = "changes written to the baseline"
        out.print(table)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "drifted", "updated", "skipped")}
    out.print(", ".join(f"{n} {s}" for s, n in counts.items() if n), highlight=False)
