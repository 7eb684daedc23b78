"""The analytical engine over many layouts of one model on one cluster at once.

Each layout is priced up to its pipeline clocks (:func:`simulator.engine.analytical.stage_step`);
layouts that share a task graph — the same (schedule, pp, microbatches, virtual stages) —
then get their clocks together, one pass over the graph's levels for all of them
(:func:`simulator.workload.wavefront.batch_stage_clocks`), and each step is completed from
its clocks (:func:`simulator.engine.analytical.complete_step`). The clocks are bit for bit
those of the task-by-task walk, so every result is exactly
:func:`~simulator.engine.analytical.simulate_step`'s (``tests/test_search.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np

from simulator.config.scenario import Scenario
from simulator.cost import CollectiveModel
from simulator.cost.forced import bind
from simulator.engine import columns
from simulator.engine.analytical import StagedStep, complete_step, stage_step
from simulator.engine.dp_beside import stage_gather_shares
from simulator.engine.gradient_sync import chunk_gather_seconds
from simulator.errors import ClusterSimError
from simulator.results import StepResult
from simulator.workload.chunk_gathers import batch_clocks_with_gathers, batch_gather_delay
from simulator.workload.taskgraph import EXACT_MICROBATCHES
from simulator.workload.wavefront import batch_stage_clocks


def simulate_steps(scenarios: Sequence[Scenario], collectives: CollectiveModel,
                   memo: dict | None = None, breakdowns: bool = True
                   ) -> list[StepResult | ClusterSimError]:
    """One step of every scenario (layouts of one model, on the cluster behind
    ``collectives``), in order: its result, or the error that refuses it.

    Parameters
    ----------
    scenarios : sequence of Scenario
        Valid scenarios (``check_scenario`` passed) that differ only in their parallelism
        and micro batch.
    collectives : CollectiveModel
        The cluster's collective cost model, shared by all.
    memo : dict, optional
        Sub-results shared by layouts with the same group shapes (layer costs, collective
        prices, gradient synchronisation; :func:`~simulator.engine.context.memoised`),
        kept by the caller for further layouts of the same setup; a new one by default.
    breakdowns : bool
        Give each result its per-stage breakdowns (``stages``); without them (what a search
        needs) ``stages`` is empty and every other field the same.
    """
    out = _staged(scenarios, collectives, memo)
    for staged, members, finish, last_start in _clocked(out):
        for row, i in enumerate(members):
            out[i] = _completed(staged[row], finish[row], last_start[row], breakdowns)
    return out


def simulate_headlines(scenarios: Sequence[Scenario], collectives: CollectiveModel,
                       memo: dict | None = None) -> list[dict | ClusterSimError]:
    """:func:`simulate_steps` without result objects: per scenario the headline fields of
    its result (:data:`~simulator.engine.columns.HEADLINE`, a dict), or the error that
    refuses it. The steps of a task graph are completed as columns
    (:func:`~simulator.engine.columns.complete_columns`), every value that of the result
    :func:`simulate_steps` gives."""
    out = _staged(scenarios, collectives, memo)
    for staged, members, finish, last_start in _clocked(out):
        plain = [i for i, s in enumerate(staged) if columns.plain(s)]
        done = dict(zip(plain, columns.complete_columns(
            [staged[i] for i in plain], finish[plain], last_start[plain]), strict=True)) if plain else {}
        for row, i in enumerate(members):
            found = done.get(row)
            out[i] = found if found is not None else _headline(
                _completed(staged[row], finish[row], last_start[row], False))
    return out


def _staged(scenarios: Sequence[Scenario], collectives: CollectiveModel, memo: dict | None
            ) -> list[StagedStep | ClusterSimError]:
    """Every scenario priced up to its clocks (:func:`stage_step`), or the error refusing it."""
    memo = {} if memo is None else memo
    if scenarios:
        bind(collectives, scenarios[0])     # the forced algorithms memoised prices assume
    out: list = []
    for scenario in scenarios:
        try:
            out.append(stage_step(scenario, collectives, memo=memo))
        except ClusterSimError as exc:
            out.append(exc)
    return out


def _clocked(out: list) -> Iterator[tuple[list[StagedStep], list[int], np.ndarray, np.ndarray]]:
    """Per task graph, its steps of ``out``, their positions and their clocks (finish and
    start of the last task, each (steps, stages)), computed together."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, item in enumerate(out):
        if isinstance(item, StagedStep):
            groups[item.clock_key].append(i)
    for (schedule, _, m, v), members in groups.items():
        staged, finish, last_start = _graph_clocks(schedule, m, v, [out[i] for i in members])
        yield staged, members, finish, last_start


def _graph_clocks(schedule, m: int, v: int, staged: list[StagedStep]
                  ) -> tuple[list[StagedStep], np.ndarray, np.ndarray]:
    """(``staged`` with the chunk-ahead weight gathers' waits of those that have them, the
    clocks' finish and start of the last task) of steps that share one task graph: the
    clocks and the gathers walked together where the graph is exact
    (:func:`~simulator.workload.chunk_gathers.batch_clocks_with_gathers`), else the gathers
    given the clocks' finish (:func:`~simulator.workload.chunk_gathers.batch_gather_delay`)."""
    forward, backward = np.array([s.forward for s in staged]), np.array([s.backward for s in staged])
    p2p, lag = np.array([s.sends for s in staged]).T          # held, overlapped seconds
    gathers = [chunk_gather_seconds(s.ctx) for s in staged]
    rows = [i for i, g in enumerate(gathers) if g is not None]
    if not rows:
        return staged, *batch_stage_clocks(schedule, forward, backward, m, v, p2p, lag)
    shares = np.array([stage_gather_shares(staged[i].ctx) for i in rows])
    gathered = np.array([gathers[i] for i in rows])
    if m <= EXACT_MICROBATCHES:
        finish, last_start, waits = batch_clocks_with_gathers(forward, backward, m, v, p2p, rows, gathered,
                                                              shares, lag)
    else:
        finish, last_start = batch_stage_clocks(schedule, forward, backward, m, v, p2p, lag)
        waits = batch_gather_delay(forward[rows], backward[rows], m, v, p2p[rows], gathered,
                                   finish[rows].max(axis=1), shares, lag[rows])
    out = list(staged)
    for i, wait in zip(rows, waits.tolist(), strict=True):
        out[i] = replace(out[i], param_wait=wait)
    return out, finish, last_start


def _completed(staged: StagedStep, finish: np.ndarray, last_start: np.ndarray, breakdowns: bool
               ) -> StepResult | ClusterSimError:
    try:
        return complete_step(staged, finish, last_start, breakdowns)
    except ClusterSimError as exc:
        return exc


def _headline(result: StepResult | ClusterSimError) -> dict | ClusterSimError:
    """The headline fields of ``result`` (or the error)."""
    if isinstance(result, ClusterSimError):
        return result
    out = {name: getattr(result, name) for name in columns.HEADLINE}
    out["exposed_by_dimension"] = dict(out["exposed_by_dimension"])
    return out
