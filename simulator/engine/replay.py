"""Collectives as flows for the discrete-event engine: a priced schedule becomes phases of
concurrent flows over the routed links (:class:`simulator.engine.flows.FlowNetwork`).

A phase's flows start together and the next phase starts when all of them are done.

- ``steps``: every step of the schedule is a phase (its ``repeat`` unrolled), except that
  a pipelined schedule's non-ring steps (tree levels, whose chunks stream through all
  levels at once) run as one phase. Uncontended, a ring step's flows all carry the same
  share, so the replay takes ``a + b n``, the cost model's time.
- ``pairs``: one flow per (src, dst) pair carrying its whole share ("one flow per
  collective per channel"); non-pipelined schedules (halving-doubling) keep their steps,
  since each step waits for the previous one.

Bytes are scaled by ``network efficiency / protocol efficiency`` so that a flow alone on
its path takes ``frac n / (B eff_protocol)`` on a network whose capacities already carry
the point-to-point efficiency (times NCCL's tree correction at that size for a tree
all-reduce, ``CostTerms.size_factors``). The latency term ``a`` is paid once, before the flows, with an
NVLink SHARP schedule's chunk-loop time at that size (``CostTerms.extra_seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.collectives import Group, build_schedule
from simulator.collectives.schedule import Schedule, Step
from simulator.cost.network import CostTerms, size_factor
from simulator.topology.cluster import Cluster
from simulator.topology.routing import Router


@dataclass(frozen=True)
class FlowPhase:
    """Concurrent flows: ``paths[i]`` (edge ids) carries ``nbytes[i]`` bytes."""

    paths: tuple[np.ndarray, ...]
    nbytes: np.ndarray


@dataclass(frozen=True)
class CollectiveReplay:
    """A collective as phases of flows after ``latency_s``; never done before ``floor_s``."""

    latency_s: float
    phases: tuple[FlowPhase, ...]
    floor_s: float = 0.0


def protocol_efficiency(cluster: Cluster, terms: CostTerms) -> float:
    """Bandwidth efficiency the terms were priced at (the GPU's NVLS efficiency, NCCL's
    NVLS-Tree ceiling), else that of their (algorithm family, protocol) in NCCL's table."""
    if terms.efficiency is not None:
        return terms.efficiency
    table = cluster.hw.protocols
    family = table.algorithm_family.get(terms.schedule.algorithm.value, "ring")
    return table.bandwidth_efficiency[family][terms.protocol]


def replay_of(terms: CostTerms, size_bytes: float, router: Router, network_efficiency: float,
              mode: str = "steps", only_group: tuple[int, ...] | None = None) -> CollectiveReplay:
    """Phases of flows for ``terms``' schedule on ``size_bytes`` (see the module doc).

    ``only_group`` replays that one group's schedule instead of the merged one (the
    collapsed fidelity); the replay is then floored at the priced time of all groups.
    """
    cluster = router.cluster
    efficiency = protocol_efficiency(cluster, terms)
    if terms.size_factors is not None:
        efficiency *= size_factor(terms.size_factors, size_bytes)
    scale = size_bytes * network_efficiency / efficiency
    schedule, floor = terms.schedule, 0.0
    if only_group is not None:
        schedule = build_schedule(schedule.op, schedule.algorithm, Group(cluster, only_group))
        floor = float(terms.time(size_bytes))
    steps = _phase_steps(schedule, mode)
    steps = [step for step in steps if step.src.size]
    made: dict[int, FlowPhase] = {}                 # an unrolled step repeats one object
    for step in steps:
        if id(step) not in made:
            made[id(step)] = _phase(router, step, scale)
    phases = tuple(made[id(step)] for step in steps)
    return CollectiveReplay(terms.latency_s + float(terms.extra_seconds(size_bytes)), phases, floor)


def _phase_steps(schedule: Schedule, mode: str) -> list[Step]:
    """The steps to run one after another (each already merged where the mode says so)."""
    if mode == "pairs" and schedule.pipelined:
        return [_merged(list(schedule.steps))]
    out: list[Step] = []
    streamed: list[Step] = []
    for step in schedule.steps:
        if schedule.pipelined and not step.ring_like:
            streamed.append(step)
            continue
        if streamed:
            out.append(_merged(streamed))
            streamed = []
        out += [step] * step.repeat
    if streamed:
        out.append(_merged(streamed))
    return out


def _merged(steps: list[Step]) -> Step:
    """One step carrying every input step's flows (x repeat), duplicate pairs summed."""
    src = np.concatenate([step.src for step in steps])
    dst = np.concatenate([step.dst for step in steps])
    frac = np.concatenate([step.frac * step.repeat for step in steps])
    if not src.size:
        return steps[0]
    return Step.of(np.column_stack([src, dst, frac]))


def _phase(router: Router, step: Step, scale: float) -> FlowPhase:
    incidence = router.incidence(step.src, step.dst)
    paths = tuple(incidence.indices[incidence.indptr[i]:incidence.indptr[i + 1]].astype(np.int64)
                  for i in range(step.src.size))
    return FlowPhase(paths, step.frac * scale)
