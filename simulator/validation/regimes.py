"""Where the validation errors fall: each published throughput row tagged by its regime, and
the rows most like a user's scenario.

A throughput row of ``clustersim validate`` (tokens/s or model TFLOP/s per GPU; error =
predicted / measured - 1, so positive means the prediction is faster than the run) gets one
tag per key of :data:`REGIME_KEYS`, in the order that separates the errors most (measured on
the shipped sets, docs/validation.md "Where the errors fall"):

- ``experts``: ``moe`` when the model routes to experts, else ``dense``;
- ``sequence``: ``>= 32K`` from a 32,768-token sequence, else ``< 32K``;
- ``stack``: the stack profile's family (:data:`STACK_FAMILIES`: Megatron, PyTorch FSDP,
  DeepSpeed; another profile is its own family);
- ``profile``: the stack profile itself (``megatron-core``, ``nemo``, ``deepspeed-2021`` ...);
- ``gpu``: the GPU the scenario's GPU is derived from, following ``base:`` to its root
  (an ``h100-sxm-96gb-500w`` counts as ``h100-sxm``, a ``gb300`` as ``b200``);
- ``sharding``: ``zero-3/fsdp`` for ZeRO stage 3, else ``replicated``;
- ``dtype``: ``fp8`` for fp8 training (every scaling recipe), else ``16-bit``.

:func:`similar_rows` matches the longest prefix of those keys that still holds
:data:`MIN_ROWS` rows and reports their errors' median and middle half. The rows are the
committed table :data:`ROW_ERRORS` (``clustersim validate --write-row-errors`` rewrites it;
a test holds it to the suite's results), so ``clustersim run`` reads it without running the
sets. Nothing here changes a prediction: the note says how far rows like the scenario were
off, not what the scenario's error is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.config import HardwareLibrary, load_scenario, resolve_cluster
from simulator.config.scenario import Scenario
from simulator.validation.curves import curve_point
from simulator.validation.suite import SETS

ROW_ERRORS = Path(__file__).with_name("row_errors.csv")
REGIME_KEYS = ("experts", "sequence", "stack", "profile", "gpu", "sharding", "dtype")
MIN_ROWS = 8
LONG_SEQUENCE = 32768
STACK_FAMILIES = {"megatron-core": "megatron", "nemo": "megatron", "megatron-lm-2021": "megatron",
                  "megatron-deepspeed-2022": "megatron", "fsdp": "pytorch-fsdp",
                  "fsdp2": "pytorch-fsdp", "torchtitan": "pytorch-fsdp", "deepspeed": "deepspeed",
                  "deepspeed-2021": "deepspeed"}
_THROUGHPUT = ("tokens/s per GPU", "TFLOP/s per GPU")
_COLUMNS = ["set", "row", "scenario", "error", *REGIME_KEYS, "curve", "gpus"]


def regime_tags(scenario: Scenario, library: HardwareLibrary) -> dict[str, str]:
    """The tag of each of :data:`REGIME_KEYS` for a training scenario (module docstring)."""
    model, training, par = scenario.model, scenario.training, scenario.parallelism
    dtype = str(training.dtype)
    return {"experts": "moe" if model.experts > 1 else "dense",
            "sequence": ">= 32K" if model.seq_len >= LONG_SEQUENCE else "< 32K",
            "stack": STACK_FAMILIES.get(training.stack.name, training.stack.name),
            "profile": training.stack.name,
            "gpu": root_gpu(resolve_cluster(scenario.cluster, library).gpu.name, library),
            "sharding": "zero-3/fsdp" if par.zero_stage == 3 else "replicated",
            "dtype": "fp8" if dtype.startswith("fp8") else "16-bit"}


def root_gpu(name: str, library: HardwareLibrary) -> str:
    """The GPU spec ``name`` is derived from, followed to the first one without a base."""
    seen = {name}
    while (base := library.gpu(name).derived_from) and base not in seen:
        seen.add(base)
        name = base
    return name


def row_errors(frame: pd.DataFrame, root: Path, library: HardwareLibrary) -> pd.DataFrame:
    """The throughput rows of a :func:`~simulator.validation.suite.run_validation` frame with
    their scenario's tags; columns ``set, row, scenario, error``, :data:`REGIME_KEYS`, and
    ``curve, gpus`` (the weak-scaling curve a row is a point of and its GPU count; "" and 0
    for a row on none)."""
    rows = frame[frame["metric"].str.contains("|".join(_THROUGHPUT), regex=True)
                 & frame["error"].notna()]
    tags = [regime_tags(load_scenario(root / path, library), library) for path in rows["scenario"]]
    points = [_curve_point(r) for r in rows.itertuples()]
    table = pd.concat([rows[["set", "row", "scenario"]].reset_index(drop=True),
                       pd.DataFrame({"error": rows["error"].round(4).to_numpy()}),
                       pd.DataFrame(tags, columns=list(REGIME_KEYS)),
                       pd.DataFrame(points, columns=["curve", "gpus"])], axis=1)
    return table[_COLUMNS]


def _curve_point(row) -> tuple[str, int]:
    """(set/curve, GPUs) of a row of a weak-scaling set's curve, ("", 0) for any other row."""
    point = curve_point(row.scenario, row.description) if SETS[row.set].curves else None
    return (f"{row.set}/{point[0]}", point[1]) if point else ("", 0)


