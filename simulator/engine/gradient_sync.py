"""Data-parallel gradient synchronisation of one pipeline stage: which collectives, on how
many bytes, at what price.

Each stage reduces its gradients over its data-parallel groups, one per tensor-parallel rank,
each holding the ``dp cp`` data- and context-parallel ranks that share those weights
(:attr:`simulator.workload.layout.Layout.gradient_ranks`: context-parallel ranks see different
tokens, so their gradients are summed in the same collective; until 2026-11-30 each
context-parallel rank was priced reducing over its ``dp`` ranks alone, which left the sum
across them out and halved the ring's hops). The groups of a stage run at once and share
their NICs, so they are priced together
(:meth:`simulator.cost.CollectiveModel.concurrent_terms`). Stages
start their reduction at different times (the pipeline drains stage by stage), so stages
are priced separately; where they still collide, the discrete-event engine finds it.

- ZeRO 0: all-reduce of the gradients.
- ZeRO 1 and 2: reduce-scatter of the gradients, then all-gather of the updated weights
  (Rajbhandari et al. 2020, sec. 5; Megatron's distributed optimizer); with the stack's
  ``sharded_reduce: all_reduce`` an all-reduce of the whole gradient instead (DeepSpeed's
  BF16_Optimizer under ZeRO 0, v0.6.5 ``PipelineEngine._exec_reduce_grads``, then
  ``update_lp_params`` all-gathers the updated bf16 weights). With the stack's
  ``overlap_param_gather`` the all-gather runs bucket by bucket during the next step's
  forward, and only its first bucket waits (Megatron-Core ``ParamAndGradBuffer``); under
  the interleaved schedule with ``param_gather_launch: chunk`` one model chunk ahead, each
  chunk's first forward waiting for its whole gather (:mod:`simulator.workload.chunk_gathers`).
- Mixture of experts with expert parallelism: the experts' gradients (and gathered weights)
  are synchronised over the stage's expert-data-parallel groups, the ``tp dp cp / (etp ep)``
  ranks that hold the same experts (:meth:`~simulator.workload.layout.Layout.stage_expert_dp_groups`;
  none with one such rank), after the dense part's over the data-parallel groups
  (Megatron-Core ``DistributedDataParallel``: ``expert_parallel_buffers`` reduce over
  ``expert_data_parallel_group``, core_v0.10.0 ``distributed_data_parallel.py``). The two
  are priced one after the other: they share the servers' NICs.
- ZeRO 3: nothing here; see :mod:`simulator.cost.sharding`.
- A tied embedding (``model.tied_embeddings``) with ``pp > 1``: its gradient is all-reduced
  between the first and last stages after the data-parallel reduction, before the optimizer
  step (:func:`embedding_sync_seconds`).
- A cluster across sites (``cluster.sites``): the reduction inside each site here, the
  WAN ring between sites in :mod:`simulator.engine.training_what_ifs`.

Gradients are reduced in the stack's ``grad_reduce_dtype`` (Megatron-LM reduces in fp32
under bf16 by default, ``accumulate_allreduce_grads_in_fp32``); weights are gathered in
the training dtype. With ``overlap_grad_reduce`` buckets of ``bucket_MB`` are reduced as
backward fills them, so the reduction of the last bucket cannot start before the backward
ends: that bucket's time is the least the reduction adds after it (PyTorch DDP, Li et al.
2020, VLDB, sec. 3.2.3).
"""

from __future__ import annotations

import numpy as np

from simulator.collectives import Op
from simulator.collectives.group import Group
from simulator.collectives.schedule import Algorithm
from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.config.scenario import Schedule
from simulator.config.stack import ParamGatherLaunch, ShardedReduce
from simulator.cost.collective import PricedCollective
from simulator.cost.forced import forced_algorithm
from simulator.cost.nccl_sms import nccl_sm_share
from simulator.engine.compressed_sync import compressed_tails, stage_compressions
from simulator.engine.context import Context, memoised, send_split
from simulator.engine.dp_calls import bucket_bytes, calls_per_chunk, reduce_calls
from simulator.engine.pipeline_fsdp import deferred_reduce_collectives, reduces_deferred
from simulator.topology.multisite import split_by_site
from simulator.workload.chunk_gathers import gather_delay
from simulator.workload.memory import stage_parameters
from simulator.workload.stage_layers import stage_kinds


