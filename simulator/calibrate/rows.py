"""Measurement rows to calibrate against: one measured number of one scenario each.

Three sources, in any mix:

- a CSV file with the columns ``scenario,metric,measured[,weight]`` (scenario paths relative
  to the CSV; ``metric`` one of :data:`TRAINING_METRICS`, in SI units: seconds, tokens/s,
  FLOP/s per GPU);
- a shipped validation set by name (:data:`SETS`: ``megatron_sc21`` in hardware FLOP/s per
  GPU, ``nccl`` in busbw, and every throughput set of :mod:`simulator.validation.suite` in
  tokens/s per GPU, :attr:`~simulator.validation.suite.ValidationSet.token_rows`), optionally
  a subset ``NAME:even``, ``NAME:odd`` or ``NAME:ID,ID``; the rows and scenarios are those of
  :mod:`simulator.validation.suite`;
- an nccl-tests log with the scenario of its cluster: one row per message size, metric
  ``busbw_Bps``. The measured bus bandwidth is recomputed from the log's out-of-place time,
  ``busbw = factor(op, p) * size / time`` (nccl-tests' definition), so the small sizes whose
  printed busbw rounds to 0.00 still count.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulator.collectives import BUS_FACTOR, Op
from simulator.config import HardwareLibrary, load_cluster, load_scenario
from simulator.config.yaml_io import did_you_mean
from simulator.errors import ConfigError, UsageError
from simulator.results import StepResult
from simulator.units import format_bytes
from simulator.validation import nccl_suite, suite
from simulator.validation.nccl_log import read_nccl_log
from simulator.validation.suite import _read_index, default_root

TRAINING_METRICS: dict[str, Callable[[StepResult], float]] = {
    "step_time_s": lambda r: r.step_time_s,
    "tokens_per_s": lambda r: r.tokens_per_s,
    "tokens_per_s_per_gpu": lambda r: r.tokens_per_s / r.gpus,
    "model_flops_per_gpu": lambda r: r.model_flops_per_gpu,
    "hardware_flops_per_gpu": lambda r: r.hardware_flops_per_gpu,
}
"""Metrics of a training row and how to read each from a :class:`StepResult` (SI units)."""
BUSBW = "busbw_Bps"
"""Metric of a collective row: nccl-tests' bus bandwidth in B/s at ``size_bytes``."""


@dataclass(frozen=True)
class Measurement:
    """One measured number: ``metric`` of ``scenario`` (with ``log`` and ``size_bytes`` for
    a collective row) was ``measured`` (SI); ``weight`` scales its residual's square."""

    origin: str
    row: str
    scenario: Path
    metric: str
    measured: float
    weight: float = 1.0
    log: Path | None = None
    size_bytes: float | None = None

    @property
    def label(self) -> str:
        return f"{self.origin} {self.row}"


