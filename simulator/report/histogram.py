"""Histogram of simulated step times (matplotlib, imported lazily; written atomically)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.export.atomic import write_figure


def write_step_histogram(step_times_s: list[float], title: str, path: Path | str) -> None:
    """Step-time histogram with the p50, p95 and p99 marked, as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    times = np.asarray(step_times_s)
    figure = Figure(figsize=(8, 4), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.hist(times, bins=min(50, max(10, times.size // 5)), color="#4C72B0")
    for q, style in ((50, "-"), (95, "-."), (99, "--")):
        ax.axvline(np.percentile(times, q), color="black", linestyle=style, label=f"p{q}")
    ax.set_xlabel("step time (s)")
    ax.set_ylabel("steps")
    ax.set_title(f"{title}: {times.size} simulated step{'s' if times.size != 1 else ''}")
    ax.legend()
    write_figure(figure, path, "--png")
