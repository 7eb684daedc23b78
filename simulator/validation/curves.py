"""Scaling curves inside a validation set whose rows step one model's GPU count, weak (the batch
per data-parallel rank held) or strong (the global batch held, as MLPerf's runs nearly do): how
much the throughput per GPU falls from a curve's smallest GPU count to its largest, measured and
predicted.

A curve is the rows whose scenario files differ only in the GPU count
(``<name>-<N>gpu-<rest>.yaml``; rows described as a model's proxy, with fewer layers, are left
out). Its figure is ``throughput_first / throughput_last - 1`` (throughput per GPU, whichever
FLOP count the set uses): on a weak-scaling curve (the same batch per data-parallel rank) the
step's growth from the first point to the last, on a curve at a held global batch (MLPerf's
GPT-3, Llama 3.1 405B and DeepSeek-V3 runs) the throughput per GPU lost. A curve measured flat
and predicted flat reads 0 and 0.

The scored prediction has no noise. Beside it, :func:`jitter_growth` gives the growth with
per-worker, per-step lognormal jitter at the levels clustersim derives from ByteDance's
straggler traces (:data:`simulator.validation.stragglers.TRACES`: SE, AR, ST), as a what-if:
a step waits for the slowest of its workers at every synchronisation, so the same jitter
costs more on more GPUs (Petrini et al., "The Case of the Missing Supercomputer Performance",
SC'03).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pandas as pd

from simulator.config.scenario import NoiseConfig, NoiseDistribution, StragglerConfig
from simulator.engine.des import simulate_steps_des
from simulator.pipeline import open_scenario
from simulator.validation.stragglers import TRACES

JITTER_TRACES = ("SE", "AR", "ST")
"""The traces whose jitter the what-if uses, least to most."""
JITTER_STEPS = 200
"""Simulated steps per point of the what-if (max-plus fast path, contention off)."""

_POINT = re.compile(r"^(?P<head>.+)-(?P<gpus>\d+)gpu-(?P<tail>[^/]+)\.yaml$")


def curve_point(scenario: str, description: str) -> tuple[str, int] | None:
    """(curve, GPU count) of a row whose scenario file is a point of a curve (module
    docstring), None for another row or a proxy's."""
    found = _POINT.match(str(scenario).rsplit("/", 1)[-1])
    if found is None or "proxy" in description:
        return None
    return f"{found['head']}-{found['tail']}", int(found["gpus"])


def scaling_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per curve of at least two points: ``curve`` (the file name without its GPU
    count), ``first`` and ``last`` GPU counts, and the step's ``measured`` and ``predicted``
    growth between them (fractions)."""
    points = []
    for row in rows.itertuples():
        if (point := curve_point(row.scenario, row.description)) is not None:
            points.append((*point, row.measured, row.predicted, row.scenario))
    frame = pd.DataFrame(points, columns=["curve", "gpus", "measured", "predicted", "scenario"])
    out = []
    for curve, group in frame.groupby("curve", sort=False):
        if len(group) < 2:
            continue
        group = group.sort_values("gpus")
        first, last = group.iloc[0], group.iloc[-1]
        out.append({"curve": curve, "first": int(first.gpus), "last": int(last.gpus),
                    "measured": first.measured / last.measured - 1.0,
                    "predicted": first.predicted / last.predicted - 1.0,
                    "first_scenario": first.scenario, "last_scenario": last.scenario})
    return pd.DataFrame(out, columns=["curve", "first", "last", "measured", "predicted",
                                      "first_scenario", "last_scenario"])


def jittered_steps(path: Path, sigmas: list[float], seed: int = 0) -> list[float]:
    """Mean step (s) of the scenario at ``path`` over :data:`JITTER_STEPS` steps with lognormal
    jitter of each ``sigmas`` per worker and step (discrete-event engine, contention off); the
    scenario and its cluster are built once."""
    return _session_steps(open_scenario(path), sigmas, seed)


def _session_steps(session, sigmas: list[float], seed: int = 0) -> list[float]:
    """:func:`jittered_steps` of an open scenario ``session``."""
    out = []
    for sigma in sigmas:
        noise = NoiseConfig(straggler=StragglerConfig(distribution=NoiseDistribution.LOGNORMAL, sigma=sigma))
        scenario = session.scenario.model_copy(update={"noise": noise})
        result = simulate_steps_des(scenario, session.collectives, JITTER_STEPS, seed, contention=False)
        out.append(statistics.fmean(result.step_times_s))
    return out


def jittered_step(path: Path, sigma: float, seed: int = 0) -> float:
    """:func:`jittered_steps` for one ``sigma``."""
    return jittered_steps(path, [sigma], seed)[0]


def jitter_growth(curves: pd.DataFrame, root: Path, sigmas: list[float]) -> pd.DataFrame:
    """Each curve's step growth from its first point to its last with each jitter of
    ``sigmas`` (one column per sigma, in order), as the scored growth is: the throughput per
    GPU at the first point over that at the last, minus 1 (the step's growth on a weak-scaling
    curve, where each GPU's tokens per step stay the same)."""
    rows = []
    for c in curves.itertuples():
        first, last = open_scenario(root / c.first_scenario), open_scenario(root / c.last_scenario)
        per_gpu = _tokens_per_gpu(first) / _tokens_per_gpu(last)
        rows.append([b / a * per_gpu - 1.0 for a, b in zip(_session_steps(first, sigmas),
                                                            _session_steps(last, sigmas), strict=True)])
    return pd.DataFrame(rows, index=curves.index, columns=range(len(sigmas)), dtype=float)


def _tokens_per_gpu(session) -> float:
    """Tokens one GPU's share of a step is in an open scenario: global batch x sequence / GPUs."""
    training, model = session.scenario.training, session.scenario.model
    return training.global_batch * model.seq_len / session.hardware.gpus


def curves_table(rows: pd.DataFrame, root: Path) -> str:
    """The curves of ``rows`` as a markdown table, with the jitter what-if (empty string when
    there are none)."""
    curves = scaling_curves(rows)
    if curves.empty:
        return ""
    jitter = jitter_growth(curves, root, [TRACES[name].sigma for name in JITTER_TRACES])
    sigmas = " / ".join(f"{name} {TRACES[name].sigma:.2%}" for name in JITTER_TRACES)
    lines = ["Scaling curves: the throughput per GPU at the first GPU count over that at the last, "
             "minus 1 (at a fixed batch per data-parallel rank the step's growth, at a fixed global "
             "batch the throughput per GPU lost); the last column is a what-if with per-worker, per-step "
             "lognormal "
             f"jitter at the levels derived from ByteDance's traces ({sigmas}; "
             f"{JITTER_STEPS} steps, mean):", "",
             "| curve | GPUs | measured step growth | predicted step growth (no noise) | "
             "with jitter SE / AR / ST |", "|---|---|---:|---:|---|"]
    for c in curves.itertuples():
        band = " / ".join(f"{value:+.1%}" for value in jitter.loc[c.Index])
        lines.append(f"| {c.curve} | {c.first:,} -> {c.last:,} | {c.measured:+.1%} | "
                     f"{c.predicted:+.1%} | {band} |")
    return "\n".join(lines)