def dp_key(ctx: Context) -> tuple:
    """The layout fields the data-parallel synchronisation depends on (a memo key)."""
    par = ctx.scenario.parallelism
    return (ctx.layout, par.virtual_stages, par.zero_stage, par.shard_size, par.overlap_grad_reduce,
            par.first_stage_layers, par.last_stage_layers, par.pipeline_layout)


def all_gradient_collectives(ctx: Context) -> list[list[PricedCollective]]:
    """Per stage, the collectives that synchronise its gradients at the end of a step;
    memoised by :func:`dp_key`."""
    return memoised(ctx, ("gradient-collectives", *dp_key(ctx)), lambda: _gradient_collectives(ctx))


def _gradient_collectives(ctx: Context) -> list[list[PricedCollective]]:
    """:func:`all_gradient_collectives`, computed."""
    par, layout = ctx.scenario.parallelism, ctx.layout
    sites = ctx.scenario.cluster.sites
    if (deferred := deferred_reduce_collectives(ctx)) is not None:
        return deferred
    ranks = layout.gradient_ranks
    if ranks == 1 or par.zero_stage == 3 or (sites is not None and ranks == sites.count):
        return [[] for _ in range(layout.pp)]
    compressed = stage_compressions(ctx)
    grad, weight = element_bytes(ctx)
    out = []
    for stage, parts in enumerate(_synchronised_parts(ctx)):
        alike = ctx.collectives.canonical_stage(layout, stage)    # priced on its groups
        reduce = list(compressed[stage].plan.collectives) if compressed else None
        out.append([collective for expert, params in parts
                    for collective in _part_collectives(
                        ctx, stage, alike, expert,
                        _end_of_step_ops(ctx, params * grad, params * weight, reduce),
                        1 if compressed else reduce_calls(ctx, stage, params, grad, expert))])
    return out


def _part_collectives(ctx: Context, stage: int, alike: int, expert: bool,
                      ops: list[tuple[Op, float]], buckets: int = 1) -> list[PricedCollective]:
    """``ops`` priced on the stage's data-parallel groups (or, with ``expert``, its
    expert-data-parallel groups), on the canonical stage ``alike``'s groups; the reduction
    goes out in ``buckets`` calls (:func:`~simulator.engine.dp_calls.reduce_calls`), a trailing
    weight gather in one."""
    layout, sites = ctx.layout, ctx.scenario.cluster.sites
    key, groups = ("dp-stage", layout, alike), _stage_groups(layout, alike)
    if expert:
        key, groups = ("edp-stage", layout, alike), _expert_groups(layout, alike)
    elif sites is not None:       # the reduction inside each site; the WAN part: local_sgd
        key, groups = ("dp-site", layout, stage, sites.count), _site_groups(layout, stage, sites.count)
    price = ctx.collectives.concurrent_terms
    out = []
    for op, n in ops:
        calls = 1 if op == Op.ALL_GATHER else buckets
        terms = price(op, groups, n / calls, forced_algorithm(ctx.scenario, op), key=key)
        out.append(PricedCollective(op, n, terms, expert, calls))
    return out


def expert_sync_apart(ctx: Context) -> bool:
    """Whether the experts' gradients synchronise on their own groups (module docstring): a
    mixture of experts with ``ep > 1`` (not across sites, not compressed: those reduce the
    whole gradient on the data-parallel groups)."""
    sc = ctx.scenario
    return (sc.model.experts > 1 and ctx.layout.ep > 1 and sc.cluster.sites is None
            and sc.training.gradient_compression is None)


def _synchronised_parts(ctx: Context) -> list[list[tuple[bool, float]]]:
    """Per stage, (on expert groups, parameters one GPU synchronises) of each part: the whole
    stage on its data-parallel groups, or its dense part there and its experts on their
    expert-data-parallel groups (none when each such group is one rank); memoised by the
    layout and the pipeline split."""
    par = ctx.scenario.parallelism
    key = ("sync-parts", ctx.layout, par.first_stage_layers, par.last_stage_layers, par.pipeline_layout)
    return memoised(ctx, key, lambda: _parts_of_stages(ctx))


def _parts_of_stages(ctx: Context) -> list[list[tuple[bool, float]]]:
    """:func:`_synchronised_parts`, computed."""
    apart = expert_sync_apart(ctx)
    out = []
    for dense, expert in _stage_parameter_parts(ctx):
        if not apart:
            out.append([(False, dense + expert)])
        else:
            out.append([(False, dense)] + ([(True, expert)] if ctx.layout.expert_dp > 1 else []))
    return out


