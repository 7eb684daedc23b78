"""The ``clustersim`` command: thin commands over pipeline, cost model and validation.

Every user mistake ends as one line ``error: ...`` on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.markup import escape

from simulator.collectives import Algorithm, Op, whole_cluster
from simulator.config import HardwareLibrary
from simulator.config.library import CATEGORIES
from simulator.config.overlay import calibrated_library, overlay_sources
from simulator.config.yaml_io import did_you_mean
from simulator.errors import ClusterSimError, UsageError
from simulator.pipeline import open_scenario, run_scenario, write_timeline
from simulator.report import tables
from simulator.report.check import check_summary
from simulator.report.run_report import run_report
from simulator.units import parse_size

out = Console()
err = Console(stderr=True)

ALGO_CHOICES = ["auto", *(a.value for a in Algorithm)]
OP_CHOICES = [o.value for o in Op]
_SCENARIO = click.Path(path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clustersim", prog_name="clustersim")
def app() -> None:
    """clustersim: predict distributed-training performance on GPU clusters."""


@app.command()
@click.argument("scenario", type=_SCENARIO)
def check(scenario: Path) -> None:
    """Validate a scenario and print a short summary."""
    session = open_scenario(scenario)
    out.print(check_summary(session))


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--json", "as_json", is_flag=True, help="print the result fields as one JSON object")
@click.option("--engine", type=click.Choice(["analytical", "des"]), default=None,
              help="override simulate.engine")
@click.option("--steps", type=int, default=None, help="override simulate.steps (des engine)")
@click.option("--seed", type=int, default=None, help="override simulate.seed")
@click.option("--trace", type=click.Path(path_type=Path), default=None,
              help="write a Chrome/Perfetto trace of one simulated step")
@click.option("--timeline-png", type=click.Path(path_type=Path), default=None,
              help="write a Gantt chart of one replica's pipeline stages")
@click.option("--png", type=click.Path(path_type=Path), default=None,
              help="write a histogram of the simulated step times")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
def run(scenario: Path, as_json: bool, engine: str | None, steps: int | None,
        seed: int | None, trace: Path | None, timeline_png: Path | None,
        png: Path | None, calibration: Path | None) -> None:
    """Simulate training steps: step time, bubble, exposed communication, memory, MFU."""
    library = calibrated_library(calibration)
    result = run_scenario(scenario, engine, library=library, steps=steps, seed=seed)
    if png:
        from simulator.report.histogram import write_step_histogram
        write_step_histogram(result.step_times_s or [result.step_time_s], result.name, png)
    if trace or timeline_png:
        write_timeline(scenario, trace, timeline_png, seed, library)
    if as_json:
        click.echo(json.dumps(result.to_json_dict()))
    else:
        out.print(run_report(result))


@app.command()
@click.argument("name", required=False)
def specs(name: str | None) -> None:
    """List the hardware library, or show one spec (GPU, link, node) with its sources."""
    library = HardwareLibrary()
    if name is None:
        out.print(tables.names_table({c: library.names(c) for c in CATEGORIES}))
        return
    categories = library.find(name)
    if not categories:
        every = [n for c in CATEGORIES for n in library.names(c)]
        raise UsageError(f"no spec named '{name}'{did_you_mean(name, every)}; "
                         "run 'clustersim specs' for the list")
    for category in categories:
        spec = library.load_any(category, name)
        out.print(tables.spec_table(spec, f"{category}/{name}: {spec.display_name}"))


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--op", type=click.Choice(OP_CHOICES), default="all_reduce", show_default=True,
              help="collective operation")
@click.option("--algo", type=click.Choice(ALGO_CHOICES), default="auto", show_default=True,
              help="algorithm, or auto (the fastest, as NCCL's tuner)")
@click.option("--min-bytes", "-b", default="8", show_default=True, help="smallest size (8, 64K, 1M)")
@click.option("--max-bytes", "-e", default="8G", show_default=True, help="largest size")
@click.option("--factor", "-f", type=int, default=2, show_default=True, help="size step factor")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV")
def collectives(scenario: Path, op: str, algo: str, min_bytes: str, max_bytes: str, factor: int,
                as_json: bool, as_csv: bool) -> None:
    """nccl-tests-style table of one collective over all the cluster's GPUs."""
    sizes = _sizes(min_bytes, max_bytes, factor)
    session = open_scenario(scenario)
    algorithm = None if algo == "auto" else Algorithm(algo)
    group = whole_cluster(session.cluster)
    sweep = session.collectives.sweep(Op(op), algorithm, group, sizes)
    if as_json:
        click.echo(json.dumps(sweep.records()))
    elif as_csv:
        click.echo(tables.sweep_csv(sweep), nl=False)
    else:
        title = f"{op} over {group.size} GPUs ({session.scenario.name}), algo {algo}"
        out.print(tables.sweep_table(sweep, title))