def read_row_errors(path: Path = ROW_ERRORS) -> pd.DataFrame:
    """The committed table of :func:`row_errors` (tags as strings, "" off a curve)."""
    text = {key: str for key in ("set", "row", "scenario", *REGIME_KEYS, "curve")}
    return pd.read_csv(path, dtype=text, keep_default_na=False)


def curve_excess(table: pd.DataFrame) -> pd.DataFrame:
    """Per weak-scaling curve of :func:`row_errors` with two points or more: ``first`` and
    ``last`` GPU counts and ``per_doubling``, how much more the measured step grew than the
    predicted one per doubling of the GPUs: ``((1 + e_last) / (1 + e_first))^(1 / log2(last /
    first)) - 1`` with ``e`` the points' errors (predicted / measured - 1 of a throughput per
    GPU, so ``(1 + e_last) / (1 + e_first)`` is the measured step's growth over the predicted)."""
    out = []
    for curve, points in table[table["curve"] != ""].groupby("curve", sort=True):
        if len(points) < 2:
            continue
        points = points.sort_values("gpus")
        first, last = points.iloc[0], points.iloc[-1]
        excess = (1.0 + last.error) / (1.0 + first.error)
        out.append({"curve": curve, "first": int(first.gpus), "last": int(last.gpus),
                    "per_doubling": excess ** (1.0 / np.log2(last.gpus / first.gpus)) - 1.0})
    return pd.DataFrame(out, columns=["curve", "first", "last", "per_doubling"])


def scaling_note(table: pd.DataFrame) -> str | None:
    """``clustersim scale --weak``'s line: the median and middle half of
    :func:`curve_excess` over the published curves (None without any)."""
    curves = curve_excess(table)
    if curves.empty:
        return None
    per = curves["per_doubling"]
    lean = "faster" if per.median() > 0 else "slower"
    return (f"on {len(curves)} published weak-scaling curves ({curves['first'].min():,} to "
            f"{curves['last'].max():,} GPUs) the measured step grew a median {per.median():+.1%} "
            f"per doubling of the GPUs beyond the predicted growth (middle half "
            f"{per.quantile(0.25):+.1%} to {per.quantile(0.75):+.1%}): the measured curves fell "
            f"{lean} than predicted (docs/validation.md)")


@dataclass(frozen=True)
class Similar:
    """The validation rows most like a scenario and how far off they were."""

    match: dict[str, str]      # the keys matched (a prefix of REGIME_KEYS) and their tags
    rows: int
    median: float
    low: float                 # 25th percentile of the error
    high: float                # 75th percentile
    short: tuple[str, str, int] | None = None   # the next key, its tag and its too few rows

    def sentence(self) -> str:
        """One line for ``clustersim run``: the rows matched, their median error and middle
        half, and the key that could not narrow them further."""
        like = ", ".join(self.match.values()) or "any regime"
        side = "above" if self.median >= 0 else "below"
        text = (f"for {self.rows} published runs like this one ({like}) the prediction was a "
                f"median {abs(self.median):.1%} {side} the measured throughput (errors' middle "
                f"half {self.low:+.1%} to {self.high:+.1%}")
        if self.short is not None:
            key, tag, rows = self.short
            text += f"; {rows} with {key} {tag}, too few to narrow further"
        return text + "; docs/validation.md)"


def similar_rows(tags: dict[str, str], table: pd.DataFrame, minimum: int = MIN_ROWS) -> Similar | None:
    """The longest prefix of :data:`REGIME_KEYS` whose tags ``table`` holds at least
    ``minimum`` rows of, with those rows' error quartiles (None when the table has fewer)."""
    if len(table) < minimum:
        return None
    mask = pd.Series(True, index=table.index)
    for depth, key in enumerate(REGIME_KEYS):
        narrower = mask & (table[key] == tags[key])
        if int(narrower.sum()) < minimum:
            return _similar(table, mask, tags, depth, (key, tags[key], int(narrower.sum())))
        mask = narrower
    return _similar(table, mask, tags, len(REGIME_KEYS), None)


def _similar(table: pd.DataFrame, mask: pd.Series, tags: dict[str, str], depth: int,
             short: tuple[str, str, int] | None) -> Similar:
    errors = table.loc[mask, "error"]
    return Similar({k: tags[k] for k in REGIME_KEYS[:depth]}, int(mask.sum()), float(errors.median()),
                   float(errors.quantile(0.25)), float(errors.quantile(0.75)), short)


def regime_summary(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows, median error, quartiles and mean |error| per combination of ``keys``."""
    grouped = table.groupby(keys, sort=True)["error"]
    return pd.DataFrame({"rows": grouped.size(), "median": grouped.median(),
                         "low": grouped.quantile(0.25), "high": grouped.quantile(0.75),
                         "mean_abs": grouped.apply(lambda e: e.abs().mean())}).reset_index()


def validation_note(scenario: Scenario, library: HardwareLibrary, path: Path = ROW_ERRORS) -> str | None:
    """:meth:`Similar.sentence` for a synchronous training scenario; None for one the rows do
    not speak for (asynchronous parameter servers) or without the table at ``path``."""
    if (scenario.model is None or scenario.training is None or str(scenario.training.sync) == "async"
            or not path.is_file()):
        return None
    found = similar_rows(regime_tags(scenario, library), read_row_errors(path))
    return found.sentence() if found is not None else None