def element_bytes(ctx: Context) -> tuple[int, int]:
    """(gradient, weight) bytes per parameter: the stack's reduce and gather dtypes."""
    dtype = Dtype(ctx.scenario.training.dtype)
    data_parallel = scenario_stack(ctx.scenario).data_parallel
    return data_parallel.grad_reduce_dtype.nbytes(dtype), data_parallel.param_gather_dtype.nbytes(dtype)


def _end_of_step_ops(ctx: Context, grad_bytes: float, param_bytes: float,
                     reduce: list[tuple[Op, float]] | None = None) -> list[tuple[Op, float]]:
    """The stage's collectives; ``reduce`` (a compressor's, :mod:`simulator.engine.compressed_sync`)
    replaces the gradient reduction."""
    if ctx.scenario.parallelism.zero_stage == 0:
        return reduce or [(Op.ALL_REDUCE, grad_bytes)]
    data_parallel = scenario_stack(ctx.scenario).data_parallel
    sharded = Op.ALL_REDUCE if data_parallel.sharded_reduce == ShardedReduce.ALL_REDUCE else Op.REDUCE_SCATTER
    if data_parallel.overlap_param_gather:
        return reduce or [(sharded, grad_bytes)]
    return (reduce or [(sharded, grad_bytes)]) + [(Op.ALL_GATHER, param_bytes)]


def _stage_parameter_parts(ctx: Context) -> list[tuple[float, float]]:
    """Per stage: (dense, expert) parameters one GPU holds (:func:`stage_parameters`)."""
    par = ctx.scenario.parallelism
    sizes, out = {}, []
    for kind in stage_kinds(ctx.scenario.model, par):
        if kind not in sizes:
            sizes[kind] = stage_parameters(ctx.scenario.model, par, *kind)
        out.append(sizes[kind])
    return out


def _stage_sizes(ctx: Context) -> list[tuple[float, float]]:
    """Per stage: (gradient bytes in the reduce dtype, weight bytes) one GPU synchronises."""
    grad, weight = element_bytes(ctx)
    return [(sum(parts) * grad, sum(parts) * weight) for parts in _stage_parameter_parts(ctx)]


def replica_gradient_bytes(ctx: Context) -> float:
    """Gradient bytes (reduce dtype) of one whole replica: every stage's, times its
    tensor-parallel ranks (each holds its own shard; the context-parallel ranks hold copies of
    it, summed into one inside the site by :func:`all_gradient_collectives`)."""
    return float(sum(grad for grad, _ in _stage_sizes(ctx))) * ctx.layout.tp


def _stage_groups(layout, stage: int):
    """The stage's data-parallel groups (``dp cp`` ranks each), listed only on a cache miss of
    the cost model."""
    return lambda: layout.stage_gradient_groups(stage)


def _expert_groups(layout, stage: int):
    """The stage's expert-data-parallel groups, listed only on a cache miss."""
    return lambda: layout.stage_expert_dp_groups(stage)


def _site_groups(layout, stage: int, count: int):
    """The stage's data-parallel groups cut by site (``cluster.sites``), listed on a cache miss."""
    return lambda: [part for group in layout.stage_gradient_groups(stage)
                    for part in split_by_site(group, count)]


def sync_seconds(syncs: list[list[PricedCollective]]) -> list[float]:
    """Seconds of each stage's gradient synchronisation with no other traffic on its links."""
    return [sum(c.time_s for c in stage) for stage in syncs]


def overlapped_reduce_seconds(syncs: list[list[PricedCollective]]) -> list[float]:
    """Per stage, seconds of its gradient reduction proper (the all-reduce or reduce-scatter
    that ``overlap_grad_reduce`` runs beside the last backward; a trailing weight all-gather
    runs after the optimizer)."""
    return [sum(c.time_s for c in stage if c.op != Op.ALL_GATHER) for stage in syncs]


