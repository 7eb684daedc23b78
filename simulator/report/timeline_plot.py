"""Gantt chart of one data-parallel replica's pipeline stages (matplotlib, imported lazily)."""

from __future__ import annotations

from pathlib import Path

COLORS = {"forward": "#4C72B0", "backward": "#DD8452", "send": "#55A868", "dp": "#C44E52",
          "optimizer": "#8172B3", "tp": "#937860", "cp": "#DA8BC3", "ep": "#8C8C8C"}


def write_gantt(frame, stage_gpus: list[int], title: str, path: Path | str) -> None:
    """One row per pipeline stage (its GPU in ``stage_gpus``), tasks coloured by kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 0.5 * len(stage_gpus) + 1.5))
    for row, gpu in enumerate(stage_gpus):
        tasks = frame[(frame.gpu == gpu)]
        for kind, group in tasks.groupby("kind"):
            ax.broken_barh(list(zip(group.start_s, group.end_s - group.start_s, strict=True)),
                           (row - 0.4, 0.8), facecolors=COLORS.get(kind, "grey"), label=kind)
    ax.set_yticks(range(len(stage_gpus)), [f"stage {i}" for i in range(len(stage_gpus))])
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
