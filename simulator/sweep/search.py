"""Search the layouts of a scenario's model on its cluster (and on other clusters or
scenario values, ``--set``), keep those that are valid and fit in memory, rank them.

Every layout is priced by the analytical engine exactly as a scenario with that layout
written into it (:func:`simulator.sweep.layouts.evaluate_rows`); each hardware point's
cluster and collective cost model are built once and shared by its layouts. The work is
cut into chunks that run here, or on a Dask cluster
(:mod:`simulator.sweep.dask_runner`) with identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import pandas as pd

from simulator.config import HardwareLibrary, Scenario, resolve_cluster
from simulator.config.presets import MODEL_PRESETS
from simulator.config.yaml_io import short_value, validate_model
from simulator.engine.collector import collector_paused
from simulator.errors import ConfigError, UsageError
from simulator.sweep.layouts import LAYOUT_AXES, evaluate_rows, layouts, scalar, search_axes
from simulator.sweep.session_cache import SessionCache

OBJECTIVES = {"tokens_per_s": ("tokens_per_s", False), "step_time": ("step_time_s", True),
              "mfu": ("mfu", False), "memory_headroom": ("memory_headroom_bytes", False),
              "cost": ("usd_per_million_tokens", True)}
"""Objective name -> (column, ascending): the first row of the ranking is the best."""
CHUNK = 1024
"""Layouts per unit of work (a progress step here; Dask chunks are cut anew). Layouts of one
chunk that share a pipeline task graph get their clocks together, so larger is faster."""


@dataclass(frozen=True)
class Task:
    """A chunk of layouts of one scenario point: what a worker evaluates.

    Attributes
    ----------
    point : int
        Index of the scenario point (combination of ``--set`` values).
    scenario : Scenario
        The point's scenario (layouts are written into it).
    library : HardwareLibrary
        The hardware library to build its cluster with.
    layouts : list of dict
        The layouts, those sharing a pipeline task graph together (:func:`plan_tasks`).
    positions : list of int
        Each layout's position in the search's enumeration (its row's, in the output).
    """

    point: int
    scenario: Scenario
    library: HardwareLibrary
    layouts: list[dict[str, Any]] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SearchResult:
    """Every layout evaluated (``frame``, infeasible ones with their reason in ``status``)
    and the feasible ones ranked best first (``ranked``) by ``objective``."""

    frame: pd.DataFrame
    ranked: pd.DataFrame
    objective: str
    set_keys: list[str]

    @property
    def best(self) -> pd.Series | None:
        """The best layout, or None when nothing is feasible."""
        return self.ranked.iloc[0] if len(self.ranked) else None


def parse_sets(entries: list[str]) -> list[tuple[str, list[Any]]]:
    """``--set KEY=V1,V2`` entries as (dotted key, values), values read as YAML scalars.

    Raises
    ------
    UsageError
        For an entry without ``=``, an empty key or no value, or a key set twice.
    """
    out: dict[str, list[Any]] = {}
    for entry in entries:
        key, sep, text = entry.partition("=")
        key = key.strip()
        values = [scalar(v) for v in text.split(",") if v.strip()]
        if not sep or not key or not values:
            raise UsageError(f"--set: expected KEY=VALUE[,VALUE...] (e.g. cluster.nodes=64,128), "
                             f"got '{entry}'")
        if key in out:
            raise UsageError(f"--set: {key} is given twice; list its values once, comma-separated")
        out[key] = values
    return list(out.items())


def scenario_points(scenario: Scenario, sets: list[tuple[str, list[Any]]],
                    library: HardwareLibrary) -> list[tuple[dict[str, Any], Scenario]]:
    """One scenario per combination of the ``sets`` values (the product), each with the
    values it was given; just ``scenario`` without sets.

    Raises
    ------
    ConfigError
        If a combination makes an invalid scenario (unknown node, bad value), naming the key.
    """
    if not sets:
        return [({}, scenario)]
    base = scenario.model_dump(mode="json")
    keys = [k for k, _ in sets]
    points = []
    for values in product(*(v for _, v in sets)):
        given = dict(zip(keys, values, strict=True))
        source = "--set " + " ".join(f"{k}={v}" for k, v in given.items())
        mapping = base
        for key, value in given.items():
            mapping = set_key(mapping, key, value)
        point = validate_model(Scenario, mapping, source)
        try:
            resolve_cluster(point.cluster, library)
        except ConfigError as exc:
            raise exc.with_source(source) from None
        points.append((given, point))
    return points


def set_key(mapping: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``mapping`` with the dotted ``key`` set (``model.preset`` loads the preset)."""
    if key == "model.preset":
        if value not in MODEL_PRESETS:
            raise UsageError(f"--set model.preset: unknown preset {short_value(value)}; known: "
                             f"{', '.join(MODEL_PRESETS)}")
        return {**mapping, "model": {**MODEL_PRESETS[value], "preset": value}}
    head, _, rest = key.partition(".")
    if not rest:
        return {**mapping, head: value}
    inner = mapping.get(head, {})
    if inner is None:
        inner = {}
    if not isinstance(inner, dict):
        raise UsageError(f"--set {key}: '{head}' is {short_value(inner)}, not a section")
    return {**mapping, head: set_key(inner, rest, value)}


def search(scenario: Scenario, *, section: dict[str, Any] | None = None,
           flags: dict[str, str] | None = None, sets: list[tuple[str, list[Any]]] | None = None,
           library: HardwareLibrary | None = None, objective: str = "tokens_per_s",
           prices: dict[str, float] | None = None, client: Any = None,
           progress: Callable[[int, int], None] | None = None,
           cache: SessionCache | None = None) -> SearchResult:
    """Search the layouts of ``scenario`` (on every ``sets`` combination) and rank them.

    Parameters
    ----------
    scenario : Scenario
        A validated scenario with ``model`` and ``training``; its own layout is ignored.
    section, flags : dict, optional
        Axis ranges from a ``search:`` section (lists) and from flags (``"1,2,4"`` text);
        flags win, defaults fill the rest (:func:`~simulator.sweep.layouts.default_axes`).
    sets : list of (str, list), optional
        Scenario keys and their values (:func:`parse_sets`); the search covers the product.
    library : HardwareLibrary, optional
        Hardware specs; the default library when omitted.
    objective : str
        One of :data:`OBJECTIVES`; ``cost`` needs ``prices``.
    prices : dict, optional
        Dollars per GPU-hour by node name (``"*"``: any node).
    client : distributed.Client, optional
        Evaluate on this Dask cluster (:mod:`simulator.sweep.dask_runner`) instead of here.
    progress : callable, optional
        Called as ``progress(done, total)`` after each chunk of layouts.
    cache : SessionCache, optional
        Built clusters and shared prices to reuse and fill (a notebook's next search of the
        same points then skips building them); a new one per search when omitted. Dask
        workers keep their own.

    Raises
    ------
    UsageError
        For an unknown objective, ``cost`` without prices, or a bad axis value.
    ConfigError
        For a scenario without a model, or a ``--set`` combination that is invalid.
    """
    library = library or HardwareLibrary()
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective: '{objective}' is not one of {', '.join(OBJECTIVES)}")
    if objective == "cost" and not prices:
        raise UsageError("--objective cost needs prices: --price USD_PER_GPU_HOUR or NODE=USD")
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to search layouts", key="model")
    points = scenario_points(scenario, sets or [], library)
    tasks = plan_tasks(points, section, flags or {}, library)
    if client is not None:
        from simulator.sweep.dask_runner import run_on_dask
        rows = run_on_dask(tasks, client, progress)
    else:
        rows = run_local(tasks, progress, cache)
    rows = in_enumeration_order(tasks, rows)
    gpus = [resolve_cluster(point.cluster, library).gpus for _, point in points]
    return rank(rows, points, gpus, objective, prices or {})


def plan_tasks(points: list[tuple[dict[str, Any], Scenario]], section: dict[str, Any] | None,
               flags: dict[str, str], library: HardwareLibrary, chunk: int = CHUNK) -> list[Task]:
    """The layouts of every point, cut into chunks of at most ``chunk`` layouts; within a
    point those that share a pipeline task graph come together (:func:`graph_order`), so
    a chunk clocks each graph once for more of them. Each task keeps its layouts'
    positions in the enumeration (:func:`in_enumeration_order`)."""
    tasks, offset = [], 0
    for index, (_, point) in enumerate(points):
        hardware = resolve_cluster(point.cluster, library)
        found = list(layouts(search_axes(point, hardware.gpus_per_node, section, flags), hardware.gpus))
        order = graph_order(found)
        tasks += [Task(index, point, library, [found[j] for j in order[i:i + chunk]],
                       [offset + j for j in order[i:i + chunk]]) for i in range(0, len(found), chunk)]
        offset += len(found)
    return tasks


def graph_order(found: list[dict[str, Any]]) -> list[int]:
    """Positions of ``found`` with the layouts of one pipeline task graph (schedule, pp,
    virtual stages and, for one global batch, micro batch times dp) together, in
    enumeration order within each."""
    def key(i: int) -> tuple:
        lay = found[i]
        return (str(lay["schedule"]), lay["pp"], lay["virtual_stages"], lay["micro_batch"] * lay["dp"])
    return sorted(range(len(found)), key=key)


def in_enumeration_order(tasks: list[Task], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows``, one per layout of ``tasks`` in their order, put in enumeration order."""
    out: list[dict[str, Any]] = [{}] * len(rows)
    for position, row in zip((p for t in tasks for p in t.positions), rows, strict=True):
        out[position] = row
    return out


def evaluate_task(task: Task, cache: SessionCache | None = None) -> list[dict[str, Any]]:
    """The rows of one chunk (``point`` added); the point's cluster, cost model and memo of
    shared prices come from ``cache`` (built there on first use, kept for the next chunks;
    without a cache, built for this chunk alone). The cyclic garbage collector is paused
    meanwhile (:func:`~simulator.engine.collector.collector_paused`)."""
    with collector_paused():
        return _evaluate_task(task, cache if cache is not None else SessionCache(1))


def _evaluate_task(task: Task, cache: SessionCache) -> list[dict[str, Any]]:
    """:func:`evaluate_task`, with the collector as it is."""
    session, memo = cache.get(task.scenario, task.library)
    return evaluate_rows(task.scenario, session.hardware, session.collectives, task.layouts, memo,
                         {"point": task.point})


def run_local(tasks: list[Task], progress: Callable[[int, int], None] | None = None,
              cache: SessionCache | None = None) -> list[dict[str, Any]]:
    """Evaluate ``tasks`` one after another in this process with ``cache`` (a new one when
    not given: the search's chunks share it), the cyclic garbage collector paused throughout
    (:func:`~simulator.engine.collector.collector_paused`: one pause per search rather than
    per chunk, so its collections do not rescan the kept prices after every chunk)."""
    cache = cache if cache is not None else SessionCache()
    total, done, rows = sum(len(t.layouts) for t in tasks), 0, []
    with collector_paused():
        for task in tasks:
            rows += evaluate_task(task, cache)
            done += len(task.layouts)
            if progress is not None:
                progress(done, total)
    return rows


def rank(rows: list[dict[str, Any]], points: list[tuple[dict[str, Any], Scenario]], gpus: list[int],
         objective: str, prices: dict[str, float]) -> SearchResult:
    """The frame of every row (scenario-point values, GPUs, feasibility, headroom, cost
    added) and the feasible rows sorted by ``objective`` (ties keep the enumeration order)."""
    keys = list(points[0][0])
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=["point", *LAYOUT_AXES, "status"])
    extra = [{**given, "gpus": count, "price": _price(point, prices)}
             for (given, point), count in zip(points, gpus, strict=True)]
    frame = frame.join(pd.DataFrame(extra), on="point").drop(columns="point")
    frame = frame[[*keys, "gpus", *[c for c in frame.columns if c not in (*keys, "gpus")]]]
    for column in ("tokens_per_s", "memory_per_gpu_bytes", "memory_capacity_bytes", "fits_in_memory"):
        if column not in frame:
            frame[column] = pd.NA
    ok = frame["status"].eq("ok")
    fits = ok & frame["fits_in_memory"].fillna(False).astype(bool)
    big = frame.loc[ok & ~fits]
    frame.loc[ok & ~fits, "status"] = [_too_big(memory, capacity) for memory, capacity in zip(
        big["memory_per_gpu_bytes"].tolist(), big["memory_capacity_bytes"].tolist(), strict=True)]
    frame["feasible"] = fits
    frame["memory_headroom_bytes"] = frame["memory_capacity_bytes"] - frame["memory_per_gpu_bytes"]
    frame["usd_per_million_tokens"] = frame["price"] * frame["gpus"] / 3600 / frame["tokens_per_s"] * 1e6
    column, ascending = OBJECTIVES[objective]
    ranked = frame[fits].sort_values(column, ascending=ascending, kind="mergesort")
    return SearchResult(frame, ranked.reset_index(drop=True), objective, keys)


def _price(point: Scenario, prices: dict[str, float]) -> float:
    node = point.cluster.node if isinstance(point.cluster.node, str) else point.cluster.node.name
    return prices.get(node, prices.get("*", float("nan")))


def _too_big(memory: float, capacity: float) -> str:
    gib = 2**30
    return f"does not fit in memory: {memory / gib:.1f} GiB per GPU > {capacity / gib:.1f} GiB"


_PARTS = [("bubble_s", "pipeline bubble"), ("comm_exposed_s", "exposed communication"),
          ("compute_s", "compute"), ("optimizer_s", "optimizer step")]
_LABELS = {"tokens_per_s": "tokens/s", "step_time": "step time", "mfu": "MFU",
           "memory_headroom": "memory headroom", "cost": "dollars per million tokens"}


def why_best(result: SearchResult) -> str:
    """Why the best layout beats the next: the objective of both, the settings that
    differ, and the part of the step (bubble, exposed communication, compute, optimizer)
    that differs most."""
    if len(result.ranked) < 2:
        return "only one feasible layout" if len(result.ranked) else "no feasible layout"
    best, other = result.ranked.iloc[0], result.ranked.iloc[1]
    column, _ = OBJECTIVES[result.objective]
    a, b = best[column], other[column]
    relative = (a - b) / abs(b) if b else 0.0
    change = f" ({relative:+.2%})" if abs(relative) >= 1e-4 else f" ({relative:+.1e}, a tie)" if b else ""
    text = f"{_LABELS[result.objective]} {_number(a)} against {_number(b)}{change}"
    differs = [f"{k} {_value(best[k])} vs {_value(other[k])}"
               for k in [*result.set_keys, *LAYOUT_AXES] if _value(best[k]) != _value(other[k])]
    if differs:
        text += "; the next differs in " + ", ".join(differs)
    parts = {name: (_part(best, name), _part(other, name)) for name, _ in _PARTS}
    name, label = max(_PARTS, key=lambda p: abs(parts[p[0]][1] - parts[p[0]][0]))
    mine, theirs = parts[name]
    if mine != theirs:
        text += (f"; the largest difference is {label}: {mine:.4g} s against {theirs:.4g} s "
                 "per step")
    return text


def _part(row: pd.Series, name: str) -> float:
    if name == "compute_s":
        return float(row["step_time_s"] - row["bubble_s"] - row["comm_exposed_s"] - row["optimizer_s"])
    return float(row[name])


def _value(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return str(getattr(value, "value", value))


def _number(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
