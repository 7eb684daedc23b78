"""Gantt chart of one data-parallel replica's pipeline stages (matplotlib, imported lazily).

Each stage has two lanes: its compute stream (forward, backward, optimizer) and its
communication (pipeline sends, gradient reduction, and the in-layer tp/cp/ep collectives,
replayed or folded: :mod:`simulator.export.timeline_rows`). Written atomically as PNG.
"""

from __future__ import annotations

from pathlib import Path

from simulator.export.atomic import write_figure

COLORS = {"forward": "#4C72B0", "backward": "#DD8452", "send": "#55A868", "dp": "#C44E52",
          "optimizer": "#8172B3", "tp": "#937860", "cp": "#DA8BC3", "ep": "#8C8C8C",
          "in-layer": "#CCB974"}
LABELS = {"in-layer": "tp/cp/ep in line (share of the pass)", "dp": "gradient reduction",
          "send": "pipeline send"}


def write_gantt(frame, stage_gpus: list[int], title: str, path: Path | str) -> None:
    """Two lanes per pipeline stage (its GPU in ``stage_gpus``), tasks coloured by kind."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lanes = [(stage, gpu, compute) for stage, gpu in enumerate(stage_gpus) for compute in (True, False)]
    figure = Figure(figsize=(12, 0.45 * len(lanes) + 1.8), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    for row, (_, gpu, compute) in enumerate(lanes):
        tasks = frame[(frame.gpu == gpu) & ((frame.stream == "compute") == compute)]
        for kind, group in tasks.groupby("kind"):
            ax.broken_barh(list(zip(group.start_s, group.end_s - group.start_s, strict=True)),
                           (row - 0.4, 0.8), facecolors=COLORS.get(kind, "grey"),
                           label=LABELS.get(kind, kind))
    ax.set_yticks(range(len(lanes)), [f"stage {s} {'compute' if c else 'comm'}" for s, _, c in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title, fontsize="medium")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize="small")
    write_figure(figure, path, "--timeline-png")
