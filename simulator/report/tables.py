"""Rich tables for the CLI: collective sweeps, nccl-tests comparisons, specs, scenario checks."""

from __future__ import annotations

import math

from pydantic import BaseModel
from rich.table import Table

from simulator.cost import CollectiveSweep
from simulator.units import format_bytes


def sweep_table(sweep: CollectiveSweep, title: str) -> Table:
    """nccl-tests-style rows: size, time (us), algbw, busbw (GB/s), algorithm."""
    table = Table(title=title)
    for name in ("size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm"):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for row in sweep.records():
        table.add_row(str(row["size_bytes"]), f"{row['time_s'] * 1e6:.2f}",
                      f"{row['algbw_GBps']:.2f}", f"{row['busbw_GBps']:.2f}",
                      f"{row['algorithm']}/{row['protocol']}")
    return table


def sweep_csv(sweep: CollectiveSweep) -> str:
    import pandas as pd  # imported here: pandas costs ~0.3 s of every CLI start

    return pd.DataFrame(sweep.records()).to_csv(index=False)


def comparison_table(frame, title: str) -> Table:
    """Measured against predicted per size, with the busbw error and time ratio."""
    table = Table(title=title)
    for name in ("size", "measured (us)", "predicted (us)", "time ratio", "measured busbw",
                 "predicted busbw", "busbw error", "algorithm"):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for row in frame.itertuples():
        error = "" if math.isnan(row.busbw_error) else f"{row.busbw_error:+.1%}"
        table.add_row(format_bytes(row.size_bytes), f"{row.measured_time_s * 1e6:.1f}",
                      f"{row.predicted_time_s * 1e6:.1f}", f"{row.time_ratio:.2f}",
                      f"{row.measured_busbw_GBps:.2f}", f"{row.predicted_busbw_GBps:.2f}",
                      error, f"{row.algorithm}/{row.protocol}")
    return table


def spec_table(spec: BaseModel, title: str) -> Table:
    """Every field of a hardware spec with its source."""
    table = Table(title=title, show_lines=False)
    table.add_column("key")
    table.add_column("value")
    table.add_column("source")
    sources = getattr(spec, "sources", {})
    for key, value in spec:
        if key == "sources":
            continue
        shown = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        if isinstance(shown, dict):
            shown = ", ".join(f"{k}: {v}" for k, v in shown.items())
        table.add_row(key, str(shown), sources.get(key, ""))
    return table


def names_table(names: dict[str, list[str]]) -> Table:
    table = Table(title="hardware_specs")
    table.add_column("category")
    table.add_column("names")
    for category, items in names.items():
        table.add_row(category, ", ".join(items))
    return table
