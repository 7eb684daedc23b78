"""The analytical engine: one training step from closed-form critical paths.

step = pipeline (m microbatches through p stages: the exact task graph,
       :mod:`simulator.workload.taskgraph`)
     + data-parallel gradient synchronisation not hidden behind the pipeline: each stage
       starts its own (:mod:`simulator.engine.gradient_sync`) with its last backward
       (``overlap_grad_reduce``) or after it; the latest to finish counts
     + optimizer step (memory-bound Adam update).
Per-microbatch stage work comes from :mod:`simulator.cost.layer`; all durations
come from the one cost model (compute: :mod:`simulator.cost.compute`; network:
:mod:`simulator.cost.network`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulator.config.loader import scenario_stack
from simulator.config.scenario import Scenario
from simulator.cost import CollectiveModel
from simulator.cost.activation_offload import offload_bandwidth, offload_stalls
from simulator.cost.amax_reduction import amax_reduced, amax_reduction_seconds
from simulator.cost.in_layer import p2p_time
from simulator.cost.layer import attention_seconds, head_costs
from simulator.cost.sharding import (
    NO_SHARDING,
    ShardingCost,
    sharding_cost,
    shards_parameters,
    stage_unit_comm,
)
from simulator.engine import training_what_ifs as what_ifs
from simulator.engine.compressed_sync import compute_seconds
from simulator.engine.context import Context, exposed_send_seconds, make_context, memoised, send_split
from simulator.engine.document_work import document_parts as _document_parts
from simulator.engine.document_work import document_summary, mean_work
from simulator.engine.dp_beside import stage_beside_shares, stage_gather_shares
from simulator.engine.dp_overlap_sms import gather_slowdown, reduction_slowdowns, synced_clocks
from simulator.engine.flops import step_flops
from simulator.engine.gradient_sync import (
    all_gradient_collectives,
    chunk_gather_seconds,
    dp_key,
    element_bytes,
    embedding_sync_seconds,
    last_bucket_times,
    overlapped_gather_seconds,
    overlapped_reduce_seconds,
    param_gather_exposed,
    sync_seconds,
)
from simulator.engine.layer_kinds import (
    dense_layer_cost,
    hybrid_layer_costs,
    layer_pass_seconds,
    model_layer_cost,
    mtp_head_seconds,
    stage_layer,
)
from simulator.engine.optimizer_step import ADAM_BYTES_PER_PARAM, update_seconds
from simulator.engine.pipeline_fsdp import defers_reduce, gradient_kernel_seconds
from simulator.memo import remembered
from simulator.results import StageBreakdown, StepResult
from simulator.results.invariants import check_result
from simulator.workload.chunk_gathers import gather_delay
from simulator.workload.memory import (
    memory_parts,
    offloaded_layer_bytes,
    optimizer_state_bytes,
    stage_memory_fields,
    stage_parameters,
)
from simulator.workload.runtime_memory import expert_shard_size, shard_group_size
from simulator.workload.stage_layers import stage_kinds
from simulator.workload.taskgraph import stage_clocks, stage_send_counts

__all__ = ["ADAM_BYTES_PER_PARAM", "Context", "StagedStep", "complete_step", "gradient_sync_start",
           "make_context", "simulate_step", "stage_step"]

@dataclass(frozen=True)
class StagedStep:
    """A step priced up to its pipeline clocks: the context, each stage's microbatch
    breakdown (as the fields of its :class:`StageBreakdown` but the index, one dict shared
    by the stages of a kind; :meth:`breakdowns` makes the objects) and ZeRO-3 cost, and the
    clocks' inputs (per-stage forward and backward seconds of one microbatch, the
    stage-to-stage send); ``kind_stages`` and ``kind_sharded``: the breakdowns and ZeRO-3
    costs of the distinct kinds, in the order the stages first have them (maxima over the
    stages are maxima over these: a repeated value never changes Python's ``max``).

    Layouts with the same :attr:`clock_key` share one task graph, so their clocks can be
    computed together (:mod:`simulator.engine.batch`)."""

    ctx: Context
    stages: list[dict]
    sharded: list[ShardingCost]
    forward: np.ndarray
    backward: np.ndarray
    kind_stages: list[dict]
    kind_sharded: list[ShardingCost]
    param_wait: float | None = None
    """The weight gathers' wait (:func:`gather_wait`) when already evaluated with other
    layouts (:mod:`simulator.engine.batch`)."""

    @property
    def p2p(self) -> float:
        return self.stages[0]["p2p_s"]

    @property
    def sends(self) -> tuple[float, float]:
        """(held, lag) seconds of one stage-to-stage send (:func:`~simulator.engine.context.send_split`)."""
        return send_split(self.ctx, self.p2p)

    def breakdowns(self) -> list[StageBreakdown]:
        """Each stage's :class:`StageBreakdown`, with its own memory: the stages of a kind
        share their times, but a pipeline stage's activations depend on its place (1F1B:
        ``p - i`` microbatches in flight), so each stage's memory is its own
        (:func:`_stage_memory`); the headline's peak is the first stage of each kind's, the
        most loaded of its kind."""
        memo = self.ctx.memo if self.ctx.memo is not None else {}   # the stages share their parts
        return [_breakdown(i, kind_fields, _stage_memory(self.ctx, i, kind_fields["layers"], memo))
                for i, kind_fields in enumerate(self.stages)]

    @property
    def clock_key(self) -> tuple:
        """(schedule, pp, microbatches, virtual stages): what fixes the task graph."""
        par = self.ctx.scenario.parallelism
        return par.schedule, par.pp, self.ctx.microbatches, par.virtual_stages


def simulate_step(scenario: Scenario, collectives: CollectiveModel,
                  compute_speedup: float = 1.0) -> StepResult:
    """Evaluate one step of ``scenario`` on the cluster behind ``collectives``.

    ``compute_speedup`` scales every GPU peak (FLOP/s and HBM bandwidth) for what-ifs.
    """
    staged = stage_step(scenario, collectives, compute_speedup, memo={})   # shared within the step
    finish, last_start = _stage_clocks(staged.ctx, staged.forward, staged.backward, staged.p2p)
    return complete_step(staged, finish, last_start)


def stage_step(scenario: Scenario, collectives: CollectiveModel, compute_speedup: float = 1.0,
               memo: dict | None = None) -> StagedStep:
    """The step of ``scenario`` priced up to its pipeline clocks (see :class:`StagedStep`);
    ``memo`` shares sub-results with other layouts of the same setup
    (:func:`~simulator.engine.context.memoised`)."""
    ctx = make_context(scenario, collectives, compute_speedup, memo)
    kinds, sharding, index = _stages(ctx)
    forward = np.array([s["forward_s"] for s in kinds])[index]
    backward = np.array([s["backward_s"] for s in kinds])[index]
    return StagedStep(ctx, [kinds[j] for j in index], [sharding[j] for j in index], forward, backward,
                      kinds, sharding)


def complete_step(staged: StagedStep, finish: np.ndarray, last_start: np.ndarray,
                  breakdowns: bool = True) -> StepResult:
    """The step's result from its pipeline clocks: ``finish`` and ``last_start`` (s) of
    every stage (:func:`simulator.workload.taskgraph.stage_clocks`).

    step = pipeline + exposed data-parallel synchronisation + optimizer (module docstring).
    Without ``breakdowns`` the result's ``stages`` is empty (every other field is the same;
    the invariants are checked on the stages' work all the same).
    """
    ctx, stages, f = staged.ctx, staged.stages, staged.ctx.flushes
    pipe = float(finish.max())
    busy, work = _stage_busy_work(ctx, staged.forward, staged.backward, staged.p2p)
    dp_exposed, sms, sync = _data_parallel(staged, finish, last_start, pipe)
    pipe, busy, work, dp_exposed, sms = pipe * f, busy * f, work * f, dp_exposed * f, sms * f   # flushes
    bubble = max(0.0, pipe - float(busy.max()))  # round-off
    kernels = compute_seconds(ctx)
    if kernels is not None:                          # a compressor's kernels hide behind nothing
        dp_exposed += max(kernels)
    fixed = fixed_seconds(ctx, stages)
    step = pipe + dp_exposed + fixed
    sharding = tuple(x * f for x in sharding_totals(ctx, staged.kind_sharded))
    dp_time = (float(sync.max()) + dp_sync_extra_seconds(ctx, kernels)) * f
    if what_ifs.active(ctx):
        return _what_if_result(staged, what_ifs.StepParts(pipe, dp_exposed, fixed, dp_time),
                               (bubble, busy, work, breakdowns), sharding, all_gradient_collectives(ctx), sms)
    return _result(staged, step, pipe, (bubble, busy, work, breakdowns), dp_time + sharding[0],
                   (dp_exposed, sharding[1]), fixed, sms)


def dp_sync_extra_seconds(ctx: Context, kernels: list[float] | None = None) -> float:
    """What the step's data-parallel time holds beside the gradient reductions (``sync``) and
    ZeRO-3's traffic: the sharded optimizer's overlapped weight gathers
    (:func:`~simulator.engine.gradient_sync.overlapped_gather_seconds`) and a gradient
    compressor's kernels (``kernels``, per stage), so that ``dp_comm_s`` holds every part of
    ``dp_comm_exposed_s`` but the compute NCCL's SMs slow (``dp_sm_slowdown_s``)."""
    return overlapped_gather_seconds(ctx) + (max(kernels) if kernels else 0.0)


