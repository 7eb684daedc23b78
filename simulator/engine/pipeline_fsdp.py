"""FSDP gradients: the kernels that assemble each unit's gradients for its reduce-scatter
(:func:`copy_in_seconds`, every sharded stack) and the kernels around each all-gather
(:func:`gather_copy_seconds`), and what torch.distributed.pipelining adds per
microbatch and at the end of a stage's step.

torch 2.6 ``PipelineStage.backward_maybe_with_nosync`` (``torch/distributed/pipelining/stage.py``)
runs every backward of an FSDP2 stage with ``set_requires_gradient_sync(False)`` and
``set_reshard_after_backward(False)``; after the stage's last backward it calls each FSDP
group's ``post_backward`` itself. Two costs follow, each behind a stack ``pipeline`` flag:

- ``unsharded_grad_accumulation``: with gradient sync off, FSDP2's post-backward hook
  (``_fsdp_param_group.py`` ``post_backward``) upcasts each unsharded gradient to the reduce
  dtype at the first backward (``to_accumulated_grad_if_needed``: read ``g``, write ``r`` bytes
  per parameter) and adds later ones into it (``accumulate_unsharded_grad_if_needed``: read
  ``r + g``, write ``r``), as separate elementwise kernels. Per microbatch, averaged over the
  step's ``m``: ``P ((g + r) + (m - 1)(g + 2 r)) / m`` bytes for ``P`` unsharded parameters
  (``r = g``: no upcast, ``3 g`` from the second microbatch on).
- ``deferred_reduce_scatter``: the reduce-scatters then run after the last backward, one group
  after another: ``post_backward`` makes the compute stream wait for the previous group's
  reduce-scatter (``reduce_scatter_state.event``) before the next group's copy-in
  (``foreach_reduce``: ``chunk_cat`` into the reduce-scatter input, read and write ``r`` bytes
  per parameter). A stage's reduction after its last backward takes
  ``(P / P_layer) c_rs + t_mem(2 r P)``, ``c_rs = a + b r P_layer`` one layer's reduce-scatter
  (:func:`simulator.cost.sharding.unit_comm`); none of it overlaps that backward. It is the
  stage's gradient synchronisation (:mod:`simulator.engine.gradient_sync`), starting at the
  stage's finish (its tail equals its length), so both engines end the step on it.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.collectives import Op
from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.config.stack import GatherCopyIn, ReduceDtype, StackProfile
from simulator.cost.collective import PricedCollective
from simulator.cost.forced import forced_algorithm
from simulator.cost.grad_accumulation import upcast_accumulation_seconds
from simulator.cost.sharding import (
    copy_in_bytes_per_param,
    gather_counts,
    gradient_dtype_bytes,
    shards_parameters,
)
from simulator.workload.memory import shard_group_size, stage_parameters
from simulator.workload.stage_layers import stage_kinds

__all__ = ["accumulation_seconds", "copy_in_seconds", "deferred_reduce_collectives", "defers_reduce",
           "gather_bytes_per_param", "gather_copy_seconds", "gradient_kernel_seconds", "reduces_deferred"]


def _applies(scenario, flag: bool) -> bool:
    """Whether a stack ``pipeline`` flag takes effect: FSDP (ZeRO-3) stages of a pipeline."""
    par = scenario.parallelism
    return flag and par.zero_stage >= 3 and par.pp > 1


def defers_reduce(scenario) -> bool:
    """Whether sharded gradients are reduce-scattered after each stage's last backward."""
    return _applies(scenario, scenario_stack(scenario).pipeline.deferred_reduce_scatter)


def reduces_deferred(ctx) -> bool:
    """Whether the layout's gradient reduction is the deferred one (:func:`defers_reduce` and
    the stages are sharded over more than one GPU): what
    :func:`deferred_reduce_collectives` prices."""
    return defers_reduce(ctx.scenario) and _sharded(ctx)


def _sharded(ctx) -> bool:
    """:func:`simulator.cost.sharding.shards_parameters` of the context's layout."""
    return shards_parameters(ctx.scenario, ctx.layout)


def _dtype_bytes(scenario, stack=None) -> tuple[float, float]:
    """(gradient bytes as autograd makes them, reduce-dtype bytes) per parameter."""
    return gradient_dtype_bytes(scenario, stack or scenario_stack(scenario))