def last_bucket_times(ctx: Context, syncs: list[list[PricedCollective]]) -> list[float]:
    """Per stage, seconds of the reduction of its last gradient bucket (0 without overlap):
    the part of the reduction that cannot hide behind the backward; a bucket holds at most one
    model chunk (``1 / v`` of the stage: with bucketing off, the last chunk). ``syncs`` are the
    stages' collectives from :func:`all_gradient_collectives`. Under a pipeline runtime that
    reduce-scatters sharded gradients after the last backward, the whole reduction
    (:func:`simulator.engine.pipeline_fsdp.deferred_reduce_collectives`)."""
    if reduces_deferred(ctx):
        return sync_seconds(syncs)
    if not ctx.scenario.parallelism.overlap_grad_reduce:
        return [0.0] * ctx.layout.pp
    bucket = bucket_bytes(ctx, element_bytes(ctx)[0])
    if ctx.scenario.training.gradient_compression is not None and ctx.layout.gradient_ranks > 1:
        return compressed_tails(ctx, syncs, bucket)
    chunks = ctx.scenario.parallelism.virtual_stages
    return [sum(c.terms.seconds(min(bucket, c.size_bytes / chunks)) for c in stage
                if c.op != Op.ALL_GATHER)
            for stage in syncs]


def embedding_sync_seconds(ctx: Context) -> float:
    """Seconds of the tied word embedding's gradient all-reduce between the first and last
    pipeline stages, in series after the data-parallel reduction (0 without a tied embedding,
    with one stage, or under ZeRO 3).

    Megatron-Core ``finalize_model_grads``: ``finish_grad_sync`` of every chunk, then
    ``_allreduce_word_embedding_grads`` all-reduces the embedding's ``main_grad`` over the
    embedding group; NeMo 1 ``MegatronGPTModel.allreduce_first_last_embeddings`` after
    ``_finish_bucket_grad_sync`` (fp32: NeMo gives the embedding an fp32 optimizer);
    DeepSpeed's pipeline engine ``ReduceTiedGrads`` (fp32). The gradient is the whole
    ``V h / t`` slice of each tensor-parallel rank, in the stack's ``embedding_grad_dtype``;
    every embedding group (:meth:`~simulator.workload.layout.Layout.embedding_groups`) runs
    at once, by ring unless the scenario forces an algorithm: on two ranks ring and tree move
    the same bytes over the pair's one path and the tuner's ring wins at these sizes (the
    auto choice read ring on GPT-3, MLPerf and BLOOM), so the other candidates are not priced
    for every group of every layout.
    """
    sc, layout = ctx.scenario, ctx.layout
    if not sc.model.tied_embeddings or layout.pp == 1 or sc.parallelism.zero_stage == 3:
        return 0.0
    return memoised(ctx, ("embedding-sync", layout), lambda: _embedding_sync(ctx))


def _embedding_sync(ctx: Context) -> float:
    sc, layout = ctx.scenario, ctx.layout
    profile = scenario_stack(sc).data_parallel
    element = (profile.embedding_grad_dtype or profile.grad_reduce_dtype).nbytes(Dtype(sc.training.dtype))
    nbytes = sc.model.vocab * sc.model.hidden / layout.tp * element
    algorithm = forced_algorithm(sc, Op.ALL_REDUCE) or Algorithm.RING
    terms = ctx.collectives.concurrent_terms(Op.ALL_REDUCE, layout.embedding_groups, nbytes, algorithm,
                                             key=("embedding", layout))
    return terms.seconds(nbytes)


def param_gather_exposed(ctx: Context, forward, backward, p2p: float, shares: np.ndarray) -> float:
    """Seconds the step waits for the weight all-gathers of its sharded optimizer under
    ``overlap_param_gather`` (ZeRO 1-2; 0 otherwise): the pipeline's extra time from gathers
    launched a chunk ahead (:func:`simulator.workload.chunk_gathers.gather_delay`, where
    :func:`chunk_gather_seconds` applies), else the first bucket's gather
    (:func:`first_param_bucket_time`). ``forward``, ``backward`` and ``p2p`` are the
    pipeline clocks' inputs (per stage, seconds of one microbatch); ``shares`` the share of the
    pace of the tasks beside a gather it takes
    (:func:`~simulator.engine.dp_beside.stage_gather_shares`)."""
    gather, par = chunk_gather_seconds(ctx), ctx.scenario.parallelism
    if gather is None:
        return _first_bucket(ctx)
    held, lag = send_split(ctx, p2p)
    return gather_delay(forward, backward, ctx.microbatches, par.virtual_stages, held, gather,
                        shares, lag=lag)


