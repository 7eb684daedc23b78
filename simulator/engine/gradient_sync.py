"""Data-parallel gradient synchronisation of one pipeline stage: which collectives, on how
many bytes, at what price.

Each stage reduces its gradients over its data-parallel groups, one per tensor- (and
context-) parallel rank; the groups of a stage run at once and share their NICs, so they
are priced together (:meth:`simulator.cost.CollectiveModel.concurrent_terms`). Stages
start their reduction at different times (the pipeline drains stage by stage), so stages
are priced separately; where they still collide, the discrete-event engine finds it.

- ZeRO 0: all-reduce of the gradients.
- ZeRO 1 and 2: reduce-scatter of the gradients, then all-gather of the updated weights
  (Rajbhandari et al. 2020, sec. 5; Megatron's distributed optimizer); with the stack's
  ``sharded_reduce: all_reduce`` an all-reduce of the whole gradient instead (DeepSpeed's
  BF16_Optimizer under ZeRO 0, v0.6.5 ``PipelineEngine._exec_reduce_grads``, then
  ``update_lp_params`` all-gathers the updated bf16 weights). With the stack's
  ``overlap_param_gather`` the all-gather runs bucket by bucket during the next step's
  forward, and only its first bucket waits (Megatron-Core ``ParamAndGradBuffer``).
- ZeRO 3: nothing here; see :mod:`simulator.cost.sharding`.
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

from simulator.collectives import Op
from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.config.stack import ShardedReduce
from simulator.cost.collective import PricedCollective
from simulator.cost.forced import forced_algorithm
from simulator.engine.compressed_sync import compressed_tails, stage_compressions
from simulator.engine.context import Context
from simulator.engine.pipeline_fsdp import deferred_reduce_collectives, reduces_deferred
from simulator.topology.multisite import split_by_site
from simulator.workload.memory import scenario_split, stage_parameters


def all_gradient_collectives(ctx: Context) -> list[list[PricedCollective]]:
    """Per stage, the collectives that synchronise its gradients at the end of a step."""
    par, layout = ctx.scenario.parallelism, ctx.layout
    sites = ctx.scenario.cluster.sites
    if (deferred := deferred_reduce_collectives(ctx)) is not None:
        return deferred
    if layout.dp == 1 or par.zero_stage == 3 or (sites is not None and layout.dp == sites.count):
        return [[] for _ in range(layout.pp)]
    sizes = _stage_sizes(ctx)
    compressed = stage_compressions(ctx)
    price = ctx.collectives.concurrent_terms
    out = []
    for stage, (grad_bytes, param_bytes) in enumerate(sizes):
        alike = ctx.collectives.canonical_stage(layout, stage)    # priced on its groups
        key, groups = ("dp-stage", layout, alike), _stage_groups(layout, alike)
        if sites is not None:       # the reduction inside each site; the WAN part: local_sgd
            key, groups = ("dp-site", layout, stage, sites.count), _site_groups(layout, stage, sites.count)
        reduce = list(compressed[stage].plan.collectives) if compressed else None
        out.append([PricedCollective(op, n, price(op, groups, n, forced_algorithm(ctx.scenario, op),
                                                  key=key))
                    for op, n in _end_of_step_ops(ctx, grad_bytes, param_bytes, reduce)])
    return out


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


def _stage_sizes(ctx: Context) -> list[tuple[float, float]]:
    """Per stage: (gradient bytes in the reduce dtype, weight bytes) one GPU synchronises."""
    par = ctx.scenario.parallelism
    dtype = Dtype(ctx.scenario.training.dtype)
    grad = scenario_stack(ctx.scenario).data_parallel.grad_reduce_dtype.nbytes(dtype)
    weight = 4 if dtype == Dtype.FP32 else 2
    split = scenario_split(ctx.scenario.model, par)
    sizes, out = {}, []
    for stage, layers in enumerate(split):
        kind = (layers, stage == 0, stage == par.pp - 1)
        if kind not in sizes:
            sizes[kind] = sum(stage_parameters(ctx.scenario.model, par, *kind))
        out.append((sizes[kind] * grad, sizes[kind] * weight))
    return out


def replica_gradient_bytes(ctx: Context) -> float:
    """Gradient bytes (reduce dtype) of one whole replica: every stage's, times the tensor-
    and context-parallel groups of a stage (each reduces its own shard)."""
    per_stage = ctx.layout.tp * ctx.layout.cp
    return float(sum(grad for grad, _ in _stage_sizes(ctx))) * per_stage


def _stage_groups(layout, stage: int):
    """The stage's data-parallel groups, listed only on a cache miss of the cost model."""
    return lambda: layout.stage_dp_groups(stage)


def _site_groups(layout, stage: int, count: int):
    """The stage's data-parallel groups cut by site (``cluster.sites``), listed on a cache miss."""
    return lambda: [part for group in layout.stage_dp_groups(stage) for part in split_by_site(group, count)]


def sync_seconds(syncs: list[list[PricedCollective]]) -> list[float]:
    """Seconds of each stage's gradient synchronisation with no other traffic on its links."""
    return [sum(c.time_s for c in stage) for stage in syncs]


def last_bucket_times(ctx: Context, syncs: list[list[PricedCollective]]) -> list[float]:
    """Per stage, seconds of the reduction of its last gradient bucket (0 without overlap):
    the part of the reduction that cannot hide behind the backward. ``syncs`` are the
    stages' collectives from :func:`all_gradient_collectives`. Under a pipeline runtime that
    reduce-scatters sharded gradients after the last backward, the whole reduction
    (:func:`simulator.engine.pipeline_fsdp.deferred_reduce_collectives`)."""
    if reduces_deferred(ctx):
        return sync_seconds(syncs)
    if not ctx.scenario.parallelism.overlap_grad_reduce:
        return [0.0] * ctx.layout.pp
    bucket = scenario_stack(ctx.scenario).data_parallel.bucket_bytes
    if ctx.scenario.training.gradient_compression is not None and ctx.layout.dp > 1:
        return compressed_tails(ctx, syncs, bucket)
    return [sum(c.terms.time(min(bucket, c.size_bytes)).item() for c in stage
                if c.op != Op.ALL_GATHER)
            for stage in syncs]


def first_param_bucket_time(ctx: Context) -> float:
    """Seconds the next step's forward waits for its first weight bucket (ZeRO 1-2 with
    ``overlap_param_gather``; 0 otherwise), the slowest stage's."""
    par, layout = ctx.scenario.parallelism, ctx.layout
    stack = scenario_stack(ctx.scenario)
    if layout.dp == 1 or par.zero_stage not in (1, 2) or not stack.data_parallel.overlap_param_gather:
        return 0.0
    worst = 0.0
    for stage, (_, param_bytes) in enumerate(_stage_sizes(ctx)):
        nbytes = min(stack.data_parallel.bucket_bytes, param_bytes)
        terms = ctx.collectives.concurrent_terms(Op.ALL_GATHER, _stage_groups(layout, stage), nbytes,
                                                 forced_algorithm(ctx.scenario, Op.ALL_GATHER),
                                                 key=("dp-stage", layout, stage))
        worst = max(worst, terms.time(nbytes).item())
    return worst
