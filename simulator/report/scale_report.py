"""The output of ``clustersim scale``: a rich table, a CSV file and a matplotlib figure.

All three read the frame of :func:`simulator.sweep.scale.scale_sweep`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from simulator.export.atomic import write_atomic, write_figure
from simulator.sweep.scale import OK
from simulator.units import format_bytes

_HEADERS = ["GPUs", "DP", "batch", "step s", "tok/s/GPU", "MFU", "bubble", "comm s",
            "mem/GPU", "eff.", "status"]
"""Kept narrow enough for an 100-column terminal; --csv and --json carry every field."""


def scale_report(frame: pd.DataFrame, name: str, weak: bool) -> Group:
    """The scaling table, then one line per infeasible point with its reason.

    Parameters
    ----------
    frame : pandas.DataFrame
        The result of :func:`~simulator.sweep.scale.scale_sweep`.
    name : str
        Scenario name, for the title.
    weak : bool
        Whether the sweep was weak scaling (for the title).
    """
    notes = [Text(f"{row.gpus} GPUs infeasible: {row.status}", style="yellow")
             for row in frame.itertuples() if row.status != OK]
    return Group(scale_table(frame, f"{name}: {_mode(weak)} scaling"), *_schedules_note(frame), *notes)


def _schedules_note(frame: pd.DataFrame) -> list[Text]:
    """One line giving each point's pipeline schedules a step when any runs more than one
    (``parallelism.pipeline_flushes``, which the sweep sets from the held microbatches per
    schedule: :func:`simulator.sweep.scale.scale_sweep`)."""
    planned = frame[frame["status"] == OK]
    if planned.empty or (planned["pipeline_flushes"] == 1).all():
        return []
    counts = ", ".join(f"{int(row.pipeline_flushes)} at {row.gpus} GPUs" for row in planned.itertuples())
    return [Text(f"pipeline schedules a step (parallelism.pipeline_flushes), each of the scenario's "
                 f"microbatches per schedule: {counts}")]


def scale_table(frame: pd.DataFrame, title: str) -> Table:
    """One row per GPU count; an infeasible point shows dashes where nothing was simulated."""
    table = Table(title=title)
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "status" else "right")
    for row in frame.itertuples():
        table.add_row(*_cells(row))
    return table


def _cells(row) -> list[str]:
    layout = [str(row.gpus), _int(row.dp), _int(row.global_batch)]
    if row.status != OK:
        return [*layout, *["-"] * 7, "[yellow]infeasible[/]"]
    memory = format_bytes(row.memory_per_gpu_bytes)
    if not row.fits_in_memory:
        memory = f"[bold red]{memory}![/]"
    return [*layout, f"{row.step_time_s:.3f}", f"{row.tokens_per_s_per_gpu:,.0f}",
            f"{row.mfu:.1%}", f"{row.bubble_fraction:.1%}", f"{row.comm_exposed_s:.3f}",
            memory, f"{row.scaling_efficiency:.1%}", OK]


def _int(value) -> str:
    return "-" if pd.isna(value) else str(int(value))


def _mode(weak: bool) -> str:
    return "weak" if weak else "strong"


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` as CSV (missing values as empty fields), atomically.

    Raises
    ------
    UsageError
        If ``path`` cannot be written.
    """
    write_atomic(path, frame.to_csv(index=False), "--csv")


def write_png(frame: pd.DataFrame, path: Path, name: str, weak: bool) -> None:
    """Plot tokens/s per GPU and scaling efficiency against GPU count (log2 x) into ``path``
    as PNG, atomically.

    Matplotlib is imported here, and draws with the Agg canvas (no display needed).

    Raises
    ------
    UsageError
        If ``path`` cannot be written.
    """
    write_figure(scale_figure(frame, name, weak), path, "--png", dpi=120)


def scale_figure(frame: pd.DataFrame, name: str, weak: bool):
    """A matplotlib :class:`~matplotlib.figure.Figure` of the sweep (feasible points only)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ok = frame[frame["status"] == OK]
    figure = Figure(figsize=(7, 6), layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True)
    _panel(top, ok["gpus"], ok["tokens_per_s_per_gpu"], "tokens/s per GPU", "tab:blue")
    _panel(bottom, ok["gpus"], ok["scaling_efficiency"] * 100, "scaling efficiency (%)",
           "tab:orange")
    bottom.set_xlabel("GPUs")
    bottom.set_xscale("log", base=2)
    bottom.minorticks_off()
    if len(ok):
        bottom.set_xticks(list(ok["gpus"]), [str(g) for g in ok["gpus"]])
    figure.suptitle(f"{name}: {_mode(weak)} scaling")
    return figure


def _panel(axes, x: pd.Series, y: pd.Series, label: str, color: str) -> None:
    axes.plot(x, y, marker="o", color=color)
    axes.set_ylabel(label)
    axes.minorticks_off()
    axes.grid(True, alpha=0.3)
    axes.set_ylim(0, 1.1 * y.max() if len(y) else 1.0)
