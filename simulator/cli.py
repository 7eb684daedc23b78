"""The ``clustersim`` command: thin commands over pipeline, cost model and validation.

Every user mistake ends as one line ``error: ...`` on stderr and exit status 2 (a model
bug: exit 3; ``run --strict`` with warnings: 1; Ctrl-C: 130). Output files are checked
before any work starts (:mod:`simulator.report.guards`) and written atomically
(:mod:`simulator.export.atomic`). Progress bars appear only on a terminal
(:mod:`simulator.report.progress`); tables are not cut short in pipes
(:mod:`simulator.report.console`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import numpy as np
from rich.markup import escape

from simulator.collectives import Algorithm, Op, whole_cluster
from simulator.config.overlay import calibrated_library, overlay_sources
from simulator.errors import ClusterSimError, UsageError
from simulator.pipeline import MAX_SEED, MAX_STEPS, open_scenario, run_scenario, write_timeline
from simulator.report import progress, tables
from simulator.report.check import check_record, check_summary
from simulator.report.console import console
from simulator.report.guards import CheckedGroup
from simulator.report.run_report import run_report, warning_lines
from simulator.units import parse_size

out = console()
err = console(stderr=True)

ALGO_CHOICES = ["auto", *(a.value for a in Algorithm)]
OP_CHOICES = [o.value for o in Op]
_SCENARIO = click.Path(path_type=Path)
_OUT_FILE = click.Path(path_type=Path, dir_okay=False)
_STEPS = click.IntRange(1, MAX_STEPS)
_SEED = click.IntRange(0, MAX_SEED)
_QUIET = click.option("--quiet", "-q", is_flag=True, help="no progress bar")


def _say(text: str) -> None:
    """A note about what was done (files written): stderr, so stdout stays the result."""
    err.print(escape(text), soft_wrap=True)


@click.group(cls=CheckedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clustersim", prog_name="clustersim")
def app() -> None:
    """clustersim: predict distributed-training performance on GPU clusters.

    A SCENARIO is a YAML file (clustersim init writes one) or the name of a bundled
    example, e.g. gpt3-175b-1024xA100.
    """


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--json", "as_json", is_flag=True, help="print the facts and verdict as JSON")
def check(scenario: Path, as_json: bool) -> None:
    """Validate a scenario: its facts, and whether one step fits in GPU memory."""
    from simulator.pipeline import quick_step, resolve_scenario

    session = open_scenario(scenario)
    result = None
    if session.scenario.model is not None and session.scenario.training is not None:
        result = quick_step(session, str(resolve_scenario(scenario)))
    if as_json:
        click.echo(json.dumps(check_record(session, result)))
        return
    out.print(check_summary(session, result))
    for warning in result.warnings if result is not None else []:
        out.print(f"[bold yellow]warning:[/] {escape(warning)}", soft_wrap=True)


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--json", "as_json", is_flag=True, help="print the result fields as one JSON object")
@click.option("--engine", type=click.Choice(["analytical", "des"]), default=None,
              help="override simulate.engine")
@click.option("--steps", type=_STEPS, default=None,
              help=f"override simulate.steps (des engine; 1 to {MAX_STEPS:,})")
@click.option("--seed", type=_SEED, default=None, help="override simulate.seed (des engine, timelines)")
@click.option("--trace", type=_OUT_FILE, default=None,
              help="write a Chrome/Perfetto trace of one simulated step")
@click.option("--timeline-png", type=_OUT_FILE, default=None,
              help="write a Gantt chart of one replica's pipeline stages")
@click.option("--png", type=_OUT_FILE, default=None,
              help="write a histogram of the simulated step times (des engine)")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
@click.option("--strict", is_flag=True, help="exit with status 1 when the result has warnings")
@click.option("--attribute", is_flag=True,
              help="des: the slowdown against noise off, each cause's share and mitigation what-ifs")
@click.option("--spares", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="with --attribute: servers the spares what-if replaces")
@_QUIET
def run(scenario: Path, as_json: bool, engine: str | None, steps: int | None,
        seed: int | None, trace: Path | None, timeline_png: Path | None,
        png: Path | None, calibration: Path | None, strict: bool, attribute: bool, spares: int,
        quiet: bool) -> None:
    """Simulate training steps: step time, bubble, exposed communication, memory, MFU."""
    library = calibrated_library(calibration)
    chosen = engine or _scenario_engine(scenario, library)
    _check_des_options(chosen, steps, seed, png, timeline=bool(trace or timeline_png), attribute=attribute)
    if spares != 1 and not attribute:
        raise UsageError("--spares applies to --attribute's spares what-if; add --attribute")
    result = run_scenario(scenario, engine, library=library, steps=steps, seed=seed,
                          progress=progress.enabled(quiet or as_json))
    if attribute:
        from simulator.report.stragglers_report import with_attribution
        result = with_attribution(scenario, result, library, steps, seed, spares)
    if png:
        from simulator.report.histogram import write_step_histogram
        write_step_histogram(result.step_times_s or [result.step_time_s], result.name, png)
    if trace or timeline_png:
        write_timeline(scenario, trace, timeline_png, seed, library)
    if as_json:
        click.echo(json.dumps(result.to_json_dict()))
    else:
        out.print(run_report(result, with_warnings=False))
        for line in warning_lines(result):
            out.print(line, soft_wrap=True)
    for path in (png, trace, timeline_png):
        if path:
            _say(f"wrote {path}")
    if strict and result.warnings:
        raise StrictFailure(len(result.warnings))


class StrictFailure(ClusterSimError):
    """``run --strict`` and the result has warnings: one line, exit status 1."""

    exit_code = 1

    def __init__(self, count: int):
        super().__init__(f"--strict: {count} warning{'s' if count != 1 else ''} (listed in the result)")


def _scenario_engine(scenario: Path, library) -> str:
    from simulator.pipeline import load_with_calibration

    return load_with_calibration(scenario, library)[0].simulate.engine.value


def _check_des_options(engine: str, steps, seed, png, timeline: bool, attribute: bool = False) -> None:
    """Refuse options the chosen engine would ignore."""
    if engine == "des":
        return
    given = [name for name, value in (("--steps", steps), ("--png", png), ("--attribute", attribute or None))
             if value is not None]
    if seed is not None and not timeline:
        given.append("--seed")
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise UsageError(f"{' and '.join(given)} {verb} to the discrete-event engine, but this run "
                         "uses the analytical engine; add --engine des")


@app.command()
@click.argument("scenario", type=_SCENARIO)
@click.option("--op", type=click.Choice(OP_CHOICES), default="all_reduce", show_default=True,
              help="collective operation")
@click.option("--algo", type=click.Choice(ALGO_CHOICES), default=None,
              help="algorithm, or auto (the fastest, as NCCL's tuner); default: the scenario's "
                   "collectives.algorithm")
@click.option("--min-bytes", "-b", default="8", show_default=True, help="smallest size (8, 64K, 1M)")
@click.option("--max-bytes", "-e", default="8G", show_default=True, help="largest size")
@click.option("--factor", "-f", type=int, default=2, show_default=True, help="size step factor")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list")
@click.option("--csv", "csv_path", type=_OUT_FILE, is_flag=False, flag_value="-", default=None,
              metavar="[FILE]", help="write CSV to FILE (atomically), or print it with no FILE")
def collectives(scenario: Path, op: str, algo: str | None, min_bytes: str, max_bytes: str,
                factor: int, as_json: bool, csv_path: Path | None) -> None:
    """nccl-tests-style table of one collective over all the cluster's GPUs."""
    from simulator.cost.forced import bound_algorithm

    to_stdout = csv_path is not None and str(csv_path) == "-"
    if as_json and to_stdout:
        raise UsageError("--json and --csv without a FILE both print to stdout; give one, or "
                         "--csv FILE")
    sizes = _sizes(min_bytes, max_bytes, factor)
    session = open_scenario(scenario)
    algorithm = bound_algorithm(session.collectives, Op(op)) if algo is None else \
        None if algo == "auto" else Algorithm(algo)
    group = whole_cluster(session.cluster)
    sweep = session.collectives.sweep(Op(op), algorithm, group, sizes)
    if csv_path is not None and not to_stdout:
        from simulator.export.atomic import write_atomic
        write_atomic(csv_path, tables.sweep_csv(sweep), "--csv")
    if as_json:
        click.echo(json.dumps(sweep.records()))
    elif to_stdout:
        click.echo(tables.sweep_csv(sweep), nl=False)
    else:
        shown = algorithm.value if algorithm is not None else "auto"
        out.print(tables.sweep_table(sweep, f"{op} over {group.size} GPUs "
                                            f"({session.scenario.name}), algo {shown}"))
    if csv_path is not None and not to_stdout:
        _say(f"wrote {csv_path}")


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
@click.option("--engine", type=click.Choice(["analytical", "des"]), default=None,
              help="override simulate.engine for every point")