def copy_in_seconds(ctx, layers: int, first: bool, last: bool, dense_layers: int = 0, mtp_layers: int = 0,
                    pattern: str = "") -> float:
    """Seconds per microbatch a stage spends assembling its units' gradients for their
    reduce-scatters (:func:`simulator.cost.sharding.copy_in_bytes_per_param`; ZeRO-3 stages
    sharded over more than one GPU, once per reduce-scatter: every microbatch with
    ``reduce_every_microbatch``, else once a step), and, reducing every microbatch, adding each
    reduce-scatter's output to the gradient shard the earlier microbatches left: ``3 r / s``
    bytes per parameter on the ``m - 1`` later microbatches for ``s`` shards (FSDP2
    ``foreach_reduce``'s ``sharded_param.grad += new_sharded_grad``, torch 2.4-2.6
    ``_fsdp_collectives.py``; FSDP1 ``_accumulate_sharded_grad``). 0 when the reduction is the
    deferred one, which prices its own copy-in (:func:`deferred_reduce_collectives`)."""
    sc = ctx.scenario
    stack = scenario_stack(sc)
    if not _sharded(ctx) or reduces_deferred(ctx):
        return 0.0
    grad, reduce = _dtype_bytes(sc, stack)
    per_param = copy_in_bytes_per_param(stack, grad, reduce)
    if stack.sharding.reduce_every_microbatch:
        shards = shard_group_size(sc.parallelism, ctx.layout.dp)
        m = ctx.microbatches
        per_param += 3.0 * reduce / shards * (m - 1) / m
    else:
        per_param /= ctx.microbatches
    if per_param <= 0.0:
        return 0.0
    params = stage_parameters(sc.model, sc.parallelism, layers, first, last, dense_layers, mtp_layers,
                              pattern)[0]
    return float(ctx.compute.memory_time(per_param * params))


def gather_bytes_per_param(stack: StackProfile, dtype: Dtype, shards: int) -> float:
    """Bytes per parameter of the kernels around one all-gather of ``n``-byte elements over
    ``s`` = ``shards`` ranks (read + write):

    - copy-in (``sharding.gather_copy_in``), on the ``1 / s`` shard: the fp32 shard's cast to a
      narrower, non-fp8 gather dtype, ``4 + n`` (FSDP1 ``FlatParamHandle._use_low_precision_shard``;
      FSDP2 ``FSDPParam.all_gather_inputs`` -> ``_to_dtype_if_needed``), and FSDP2's
      ``torch._foreach_copy_`` of the shards into the all-gather input, ``2 n``
      (``foreach_all_gather``, on its copy-in stream);
    - copy-out (``sharding.gather_copy_out``), on the whole unit: ``2 n``, FSDP2's
      ``foreach_all_gather_copy_out`` (``torch.split_with_sizes_copy`` from the all-gather
      output into each parameter's unsharded tensor, on the compute stream after waiting for
      the gather; torch 2.4-2.6 ``torch/distributed/_composable/fsdp/_fsdp_collectives.py``).
    """
    prof = stack.sharding
    n = prof.param_gather_dtype.nbytes(dtype)
    moved = 2.0 * n if prof.gather_copy_out else 0.0
    if prof.gather_copy_in == GatherCopyIn.NONE:
        return moved
    cast = 4.0 + n if n < 4.0 and prof.param_gather_dtype != ReduceDtype.FP8 else 0.0
    copy = 2.0 * n if prof.gather_copy_in == GatherCopyIn.CAST_COPY else 0.0
    return moved + (cast + copy) / shards


def gather_copy_seconds(ctx, layers: int, first: bool, last: bool, dense_layers: int = 0,
                        mtp_layers: int = 0, pattern: str = "") -> float:
    """Seconds per microbatch of the kernels around a stage's all-gathers (ZeRO-3 stages
    sharded over more than one GPU): ``t_mem(c P (f / m + b))`` for ``P`` parameters, ``c``
    bytes per parameter and gather (:func:`gather_bytes_per_param`), ``f`` forward gathers per
    step over ``m`` microbatches and ``b`` backward re-gathers per microbatch
    (:func:`simulator.cost.sharding.gather_counts`). The copy-out does not overlap the unit's
    compute; the copy-in runs on a side stream beside it, as memory-bound kernels taking the
    GPU's HBM all the same, so its time is added too (an upper bound, as for the gradients'
    copy-in). The forward's kernels are priced with the backward's memory-bound kernels: the
    same step with one stage."""
    sc = ctx.scenario
    if not _sharded(ctx):
        return 0.0
    stack = scenario_stack(sc)
    shards = shard_group_size(sc.parallelism, ctx.layout.dp)
    per_gather = gather_bytes_per_param(stack, Dtype(sc.training.dtype), shards)
    if per_gather <= 0.0:
        return 0.0
    forward, backward = gather_counts(sc, stack, ctx.microbatches)
    params = stage_parameters(sc.model, sc.parallelism, layers, first, last, dense_layers, mtp_layers,
                              pattern)[0]
    per_microbatch = forward / ctx.microbatches + backward
    return float(ctx.compute.memory_time(per_gather * params * per_microbatch))


