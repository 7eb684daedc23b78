"""Scaling curves inside a validation set whose rows are weak-scaling curves: how much the
step grows from a curve's smallest GPU count to its largest, measured and predicted.

A curve is the rows whose scenario files differ only in the GPU count
(``<name>-<N>gpu-<rest>.yaml``) and that run the same model at the same batch per
data-parallel rank (rows described as a model's proxy, with fewer layers, are left out). The
throughput per GPU is then proportional to one over the step time, so the step's growth from
the first point to the last is ``throughput_first / throughput_last - 1``, whichever FLOP count
the set uses. A weak-scaling curve measured flat and predicted flat reads 0 and 0.
"""

from __future__ import annotations

import re

import pandas as pd

_POINT = re.compile(r"^(?P<head>.+)-(?P<gpus>\d+)gpu-(?P<tail>[^/]+)\.yaml$")


def scaling_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per curve of at least two points: ``curve`` (the file name without its GPU
    count), ``first`` and ``last`` GPU counts, and the step's ``measured`` and ``predicted``
    growth between them (fractions)."""
    points = []
    for row in rows.itertuples():
        found = _POINT.match(str(row.scenario).rsplit("/", 1)[-1])
        if found and "proxy" not in row.description:
            curve = f"{found['head']}-{found['tail']}"
            points.append((curve, int(found["gpus"]), row.measured, row.predicted))
    frame = pd.DataFrame(points, columns=["curve", "gpus", "measured", "predicted"])
    out = []
    for curve, group in frame.groupby("curve", sort=False):
        if len(group) < 2:
            continue
        group = group.sort_values("gpus")
        first, last = group.iloc[0], group.iloc[-1]
        out.append({"curve": curve, "first": int(first.gpus), "last": int(last.gpus),
                    "measured": first.measured / last.measured - 1.0,
                    "predicted": first.predicted / last.predicted - 1.0})
    return pd.DataFrame(out, columns=["curve", "first", "last", "measured", "predicted"])


def curves_table(rows: pd.DataFrame) -> str:
    """The curves of ``rows`` as a markdown table (empty string when there are none)."""
    curves = scaling_curves(rows)
    if curves.empty:
        return ""
    lines = ["Scaling curves (step growth from the first GPU count to the last, at a fixed batch "
             "per data-parallel rank):", "",
             "| curve | GPUs | measured step growth | predicted step growth |", "|---|---|---:|---:|"]
    for c in curves.itertuples():
        lines.append(f"| {c.curve} | {c.first:,} -> {c.last:,} | {c.measured:+.1%} | {c.predicted:+.1%} |")
    return "\n".join(lines)