def overlapped_gather_seconds(ctx: Context) -> float:
    """Seconds of the busiest stage's weight all-gathers per step under ``overlap_param_gather``
    (ZeRO 1-2; 0 otherwise), hidden or not: ``v`` chunk gathers where they launch a chunk
    ahead (:func:`chunk_gather_seconds`), else the first bucket and the rest
    (:func:`first_param_bucket_time`, :func:`rest_gather_seconds`). What the step waits for of
    them is :func:`param_gather_exposed`; this is their whole time, reported with the
    gradient reductions as the step's data-parallel communication."""
    if not _overlaps_param_gather(ctx):
        return 0.0
    chunk = chunk_gather_seconds(ctx)
    if chunk is not None:
        return float(chunk.max()) * ctx.scenario.parallelism.virtual_stages
    return _first_bucket(ctx) + float(rest_gather_seconds(ctx).max())


def _first_bucket(ctx: Context) -> float:
    """:func:`first_param_bucket_time`, memoised by the layout and ZeRO stage."""
    return memoised(ctx, ("first-bucket", ctx.layout, ctx.scenario.parallelism.zero_stage),
                    lambda: first_param_bucket_time(ctx))


def chunk_gather_seconds(ctx: Context) -> np.ndarray | None:
    """Per stage, seconds of one model chunk's weight all-gather where the stack launches
    them a chunk ahead (``param_gather_launch: chunk``, interleaved schedule with ``pp > 1``
    and virtual stages, ZeRO 1-2 with ``overlap_param_gather``); None elsewhere."""
    par = ctx.scenario.parallelism
    if not (par.schedule == Schedule.INTERLEAVED and par.virtual_stages > 1 and par.pp > 1
            and _overlaps_param_gather(ctx)
            and scenario_stack(ctx.scenario).data_parallel.param_gather_launch == ParamGatherLaunch.CHUNK):
        return None                 # the layout's fields first: most layouts stop there
    return memoised(ctx, ("chunk-gather", ctx.layout, par.virtual_stages, par.zero_stage,
                          par.overlap_grad_reduce,           # the calls: dp_calls.reduce_calls
                          par.first_stage_layers, par.last_stage_layers, par.pipeline_layout),
                    lambda: _chunk_gather_seconds(ctx))


def _overlaps_param_gather(ctx: Context) -> bool:
    """ZeRO 1-2 over more than one data-parallel rank with the gathers in the next forward."""
    par = ctx.scenario.parallelism
    return (ctx.layout.gradient_ranks > 1 and par.zero_stage in (1, 2)
            and scenario_stack(ctx.scenario).data_parallel.overlap_param_gather)


def _chunk_gather_seconds(ctx: Context) -> np.ndarray:
    """Per stage, seconds of one model chunk's weight all-gather (the stage's weights over its
    ``v`` chunks, each chunk its share of the stage's calls: :mod:`simulator.engine.dp_calls`) on the stage's
    data-parallel groups (the experts' on theirs)."""
    v = ctx.scenario.parallelism.virtual_stages
    grad, weight = element_bytes(ctx)
    return np.array([sum(_gather_seconds(ctx, stage, expert, nbytes / v,
                                         calls_per_chunk(ctx, stage, nbytes / weight, grad, expert))
                         for expert, nbytes in parts)
                     for stage, parts in enumerate(_gathered_parts(ctx))])


def _gathered_parts(ctx: Context) -> list[list[tuple[bool, float]]]:
    """Per stage, (on expert groups, weight bytes one GPU gathers) of each part
    (:func:`_synchronised_parts`)."""
    weight = element_bytes(ctx)[1]
    return [[(expert, params * weight) for expert, params in parts] for parts in _synchronised_parts(ctx)]


def _gather_seconds(ctx: Context, stage: int, expert: bool, nbytes: float, launches: int = 1) -> float:
    """Seconds of an all-gather of ``nbytes`` (:func:`_gather_terms`, chosen for one call's
    bytes) in ``launches`` calls (:attr:`~simulator.cost.collective.PricedCollective.time_s`)."""
    terms = _gather_terms(ctx, stage, expert, nbytes / launches)
    return PricedCollective(Op.ALL_GATHER, nbytes, terms, expert, launches).time_s


