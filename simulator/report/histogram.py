"""Histogram of simulated step times (matplotlib, imported lazily)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_step_histogram(step_times_s: list[float], title: str, path: Path | str) -> None:
    """Step-time histogram with the p50, p95 and p99 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = np.asarray(step_times_s)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.hist(times, bins=min(50, max(10, times.size // 5)), color="#4C72B0")
    for q, style in ((50, "-"), (95, "-."), (99, "--")):
        ax.axvline(np.percentile(times, q), color="black", linestyle=style, label=f"p{q}")
    ax.set_xlabel("step time (s)")
    ax.set_ylabel("steps")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
