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
from rich.markup import escape
from rich.text import Text

from simulator.config.overlay import calibrated_library
from simulator.errors import ClusterSimError, UsageError
from simulator.pipeline import MAX_STEPS, open_scenario, run_scenario, write_timeline
from simulator.report import progress
from simulator.report.check import check_record, check_summary
from simulator.report.cli_types import (
    OUT_FILE,
    QUIET,
    SCENARIO,
    SEED,
    STEPS,
    check_des_options,
    err,
    out,
    say,
)
from simulator.report.guards import CheckedGroup
from simulator.report.run_report import run_report, warning_lines


@click.group(cls=CheckedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clustersim", prog_name="clustersim")
def app() -> None:
    """clustersim: predict distributed-training performance on GPU clusters.

    A SCENARIO is a YAML file (clustersim init writes one) or the name of a bundled
    example, e.g. gpt3-175b-1024xA100.
    """


@app.command()
@click.argument("scenario", type=SCENARIO)
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
@click.argument("scenario", type=SCENARIO)
@click.option("--json", "as_json", is_flag=True, help="print the result fields as one JSON object")
@click.option("--engine", type=click.Choice(["analytical", "des"]), default=None,
              help="override simulate.engine")
@click.option("--steps", type=STEPS, default=None,
              help=f"override simulate.steps (des engine; 1 to {MAX_STEPS:,})")
@click.option("--seed", type=SEED, default=None, help="override simulate.seed (des engine, timelines)")
@click.option("--trace", type=OUT_FILE, default=None,
              help="write a Chrome/Perfetto trace of one simulated step")
@click.option("--timeline-png", type=OUT_FILE, default=None,
              help="write a Gantt chart of one replica's pipeline stages")
@click.option("--png", type=OUT_FILE, default=None,
              help="write a histogram of the simulated step times (des engine)")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
@click.option("--strict", is_flag=True, help="exit with status 1 when the result has warnings")
@click.option("--attribute", is_flag=True,
              help="des: the slowdown against noise off, each cause's share and mitigation what-ifs")
@click.option("--spares", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="with --attribute: servers the spares what-if replaces")
@QUIET
def run(scenario: Path, as_json: bool, engine: str | None, steps: int | None,
        seed: int | None, trace: Path | None, timeline_png: Path | None,
        png: Path | None, calibration: Path | None, strict: bool, attribute: bool, spares: int,
        quiet: bool) -> None:
    """Simulate training steps: step time, bubble, exposed communication, memory, MFU."""
    library = calibrated_library(calibration)
    chosen = engine or _scenario_engine(scenario, library)
    check_des_options(chosen, steps, seed, png, timeline=bool(trace or timeline_png), attribute=attribute)
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
        payload = result.to_json_dict()
        if not result.calibration:           # the notes' sentences, as the report ends with them
            payload["validation"] = _validation_notes(scenario, library)
        click.echo(json.dumps(payload))
    else:
        out.print(run_report(result, with_warnings=False))
        for line in warning_lines(result):
            out.print(line, soft_wrap=True)
        for note in [] if result.calibration else _validation_notes(scenario, library):
            out.print(Text.assemble(("validation: ", "bold cyan"), note), soft_wrap=True)
    for path in (png, trace, timeline_png):
        if path:
            say(f"wrote {path}")
    if strict and result.warnings:
        raise StrictFailure(len(result.warnings))


class StrictFailure(ClusterSimError):
    """``run --strict`` and the result has warnings: one line, exit status 1."""

    exit_code = 1

    def __init__(self, count: int):
        super().__init__(f"--strict: {count} warning{'s' if count != 1 else ''} (listed in the result)")


def _validation_notes(scenario: Path, library) -> list[str]:
    """How far published runs like ``scenario`` were from their predictions, throughput and
    peak memory (:func:`simulator.validation.regimes.validation_notes`)."""
    from simulator.config import load_scenario
    from simulator.pipeline import resolve_scenario
    from simulator.validation.regimes import validation_notes

    return validation_notes(load_scenario(resolve_scenario(scenario), library), library)


def _scenario_engine(scenario: Path, library) -> str:
    from simulator.pipeline import load_with_calibration

    return load_with_calibration(scenario, library)[0].simulate.engine.value


from simulator.report.cli_catalog import init, presets, specs  # noqa: E402
from simulator.report.cli_collectives import collectives, compare_nccl  # noqa: E402
from simulator.sweep.cli_scale import scale  # noqa: E402

for _command in (collectives, compare_nccl, scale, specs, presets, init):
    app.add_command(_command)


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
