"""``clustersim compare``: a measured run (profiler trace or Megatron-LM log) against the
scenario's prediction, as a rich table, JSON, CSV and a bar chart.

Output paths are checked before any work; the CSV is written atomically. User mistakes raise
:class:`~simulator.errors.ClusterSimError` subclasses, which ``simulator.cli.main`` prints as
one ``error: ...`` line with exit status 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.errors import UsageError

out = Console()
_FILE = click.Path(path_type=Path, dir_okay=False)
_SCALE = {"s": (1e3, "ms"), "FLOP/s": (1e-12, "TFLOP/s"), "tokens/s": (1.0, "tokens/s")}


@click.command("compare")
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option("--trace", type=click.Path(path_type=Path), default=None,
              help="a PyTorch profiler (Kineto) trace of one rank, JSON or JSON.gz")
@click.option("--log", "log_path", type=click.Path(path_type=Path), default=None,
              help="a Megatron-LM (Megatron-Core, NeMo, Primus) training log")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as one JSON object")
@click.option("--csv", "csv_path", type=_FILE, default=None, help="also write the rows as CSV")
@click.option("--png", "png_path", type=_FILE, default=None,
              help="also write side-by-side bars of measured and predicted seconds")
def compare(scenario: Path, trace: Path | None, log_path: Path | None, as_json: bool,
            csv_path: Path | None, png_path: Path | None) -> None:
    """Predicted against measured step time and its parts (compute by kernel class, exposed
    communication, bubble, idle), with the error of each; parts a measurement cannot
    separate are marked, not estimated."""
    from simulator.measure.compare import compare_log, compare_trace
    from simulator.measure.files import check_output_path, write_atomic

    if (trace is None) == (log_path is None):
        raise UsageError("give exactly one of --trace TRACE.json[.gz] and --log LOG")
    for path, option in ((csv_path, "--csv"), (png_path, "--png")):
        if path is not None:
            check_output_path(path, option)
    result = (compare_trace(scenario, trace) if trace is not None
              else compare_log(scenario, log_path))
    if csv_path is not None:
        write_atomic(csv_path, result.csv_text())
    if png_path is not None:
        write_png(result, png_path)
    if as_json:
        click.echo(json.dumps(result.to_json_dict(), allow_nan=False))
        return
    out.print(comparison_table(result))
    for warning in result.warnings:
        out.print(f"note: {escape(warning)}", highlight=False)


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    factor, shown = _SCALE[unit]
    scaled = value * factor
    size = abs(scaled)
    digits = ",.0f" if size >= 1e4 else ",.1f" if size >= 100 else ".2f" if size >= 1 else ".3g"
    return f"{scaled:{digits}} {shown}"


def _title(result) -> str:
    m, p = result.measurement, result.prediction
    if m["kind"] == "trace":
        who = f"rank {m['rank']} of {m['world_size']}" if m.get("rank") is not None else "one rank"
        measured = f"{Path(m['source']).name}: {who}" + (f", {m['device']}" if m.get("device") else "")
    else:
        measured = f"{Path(m['source']).name}: {m['world_size']} GPUs"
    return (f"measured: {measured}\npredicted: {p['scenario']} ({p['gpus']} x {p['device']}), "
            f"{p['described']}")


def comparison_table(result) -> Group:
    """The rows as a rich table (part, measured, predicted, error, note number) followed by
    the numbered notes, each written once."""
    table = Table(title=escape(_title(result)), box=box.SIMPLE_HEAD, show_edge=False,
                  padding=(0, 1), pad_edge=False)
    for name in ("part", "measured", "predicted", "error", "note"):
        table.add_column(name, justify="left" if name in ("part", "note") else "right")
    notes: list[str] = []
    for row in result.rows:
        measured = _value(row.measured, row.unit) if row.measured is not None else row.status
        error = "" if row.error is None else f"{100 * row.error:+.1f}%"
        text = row.note if row.status == "compared" or row.measured is None \
            else f"{row.status}: {row.note}"
        if text and text not in notes:
            notes.append(text)
        table.add_row(row.part, escape(measured), _value(row.predicted, row.unit), error,
                      f"[{notes.index(text) + 1}]" if text else "")
    legend = Text("\n".join(f"[{i}] {note}" for i, note in enumerate(notes, 1)))
    return Group(table, legend)


def write_png(result, path: Path) -> None:
    """Side-by-side horizontal bars, measured and predicted, of the rows in seconds."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [r for r in result.rows if r.unit == "s"]
    y = list(range(len(rows)))
    measured = [1e3 * (r.measured or 0.0) for r in rows]
    predicted = [1e3 * (r.predicted or 0.0) for r in rows]
    figure = Figure(figsize=(8, 0.35 * len(rows) + 1.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.barh([v - 0.2 for v in y], measured, height=0.4, label="measured", color="tab:blue")
    axes.barh([v + 0.2 for v in y], predicted, height=0.4, label="predicted", color="tab:orange")
    for v, row in zip(y, rows, strict=True):
        if row.measured is None:
            axes.text(0, v - 0.2, f" {row.status}", va="center", fontsize=7, color="tab:blue")
    axes.set_yticks(y, [r.part for r in rows])
    axes.invert_yaxis()
    axes.set_xlabel("milliseconds per step")
    axes.grid(True, axis="x", alpha=0.3)
    axes.legend(loc="lower right")
    figure.suptitle(_title(result), fontsize=8)
    try:
        figure.savefig(path, format="png", dpi=110)
    except OSError as exc:
        raise UsageError(f"--png: cannot write {path}: {exc.strerror or exc}") from None