def _data_parallel(staged: StagedStep, finish: np.ndarray, last_start: np.ndarray, pipe: float
                   ) -> tuple[float, float, np.ndarray]:
    """(exposed end-of-step data-parallel seconds, the part of them that is compute slowed
    by NCCL's SMs, per-stage synchronisation seconds): the reductions' end past the
    pipeline's (:func:`~simulator.engine.dp_overlap_sms.synced_clocks`) plus the weight
    gathers' wait and slowdown."""
    ctx = staged.ctx
    sync, tail, reduce = gradient_sync_parts(ctx)
    reduce_shares, gather_shares = stage_beside_shares(ctx)
    slow = reduction_slowdowns(ctx, reduce, last_backward_seconds(staged), reduce_shares)
    start = gradient_sync_start(ctx.scenario, finish, last_start)
    synced = float(synced_clocks(start, finish, sync, tail, slow).max())
    wait, gathers = gather_wait(staged, gather_shares), gather_slowdown(ctx, staged.forward, gather_shares)
    sms = gathers + _chunk_gather_sm_seconds(staged, wait)
    if slow.any():      # the reductions' end with the slowdowns less without
        plain = float(np.maximum(start + sync, finish + tail).max())
        sms += max(0.0, synced - pipe) - max(0.0, plain - pipe)
    return max(0.0, synced - pipe) + (wait + gathers), sms, sync   # the columns' order


