"""Evaluate many parallel layouts of one model on one cluster (the fast path for sweeps).

The cluster graph, routes and collective cost terms are built once and shared; each
layout only re-prices its kernels and reuses cached collective terms for groups it
shares with earlier layouts. Infeasible layouts are rows with the reason, not errors.

The search's layout axes live here too: every axis value is validated once, by the
scenario schema itself, so each layout can be written into the scenario without
validating it again (:func:`with_layout`); rules that need the whole layout
(divisibility by the GPU count, the batch, the schedule) are the scenario's own checks,
run per layout by :func:`evaluate_rows`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import product
from typing import Any

import pandas as pd
import yaml

from simulator.config.checks import check_scenario
from simulator.config.copies import updated
from simulator.config.hybrid import Block
from simulator.config.resolved import ResolvedCluster
from simulator.config.scenario import ParallelismConfig, Recompute, Scenario, Schedule, TrainingConfig
from simulator.config.yaml_io import short_value, validate_model
from simulator.cost import CollectiveModel
from simulator.engine.batch import simulate_headlines, simulate_steps
from simulator.errors import ClusterSimError, ConfigError, UsageError
from simulator.results import StepResult

PARALLELISM_KEYS = {"tp", "pp", "dp", "cp", "ep", "etp", "shard_size", "sequence_parallel", "schedule",
                    "virtual_stages", "zero_stage", "recompute", "overlap_grad_reduce", "rank_order",
                    "cpu_offload_layers"}
TRAINING_KEYS = {"micro_batch", "global_batch"}


def layout_grid(**choices) -> list[dict]:
    """Cartesian product of keyword choices: ``layout_grid(tp=[1, 2], pp=[1, 4])``."""
    keys = list(choices)
    return [dict(zip(keys, values, strict=True)) for values in product(*choices.values())]


def evaluate_layouts(scenario: Scenario, hardware: ResolvedCluster, collectives: CollectiveModel,
                     layouts: Iterable[dict]) -> pd.DataFrame:
    """One row per layout: its settings, the headline results, or why it is infeasible.

    Valid layouts with the same global batch are evaluated together
    (:func:`~simulator.engine.batch.simulate_steps`): exactly the numbers of
    :func:`~simulator.engine.analytical.simulate_step` for each.
    """
    rows, batches = [], defaultdict(list)
    for layout in layouts:
        row = dict(layout)
        try:
            variant = apply_layout(scenario, layout)
            check_scenario(variant, hardware)
        except ClusterSimError as exc:
            row.update(status=str(exc))
        else:
            batches[variant.training.global_batch].append((row, variant))
        rows.append(row)
    for members in batches.values():
        results = simulate_steps([variant for _, variant in members], collectives, breakdowns=False)
        for (row, _), result in zip(members, results, strict=True):
            _headline(row, result)
    return pd.DataFrame(rows)


def _headline(row: dict, result: StepResult | ClusterSimError) -> None:
    """``row`` with the headline results of ``result`` (or why it is infeasible)."""
    if isinstance(result, ClusterSimError):
        row.update(status=str(result))
        return
    row.update(status="ok", step_time_s=result.step_time_s, mfu=result.mfu,
               tokens_per_s=result.tokens_per_s, bubble_fraction=result.bubble_fraction,
               memory_per_gpu_bytes=result.memory_per_gpu_bytes,
               fits_in_memory=result.fits_in_memory)


def _reason(exc: ClusterSimError) -> str:
    """The error as ``key: message``, without the (unchanged) scenario file."""
    if isinstance(exc, ConfigError):
        return exc.render(with_source=False)
    return str(exc)


def apply_layout(scenario: Scenario, layout: dict) -> Scenario:
    """``scenario`` with parallelism/training keys replaced (types validated by pydantic).

    ``dp`` defaults to the GPU count over tp*pp*cp when a layout does not give it.
    """
    unknown = set(layout) - PARALLELISM_KEYS - TRAINING_KEYS
    if unknown:
        raise ValueError(f"unknown layout keys: {sorted(unknown)}")
    par = {k: v for k, v in layout.items() if k in PARALLELISM_KEYS}
    par.setdefault("dp", None)
    par.update(_layout_reset(scenario, par))
    training = {k: v for k, v in layout.items() if k in TRAINING_KEYS}
    parallelism = type(scenario.parallelism).model_validate(
        {**scenario.parallelism.model_dump(), **par})
    training_cfg = type(scenario.training).model_validate(
        {**scenario.training.model_dump(), **training})
    return scenario.model_copy(update={"parallelism": parallelism, "training": training_cfg})


def _layout_reset(scenario: Scenario, par: dict) -> dict:
    """The scenario's own pipeline split dropped where a layout's pipeline differs: its
    ``parallelism.pipeline_layout`` when ``pp`` or ``virtual_stages`` differ (Megatron-Core's
    layout names the layers of ``pp * v`` chunks), its ``first_stage_layers`` /
    ``last_stage_layers`` when ``pp`` differs (the counts were chosen for that many stages);
    the layout then takes the default split. ``{}`` when nothing is dropped."""
    base = scenario.parallelism
    pp = par.get("pp", base.pp)
    reset = {}
    if base.pipeline_layout is not None and (pp, par.get("virtual_stages", base.virtual_stages)) != (
            base.pp, base.virtual_stages):
        reset["pipeline_layout"] = None
    if (base.first_stage_layers or base.last_stage_layers) and pp != base.pp:
        reset.update(first_stage_layers=None, last_stage_layers=None)
    return reset


SEARCH_METRICS = ["step_time_s", "tokens_per_s", "mfu", "bubble_fraction", "bubble_s",
                  "comm_exposed_s", "optimizer_s", "memory_per_gpu_bytes", "memory_capacity_bytes",
                  "fits_in_memory", "microbatches"]
"""Fields of :class:`~simulator.results.StepResult` in every evaluated row of a search."""


def with_layout(scenario: Scenario, layout: dict, sections: dict | None = None) -> Scenario:
    """``scenario`` with the layout's parallelism keys and ``micro_batch`` set, without
    re-validation (the search validates every axis value once; :func:`apply_layout` for
    arbitrary input). ``dp`` is derived from the GPU count unless the layout gives it.
    ``sections`` keeps the parallelism and training sections made so far (by their
    values), for reuse by later layouts of ``scenario`` (the copies are shallow either way:
    layouts that differ only in micro batch share one parallelism section)."""
    made = sections if sections is not None else {}
    par = {k: v for k, v in layout.items() if k in PARALLELISM_KEYS}
    par.setdefault("dp", None)
    par.update(_layout_reset(scenario, par))
    key = ("parallelism", *par.items())
    if key not in made:
        made[key] = updated(scenario.parallelism, par)
    update = {"parallelism": made[key]}
    if "micro_batch" in layout:
        mb = layout["micro_batch"]
        if ("training", mb) not in made:
            made["training", mb] = updated(scenario.training, {"micro_batch": mb})
        update["training"] = made["training", mb]
    return updated(scenario, update)


def evaluate_rows(scenario: Scenario, hardware: ResolvedCluster, collectives: CollectiveModel,
                  layouts: Iterable[dict], memo: dict | None = None, head: dict | None = None) -> list[dict]:
    """One row per layout (validated axis values): ``head`` (keys every row starts with, e.g.
    the search point), the layout, ``status`` ("ok" or why the scenario's rules refuse it),
    and for valid layouts :data:`SEARCH_METRICS` and the exposed communication per dimension
    (``exposed_tp_s`` ...).

    The valid layouts are evaluated together (:func:`~simulator.engine.batch.simulate_steps`);
    each row is exactly what :func:`~simulator.engine.analytical.simulate_step` gives for
    the scenario with that layout written into it. ``memo`` keeps prices shared by
    layouts of ``scenario`` for later calls with it (:func:`~simulator.engine.batch.simulate_steps`).
    """
    rows, valid, variants, sections = [], [], [], {}
    head = head or {}
    for layout in layouts:
        row = {**head, **layout}
        try:
            variant = with_layout(scenario, layout, sections)
            check_scenario(variant, hardware)
        except ClusterSimError as exc:
            row["status"] = _reason(exc)
        else:
            valid.append(row)
            variants.append(variant)
        rows.append(row)
    for row, result in zip(valid, simulate_headlines(variants, collectives, memo), strict=True):
        _fill(row, result)
    return rows


def _fill(row: dict, result: dict | ClusterSimError) -> None:
    """``row`` with the status and metrics of ``result``, a headline
    (:func:`~simulator.engine.batch.simulate_headlines`), or the reason it is refused."""
    if isinstance(result, ClusterSimError):
        row["status"] = _reason(result)
        return
    row["status"] = "ok"
    row.update({name: result[name] for name in SEARCH_METRICS})
    exposed = result["exposed_by_dimension"]
    row.update({_EXPOSED_NAMES.get(d) or f"exposed_{d}_s": s for d, s in exposed.items()})


_EXPOSED_NAMES = {d: f"exposed_{d}_s" for d in ("tp", "pp", "dp", "cp", "ep")}
"""The row names of the exposed communication per dimension (a headline's five)."""


LAYOUT_AXES = ["tp", "pp", "dp", "cp", "ep", "etp", "micro_batch", "schedule", "virtual_stages",
               "recompute", "zero_stage", "shard_size", "sequence_parallel", "rank_order",
               "cpu_offload_layers"]
"""Axes of a layout, in the order the search enumerates them (and its output columns)."""
POWERS = [1, 2, 4, 8, 16, 32, 64]


def parse_axis(name: str, values: Any, source: str = "search") -> list[Any]:
    """The values of layout axis ``name``, each checked by the scenario schema.

    ``values`` is a list, a single value, or text ``"1,2,4"`` (from a flag). ``dp``,
    ``etp`` and ``shard_size`` also take ``auto`` (derived from the GPU count; the experts
    split like the dense layers; no hybrid sharding).

    Raises
    ------
    UsageError
        For an unknown axis or a value the schema refuses (e.g. ``schedule: zigzag``).
    """
    if name not in LAYOUT_AXES:
        raise UsageError(f"{source}: unknown axis '{name}'; known: {', '.join(LAYOUT_AXES)}")
    if isinstance(values, str):
        values = [scalar(v) for v in values.split(",") if v.strip()]
    values = values if isinstance(values, list) else [values]
    label = source if source.startswith("--") else f"{source}.{name}"   # a flag names the axis
    if not values:
        raise UsageError(f"{label}: give at least one value")
    return list(dict.fromkeys(_checked(name, v, label) for v in values))


def _checked(name: str, value: Any, label: str) -> Any:
    if name in ("dp", "etp", "shard_size") and value in ("auto", None):
        return None
    model = TrainingConfig if name == "micro_batch" else ParallelismConfig
    data = {name: value, "global_batch": 1} if model is TrainingConfig else {name: value}
    try:
        return getattr(validate_model(model, data, label), name)
    except ConfigError as exc:
        text = exc.message
        shown = short_value(value)
        message = text if text.startswith(shown) else f"{shown}: {text}"   # the value once
        raise UsageError(f"{label}: {message}") from None


def plain_value(value: Any) -> Any:
    """A data-frame cell as a plain Python value: numpy scalars as int/float/bool, NaN and
    missing values as None."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def scalar(text: str) -> Any:
    """A flag value as YAML reads it (``2`` is an int, ``true`` a flag, ``1f1b`` text)."""
    try:
        return yaml.safe_load(text.strip())
    except yaml.YAMLError:
        return text.strip()


def default_axes(scenario: Scenario, gpus_per_node: int) -> dict[str, list[Any]]:
    """Sensible ranges for ``scenario``'s model: tp up to a server, powers of two for pp,
    cp only for long sequences, ep only for mixtures of experts, and for them the experts
    split like the dense layers or whole (``etp`` auto or 1), every schedule, recompute
    mode, ZeRO stage 1-3 (1 under Muon, which shards no more than ZeRO-1) and sequence
    parallelism; the scenario's own rank order. A hybrid model's (``model.hybrid_pattern``,
    ``model.block``) tp also splits its Mamba mixer's heads and groups, and the axes leave out
    what it does not price (context parallelism; ZeRO-3 with multi-token prediction layers)."""
    model = scenario.model
    hybrid = model.hybrid_pattern is not None or model.block != Block.FULL
    zero = [1] if scenario.training.optimizer.muon else [1, 2] if hybrid and model.mtp_layers else [1, 2, 3]
    return {
        "tp": [t for t in POWERS
               if t <= gpus_per_node and model.heads % t == 0 and _splits_mixer(model, t)],
        "pp": [p for p in POWERS if p <= model.layers],
        "dp": [None],
        "cp": ([c for c in POWERS[:4] if model.seq_len % c == 0]
               if model.seq_len >= 16384 and not hybrid else [1]),
        "ep": [e for e in POWERS if model.experts % e == 0] if model.experts > 1 else [1],
        "etp": [None, 1] if model.experts > 1 else [None],
        "micro_batch": [1, 2, 4, 8],
        "schedule": [Schedule.ONE_F_ONE_B, Schedule.INTERLEAVED],
        "virtual_stages": [1, 2, 4],
        "recompute": parse_axis("recompute", ["none", "selective", "full"]),
        "zero_stage": zero,
        "shard_size": [None],
        "sequence_parallel": [False, True],
        "rank_order": [scenario.parallelism.rank_order],
        "cpu_offload_layers": [scenario.parallelism.cpu_offload_layers],
    }


def _splits_mixer(model, tp: int) -> bool:
    """Whether ``tp`` splits the model's Mamba mixer's heads and groups (true without one)."""
    mamba = model.mamba
    return mamba is None or (mamba.heads % tp == 0 and mamba.groups % tp == 0)


def search_axes(scenario: Scenario, gpus_per_node: int, section: dict[str, Any] | None,
                flags: dict[str, str]) -> dict[str, list[Any]]:
    """The layout axes: defaults, overridden by the ``search:`` section, then by flags."""
    axes = default_axes(scenario, gpus_per_node)
    for name, values in (section or {}).items():
        axes[name] = parse_axis(name, values, "search")
    for name, text in flags.items():
        axes[name] = parse_axis(name, text, f"--{name.replace('_', '-')}")
    return axes


def layouts(axes: dict[str, list[Any]], gpus: int) -> Iterator[dict[str, Any]]:
    """Every distinct layout of ``axes`` on ``gpus`` GPUs whose tp*pp*cp divides the GPU
    count (dp is the quotient unless the dp axis restricts it). Combinations that mean the
    same layout are given once: virtual stages only with the interleaved schedule (which
    needs at least two), sequence parallelism only with tp > 1, hybrid sharding only with
    ZeRO-3, a second rank order only with pp > 1 and dp > 1, an expert tensor parallelism
    other than tp's only with ep > 1 and below tp, activation offloading only with pp 1 and no
    recompute (Megatron-Core's rules)."""
    for tp, pp, cp in product(axes["tp"], axes["pp"], axes["cp"]):
        if gpus % (tp * pp * cp):
            continue
        dp = gpus // (tp * pp * cp)
        if axes["dp"] != [None] and dp not in axes["dp"]:
            continue
        yield from _rest(axes, tp, pp, cp, dp)


def _rest(axes: dict[str, list[Any]], tp: int, pp: int, cp: int, dp: int) -> Iterator[dict[str, Any]]:
    schedules = [(s, v) for s in axes["schedule"] for v in axes["virtual_stages"]
                 if (s == Schedule.INTERLEAVED) == (v > 1) and not (v > 1 and pp == 1)]
    zeros = [(z, s) for z in axes["zero_stage"] for s in axes["shard_size"] if s is None or z == 3]
    sps = [sp for sp in axes["sequence_parallel"] if tp > 1 or not sp]
    orders = axes["rank_order"] if pp > 1 and dp > 1 else axes["rank_order"][:1]
    experts = [(ep, etp) for ep in axes["ep"] for etp in axes["etp"]
               if etp is None or (ep > 1 and etp < tp)]
    for (ep, etp), mb, (schedule, v), recompute, (zero, shard), sp, order, offload in product(
            experts, axes["micro_batch"], schedules, axes["recompute"], zeros, sps, orders,
            axes["cpu_offload_layers"]):
        if offload and (pp > 1 or recompute != Recompute.NONE):
            continue
        yield {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "etp": etp, "micro_batch": mb,
               "schedule": schedule, "virtual_stages": v, "recompute": recompute,
               "zero_stage": zero, "shard_size": shard, "sequence_parallel": sp, "rank_order": order,
               "cpu_offload_layers": offload}