def _gather_terms(ctx: Context, stage: int, expert: bool, nbytes: float):
    """The price of an all-gather of ``nbytes`` on ``stage``'s data-parallel groups, or with
    ``expert`` its expert-data-parallel groups (priced on the canonical stage's,
    :meth:`~simulator.cost.CollectiveModel.canonical_stage`)."""
    layout = ctx.layout
    alike = ctx.collectives.canonical_stage(layout, stage)
    groups, key = _stage_groups(layout, alike), ("dp-stage", layout, alike)
    if expert:
        groups, key = _expert_groups(layout, alike), ("edp-stage", layout, alike)
    return ctx.collectives.concurrent_terms(Op.ALL_GATHER, groups, nbytes,
                                            forced_algorithm(ctx.scenario, Op.ALL_GATHER), key=key)


def _gather_bucket_bytes(ctx: Context) -> float:
    """Weight bytes of one bucket: a bucket holds the same parameters for the gather as for
    the reduction (:func:`~simulator.engine.dp_calls.bucket_bytes`, in the gather dtype)."""
    grad, weight = element_bytes(ctx)
    return bucket_bytes(ctx, grad) / grad * weight


def first_param_bucket_time(ctx: Context) -> float:
    """Seconds the next step's forward waits for its first weight bucket (ZeRO 1-2 with
    ``overlap_param_gather``; 0 otherwise), the slowest stage's: a bucket of the dense
    weights, which the forward meets first."""
    if not _overlaps_param_gather(ctx):
        return 0.0
    bucket = _gather_bucket_bytes(ctx)
    return max(_gather_seconds(ctx, stage, False, min(bucket, parts[0][1]))
               for stage, parts in enumerate(_gathered_parts(ctx)))


def rest_gather_seconds(ctx: Context) -> np.ndarray | None:
    """Per stage, seconds of the weight all-gather that runs beside the first forward under
    ``overlap_param_gather``: the stage's whole gather but its first bucket (which waits in
    full, :func:`first_param_bucket_time`). None without overlapped gathers, and under the
    chunk-ahead launch, whose gathers the task-graph walk prices
    (:func:`chunk_gather_seconds`)."""
    if not _overlaps_param_gather(ctx) or chunk_gather_seconds(ctx) is not None:
        return None
    par = ctx.scenario.parallelism
    return memoised(ctx, ("rest-gather", ctx.layout, par.zero_stage, par.virtual_stages,
                          par.overlap_grad_reduce, par.first_stage_layers, par.last_stage_layers,
                          par.pipeline_layout),
                    lambda: _rest_gathers(ctx))                                  # + dp_calls' inputs


def _rest_gathers(ctx: Context) -> np.ndarray:
    """Per stage, seconds of its weight all-gather after the first (dense) bucket: the dense
    gather but that bucket, and the experts' whole gather, each bucket a call of its own
    (:func:`~simulator.engine.dp_calls.reduce_calls`)."""
    bucket = _gather_bucket_bytes(ctx)
    grad, weight = element_bytes(ctx)
    out = []
    for stage, ((_, dense), *experts) in enumerate(_gathered_parts(ctx)):
        calls = reduce_calls(ctx, stage, dense / weight, grad)
        terms = _gather_terms(ctx, stage, False, dense / calls)     # one call's; the first bucket's
        whole = PricedCollective(Op.ALL_GATHER, dense, terms, False, calls).time_s
        rest = max(0.0, whole - terms.seconds(min(bucket, dense)))
        out.append(rest + sum(_gather_seconds(ctx, stage, True, nbytes,
                                              reduce_calls(ctx, stage, nbytes / weight, grad, True))
                              for _, nbytes in experts))
    return np.array(out)


def stage_sm_shares(ctx: Context) -> np.ndarray:
    """Per stage, the share of SMs NCCL holds while the stage's data-parallel collectives
    run (:func:`simulator.cost.nccl_sms.nccl_sm_share` of its first data-parallel group;
    0 with one data-parallel rank); memoised by layout."""
    layout = ctx.layout
    if layout.gradient_ranks == 1:
        return np.zeros(layout.pp)
    return memoised(ctx, ("dp-sm-share", layout), lambda: _stage_sm_shares(ctx))


def _stage_sm_shares(ctx: Context) -> np.ndarray:
    """:func:`stage_sm_shares`, one group per canonical stage (the stages alike share it:
    :meth:`~simulator.cost.CollectiveModel.canonical_stage`)."""
    layout, collectives = ctx.layout, ctx.collectives
    canonical = [collectives.canonical_stage(layout, stage) for stage in range(layout.pp)]
    share = {alike: nccl_sm_share(Group(collectives.cluster, layout.stage_gradient_groups(alike)[0]))
             for alike in set(canonical)}
    return np.array([share[alike] for alike in canonical])