def _chunk_gather_sm_seconds(staged: StagedStep, wait: float) -> float:
    """Of the chunk-ahead gathers' delay ``wait``, what NCCL's SMs beside them add: less the
    walk without them (:func:`~simulator.workload.chunk_gathers.gather_delay`; 0 without
    chunk-ahead gathers)."""
    ctx = staged.ctx
    gather = chunk_gather_seconds(ctx)
    if gather is None:
        return 0.0
    held, lag = staged.sends
    plain = gather_delay(staged.forward, staged.backward, ctx.microbatches,
                         ctx.scenario.parallelism.virtual_stages, held, gather, lag=lag)
    return max(0.0, wait - plain)


def _what_if_result(staged: StagedStep, parts, bubble: tuple, sharding, syncs, sms: float) -> StepResult:
    """The step with the training what-ifs applied (:mod:`simulator.engine.training_what_ifs`);
    the input stall counts in the step, its figures in ``what_if``; ``bubble`` is
    :func:`_result`'s."""
    parts, notes = what_ifs.apply(staged.ctx, parts, _max_stage_params(staged.ctx, staged.stages), syncs)
    result = _result(staged, parts.step, parts.pipe, bubble, parts.dp_comm + sharding[0],
                     (parts.dp_exposed, sharding[1]), parts.fixed, sms)
    return replace(result, what_if=notes)


def gradient_sync_parts(ctx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage, seconds of the gradient synchronisation, of its last bucket and of its
    reduction proper (:func:`~simulator.engine.gradient_sync.overlapped_reduce_seconds`);
    memoised by the layout fields they depend on."""
    return memoised(ctx, ("sync", *dp_key(ctx)), lambda: _gradient_sync(ctx))


def last_backward_seconds(staged: StagedStep) -> np.ndarray:
    """Per stage, seconds of its last task, one chunk's backward (s)."""
    return staged.backward / staged.ctx.scenario.parallelism.virtual_stages


def gather_wait(staged: StagedStep, shares: np.ndarray | None = None) -> float:
    """Seconds the step waits for the weight all-gathers of its sharded optimizer
    (:func:`simulator.engine.gradient_sync.param_gather_exposed`; the batch's figure where it
    has one); what those beside the forwards take from them is
    :func:`simulator.engine.dp_overlap_sms.gather_slowdown`. ``shares``:
    :func:`~simulator.engine.dp_beside.stage_gather_shares`, where the caller has them."""
    if staged.param_wait is not None:
        return staged.param_wait
    shares = stage_gather_shares(staged.ctx) if shares is None else shares
    return param_gather_exposed(staged.ctx, staged.forward, staged.backward, staged.p2p, shares)


def fixed_seconds(ctx: Context, stages: list[dict]) -> float:
    """The step's fixed part: the optimizer step (memoised) plus the stack's step overhead."""
    return (memoised(ctx, ("optimizer", *dp_key(ctx)), lambda: _optimizer_time(ctx, stages))
            + scenario_stack(ctx.scenario).step_overhead_s)


def send_counts(ctx: Context) -> np.ndarray:
    """Sends each stage makes per step (:func:`~simulator.workload.taskgraph.stage_send_counts`,
    memoised)."""
    par = ctx.scenario.parallelism
    key = (par.schedule, par.pp, ctx.microbatches, par.virtual_stages)
    return memoised(ctx, ("sends", *key), lambda: stage_send_counts(*key))


def flops(ctx: Context, work: tuple[float, float]) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) of one step (:func:`~simulator.engine.flops.step_flops`,
    memoised) with the documents' mean work factors ``work``."""
    sc = ctx.scenario
    par = sc.parallelism
    key = ("flops", par.recompute, par.recompute_fraction, par.recompute_modules,
           par.tp > 1, work)   # tp: async TP's recompute
    return memoised(ctx, key, lambda: step_flops(sc, work))


