"""``clustersim validate``: run every shipped validation set, print (and write) the report."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click

from simulator.config import HardwareLibrary
from simulator.errors import UsageError
from simulator.validation.report import json_records, markdown_report
from simulator.validation.suite import SETS, default_root, run_validation

_DEFAULT_TARGET = "<docs/validation.md>"


@click.command("validate")
@click.option("--write", "write", type=click.Path(path_type=Path, dir_okay=False), is_flag=False,
              flag_value=_DEFAULT_TARGET, default=None, metavar="[PATH]",
              help="also write the Markdown report to PATH (atomically; default "
                   "docs/validation.md of the checkout)")
@click.option("--set", "names", multiple=True, metavar="NAME",
              help=f"run only this set (repeatable): {', '.join(SETS)}")
@click.option("--json", "as_json", is_flag=True, help="print summary, rows and constants as JSON")
def validate(write: Path | None, names: tuple[str, ...], as_json: bool) -> None:
    """Compare predictions with every shipped public measurement: per set MAPE and max error."""
    root = default_root()
    library = HardwareLibrary()
    frame = run_validation(root, names)
    report = markdown_report(frame, library)
    if write is not None:
        target = root / "docs" / "validation.md" if str(write) == _DEFAULT_TARGET else write
        write_atomically(target, report)
    if as_json:
        click.echo(json.dumps(json_records(frame, library), allow_nan=False))
    else:
        click.echo(report, nl=False)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename.

    Raises
    ------
    UsageError
        If the folder does not exist or cannot be written.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"--write: folder {folder} does not exist")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"--write: cannot write in {folder}: {exc.strerror}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"--write: cannot write {path}: {exc.strerror}") from None
