"""``clustersim scale``: the scenario's step on other GPU counts, keeping tp, pp, cp and ep
(:mod:`simulator.sweep.scale`), weak or strong, as a table, CSV, JSON or plot.

Registered by :mod:`simulator.cli`; user mistakes raise
:class:`~simulator.errors.UsageError` (one ``error:`` line, exit status 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.text import Text

from simulator.config.overlay import calibrated_library, overlay_sources
from simulator.errors import ClusterSimError, UsageError
from simulator.pipeline import MAX_STEPS
from simulator.report import progress
from simulator.report.cli_types import OUT_FILE, QUIET, SCENARIO, SEED, STEPS, check_des_options, out, say


@click.command()
@click.argument("scenario", type=SCENARIO)
@click.option("--gpus", "gpus_text", required=True, metavar="N,N,...",
              help="comma-separated GPU counts, e.g. 256,512,1024,2048")
@click.option("--weak", is_flag=True, help="weak scaling: global_batch grows with dp")
@click.option("--strong", is_flag=True, help="strong scaling: global_batch kept (the default)")
@click.option("--engine", type=click.Choice(["analytical", "des"]), default=None,
              help="override simulate.engine for every point")
@click.option("--steps", type=STEPS, default=None,
              help=f"simulated steps per point (des engine; 1 to {MAX_STEPS:,})")
@click.option("--seed", type=SEED, default=None, help="random seed (des engine)")
@click.option("--png", type=OUT_FILE, default=None,
              help="write a plot of throughput per GPU and scaling efficiency")
@click.option("--csv", "csv_path", type=OUT_FILE, default=None, help="write the table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list, one object per point")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
@QUIET
def scale(scenario: Path, gpus_text: str, weak: bool, strong: bool, engine: str | None,
          steps: int | None, seed: int | None, png: Path | None, csv_path: Path | None,
          as_json: bool, calibration: Path | None, quiet: bool) -> None:
    """Simulate the scenario's step on other GPU counts, keeping tp, pp, cp and ep."""
    from simulator.pipeline import load_with_calibration, resolve_scenario
    from simulator.report.scale_report import scale_report, write_csv, write_png
    from simulator.sweep.scale import EngineChoice, parse_gpu_list, scale_records, scale_sweep

    if weak and strong:
        raise UsageError("--weak and --strong exclude each other; give one")
    counts = parse_gpu_list(gpus_text)
    loaded, library = load_with_calibration(scenario, calibrated_library(calibration))
    chosen = engine or loaded.simulate.engine.value
    check_des_options(chosen, steps, seed, None, timeline=False)
    with progress.progress("scaling", len(counts), progress.enabled(quiet or as_json)) as advance:
        try:
            frame = scale_sweep(loaded, counts, weak, library, EngineChoice(chosen, steps, seed),
                                advance)
        except ClusterSimError as exc:
            raise _with_source(exc, str(resolve_scenario(scenario))) from None
    for path, write in ((csv_path, lambda p: write_csv(frame, p)),
                        (png, lambda p: write_png(frame, p, loaded.name, weak))):
        if path is not None:
            write(path)
    if as_json:
        click.echo(json.dumps(scale_records(frame)))
    else:
        out.print(scale_report(frame, loaded.name, weak))
        if overlay_sources(library):
            out.print(f"calibration in force: {escape(overlay_sources(library))}")
        elif note := _scaling_note(weak):
            out.print(Text.assemble(("validation: ", "bold cyan"), note), soft_wrap=True)
    for path in (csv_path, png):
        if path is not None:
            say(f"wrote {path}")


def _scaling_note(weak: bool) -> str | None:
    """How much faster published scaling curves of the sweep's kind (weak or at a held batch)
    fell than predicted (:func:`simulator.validation.regimes.scaling_note`)."""
    from simulator.validation.regimes import ROW_ERRORS, read_row_errors, scaling_note

    return scaling_note(read_row_errors(), weak) if ROW_ERRORS.is_file() else None


def _with_source(exc: ClusterSimError, source: str) -> ClusterSimError:
    from simulator.errors import ConfigError

    return exc.with_source(source) if isinstance(exc, ConfigError) else exc

