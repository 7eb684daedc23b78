"""Where the validation errors fall: each published throughput and peak-memory row tagged by
its regime, and the rows most like a user's scenario.

A throughput row of ``clustersim validate`` (tokens/s or model TFLOP/s per GPU; error =
predicted / measured - 1, so positive means the prediction is faster than the run) gets one
tag per key of :data:`REGIME_KEYS`, in the order that separates the errors most (measured on
the shipped sets, docs/validation.md "Where the errors fall"):

- ``experts``: ``moe`` when the model routes to experts, else ``dense``;
- ``graphs``: what the run replays from CUDA graphs (``none``, ``partial``, ``full``: the
  stack's ``kernels.cuda_graphs``). The model prices no host time, and the mixtures of experts'
  errors split by it: eager runs far below the host-free price, fully captured ones near it;
- ``sequence``: ``>= 32K`` from a 32,768-token sequence, else ``< 32K``;
- ``stack``: the stack profile's family (:data:`STACK_FAMILIES`: Megatron, PyTorch FSDP,
  DeepSpeed; another profile is its own family);
- ``profile``: the stack profile itself (``megatron-core``, ``nemo``, ``deepspeed-2021`` ...);
- ``gpu``: the GPU the scenario's GPU is derived from, following ``base:`` to its root
  (an ``h100-sxm-96gb-500w`` counts as ``h100-sxm``, a ``gb300`` as ``b200``);
- ``sharding``: ``zero-3/fsdp`` for ZeRO stage 3, else ``replicated``;
- ``dtype``: ``fp8`` for fp8 training (every scaling recipe), else ``16-bit``.

A peak-memory row (the torchtitan set's, GiB per GPU; error negative where the prediction is
below the measured peak, which a run's headroom depends on) is matched on
:data:`MEMORY_KEYS`: the stack family, the profile, ``pipeline`` (``pp > 1`` or ``no pp``:
a pipeline holds several microbatches' activations and its runtime's buffers) and the GPU.

:func:`similar_rows` matches the longest prefix of the keys that still holds
:data:`MIN_ROWS` rows and reports their errors' median and middle half, and the median of the
next key's rows when they are too few to narrow the match. The rows are the
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
REGIME_KEYS = ("experts", "graphs", "sequence", "stack", "profile", "gpu", "sharding", "dtype")
MEMORY_KEYS = ("stack", "profile", "pipeline", "gpu")
TAGS = (*REGIME_KEYS, "pipeline")
MIN_ROWS = 8
LONG_SEQUENCE = 32768
STACK_FAMILIES = {"megatron-core": "megatron", "nemo": "megatron", "megatron-lm-2021": "megatron",
                  "megatron-deepspeed-2022": "megatron", "fsdp": "pytorch-fsdp",
                  "fsdp2": "pytorch-fsdp", "torchtitan": "pytorch-fsdp", "automodel": "pytorch-fsdp",
                  "deepspeed": "deepspeed", "deepspeed-2021": "deepspeed"}
_KINDS = {"throughput": ("tokens/s per GPU", "TFLOP/s per GPU"), "memory": ("peak memory per GPU",)}
_COLUMNS = ["set", "row", "scenario", "kind", "error", *TAGS, "curve", "gpus", "batch"]
GROWING_BATCH = 0.5
"""A curve's global batch grows with its GPUs when ``log(b_last / b_first)`` is at least this
share of ``log(g_last / g_first)`` (a weak-scaling curve: 1); below it the batch is held (MLPerf's
curves keep within 1.3x of one batch over 20x the GPUs: a strong-scaling curve)."""


def regime_tags(scenario: Scenario, library: HardwareLibrary) -> dict[str, str]:
    """The tag of each of :data:`TAGS` for a training scenario (module docstring)."""
    model, training, par = scenario.model, scenario.training, scenario.parallelism
    dtype = str(training.dtype)
    return {"experts": "moe" if model.experts > 1 else "dense",
            "graphs": str(training.stack.kernels.cuda_graphs),
            "sequence": ">= 32K" if model.seq_len >= LONG_SEQUENCE else "< 32K",
            "stack": STACK_FAMILIES.get(training.stack.name, training.stack.name),
            "profile": training.stack.name,
            "gpu": root_gpu(resolve_cluster(scenario.cluster, library).gpu.name, library),
            "sharding": "zero-3/fsdp" if par.zero_stage == 3 else "replicated",
            "dtype": "fp8" if dtype.startswith("fp8") else "16-bit",
            "pipeline": "pp > 1" if par.pp > 1 else "no pp"}


def root_gpu(name: str, library: HardwareLibrary) -> str:
    """The GPU spec ``name`` is derived from, followed to the first one without a base."""
    seen = {name}
    while (base := library.gpu(name).derived_from) and base not in seen:
        seen.add(base)
        name = base
    return name


def row_errors(frame: pd.DataFrame, root: Path, library: HardwareLibrary) -> pd.DataFrame:
    """The throughput and peak-memory rows of a
    :func:`~simulator.validation.suite.run_validation` frame with their scenario's tags; columns
    ``set, row, scenario, kind`` (``throughput`` or ``memory``), ``error``, :data:`TAGS`, and
    ``curve, gpus`` (the scaling curve a throughput row is a point of and its GPU count; ""
    and 0 for a row on none) and ``batch`` (the scenario's global batch, sequences)."""
    kinds = pd.Series("", index=frame.index)
    for kind, metrics in _KINDS.items():
        kinds[frame["metric"].map(lambda metric, m=metrics: any(x in metric for x in m))] = kind
    keep = (kinds != "") & frame["error"].notna()
    rows = frame[keep]
    scenarios = [load_scenario(root / path, library) for path in rows["scenario"]]
    tags = [regime_tags(scenario, library) for scenario in scenarios]
    points = [_curve_point(r) if kind == "throughput" else ("", 0)
              for r, kind in zip(rows.itertuples(), kinds[keep], strict=True)]
    table = pd.concat([rows[["set", "row", "scenario"]].reset_index(drop=True),
                       pd.DataFrame({"kind": kinds[keep].to_numpy(),
                                     "error": rows["error"].round(4).to_numpy()}),
                       pd.DataFrame(tags, columns=list(TAGS)),
                       pd.DataFrame(points, columns=["curve", "gpus"]),
                       pd.DataFrame({"batch": [s.training.global_batch for s in scenarios]})], axis=1)
    return table[_COLUMNS]


def _curve_point(row) -> tuple[str, int]:
    """(set/curve, GPUs) of a row of a curve set's curve, ("", 0) for any other row."""
    point = curve_point(row.scenario, row.description) if SETS[row.set].curves else None
    return (f"{row.set}/{point[0]}", point[1]) if point else ("", 0)


def read_row_errors(path: Path = ROW_ERRORS) -> pd.DataFrame:
    """The committed table of :func:`row_errors` (tags as strings, "" off a curve)."""
    text = {key: str for key in ("set", "row", "scenario", "kind", *TAGS, "curve")}
    return pd.read_csv(path, dtype=text, keep_default_na=False)


def batch_grows(first: tuple[int, int], last: tuple[int, int]) -> bool:
    """Whether a curve from ``first`` to ``last`` (GPUs, global batch) scales its batch with
    its GPUs: ``log(b_last / b_first) >= GROWING_BATCH log(g_last / g_first)``."""
    return bool(np.log(last[1] / first[1]) >= GROWING_BATCH * np.log(last[0] / first[0]))


def curve_excess(table: pd.DataFrame) -> pd.DataFrame:
    """Per scaling curve of :func:`row_errors` with two points or more: ``first`` and ``last``
    GPU counts, their global batches ``first_batch`` and ``last_batch``, ``weak`` (the batch
    grows with the GPUs, :func:`batch_grows`) and ``per_doubling``, how much more the measured
    throughput per GPU fell than the predicted one per doubling of the GPUs (on a weak-scaling
    curve, how much more the step grew): ``((1 + e_last) / (1 + e_first))^(1 / log2(last /
    first)) - 1`` with ``e`` the points' errors (predicted / measured - 1 of a throughput per
    GPU)."""
    out = []
    for curve, points in table[table["curve"] != ""].groupby("curve", sort=True):
        if len(points) < 2:
            continue
        points = points.sort_values("gpus")
        first, last = points.iloc[0], points.iloc[-1]
        excess = (1.0 + last.error) / (1.0 + first.error)
        out.append({"curve": curve, "first": int(first.gpus), "last": int(last.gpus),
                    "first_batch": int(first.batch), "last_batch": int(last.batch),
                    "weak": batch_grows((first.gpus, first.batch), (last.gpus, last.batch)),
                    "per_doubling": excess ** (1.0 / np.log2(last.gpus / first.gpus)) - 1.0})
    return pd.DataFrame(out, columns=["curve", "first", "last", "first_batch", "last_batch", "weak",
                                      "per_doubling"])


def scaling_note(table: pd.DataFrame, weak: bool) -> str | None:
    """``clustersim scale``'s line: the median and middle half of :func:`curve_excess` over
    the published curves of the same kind, weak (the batch grows with the GPUs) or strong (a
    held global batch); None without any."""
    curves = curve_excess(table)
    curves = curves[curves["weak"] == weak]
    if curves.empty:
        return None
    per = curves["per_doubling"]
    kind = "a batch growing with the GPUs" if weak else "a held global batch"
    lean = "faster" if per.median() > 0 else "slower"
    return (f"on {len(curves)} published scaling curves at {kind} ({curves['first'].min():,} to "
            f"{curves['last'].max():,} GPUs) the measured throughput per GPU fell a median "
            f"{per.median():+.1%} per doubling of the GPUs beyond the predicted fall (middle half "
            f"{per.quantile(0.25):+.1%} to {per.quantile(0.75):+.1%}): the measured curves fell "
            f"{lean} than predicted (docs/validation.md)")


_SAYS = {"throughput": ("published runs", "the prediction was a median {value} {side} the measured "
                                           "throughput"),
         "memory": ("published peak-memory measurements", "the predicted memory was a median "
                                                         "{value} {side} the measured peak")}


@dataclass(frozen=True)
class Similar:
    """The validation rows most like a scenario and how far off they were."""

    kind: str                  # throughput or memory
    match: dict[str, str]      # the keys matched (a prefix of the kind's keys) and their tags
    rows: int
    median: float
    low: float                 # 25th percentile of the error
    high: float                # 75th percentile
    short: tuple[str, str, int, float] | None = None
    """The next key, its tag, its too few rows and their median error (nan for none)."""

    def sentence(self) -> str:
        """One line for ``clustersim run``: the rows matched, their median error and middle
        half, and the key that could not narrow them further (with its rows' median)."""
        noun, verb = _SAYS[self.kind]
        said = verb.format(value=f"{abs(self.median):.1%}", side="above" if self.median >= 0 else "below")
        spread = f"(errors' middle half {self.low:+.1%} to {self.high:+.1%}; docs/validation.md)"
        if not self.match and self.short is not None and self.short[2] == 0:
            key, tag = self.short[:2]
            return (f"no {noun} with {key} {tag} are in the validation sets; over all {self.rows} of "
                    f"them {said} {spread}")
        like = f"like this one ({', '.join(self.match.values())})" if self.match else "of any regime"
        text = (f"for {self.rows} {noun} {like} {said} (errors' middle half "
                f"{self.low:+.1%} to {self.high:+.1%}")
        if self.short is not None:
            key, tag, rows, median = self.short
            of = f" (median {median:+.1%})" if rows else ""
            text += f"; {rows} with {key} {tag}{of}, too few to narrow further"
        return text + "; docs/validation.md)"


def similar_rows(tags: dict[str, str], table: pd.DataFrame, kind: str = "throughput",
                 minimum: int = MIN_ROWS) -> Similar | None:
    """The longest prefix of the keys of ``kind`` (:data:`REGIME_KEYS` for throughput,
    :data:`MEMORY_KEYS` for memory) whose tags the ``kind`` rows of ``table`` hold at least
    ``minimum`` rows of, with those rows' error quartiles (None when there are fewer rows)."""
    keys = MEMORY_KEYS if kind == "memory" else REGIME_KEYS
    table = table[table["kind"] == kind]
    if len(table) < minimum:
        return None
    mask = pd.Series(True, index=table.index)
    for depth, key in enumerate(keys):
        narrower = mask & (table[key] == tags[key])
        if int(narrower.sum()) < minimum:
            short = (key, tags[key], int(narrower.sum()), float(table.loc[narrower, "error"].median()))
            return _similar(kind, table, mask, {k: tags[k] for k in keys[:depth]}, short)
        mask = narrower
    return _similar(kind, table, mask, {k: tags[k] for k in keys}, None)


def _similar(kind: str, table: pd.DataFrame, mask: pd.Series, match: dict[str, str],
             short: tuple[str, str, int, float] | None) -> Similar:
    errors = table.loc[mask, "error"]
    return Similar(kind, match, int(mask.sum()), float(errors.median()),
                   float(errors.quantile(0.25)), float(errors.quantile(0.75)), short)


def regime_summary(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows, median error, quartiles and mean |error| per combination of ``keys``."""
    grouped = table.groupby(keys, sort=True)["error"]
    return pd.DataFrame({"rows": grouped.size(), "median": grouped.median(),
                         "low": grouped.quantile(0.25), "high": grouped.quantile(0.75),
                         "mean_abs": grouped.apply(lambda e: e.abs().mean())}).reset_index()


def validation_notes(scenario: Scenario, library: HardwareLibrary, path: Path = ROW_ERRORS) -> list[str]:
    """:meth:`Similar.sentence` of the throughput rows and of the peak-memory rows like a
    synchronous training scenario (each when rows are found); none for one the rows do not
    speak for (asynchronous parameter servers) or without the table at ``path``."""
    if (scenario.model is None or scenario.training is None or str(scenario.training.sync) == "async"
            or not path.is_file()):
        return []
    tags, table = regime_tags(scenario, library), read_row_errors(path)
    found = (similar_rows(tags, table, kind) for kind in _SAYS)
    return [similar.sentence() for similar in found if similar is not None]