def accumulation_bytes_per_param(grad: float, reduce: float, microbatches: int) -> float:
    """Mean bytes per parameter per microbatch of FSDP2's unsharded accumulation (module
    docstring): ``((g + r) + (m - 1)(g + 2 r)) / m``, or ``3 g (m - 1) / m`` when ``r = g``."""
    if reduce == grad:
        return 3.0 * grad * (microbatches - 1) / microbatches
    return ((grad + reduce) + (microbatches - 1) * (grad + 2.0 * reduce)) / microbatches


def accumulation_seconds(ctx, layers: int, first: bool, last: bool, dense_layers: int = 0,
                         mtp_layers: int = 0, pattern: str = "") -> float:
    """Seconds per microbatch a stage spends accumulating its unsharded gradients (0 unless
    the stack's ``pipeline.unsharded_grad_accumulation`` applies: ZeRO-3 and p > 1)."""
    sc = ctx.scenario
    if not _applies(sc, scenario_stack(sc).pipeline.unsharded_grad_accumulation):
        return 0.0
    params = stage_parameters(sc.model, sc.parallelism, layers, first, last, dense_layers, mtp_layers,
                              pattern)[0]
    per_param = accumulation_bytes_per_param(*_dtype_bytes(sc), ctx.microbatches)
    return float(ctx.compute.memory_time(per_param * params)) if per_param > 0 else 0.0


def deferred_reduce_collectives(ctx) -> list[list[PricedCollective]] | None:
    """Per stage, its deferred gradient reduction as one collective on the stage's FSDP shard
    groups (module docstring): ``L_i = P_i / P_layer`` layer reduce-scatters in series,
    ``L_i a + b r P_i``, with the copy-ins' ``t_mem(2 r P_i)`` added to the latency (priced
    at one layer's size, as :func:`simulator.cost.sharding.unit_comm`); None unless
    :func:`defers_reduce` and the stage is sharded."""
    sc = ctx.scenario
    par, layout = sc.parallelism, ctx.layout
    if not reduces_deferred(ctx):
        return None
    layer = stage_parameters(sc.model, par, 1, False, False)[0]
    reduce = _dtype_bytes(sc)[1]
    shard = shard_group_size(par, layout.dp)
    out = []
    for i, kind in enumerate(stage_kinds(sc.model, par)):
        params = stage_parameters(sc.model, par, *kind)[0]
        terms = ctx.collectives.concurrent_terms(
            Op.REDUCE_SCATTER, lambda i=i: layout.stage_shard_groups(i, shard), reduce * layer,
            forced_algorithm(sc, Op.REDUCE_SCATTER), key=("shard", layout, i, shard))
        latency = params / layer * terms.latency_s + float(ctx.compute.memory_time(2.0 * reduce * params))
        out.append([PricedCollective(Op.REDUCE_SCATTER, reduce * params, replace(terms, latency_s=latency))])
    return out


def gradient_kernel_seconds(ctx, layers: int, first: bool, last: bool, dense_layers: int = 0,
                            mtp_layers: int = 0, pattern: str = "") -> float:
    """Seconds per microbatch of a stage's memory-bound gradient kernels, added to its
    backward: the unsharded accumulation (:func:`accumulation_seconds`), the reduce-scatter
    copy-in (:func:`copy_in_seconds`), the kernels around the all-gathers
    (:func:`gather_copy_seconds`) and the upcast-and-add accumulation of ZeRO 0-2 stacks
    (:func:`simulator.cost.grad_accumulation.upcast_accumulation_seconds`)."""
    kind = (layers, first, last, dense_layers, mtp_layers, pattern)
    return (accumulation_seconds(ctx, *kind) + copy_in_seconds(ctx, *kind) + gather_copy_seconds(ctx, *kind)
            + upcast_accumulation_seconds(ctx, *kind))