def csv_rows(path: Path | str) -> list[Measurement]:
    """Rows of a measurements CSV (see the module docstring).

    Raises
    ------
    ConfigError
        On a missing column, an unknown metric, a non-positive value or weight, or a scenario
        file that does not exist; the message names the CSV and its line.
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            lines = list(csv.DictReader(handle))
            fields = lines[0].keys() if lines else []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"cannot read as CSV ({exc})", str(path)) from None
    missing = [c for c in ("scenario", "metric", "measured") if c not in fields]
    if not lines or missing:
        raise ConfigError("expected a header 'scenario,metric,measured[,weight]' and at least one "
                          "row", str(path))
    return [_csv_row(path, number, line) for number, line in enumerate(lines, start=2)]


def _csv_row(path: Path, number: int, line: dict) -> Measurement:
    where = f"line {number}"
    metric = (line.get("metric") or "").strip()
    if metric not in TRAINING_METRICS:
        hint = " (collective rows come from --nccl LOG SCENARIO)" if metric == BUSBW else \
            did_you_mean(metric, TRAINING_METRICS)
        raise ConfigError(f"unknown metric '{metric}'{hint}; known: {', '.join(TRAINING_METRICS)}",
                          str(path), f"{where}.metric")
    measured = _positive(line.get("measured"), path, f"{where}.measured")
    weight = _positive(line.get("weight") or "1", path, f"{where}.weight")
    scenario = path.parent / (line.get("scenario") or "").strip()
    if not scenario.is_file():
        raise ConfigError(f"no scenario file at {scenario}", str(path), f"{where}.scenario")
    return Measurement(path.name, f"line {number}", scenario, metric, measured, weight)


def _positive(text: str | None, path: Path, key: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"expected a number, got {text!r}", str(path), key) from None
    if not math.isfinite(value) or value <= 0.0:
        raise ConfigError(f"expected a positive number, got {text}", str(path), key)
    return value


def nccl_rows(log_path: Path | str, scenario: Path | str, min_bytes: float = 0.0,
              origin: str | None = None, notes: list[str] | None = None) -> list[Measurement]:
    """One ``busbw_Bps`` row per size >= ``min_bytes`` of the nccl-tests log at ``log_path``,
    whose cluster ``scenario`` describes; the log's unusable result rows (size 0, a time or
    bandwidth that is not a positive number: :attr:`NcclLog.skipped`) are left out and, when
    ``notes`` is given, named in it."""
    log, scenario = read_nccl_log(log_path), Path(scenario)
    if notes is not None and (note := log.skipped_note()) is not None:
        notes.append(note)
    if log.op is None:
        raise UsageError(f"{log_path}: cannot tell which collective the log measured")
    ranks = load_cluster(scenario).gpus
    factor = BUS_FACTOR[Op(log.op)](ranks)
    origin = origin or Path(log_path).name
    return [Measurement(origin, format_bytes(size), scenario, BUSBW, factor * size / time,
                        log=Path(log_path), size_bytes=float(size))
            for size, time in zip(log.size_bytes, log.time_s, strict=True)
            if size >= min_bytes]                      # the parser left out unusable rows


def set_rows(spec: str, root: Path | None = None) -> list[Measurement]:
    """Rows of the validation set ``spec`` (``NAME``, ``NAME:even``, ``NAME:odd`` or
    ``NAME:ID,ID,...``; ids as ``clustersim validate`` shows them)."""
    name, _, which = spec.partition(":")
    if name in suite.SETS and name not in SETS:
        raise UsageError(f"validation set '{name}' compares {suite.SETS[name].metric}, not a step's "
                         "throughput or an nccl log, so it cannot calibrate; sets that can: "
                         f"{', '.join(SETS)}")
    if name not in SETS:
        raise UsageError(f"unknown validation set '{name}'{did_you_mean(name, SETS)}; "
                         f"known: {', '.join(SETS)}")
    rows = SETS[name](Path(root) if root is not None else default_root())
    return _select(rows, which.strip(), spec)


def _select(rows: list[Measurement], which: str, spec: str) -> list[Measurement]:
    """``rows`` whose 1-based position is even/odd, or whose ids are listed."""
    if not which:
        return rows
    if which in ("even", "odd"):
        return [r for i, r in enumerate(rows, start=1) if i % 2 == (which == "odd")]
    ids = [w.strip() for w in which.split(",")]
    known = [r.row for r in rows]
    for wanted in ids:
        if wanted not in known:
            raise UsageError(f"--set {spec}: no row '{wanted}'{did_you_mean(wanted, known)}; "
                             f"rows: {', '.join(known)}")
    return [r for r in rows if r.row in ids]


def _megatron(root: Path) -> list[Measurement]:
    table = pd.read_csv(root / "validation" / "megatron_sc21_table1.csv")
    return [Measurement("megatron_sc21", r.model, root / "scenarios" / f"sc21-{r.model.lower()}.yaml",
                        "hardware_flops_per_gpu", r.measured_tflops_per_gpu * 1e12)
            for r in table.itertuples()]


def _token_rows(name: str, source: suite.TokenRows) -> Callable[[Path], list[Measurement]]:
    """The rows of throughput set ``name`` as tokens/s per GPU (``ValidationSet.token_rows``)."""
    return lambda root: _indexed(root, name, source)


def _indexed(root: Path, name: str, source: suite.TokenRows) -> list[Measurement]:
    data = pd.read_csv(root / "validation" / source.csv)
    folder = root / "validation" / "scenarios" / name
    index = _read_index(folder / "index.csv", len(data))
    library, rows = HardwareLibrary(), []
    for entry in index.sort_values("row").itertuples():
        row = next(data.iloc[[entry.row - 1]].itertuples())
        path = folder / entry.scenario
        tokens = source.measured_of(row)
        if source.per_token is not None:     # published in model FLOP/s: the model sets the count
            tokens /= source.per_token(load_scenario(path, library).model)
        rows.append(Measurement(name, str(entry.row), path, "tokens_per_s_per_gpu", float(tokens)))
    return rows


def _nccl(root: Path) -> list[Measurement]:
    """Every shipped log's scored sizes (>= 64 MiB, as :mod:`simulator.validation.suite`)."""
    folder = root / "validation" / "nccl_tests"
    rows = []
    for scenario in sorted((folder / "scenarios").glob("*.yaml")):
        found = nccl_rows(folder / f"{scenario.stem}.txt", scenario, nccl_suite.LARGE_BYTES, "nccl")
        rows += [Measurement(r.origin, f"{scenario.stem}@{r.row.replace(' ', '')}", r.scenario,
                             r.metric, r.measured, log=r.log, size_bytes=r.size_bytes) for r in found]
    return rows


SETS: dict[str, Callable[[Path], list[Measurement]]] = {
    "megatron_sc21": _megatron,
    "nccl": _nccl,
    **{name: _token_rows(name, entry.token_rows) for name, entry in suite.SETS.items() if entry.token_rows},
}
"""Validation sets usable as calibration rows, by the names ``clustersim validate`` uses: SC21
Table 1 (hardware FLOP/s per GPU), the nccl logs (busbw) and every throughput set as tokens/s
per GPU (those published in model FLOP/s, such as NeMo's long-sequence table, the Llama 3 paper
and Megatron-LM's scaling runs, divided by their own FLOP count per token); not the memory and
straggler sets."""
