"""``clustersim latency``: throughput against latency over micro-batch sizes
(:mod:`simulator.sweep.latency`), as a table, CSV, JSON and a plot."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from simulator.config.overlay import calibrated_library
from simulator.errors import ClusterSimError, ConfigError
from simulator.pipeline import MAX_SEED, MAX_STEPS, load_with_calibration, resolve_scenario
from simulator.report import progress
from simulator.report.console import console
from simulator.report.latency_report import latency_report, write_csv, write_png
from simulator.sweep.latency import latency_records, latency_sweep, parse_micro_batches

out = console()
err = console(stderr=True)
_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("latency")
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option("--micro-batch", "sizes_text", required=True, metavar="B,B,...",
              help="comma-separated micro-batch sizes, e.g. 1,2,4,8")
@click.option("--global-batch-fixed", is_flag=True,
              help="keep training.global_batch (fewer accumulation steps as the micro batch "
                   "grows); default: keep the microbatches per step, the global batch follows")
@click.option("--steps", type=click.IntRange(1, MAX_STEPS), default=None,
              help="steps the discrete-event fast path simulates per size (default: 200 or "
                   "simulate.steps if larger)")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=None,
              help="random seed of the noise (default: simulate.seed)")
@click.option("--png", type=_FILE, default=None,
              help="write samples/s against sample latency and the p50/p99 step per size")
@click.option("--csv", "csv_path", type=_FILE, default=None, help="write the table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list, one object per size")
@click.option("--calibration", type=_FILE, default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def latency(scenario: Path, sizes_text: str, global_batch_fixed: bool, steps: int | None,
            seed: int | None, png: Path | None, csv_path: Path | None, as_json: bool,
            calibration: Path | None, quiet: bool) -> None:
    """Throughput, step time, sample latency, memory and p50/p95/p99 step per micro batch."""
    sizes = parse_micro_batches(sizes_text)
    loaded, library = load_with_calibration(scenario, calibrated_library(calibration))
    shown = progress.enabled(quiet or as_json)
    with progress.progress("micro batches", len(sizes), shown) as advance:
        try:
            frame = latency_sweep(loaded, sizes, global_batch_fixed, library, steps, seed, advance)
        except ClusterSimError as exc:
            source = str(resolve_scenario(scenario))
            raise (exc.with_source(source) if isinstance(exc, ConfigError) else exc) from None
    if csv_path is not None:
        write_csv(frame, csv_path)
    if png is not None:
        write_png(frame, png, loaded.name, global_batch_fixed)
    if as_json:
        click.echo(json.dumps(latency_records(frame)))
    else:
        out.print(latency_report(frame, loaded.name, global_batch_fixed))
    for path in (csv_path, png):
        if path is not None:
            err.print(escape(f"wrote {path}"), soft_wrap=True)
