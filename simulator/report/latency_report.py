"""The output of ``clustersim latency``: a rich table, a CSV file and a matplotlib figure.

All three read the frame of :func:`simulator.sweep.latency.latency_sweep`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from simulator.export.atomic import write_atomic, write_figure
from simulator.sweep.latency import OK
from simulator.units import format_bytes

_HEADERS = ["micro", "accum.", "batch", "step s", "samples/s", "tok/s", "sample lat. s", "MFU",
            "mem/GPU", "p50 s", "p95 s", "p99 s"]


def latency_report(frame: pd.DataFrame, name: str, fixed: bool) -> Group:
    """The table, a line naming the fastest and the most responsive size, and one line per
    infeasible size with its reason."""
    notes = [Text(f"micro batch {row.micro_batch} infeasible: {row.status}", style="yellow")
             for row in frame.itertuples() if row.status != OK]
    ok = frame[frame["status"] == OK]
    if len(ok):
        fast = ok.loc[ok["samples_per_s"].idxmax()]
        quick = ok.loc[ok["sample_latency_s"].idxmin()]
        notes.insert(0, Text(f"most samples/s at micro batch {int(fast.micro_batch)}; lowest "
                             f"sample latency at micro batch {int(quick.micro_batch)}"))
    return Group(latency_table(frame, f"{name}: micro batch vs latency ({_mode(fixed)})"), *notes)


def latency_table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(title=title)
    for header in _HEADERS:
        table.add_column(header, justify="right")
    for row in frame.itertuples():
        table.add_row(*_cells(row))
    return table


def _cells(row) -> list[str]:
    head = [str(row.micro_batch), _int(row.microbatches), _int(row.global_batch)]
    if row.status != OK:
        return [*head, *["-"] * 9]
    memory = format_bytes(row.memory_per_gpu_bytes)
    if not row.fits_in_memory:
        memory = f"[bold red]{memory}![/]"
    return [*head, f"{row.step_time_s:.3f}", f"{row.samples_per_s:,.1f}", f"{row.tokens_per_s:,.0f}",
            f"{row.sample_latency_s:.3f}", f"{row.mfu:.1%}", memory, f"{row.step_time_p50_s:.3f}",
            f"{row.step_time_p95_s:.3f}", f"{row.step_time_p99_s:.3f}"]


def _int(value) -> str:
    return "-" if pd.isna(value) else str(int(value))


def _mode(fixed: bool) -> str:
    return "global batch fixed" if fixed else "microbatches per step fixed"


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` as CSV (missing values as empty fields), atomically."""
    write_atomic(path, frame.to_csv(index=False), "--csv")


def write_png(frame: pd.DataFrame, path: Path, name: str, fixed: bool) -> None:
    """Plot throughput, sample latency and the p50/p99 step against micro-batch size into
    ``path`` as PNG, atomically (matplotlib's Agg canvas, no display needed)."""
    write_figure(latency_figure(frame, name, fixed), path, "--png", dpi=120)


def latency_figure(frame: pd.DataFrame, name: str, fixed: bool):
    """Top: samples/s against sample latency, one point per micro-batch size (the trade-off
    curve); bottom: p50 and p99 step time per size."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ok = frame[frame["status"] == OK]
    figure = Figure(figsize=(7, 7), layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1)
    top.plot(ok["sample_latency_s"], ok["samples_per_s"], marker="o", color="tab:blue")
    for row in ok.itertuples():
        top.annotate(f"b={row.micro_batch}", (row.sample_latency_s, row.samples_per_s),
                     textcoords="offset points", xytext=(5, 5))
    top.set_xlabel("sample latency (s): one micro batch forward and backward")
    top.set_ylabel("samples/s")
    top.grid(True, alpha=0.3)
    sizes = [str(b) for b in ok["micro_batch"]]
    bottom.plot(sizes, ok["step_time_p50_s"], marker="o", label="p50 step")
    bottom.plot(sizes, ok["step_time_p99_s"], marker="s", label="p99 step")
    bottom.set_xlabel("micro batch")
    bottom.set_ylabel("step time (s)")
    bottom.grid(True, alpha=0.3)
    bottom.legend()
    figure.suptitle(f"{name}: micro batch vs latency ({_mode(fixed)})")
    return figure
