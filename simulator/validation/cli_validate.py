"""``clustersim validate``: run every shipped validation set, print (and write) the report.

The ``--write`` path is checked before any set runs and the report is written atomically
(:mod:`simulator.export.atomic`); a progress bar over the sets appears on a terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from simulator.config import HardwareLibrary
from simulator.errors import UsageError
from simulator.export.atomic import check_output_path, write_atomic
from simulator.report import progress
from simulator.validation.regimes import ROW_ERRORS, row_errors
from simulator.validation.report import json_records, markdown_report
from simulator.validation.suite import SETS, default_root, run_validation

_DEFAULT_TARGET = "<docs/validation.md>"


@click.command("validate")
@click.option("--write", "write", type=click.Path(path_type=Path, dir_okay=False), is_flag=False,
              flag_value=_DEFAULT_TARGET, default=None, metavar="[PATH]",
              help="also write the Markdown report to PATH (atomically; default "
                   "docs/validation.md of the checkout)")
@click.option("--write-row-errors", "write_rows", type=click.Path(path_type=Path, dir_okay=False),
              is_flag=False, flag_value=str(ROW_ERRORS), default=None, metavar="[PATH]",
              help="also write the throughput rows' errors and regime tags as CSV (default: the "
                   "table `clustersim run` reads, simulator/validation/row_errors.csv)")
@click.option("--set", "names", multiple=True, metavar="NAME",
              help=f"run only this set (repeatable): {', '.join(SETS)}")
@click.option("--json", "as_json", is_flag=True, help="print summary, rows and constants as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def validate(write: Path | None, write_rows: Path | None, names: tuple[str, ...], as_json: bool,
             quiet: bool) -> None:
    """Compare predictions with every shipped public measurement: per set MAPE and max error."""
    root = default_root()
    library = HardwareLibrary()
    target = None
    if write is not None:
        target = root / "docs" / "validation.md" if str(write) == _DEFAULT_TARGET else write
        check_output_path(target, "--write")
    if write_rows is not None:
        if names:
            raise UsageError("--write-row-errors takes every set's rows; drop --set")
        check_output_path(write_rows, "--write-row-errors")
    frame = _run_sets(root, names, progress.enabled(quiet or as_json))
    regimes = row_errors(frame, root, library)
    report = markdown_report(frame, library, regimes)
    if target is not None:
        write_atomic(target, report, "--write")
    if write_rows is not None:
        write_atomic(write_rows, regimes.to_csv(index=False), "--write-row-errors")
    if as_json:
        click.echo(json.dumps(json_records(frame, library), allow_nan=False))
    else:
        click.echo(report, nl=False)


def _run_sets(root: Path, names: tuple[str, ...], show: bool) -> pd.DataFrame:
    """:func:`run_validation` of ``names``, one set at a time under a progress bar."""
    if not show:
        return run_validation(root, names)
    if any(name not in SETS for name in names):
        return run_validation(root, names)      # refuses the unknown name before any set runs
    order = [name for name in SETS if not names or name in names]
    frames = []
    with progress.progress("validation sets", len(order), True) as advance:
        for name in order:
            frames.append(run_validation(root, [name]))
            advance(1)
    return pd.concat(frames, ignore_index=True)