@click.option("--steps", type=_STEPS, default=None,
              help=f"simulated steps per point (des engine; 1 to {MAX_STEPS:,})")
@click.option("--seed", type=_SEED, default=None, help="random seed (des engine)")
@click.option("--png", type=_OUT_FILE, default=None,
              help="write a plot of throughput per GPU and scaling efficiency")
@click.option("--csv", "csv_path", type=_OUT_FILE, default=None, help="write the table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list, one object per point")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
@_QUIET
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
    _check_des_options(chosen, steps, seed, None, timeline=False)
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
    for path in (csv_path, png):
        if path is not None:
            _say(f"wrote {path}")


def _with_source(exc: ClusterSimError, source: str) -> ClusterSimError:
    from simulator.errors import ConfigError

    return exc.with_source(source) if isinstance(exc, ConfigError) else exc


from simulator.report.cli_catalog import init, presets, specs  # noqa: E402

for _command in (specs, presets, init):
    app.add_command(_command)


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


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app. User errors print one ``error:`` line and return 2 (model
    bugs 3, interrupted runs 130); set CLUSTERSIM_DEBUG=1 for a traceback of an internal error."""
    try:
        app.main(args=argv, prog_name="clustersim", standalone_mode=False)
    except ClusterSimError as exc:
        _error(str(exc))
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:
            click.echo(exc.ctx.get_help())      # `clustersim` alone: the help, status 2
            return 2
        command = exc.ctx.command_path if exc.ctx is not None else "clustersim"
        _error(f"{exc.format_message()} (see '{command} -h')")
        return 2
    except click.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        err.print("aborted", highlight=False)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if os.environ.get("CLUSTERSIM_DEBUG"):
            raise
        _error(f"internal error ({type(exc).__name__}: {exc}); this is a clustersim bug, please "
               "report it (CLUSTERSIM_DEBUG=1 shows the traceback)")
        return 3
    return 0


def _error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(_one_line(message))}", highlight=False, soft_wrap=True,
              emoji=False)


from simulator.measure.cli_commands import import_log, import_trace  # noqa: E402

app.add_command(import_trace)
app.add_command(import_log)

from simulator.validation.cli_validate import validate  # noqa: E402

app.add_command(validate)

from simulator.calibrate.cli import calibrate  # noqa: E402

app.add_command(calibrate)

from simulator.measure.compare_cli import compare  # noqa: E402

app.add_command(compare)

from simulator.regress.cli import regress  # noqa: E402

app.add_command(regress)

from simulator.sweep.cli_search import search_command  # noqa: E402

app.add_command(search_command)

from simulator.sweep.cli_latency import latency  # noqa: E402

app.add_command(latency)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
