"""docs/validation.md's "Where the errors fall": the throughput rows' errors by regime
(:mod:`simulator.validation.regimes`), the same table ``clustersim run`` matches a scenario to."""

from __future__ import annotations

import pandas as pd

from simulator.validation.regimes import MIN_ROWS, curve_excess, regime_summary

_GROUPINGS = [["experts", "graphs"], ["experts", "sequence", "stack"], ["stack", "profile"], ["gpu"],
              ["sharding"], ["dtype"]]

INTRO = """\
Every throughput row of the sets below (tokens/s or model TFLOP/s per GPU: {rows} rows of {sets}
sets; the collective and straggler sets are left out, the memory rows come last), tagged by
what its scenario runs: `experts` (dense or moe), `graphs` (what the run replays from CUDA
graphs, `kernels.cuda_graphs`: none, partial or full; the model prices no host time, which
graphs remove), `sequence` (from 32K tokens), `stack` (the
profile's family), `profile`, `gpu` (the GPU spec it is derived from: a GB300 counts as a B200,
Meta's 500 W H100 as an H100 SXM), `sharding` (ZeRO-3/FSDP or not) and `dtype` (fp8 or 16-bit).
error = predicted / measured - 1, so a positive median means predictions above the measured
throughput; the middle half is the 25th to 75th percentile. Nothing here changes a
prediction: `clustersim run` prints, under its tables, the rows that match the scenario on the
longest prefix of those keys (in that order) that still holds {minimum} rows, and this table
is its source (`simulator/validation/row_errors.csv`, rewritten by `clustersim validate
--write-row-errors`)."""


CURVES = """\
Scaling curves (the sets whose rows step the GPU count of one model and layout; proxies left
out), each either weak (its global batch grows with the GPUs: a fixed batch per data-parallel
rank) or strong (its global batch held or growing far slower than the GPUs: within 1.3x over up
to 23x the GPUs in MLPerf's GPT-3 and Llama runs, 2.7x over 64x in its GPT-OSS 20B; fewer
microbatches per step as it grows; `simulator.validation.regimes.batch_grows`): from a
curve's first point to its last, how much more the measured throughput per GPU fell than the
predicted one, `((1 + e_last) / (1 + e_first))^(1 / log2(last / first)) - 1` per doubling of the
GPUs (e: the points' errors; positive: the measured curve fell faster). `clustersim scale`
prints the median and middle half of the curves of its own kind (`--weak` or strong) under its
table. What the model leaves out here is in each set's section: the jitter every
synchronisation waits for (about half the gap on most weak curves,
`simulator/validation/curves.py`), and whatever the runs' fabrics lost at scale that an ideal
non-blocking fabric does not."""


MEMORY = """\
Peak memory per GPU ({rows} rows: {sets}; error = predicted / measured - 1, negative where the
prediction is below the measured peak, the allocator's reserved peak). `clustersim run` prints
a second `validation:` line from these rows, matched on the stack family, the profile, whether
the run is pipelined and the GPU (`simulator.validation.regimes.MEMORY_KEYS`); a stack with
no row here is not validated for memory, and the line says so."""
_MEMORY_GROUPING = ["profile", "pipeline"]


def regime_section(table: pd.DataFrame) -> str:
    """The section's text and one table per grouping of :data:`_GROUPINGS`, from the
    :func:`~simulator.validation.regimes.row_errors` of the report's rows."""
    speed, memory = table[table["kind"] == "throughput"], table[table["kind"] == "memory"]
    parts = [INTRO.format(rows=len(speed), sets=speed["set"].nunique(), minimum=MIN_ROWS)]
    parts += [_markdown(regime_summary(speed, keys), keys) for keys in _GROUPINGS]
    parts += [CURVES, _curves_markdown(curve_excess(speed))]
    if not memory.empty:
        parts += [MEMORY.format(rows=len(memory), sets=", ".join(sorted(memory["set"].unique()))),
                  _markdown(regime_summary(memory, _MEMORY_GROUPING), _MEMORY_GROUPING)]
    return "\n\n".join(parts)


def _curves_markdown(curves: pd.DataFrame) -> str:
    lines = ["| curve | GPUs | global batch | kind | measured fall beyond predicted, per doubling |",
             "|---|---|---|---|---:|"]
    lines += [f"| {r.curve} | {r.first:,} to {r.last:,} | {r.first_batch:,} to {r.last_batch:,} | "
              f"{'weak' if r.weak else 'strong'} | {r.per_doubling:+.2%} |"
              for r in curves.itertuples(index=False)]
    summaries = [_curves_summary(curves["per_doubling"], "curves")]
    summaries += [_curves_summary(curves.loc[curves["weak"] == weak, "per_doubling"], f"{kind} curves")
                  for weak, kind in ((True, "weak"), (False, "strong"))]
    text = "; ".join(s for s in summaries if s)
    return "\n".join(lines) + "\n\n" + text[:1].upper() + text[1:] + "."


def _curves_summary(per: pd.Series, noun: str) -> str:
    """``median per doubling over n <noun> (middle half ...)``; empty without curves."""
    if per.empty:
        return ""
    return (f"median {per.median():+.2%} per doubling over {len(per)} {noun} (middle half "
            f"{per.quantile(0.25):+.2%} to {per.quantile(0.75):+.2%})")


def _markdown(summary: pd.DataFrame, keys: list[str]) -> str:
    head = [*keys, "rows", "median error", "middle half", "mean abs error"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(keys) + "---:|---:|---:|---:|"]
    for r in summary.itertuples(index=False):
        cells = [str(getattr(r, key)) for key in keys]
        cells += [str(r.rows), f"{r.median:+.1%}", f"{r.low:+.1%} to {r.high:+.1%}", f"{r.mean_abs:.1%}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

