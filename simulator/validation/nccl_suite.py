"""Replay the project's nccl-tests logs (validation/nccl_tests/) against their clusters.

Each ``<log>.txt`` has a scenario ``scenarios/<log>.yaml`` describing the cluster
it ran on. Targets: predicted busbw within 10% of measured at sizes >= 64 MiB
(issue #8; issue #2 asked for 15%), and time within a factor of 2 at sizes <= 64 KiB
(issue #2).

Run ``python -m simulator.validation.nccl_suite [validation/nccl_tests]`` to print
the Markdown table used in docs/validation.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from simulator.pipeline import open_scenario
from simulator.validation.compare import compare_log
from simulator.validation.nccl_log import read_nccl_log

LARGE_BYTES = 64 * 2**20
SMALL_BYTES = 64 * 2**10
BUSBW_TOLERANCE = 0.10
TIME_FACTOR = 2.0


def replay(folder: Path | str) -> pd.DataFrame:
    """All logs with a scenario in ``folder``: one row per (log, size) with the verdicts."""
    folder = Path(folder)
    frames = []
    for scenario in sorted((folder / "scenarios").glob("*.yaml")):
        log = folder / f"{scenario.stem}.txt"
        session = open_scenario(scenario)
        frame = compare_log(read_nccl_log(log), session.collectives)
        frame.insert(0, "log", scenario.stem)
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    table["target"] = table["size_bytes"].map(_target)
    table["meets_target"] = table.apply(_meets, axis=1)
    return table


def _target(size: int) -> str:
    if size >= LARGE_BYTES:
        return f"busbw within {BUSBW_TOLERANCE:.0%}"
    if size <= SMALL_BYTES:
        return "time within 2x"
    return "-"


def _meets(row) -> bool | None:
    if row.target.startswith("busbw"):
        return bool(abs(row.busbw_error) <= BUSBW_TOLERANCE)
    if row.target.startswith("time"):
        return bool(1 / TIME_FACTOR <= row.time_ratio <= TIME_FACTOR)
    return None


def markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, one row per (log, size)."""
    lines = ["| log | size (B) | measured us | predicted us | time ratio | measured busbw | "
             "predicted busbw | busbw error | algorithm | target | met |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in table.itertuples():
        met = {True: "yes", False: "**no**", None: ""}[r.meets_target]
        lines.append(f"| {r.log} | {r.size_bytes} | {r.measured_time_s * 1e6:.1f} | "
                     f"{r.predicted_time_s * 1e6:.1f} | {r.time_ratio:.2f} | "
                     f"{r.measured_busbw_GBps:.2f} | {r.predicted_busbw_GBps:.2f} | "
                     f"{r.busbw_error:+.1%} | {r.algorithm}/{r.protocol} | {r.target} | {met} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(replay(sys.argv[1] if len(sys.argv) > 1 else "validation/nccl_tests")))