@app.command("compare-nccl")
@click.argument("log", type=click.Path(path_type=Path))
@click.argument("scenario", type=_SCENARIO)
@click.option("--op", type=click.Choice(OP_CHOICES), default=None,
              help="override the collective named in the log")
@click.option("--algo", type=click.Choice(ALGO_CHOICES), default=None,
              help="override NCCL_ALGO found in the log")
@click.option("--json", "as_json", is_flag=True, help="print JSON records")
def compare_nccl(log: Path, scenario: Path, op: str | None, algo: str | None,
                 as_json: bool) -> None:
    """Predicted against measured time and busbw per size, for a nccl-tests log."""
    from simulator.validation.compare import compare_log
    from simulator.validation.nccl_log import read_nccl_log

    measured = read_nccl_log(log)
    session = open_scenario(scenario)
    algorithm = None if algo in (None, "auto") else Algorithm(algo)
    frame = compare_log(measured, session.collectives, Op(op) if op else None, algorithm)
    if as_json:
        click.echo(frame.to_json(orient="records"))
    else:
        out.print(tables.comparison_table(frame, f"{log} vs {session.scenario.name}"))


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--gpus", "gpus_text", required=True, metavar="N,N,...",
              help="comma-separated GPU counts, e.g. 256,512,1024,2048")
@click.option("--weak", is_flag=True, help="weak scaling: global_batch grows with dp")
@click.option("--strong", is_flag=True, help="strong scaling: global_batch kept (the default)")
@click.option("--png", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="write a plot of throughput per GPU and scaling efficiency")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="write the table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list, one object per point")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
def scale(scenario: Path, gpus_text: str, weak: bool, strong: bool, png: Path | None,
          csv_path: Path | None, as_json: bool, calibration: Path | None) -> None:
    """Simulate the scenario's step on other GPU counts, keeping tp, pp, cp and ep."""
    from simulator.pipeline import load_with_calibration
    from simulator.report.scale_report import scale_report, write_csv, write_png
    from simulator.sweep.scale import parse_gpu_list, scale_records, scale_sweep

    if weak and strong:
        raise UsageError("--weak and --strong exclude each other; give one")
    counts = parse_gpu_list(gpus_text)
    loaded, library = load_with_calibration(scenario, calibrated_library(calibration))
    frame = scale_sweep(loaded, counts, weak, library)
    if csv_path is not None:
        write_csv(frame, csv_path)
    if png is not None:
        write_png(frame, png, loaded.name, weak)
    if as_json:
        click.echo(json.dumps(scale_records(frame)))
    else:
        out.print(scale_report(frame, loaded.name, weak))
        if overlay_sources(library):
            out.print(f"calibration in force: {escape(overlay_sources(library))}")


def _sizes(min_text: str, max_text: str, factor: int) -> np.ndarray:
    try:
        low, high = parse_size(min_text), parse_size(max_text)
    except ValueError as exc:
        raise UsageError(f"--min-bytes/--max-bytes: {exc}") from None
    if low <= 0 or high <= 0:
        raise UsageError("--min-bytes and --max-bytes must be positive")
    if low > high:
        raise UsageError(f"--min-bytes ({low}) is larger than --max-bytes ({high})")
    if factor < 2:
        raise UsageError("--factor must be 2 or more")
    if high > 2**50:
        raise UsageError("--max-bytes must be at most 1P (2**50 bytes)")
    sizes = [low]
    while sizes[-1] * factor <= high:
        sizes.append(sizes[-1] * factor)
    return np.array(sizes, dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; user errors print one line and return 2."""
    try:
        app.main(args=argv, prog_name="clustersim", standalone_mode=False)
    except ClusterSimError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True,
                  emoji=False)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except click.exceptions.Abort:
        err.print("aborted")
        return 130
    except BrokenPipeError:
        return 0
    return 0


from simulator.measure.cli_commands import import_log, import_trace  # noqa: E402

app.add_command(import_trace)
app.add_command(import_log)

from simulator.validation.cli_validate import validate  # noqa: E402

app.add_command(validate)

from simulator.calibrate.cli import calibrate  # noqa: E402

app.add_command(calibrate)

from simulator.measure.compare_cli import compare  # noqa: E402

app.add_command(compare)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
