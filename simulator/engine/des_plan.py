"""What the discrete-event engine prices once per scenario, before any event: chunk
durations, transfer sizes and latencies, the routes of every pipeline send, and the flows
of every collective it replays (gradient synchronisation; in-layer collectives that span
servers), at the scenario's ``simulate.fidelity`` (docs/engines.md).

Fidelity ``tp-collapsed``: tensor-parallel rank 0's flows stand for the ranks' (a
collapsed gradient replay is never done before the uncontended price of all groups); finer
levels: every rank's flows, one flow per (src, dst) pair per collective (``per-rank``) or
every schedule step (``per-transfer``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulator.collectives import Group, build_schedule
from simulator.collectives.concurrent import merge_schedules
from simulator.config.loader import scenario_stack
from simulator.config.scenario import Fidelity
from simulator.engine.compressed_sync import compute_seconds
from simulator.engine.context import Context, send_split
from simulator.engine.dp_beside import stage_gather_shares
from simulator.engine.dp_overlap_sms import gather_slowdown, reduction_slowdowns
from simulator.engine.flows import Route, make_route
from simulator.engine.flushes import flushed_seconds
from simulator.engine.gradient_sync import (
    all_gradient_collectives,
    embedding_sync_seconds,
    last_bucket_times,
    overlapped_reduce_seconds,
    param_gather_exposed,
    sync_seconds,
)
from simulator.engine.in_layer import InLayerKind, entity_groups, in_layer_kinds
from simulator.engine.layer_kinds import stage_layers
from simulator.engine.replay import CollectiveReplay, FlowPhase, replay_of
from simulator.engine.sharding_replay import StageSharding, replay_group, stage_sharding
from simulator.results import StepResult


@dataclass(frozen=True)
class StepPlan:
    """Everything one simulated step needs, priced once per scenario."""

    forward: np.ndarray        # seconds per forward chunk, per stage
    backward: np.ndarray
    p2p_s: float               # stage-to-stage transfer (alpha-beta, contention off)
    p2p_bytes: float
    p2p_latency_s: float
    sync_s: np.ndarray         # uncontended gradient synchronisation per stage
    sync_bytes: np.ndarray     # gradient bytes one GPU of each stage synchronises
    sync_replays: tuple[tuple[PreparedReplay, ...], ...]     # per stage (contention on)
    optimizer_s: float         # optimizer, fixed step cost, first weight bucket's wait
    in_layer: tuple[tuple[InLayerKind, ...], ...] = ()        # per stage, when replayed
    in_layer_replays: dict[tuple[int, int, int], PreparedReplay] | None = None  # (stage, kind, owner)
    sync_tail_s: np.ndarray | None = None   # last gradient bucket's reduction, after the backward
    sharding: tuple[StageSharding | None, ...] = ()   # per stage, ZeRO-3 replay (contention on)
    sharding_replays: dict[tuple[int, bool], tuple[PreparedReplay, ...]] | None = None  # (stage, fwd)
    attention_part: np.ndarray | None = None  # (pp, 2) [backward, forward] attention core per chunk
    token_part: np.ndarray | None = None      # (pp, 2) the per-token rest (training.documents)
    sync_slow_s: np.ndarray | None = None     # last backward's loss to NCCL's SMs (dp_overlap_sms)
    sends_overlap: bool = False               # sends overlap the next pass (pipeline_sends)
    flushes: int = 1                          # pipeline schedules a step (engine.flushes)
    once_s: float = 0.0                       # of optimizer_s, what runs once a step, not per schedule

    def step_seconds(self, flush_seconds: float | np.ndarray) -> float | np.ndarray:
        """A step's seconds from one schedule's, ``flush_seconds`` (optimizer included;
        :func:`~simulator.engine.flushes.flushed_seconds`)."""
        return flushed_seconds(flush_seconds, self.once_s, self.flushes)


@dataclass(frozen=True)
class PreparedReplay:
    """A :class:`~simulator.engine.replay.CollectiveReplay` with its paths made routes."""

    latency_s: float
    phases: tuple[tuple[tuple[Route, ...], tuple[float, ...]], ...]
    floor_s: float

    def repeated(self, times: float) -> PreparedReplay:
        """The same flows carrying ``times`` as many bytes, with ``times`` the latency: the
        traffic of ``times`` back-to-back runs as one longer run (max-min shares depend on
        which flows are active, not on how the bytes are cut)."""
        phases = tuple((routes, tuple(n * times for n in nbytes)) for routes, nbytes in self.phases)
        return PreparedReplay(self.latency_s * times, phases, self.floor_s * times)

    @staticmethod
    def of(replay: CollectiveReplay, capacity: np.ndarray) -> PreparedReplay:
        """Routes made once per distinct phase (a ring's unrolled steps share one)."""
        made: dict[int, tuple] = {}
        for phase in replay.phases:
            if id(phase) not in made:
                made[id(phase)] = _prepared(phase, capacity)
        return PreparedReplay(replay.latency_s, tuple(made[id(p)] for p in replay.phases),
                              replay.floor_s)


def _prepared(phase: FlowPhase, capacity: np.ndarray) -> tuple[tuple[Route, ...], tuple[float, ...]]:
    return tuple(make_route(p, capacity) for p in phase.paths), tuple(phase.nbytes.tolist())


def step_plan(ctx: Context, base: StepResult, contention: bool) -> StepPlan:
    """Chunk durations, transfers and gradient synchronisation of ``ctx`` (see StepPlan)."""
    v = ctx.scenario.parallelism.virtual_stages
    stage_forward = np.array([s.forward_s for s in base.stages])      # one microbatch, every chunk
    stage_backward = np.array([s.backward_s for s in base.stages])
    forward, backward = stage_forward / v, stage_backward / v
    p2p = base.stages[0].p2p_s
    nbytes = ctx.shape.tokens * ctx.shape.model.hidden * ctx.shape.dtype_bytes / ctx.shape.tp
    syncs = all_gradient_collectives(ctx)
    sync_s = np.array(sync_seconds(syncs))
    slow = reduction_slowdowns(ctx, np.array(overlapped_reduce_seconds(syncs)), backward)
    sync_bytes = np.array([sync[0].size_bytes if sync else 0.0 for sync in syncs])
    capacity = capacity_of(ctx)
    replays = tuple(tuple(PreparedReplay.of(_replay(ctx, s, c), capacity) for c in sync)
                    if contention else () for s, sync in enumerate(syncs))
    in_layer, in_layer_replays = _in_layer(ctx, contention)
    gathers = param_gather_exposed(ctx, stage_forward, stage_backward, p2p, stage_gather_shares(ctx))
    fixed = (base.optimizer_s + gathers
             + gather_slowdown(ctx, stage_forward) + embedding_sync_seconds(ctx))
    if (kernels := compute_seconds(ctx)) is not None:   # a compressor's kernels, in series
        fixed += max(kernels)
    sharding, sharding_replays = _sharding(ctx, forward, backward, in_layer) if contention else ((), None)
    attention, token = _document_parts(base, v)
    return StepPlan(forward, backward, p2p, nbytes, _p2p_latency(ctx, nbytes, p2p), sync_s,
                    sync_bytes, replays, fixed, in_layer, in_layer_replays,
                    np.array(last_bucket_times(ctx, syncs)), sharding, sharding_replays, attention, token,
                    slow if slow.any() else None, send_split(ctx, p2p)[1] > 0.0, ctx.flushes,
                    base.optimizer_s)


def _document_parts(base: StepResult, v: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per stage, [backward, forward] chunk seconds of the attention core and of the per-token
    rest at full length (:mod:`simulator.engine.document_work`); None without documents."""
    if base.sequences is None:
        return None, None
    attention = np.array([(s.attention_backward_s, s.attention_forward_s) for s in base.stages]) / v
    token = np.array([(s.per_token_backward_s, s.per_token_forward_s) for s in base.stages]) / v
    return attention, token


def _sharding(ctx: Context, forward: np.ndarray, backward: np.ndarray, in_layer):
    """Per stage, its ZeRO-3 replay plan (None where nothing is sharded, or where the stage's
    tasks already replay in-layer collectives), and the flows of its sample collectives."""
    layers = stage_layers(ctx, scenario_stack(ctx.scenario))
    plans, replays, capacity = [], {}, capacity_of(ctx)
    for s, layer in enumerate(layers):
        plan = None if in_layer and in_layer[s] else stage_sharding(ctx, s, layer, forward[s], backward[s])
        plans.append(plan)
        for is_forward in (False, True) if plan else ():
            replays[s, is_forward] = tuple(
                PreparedReplay.of(_replay(ctx, s, c, replay_group(ctx, s)), capacity).repeated(n)
                for c, n in plan.traffic(ctx, is_forward))
    return tuple(plans), replays or None


def _in_layer(ctx: Context, contention: bool):
    """Cross-server in-layer collectives to replay (contention on, finer than tp-collapsed):
    per stage, their kinds; per (stage, kind, owner), the flows of the owner's groups. The
    owner is the replica (tensor and context parallel) or the expert-parallel block."""
    lay = ctx.layout
    if not contention or ctx.scenario.simulate.fidelity == Fidelity.TP_COLLAPSED:
        return (), None
    kinds = tuple(tuple(in_layer_kinds(ctx, s)) for s in range(lay.pp))
    if not any(kinds):
        return (), None
    replays, capacity = {}, capacity_of(ctx)
    for s, stage_kinds in enumerate(kinds):
        for k, kind in enumerate(stage_kinds):
            step = lay.expert_replicas if kind.dimension == "ep" else 1
            for owner in range(lay.dp // step):
                groups = entity_groups(ctx, kind.dimension, owner * step, s)
                replays[s, k, owner] = PreparedReplay.of(
                    _merged_replay(ctx, kind.collective, groups), capacity)
    return kinds, replays


def _merged_replay(ctx: Context, priced, groups) -> CollectiveReplay:
    """``priced``'s algorithm run by all ``groups`` at once, as one replay."""
    cluster = ctx.collectives.cluster
    schedule = priced.terms.schedule
    merged = merge_schedules([build_schedule(schedule.op, schedule.algorithm, Group(cluster, g))
                              for g in groups])
    return replay_of(replace(priced.terms, schedule=merged), priced.size_bytes,
                     ctx.collectives.network.router, _p2p_efficiency(ctx), _replay_mode(ctx))


def _replay(ctx: Context, stage: int, collective, only=None) -> CollectiveReplay:
    """``collective`` as flows; at the collapsed fidelity only the group ``only`` (default:
    the stage's first data-parallel group, or expert-data-parallel group for the experts'
    synchronisation) is replayed, floored at the price of all."""
    collapsed = ctx.scenario.simulate.fidelity == Fidelity.TP_COLLAPSED
    if collapsed and only is None:
        lay = ctx.layout
        groups = lay.stage_expert_dp_groups(stage) if collective.expert else lay.stage_gradient_groups(stage)
        only = groups[0]
    only = only if collapsed else None
    return replay_of(collective.launched_terms, collective.size_bytes, ctx.collectives.network.router,
                     _p2p_efficiency(ctx), _replay_mode(ctx), only)


def _replay_mode(ctx: Context) -> str:
    """Schedules step by step at the finest fidelity, else one flow per (src, dst) pair."""
    return "steps" if ctx.scenario.simulate.fidelity == Fidelity.PER_TRANSFER else "pairs"


def _p2p_latency(ctx: Context, nbytes: float, p2p: float) -> float:
    """The alpha of the analytical transfer: its time minus the bandwidth part."""
    if ctx.layout.pp == 1:
        return 0.0
    src, dst = ctx.layout.pp_pair(0)
    path = _path(ctx, src, dst)
    bottleneck = ctx.collectives.cluster.bandwidth_Bps[path].min()
    return max(p2p - nbytes / (bottleneck * _p2p_efficiency(ctx)), 0.0)


def capacity_of(ctx: Context) -> np.ndarray:
    """Edge capacities (B/s) the flows share: link bandwidth x point-to-point efficiency."""
    return ctx.collectives.cluster.bandwidth_Bps * _p2p_efficiency(ctx)


def _p2p_efficiency(ctx: Context) -> float:
    table = ctx.collectives.cluster.hw.protocols
    return table.bandwidth_efficiency["p2p"]["Simple"]


def _path(ctx: Context, src_gpu: int, dst_gpu: int) -> np.ndarray:
    cluster, router = ctx.collectives.cluster, ctx.collectives.network.router
    return np.array(router.path(cluster.gpu_vertex(src_gpu), cluster.gpu_vertex(dst_gpu)),
                    dtype=np.int64)


class SendRoutes:
    """Routes of every replica's stage-to-stage sends, prepared before the event loop.

    Fidelity ``tp-collapsed``: tensor-parallel rank 0's route stands for the ranks'
    parallel sends; finer levels: every rank sends its own flow over its own route.
    """

    def __init__(self, ctx: Context):
        lay = ctx.layout
        per_rank = ctx.scenario.simulate.fidelity != Fidelity.TP_COLLAPSED
        ranks = range(lay.tp) if per_rank else range(1)
        capacity = capacity_of(ctx)
        self.routes: dict[tuple[int, int, int], tuple[Route, ...]] = {}
        for replica in range(lay.dp):
            for src in range(lay.pp):
                for dst in {(src + 1) % lay.pp, (src - 1) % lay.pp} - {src}:
                    self.routes[replica, src, dst] = tuple(
                        make_route(_path(ctx, lay.gpu(t, 0, replica, src), lay.gpu(t, 0, replica, dst)),
                                   capacity) for t in ranks)
        self.sizes = len(ranks)