def _gradient_sync(ctx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage, seconds of the gradient synchronisation and of its last bucket
    (:mod:`simulator.engine.gradient_sync`), each followed by the tied embedding's all-reduce
    (:func:`~simulator.engine.gradient_sync.embedding_sync_seconds`: it waits for every
    stage's reduction, so it adds the same seconds after the latest), and of the reduction
    proper (no embedding: the all-reduce beside the last backward)."""
    syncs = all_gradient_collectives(ctx)
    embedding = embedding_sync_seconds(ctx)
    return (np.array(sync_seconds(syncs)) + embedding,
            np.array(last_bucket_times(ctx, syncs)) + embedding,
            np.array(overlapped_reduce_seconds(syncs)))


def gradient_sync_start(scenario: Scenario, finish: np.ndarray, last_start: np.ndarray) -> np.ndarray:
    """When each stage starts its gradient synchronisation (s).

    With ``overlap_grad_reduce`` buckets are reduced as the last backward produces them,
    so the reduction starts with the stage's last task (Megatron-LM's distributed
    optimizer, ``overlap_grad_reduce``); otherwise after it.
    """
    return last_start if scenario.parallelism.overlap_grad_reduce else finish


def _stage_clocks(ctx: Context, forward: np.ndarray, backward: np.ndarray,
                  p2p: float) -> tuple[np.ndarray, np.ndarray]:
    """(finish, start of last task) per stage: the exact critical path of the task graph
    with sends of ``p2p`` seconds, held or overlapped (:func:`~simulator.engine.context.send_split`).

    Its maximum equals :func:`simulator.workload.pipeline.pipeline_time` for uniform stages.
    """
    par = ctx.scenario.parallelism
    held, lag = send_split(ctx, p2p)
    return stage_clocks(par.schedule, forward, backward, ctx.microbatches, par.virtual_stages, held, lag)


def _stage_busy(ctx: Context, forward: np.ndarray, backward: np.ndarray, p2p: float) -> np.ndarray:
    """Busy seconds of each stage per step: ``m (f_i + b_i) + sends_i p2p`` (the sends that
    hold the stage: none when they overlap the next pass)."""
    return _stage_busy_work(ctx, forward, backward, p2p)[0]


def _stage_busy_work(ctx: Context, forward: np.ndarray, backward: np.ndarray, p2p: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per stage, busy seconds per step (:func:`_stage_busy`) and the compute part of them,
    ``m (f_i + b_i)``."""
    work = ctx.microbatches * (forward + backward)
    return work + send_split(ctx, p2p)[0] * send_counts(ctx), work


def bottleneck(busy: np.ndarray) -> tuple[int, float]:
    """(the busiest stage, its busy seconds over the mean stage's minus 1): the stage that sets
    the pipeline's steady-state rate (1F1B runs at the busiest stage's pace) and its excess."""
    stage = int(np.argmax(busy))
    return stage, float(busy[stage] / (np.add.reduce(busy) / busy.size) - 1.0)   # busy.mean()


def _stages(ctx: Context) -> tuple[list[dict], list[ShardingCost], list[int]]:
    """Per distinct stage kind, its microbatch breakdown (the fields of its
    :class:`StageBreakdown` but the index) and its ZeRO-3 cost (zero without ZeRO-3), in the
    order the stages first have them; and per stage the position of its kind."""
    par, stack = ctx.scenario.parallelism, scenario_stack(ctx.scenario)
    layer = model_layer_cost(ctx, stack)
    heads = memoised(ctx, ("heads", *_shape_key(ctx)), lambda: head_costs(ctx.shape, ctx.compute))
    priced = (layer, dense_layer_cost(ctx, stack),
              mtp_head_seconds(ctx, heads) if ctx.scenario.model.mtp_layers else (0.0, 0.0),
              hybrid_layer_costs(ctx, stack))
    p2p = memoised(ctx, ("p2p", ctx.layout, ctx.shape.micro_batch, par.sequence_parallel),
                   lambda: p2p_time(ctx.shape, ctx.collectives, ctx.layout))
    attention = attention_seconds(ctx.scenario, stack, ctx.shape, ctx.compute) \
        if ctx.scenario.training.documents is not None else None
    distinct, index = _stage_kinds(ctx, stack)
    parts = []                          # stages alike in layers, ends and ZeRO-3 prices
    for (_, kind, unit), (total, memory) in zip(distinct, _kinds_memory(ctx, distinct), strict=True):
        values, sharding = _stage_parts(ctx, stack, priced, kind, unit, heads)
        forward, backward, split = _mean_work(ctx, attention, kind[0] + kind[4], values[0], values[1])
        values, offload = (forward, backward, *values[2:-3], p2p, total), values[-3:]
        exposed = sharding.forward_exposed + sharding.backward_exposed
        parts.append((_fields(kind[0], values, dict(memory), exposed, (*split, *offload)), sharding))
    return [kind_fields for kind_fields, _ in parts], [sharding for _, sharding in parts], index


def _shape_key(ctx: Context) -> tuple:
    """What the layer shape and the compute model depend on: (micro batch, tp, cp, ep, SP,
    compute speedup)."""
    par = ctx.scenario.parallelism
    return ctx.shape.micro_batch, par.tp, par.cp, par.ep, par.sequence_parallel, ctx.compute.speedup


def _kinds_memory(ctx: Context, distinct: list[tuple]) -> list[tuple[float, dict[str, float]]]:
    """(total bytes, bytes by part) of one GPU of each of a layout's distinct stages
    (:func:`_stage_kinds`: the first stage of each kind), memoised by the layout and micro
    batch (one look-up for all its kinds)."""
    par = ctx.scenario.parallelism
    return memoised(ctx, ("kinds-memory", par, ctx.shape.micro_batch, ctx.microbatches),
                    lambda: [_memory_of(ctx, i, kind[0], ctx.memo) for i, kind, _ in distinct])


def _stage_memory(ctx: Context, stage: int, layers: int, memo: dict | None = None
                  ) -> tuple[float, dict[str, float]]:
    """(total bytes, bytes by part) of one GPU of ``stage`` holding ``layers`` layers
    (:func:`_memory_of`), memoised by the stage's place in ``memo`` (default: the context's)."""
    par = ctx.scenario.parallelism
    memo = ctx.memo if memo is None else memo
    return remembered(memo, ("memory", par, ctx.shape.micro_batch, layers, ctx.microbatches, stage),
                      lambda: _memory_of(ctx, stage, layers, memo))


def _memory_of(ctx: Context, stage: int, layers: int, memo: dict | None) -> tuple[float, dict[str, float]]:
    """(total bytes, bytes by part) of one GPU of ``stage`` holding ``layers`` layers
    (:func:`~simulator.workload.memory.stage_memory_fields`; ``memo`` shares its parts)."""
    sc, last = ctx.scenario, ctx.layout.pp - 1
    return _memory_figures(stage_memory_fields(sc.model, sc.training, sc.parallelism, stage, layers,
                                               ctx.layout.dp, stage == 0, stage == last, ctx.microbatches,
                                               stack=scenario_stack(sc), memo=memo, gpu=ctx.compute.gpu))


def _memory_figures(values: tuple) -> tuple[float, dict[str, float]]:
    """A stage's memory (:class:`~simulator.workload.memory.MemoryBreakdown`'s fields,
    :func:`~simulator.workload.memory.stage_memory_fields`) as (total bytes, bytes by part):
    what its breakdown keeps (the dict is copied for each breakdown)."""
    parts = memory_parts(values)
    return sum(parts.values()), parts      # MemoryBreakdown.total


def _stage_kinds(ctx: Context, stack) -> tuple[list[tuple], list[int]]:
    """The distinct stages of a layout: (first stage, kind (layers, first, last), ZeRO-3 unit
    prices) of each, and per stage the position of its kind; memoised across layouts."""
    par = ctx.scenario.parallelism
    key = ("kinds", ctx.layout, par.virtual_stages, par.first_stage_layers, par.last_stage_layers,
           par.pipeline_layout, par.zero_stage >= 3, par.shard_size)
    return memoised(ctx, key, lambda: _distinct_stages(ctx, stack))


def _distinct_stages(ctx: Context, stack) -> tuple[list[tuple], list[int]]:
    """:func:`_stage_kinds`, computed."""
    units = _stage_unit_comms(ctx, stack)
    found: dict[tuple, int] = {}
    distinct, index = [], []
    for i, kind in enumerate(_kinds(ctx)):
        if (kind, units[i]) not in found:
            found[kind, units[i]] = len(distinct)
            distinct.append((i, kind, units[i]))
        index.append(found[kind, units[i]])
    return distinct, index


_NO_SPLIT = (0.0, 0.0, 0.0, 0.0)


def _mean_work(ctx: Context, attention: tuple[float, float] | None, layers: int, forward: float,
               backward: float) -> tuple[float, float, tuple[float, float, float, float]]:
    """(forward, backward, attention / per-token split) of a stage kind at the documents'
    mean micro-batch (:func:`~simulator.engine.document_work.document_parts`); without
    documents (``attention`` None) its own seconds and a zero split."""
    if attention is None:
        return forward, backward, _NO_SPLIT
    doc = _document_parts(ctx, attention, layers, forward, backward)
    return doc.forward, doc.backward, doc.split


def _fields(layers: int, values: tuple, memory: dict, exposed: float, tail: tuple) -> dict:
    """The fields of a :class:`StageBreakdown` of a stage kind, but its index (``stage``), in
    its fields' order; ``values``: (forward, backward, recompute, TP, CP, EP,
    p2p seconds, memory bytes), ``tail``: the documents' attention / per-token split, then the
    amax all-reduce seconds, the activation offloading's waits and its host bytes."""
    forward, backward, recompute, tp, cp, ep, p2p, total = values
    attention_f, attention_b, token_f, token_b, amax, offload, host = tail
    return {"layers": layers, "forward_s": forward, "backward_s": backward, "recompute_s": recompute,
            "tp_comm_s": tp, "cp_comm_s": cp, "ep_comm_s": ep, "p2p_s": p2p, "memory_bytes": total,
            "memory": memory, "zero3_exposed_s": exposed, "attention_forward_s": attention_f,
            "attention_backward_s": attention_b, "per_token_forward_s": token_f,
            "per_token_backward_s": token_b, "amax_comm_s": amax, "offload_wait_s": offload,
            "offload_host_bytes": host}


def _breakdown(stage: int, kind_fields: dict, memory: tuple[float, dict] | None = None) -> StageBreakdown:
    """``StageBreakdown(stage, **fields)`` with its own memory dict (``memory``: the stage's
    own (total, parts), else its kind's), without the frozen dataclass's per-field
    ``__init__`` (the same object, several times cheaper)."""
    out = object.__new__(StageBreakdown)
    state = out.__dict__
    state["stage"] = stage
    state.update(kind_fields)
    total, parts = memory if memory is not None else (kind_fields["memory_bytes"], kind_fields["memory"])
    state["memory_bytes"], state["memory"] = total, dict(parts)
    return out


def _stage_parts(ctx: Context, stack, priced: tuple, kind: tuple, unit, heads: tuple
                 ) -> tuple[tuple, ShardingCost]:
    """One stage's (forward, backward, recompute, TP, CP, EP, fp8 amax all-reduce, activation
    offloading wait seconds per microbatch, offloaded host bytes) and ZeRO-3 cost, for a stage
    of ``kind`` (layers, first, last, dense, MTP layers) with ZeRO-3 unit prices ``unit`` (None
    without ZeRO-3); ``priced``: the model's layer, its dense layer (None without), a
    multi-token prediction layer's (forward, backward) extra and a hybrid model's layers by
    kind (:mod:`simulator.engine.layer_kinds`)."""
    _, first, last, _, mtp, _ = kind
    embed, logits_f, logits_b = heads
    layer, dense, (mtp_f, mtp_b), hybrid = priced
    layers, layer = stage_layer(layer, dense, kind, hybrid)
    sharding = NO_SHARDING if unit is None else _stage_sharding(ctx, stack, layer, unit, layers)
    recompute = layers * (layer.recompute + layer.tp_recompute)
    amax_f, amax_b = _amax_reduction(ctx, stack, layers)
    per_layer_f, per_layer_b = layer_pass_seconds(layer)
    offload_f, offload_b, host = _offload_stalls(ctx, stack, layers, per_layer_f, per_layer_b)
    fwd = (layers * per_layer_f + mtp * mtp_f + embed * first + logits_f * last
           + sharding.forward_exposed + amax_f + offload_f)
    bwd = (layers * per_layer_b + mtp * mtp_b + recompute + logits_b * last
           + sharding.backward_exposed + amax_b + _gradient_kernels(ctx, kind) + offload_b)
    tp = layers * (layer.tp_forward + layer.tp_backward + layer.tp_recompute)
    return (fwd, bwd, recompute, tp, layers * layer.cp * 2, layers * layer.ep, amax_f + amax_b,
            offload_f + offload_b, host), sharding


def _offload_stalls(ctx: Context, stack, layers: int, forward: float, backward: float
                    ) -> tuple[float, float, float]:
    """(forward, backward) seconds per microbatch that activation offloading
    (``parallelism.cpu_offload_layers`` n) adds to a stage of ``layers`` layers of ``forward``
    and ``backward`` seconds each (:func:`~simulator.cost.activation_offload.offload_stalls`,
    one layer's kept activations over the GPU's rate to host memory), and the host bytes the
    n layers' activations take (one microbatch in flight: no pipelining)."""
    sc = ctx.scenario
    n = sc.parallelism.cpu_offload_layers
    if not n:
        return 0.0, 0.0, 0.0
    layer_bytes = memoised(ctx, ("offload-bytes", sc.parallelism, ctx.shape.micro_batch),
                           lambda: offloaded_layer_bytes(sc.model, sc.training, sc.parallelism, stack))
    transfer = layer_bytes / offload_bandwidth(ctx.collectives.cluster.hw)
    return (*offload_stalls(layers, n, forward, backward, transfer), n * layer_bytes)


def _gradient_kernels(ctx: Context, kind: tuple) -> float:
    """:func:`~simulator.engine.pipeline_fsdp.gradient_kernel_seconds` of a stage kind,
    memoised by what it reads of a layout: the rank grid (parameters per GPU), the ZeRO stage
    and hybrid shard size (the shard group), the microbatches (reductions per step), the
    recomputed share (re-gathers, and so copy-outs, for recompute) and the compute speedup."""
    par = ctx.scenario.parallelism
    key = ("grad-kernels", ctx.layout, par.zero_stage, par.shard_size, par.full_recompute_share,
           ctx.microbatches, ctx.compute.speedup, kind)
    return memoised(ctx, key, lambda: gradient_kernel_seconds(ctx, *kind))


_NO_AMAX = (0.0, 0.0)


def _amax_reduction(ctx: Context, stack, layers: int) -> tuple[float, float]:
    """(forward, backward) seconds per microbatch of a stage's fp8 amax all-reduces: one per
    model chunk and pass (:mod:`simulator.cost.amax_reduction`; the stages' groups are
    translates of stage 0's)."""
    if not amax_reduced(ctx.scenario, stack):
        return _NO_AMAX                 # the prices' (0, 0) times the chunks, without a look-up
    chunks = ctx.scenario.parallelism.virtual_stages or 1
    one = memoised(ctx, ("amax", ctx.layout, chunks, layers), lambda: amax_reduction_seconds(
        ctx.scenario, stack, ctx.collectives, ctx.layout, layers / chunks))
    return chunks * one[0], chunks * one[1]


def _stage_unit_comms(ctx: Context, stack) -> list:
    """Per stage, its ZeRO-3 / FSDP unit prices (:func:`simulator.cost.sharding.stage_unit_comm`),
    memoised across layouts, once per canonical stage
    (:meth:`~simulator.cost.CollectiveModel.canonical_stage`, whose prices ``unit_comm``
    gives); None for every stage without ZeRO-3."""
    par, layout = ctx.scenario.parallelism, ctx.layout
    if not shards_parameters(ctx.scenario, layout):
        return [None] * layout.pp
    canonical = ctx.collectives.canonical_stage     # the same prices (a symmetry)
    kinds = stage_kinds(ctx.scenario.model, par)
    return [memoised(ctx, ("unit", layout, canonical(layout, stage), par.shard_size, kinds[stage]),
                     lambda stage=stage: stage_unit_comm(ctx.scenario, stack, ctx.collectives, layout, stage))
            for stage in range(layout.pp)]


def _stage_sharding(ctx: Context, stack, layer, unit, layers: int) -> ShardingCost:
    """ZeRO-3 / FSDP cost of a stage of ``layers`` layers with unit prices ``unit``
    (:mod:`simulator.cost.sharding`), over its ``v`` chunks."""
    chunk_layers = layers / ctx.scenario.parallelism.virtual_stages
    deferred = defers_reduce(ctx.scenario)    # reduced after the last backward (gradient_sync)
    one = sharding_cost(ctx.scenario, stack, replace(unit, reduce=0.0) if deferred else unit,
                        chunk_layers, layer.forward, layer.backward + layer.recompute, ctx.microbatches,
                        layer.memory_shares())
    v = ctx.scenario.parallelism.virtual_stages
    return ShardingCost(v * one.forward_exposed, v * one.backward_exposed, v * one.comm_per_step)


def sharding_totals(ctx: Context, sharded: list[ShardingCost]) -> tuple[float, float]:
    """(communication seconds per step, exposed seconds per step) of the busiest stage, given
    the stages' ZeRO-3 costs (or their distinct kinds': the same maxima)."""
    if not sharded:
        return 0.0, 0.0
    comm = max(s.comm_per_step for s in sharded)
    exposed = max(s.forward_exposed + s.backward_exposed for s in sharded) * ctx.microbatches
    return comm, exposed


def _max_stage_params(ctx: Context, stages: list[dict]) -> float:
    """Parameters (dense + expert) held by one GPU of the most loaded stage."""
    return max(dense + expert for dense, expert in _kind_parameters(ctx, stages))


def _kind_parameters(ctx: Context, stages: list[dict]) -> list[tuple[float, float]]:
    """(dense, expert) parameters one GPU holds, per distinct stage kind (layers, ends)."""
    par = ctx.scenario.parallelism
    return [stage_parameters(ctx.scenario.model, par, *kind) for kind in set(_kinds(ctx))]


def _kinds(ctx: Context) -> list[tuple]:
    """:func:`~simulator.workload.stage_layers.stage_kinds` of the layout, memoised."""
    par = ctx.scenario.parallelism
    return memoised(ctx, ("stage-kinds", par.pp, par.virtual_stages, par.first_stage_layers,
                          par.last_stage_layers, par.pipeline_layout),
                    lambda: stage_kinds(ctx.scenario.model, par))


def _optimizer_time(ctx: Context, stages: list[dict]) -> float:
    """Seconds of the optimizer step of the most loaded stage (:func:`update_seconds`: Adam's
    memory-bound update or Muon's) on the parameters one GPU updates: all it holds, or under
    ZeRO 1-3 its shard, the dense parameters over the shard group and the experts over their
    share of it (:func:`expert_shard_size`, as their optimizer states are sharded in
    :func:`~simulator.workload.memory.stage_memory`); with the stack's
    ``data_parallel.zero_grad_buffer`` (ZeRO 0-2) also the zeroing of the whole gradient
    buffer, ``g P`` bytes written for the ``P`` parameters the GPU holds in the reduce dtype's
    ``g`` bytes (Megatron-Core's ``zero_grad_buffer`` at the start of each step)."""
    sc, par = ctx.scenario, ctx.scenario.parallelism
    shard = shard_group_size(par, ctx.layout.dp) if par.zero_stage >= 1 else 1
    shards = (shard, expert_shard_size(par, shard))
    zeroed = _grad_buffer_bytes_per_param(ctx)
    state = optimizer_state_bytes(sc.training, par.zero_stage)
    return max(update_seconds(ctx.compute, sc.model, par, sc.training.optimizer, kind, shards, state)
               + (float(ctx.compute.memory_time(zeroed * sum(stage_parameters(sc.model, par, *kind))))
                  if zeroed else 0.0)
               for kind in set(_kinds(ctx)))


def _grad_buffer_bytes_per_param(ctx: Context) -> float:
    """Bytes per parameter the step's gradient-buffer zeroing writes: the reduce dtype's under
    ``data_parallel.zero_grad_buffer`` and ZeRO 0-2, else 0."""
    zeroes = scenario_stack(ctx.scenario).data_parallel.zero_grad_buffer
    if not zeroes or ctx.scenario.parallelism.zero_stage >= 3:
        return 0.0
    return float(element_bytes(ctx)[0])


def _result(staged: StagedStep, step, pipe, bubble, dp_time, dp_exposed, fixed, sms: float = 0.0
            ) -> StepResult:
    """The step's result fields; ``bubble`` is (bubble seconds, busy seconds per stage, compute
    part of them, whether to give the stages' breakdowns), ``dp_exposed`` (end-of-step sync,
    ZeRO-3 in the passes: already in ``pipe``), ``sms`` the part of the end-of-step sync that
    is compute slowed by NCCL's SMs and HBM draw (:func:`_data_parallel`)."""
    (bubble, busy, stage_work, breakdowns), ctx, stages = bubble, staged.ctx, staged.stages
    sc, gpus = ctx.scenario, ctx.layout.gpus
    work = mean_work(ctx) if sc.training.documents is not None else (1.0, 1.0)
    model_flops, hardware_flops = flops(ctx, work)
    peak = ctx.compute.peak_flops            # the dtype's peak (times the what-if speedup)
    memory = max(s["memory_bytes"] for s in staged.kind_stages)     # the stages' maximum
    capacity = ctx.compute.gpu.hbm_capacity_bytes
    first, m = stages[0], ctx.microbatches * ctx.flushes          # the step's microbatches
    exposed = {"tp": m * first["tp_comm_s"], "pp": exposed_send_seconds(ctx, first["p2p_s"]) * ctx.flushes,
               "dp": sum(dp_exposed) + m * first["amax_comm_s"], "cp": m * first["cp_comm_s"],
               "ep": m * first["ep_comm_s"]}
    neck = bottleneck(busy)
    overlapped = send_split(ctx, first["p2p_s"])[1] > 0.0     # the sends wait in the bubble
    return check_result(StepResult(
        name=sc.name, gpus=gpus, step_time_s=step, step_time_p50_s=step, step_time_p95_s=step,
        step_time_p99_s=step,
        tokens_per_s=sc.training.global_batch * sc.model.seq_len * work[0] / step,
        model_flops_per_gpu=model_flops / step / gpus,
        hardware_flops_per_gpu=hardware_flops / step / gpus,
        mfu=model_flops / step / gpus / peak, bubble_fraction=bubble / step,
        comm_exposed_s=sum(exposed.values()), memory_per_gpu_bytes=memory,
        fits_in_memory=memory <= capacity, pipeline_s=pipe, bubble_s=bubble,
        dp_comm_s=dp_time, dp_comm_exposed_s=sum(dp_exposed), optimizer_s=fixed,
        microbatches=m, layer_split=[s["layers"] for s in stages],
        stages=staged.breakdowns() if breakdowns else [],
        exposed_by_dimension=exposed, memory_capacity_bytes=capacity,
        bottleneck_stage=neck[0], bottleneck_excess=neck[1], sequences=document_summary(ctx),
        dp_sm_slowdown_s=sms, dp_in_pipeline_s=float(dp_exposed[1]),
        pp_in_bubble_s=exposed["pp"] if overlapped else 0.0, pipeline_flushes=ctx.flushes),
        analytical=True, busiest=None if breakdowns else float(stage_work.max()))
