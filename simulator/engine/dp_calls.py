"""How many NCCL calls a stage's overlapped data-parallel reduction (and weight gather) goes
out in, and the bucket size that sets it.

A collective call pays the algorithm's latency once: a ring over ``p`` ranks waits for
``p - 1`` dependent hops, so at hundreds of ranks a call costs about a millisecond before its
bytes count (NVIDIA/nccl ``src/graph/tuning.cc``: ``(nsteps - nInterSteps) intraLat +
nInterSteps interLat``). Runtimes that reduce gradients as the backward produces them split
the reduction into many calls, so the latency is paid per call (``data_parallel.reduce_calls``):

- ``bucket``: one call per bucket, back to back on one stream (PyTorch DDP's ``Reducer``, one
  all-reduce per bucket; DeepSpeed ZeRO-1/2, one reduction per IPG bucket of
  ``reduce_bucket_size``). A bucket takes whole tensors until it holds ``B / g`` parameters, so
  ``P`` parameters make at most ``ceil(P g / B)`` buckets and at least one per tensor larger
  than a bucket (:func:`_buckets`).
- ``chunk``: Megatron-Core's ``DistributedDataParallel`` buckets only the first pipeline rank's
  first model chunk; every other chunk is one bucket ("Turn off bucketing if we are on a
  pipeline stage that is not the first ... or for model chunks after the first",
  ``megatron/core/distributed/distributed_data_parallel.py`` and ``training.py``
  ``per_chunk_bucket_sizes``), and each bucket group of one bucket is its own call
  (``param_and_grad_buffer.py`` ``partition_buckets``, ``start_grad_sync``): stage 0 makes its
  first chunk's buckets plus ``v - 1`` calls, the others ``v``.
- ``layer``: Apex ``DistributedFusedAdam`` as NeMo drives it puts each transformer layer's
  parameters (each model chunk's, with virtual stages) in their own buckets
  (``megatron_gpt_model.py`` ``configure_optimizers``, ``init_params_bucket``) and
  reduce-scatters the filled buckets of one launch inside one ``_coalescing_manager`` group
  (``_start_bucket_grad_sync``); NCCL spreads a group's collectives over its channels by
  traffic (``src/enqueue.cc`` ``scheduleCollTasksToPlan``), so they run side by side and the
  group pays one latency: one call per layer of the stage (per chunk with virtual stages).

Megatron-Core sizes its default bucket for this: ``max(40M, 1M x dp)`` parameters, "to
ensure that chunks used in NCCL ring-reduce implementations are large enough to remain
bandwidth-bound rather than latency-bound" (``distributed_data_parallel.py``, core_v0.9.0 to
core_v0.15.0: ``get_data_parallel_world_size()``, without context parallelism; Megatron-LM's
main branch of 2026 counts the context-parallel ranks too, ``training.py``
``resolve_ddp_bucket_size``): ``data_parallel.bucket_params_per_rank`` (1M in the
megatron-core profile).
Without ``overlap_grad_reduce`` the whole buffer is one call, and with
``overlap_param_gather_with_optimizer_step`` (``data_parallel.param_gather_with_optimizer``)
Megatron-Core turns bucketing off: each model chunk is one bucket (Megatron-LM ``training.py``
``disable_bucketing=(model_chunk_idx > 0) or args.overlap_param_gather_with_optimizer_step``
from core_v0.10.0; NeMo 2 ``nemo/lightning/megatron_parallel.py`` likewise since 8fe4ef99f9,
2024-10), so its reduction starts when the chunk's backward ends and the first chunk's weights
are gathered after the optimizer step.
"""

from __future__ import annotations

import math
from functools import lru_cache

from simulator.config.loader import scenario_stack
from simulator.config.scenario import ModelConfig
from simulator.config.stack import ReduceCalls
from simulator.engine.context import Context
from simulator.workload.params import layer_tensor_sizes, mlp_tensor_sizes
from simulator.workload.stage_layers import scenario_split


def bucket_bytes(ctx: Context, grad_bytes: float) -> float:
    """Bytes of one gradient bucket, ``max(bucket_MB, n_r x dp x g)`` with ``n_r`` the
    profile's ``bucket_params_per_rank`` and ``g`` the reduce dtype's bytes (B); infinite with
    ``param_gather_with_optimizer`` (one bucket per model chunk)."""
    data_parallel = scenario_stack(ctx.scenario).data_parallel
    if data_parallel.param_gather_with_optimizer:
        return math.inf                          # bucketing off: a chunk is one bucket
    return max(data_parallel.bucket_bytes, data_parallel.bucket_params_per_rank * ctx.layout.dp * grad_bytes)


def reduce_calls(ctx: Context, stage: int, params: float, grad_bytes: float, expert: bool = False) -> int:
    """NCCL calls that reduce ``params`` parameters of ``stage`` (module docstring), >= 1; with
    ``expert`` the rank's experts' (their own buffer and groups), else the rest."""
    if not ctx.scenario.parallelism.overlap_grad_reduce or params <= 0:
        return 1
    how = scenario_stack(ctx.scenario).data_parallel.reduce_calls
    chunks = ctx.scenario.parallelism.virtual_stages
    if how == ReduceCalls.LAYER:
        layers = scenario_split(ctx.scenario.model, ctx.scenario.parallelism)[stage]
        return chunks if chunks > 1 else max(1, layers)
    if how == ReduceCalls.BUCKET:
        return _buckets(ctx, stage, params, grad_bytes, 1, expert)
    if stage > 0:
        return chunks
    return _buckets(ctx, stage, params / chunks, grad_bytes, chunks, expert) + chunks - 1


def _buckets(ctx: Context, stage: int, params: float, grad_bytes: float, chunks: int, expert: bool) -> int:
    """Buckets of ``params`` parameters of one model chunk of ``stage`` (:func:`_filled_buckets`
    of its layers' tensors of that kind, :func:`_layer_tensors`), >= 1."""
    model, par = ctx.scenario.model, ctx.scenario.parallelism
    layers = max(1, round(scenario_split(model, par)[stage] / chunks))
    tensors = _layer_tensors(model, ctx.layout.tp, ctx.layout.ep, par.expert_tp, expert)
    return _filled_buckets(tensors, layers, params, bucket_bytes(ctx, grad_bytes) / grad_bytes)


@lru_cache(maxsize=256)
def _layer_tensors(model: ModelConfig, tp: int, ep: int, etp: int, expert: bool) -> tuple[float, ...]:
    """Elements one rank holds of each parameter tensor of one layer, in one data-parallel buffer:
    the rank's ``E / ep`` experts' MLP tensors over ``etp`` (``expert``), or everything else over
    ``tp`` (the whole layer without experts) (:func:`~simulator.workload.params.layer_tensor_sizes`)."""
    if expert:
        return tuple(size / etp for size in mlp_tensor_sizes(model, model.experts // ep))
    sizes = layer_tensor_sizes(model, 0) if model.experts > 1 else layer_tensor_sizes(model)
    return tuple(size / tp for size in sizes)


@lru_cache(maxsize=4096)
def _filled_buckets(tensors: tuple[float, ...], layers: int, params: float, limit: float) -> int:
    """Buckets of ``params`` parameters as the runtimes fill them: tensors in turn, a bucket
    closed once it holds ``limit`` (``B / g``) parameters (PyTorch
    ``compute_bucket_assignment_by_size``, Megatron-Core ``_ParamAndGradBuffer``), so a tensor
    larger than a bucket is a bucket of its own (:func:`_chunk_tensors`); >= 1. Pure, so cached
    (a sweep and repeated evaluations ask for the same few)."""
    count, filled = 0, 0.0
    for size in _chunk_tensors(tensors, layers, params):
        filled += size
        if filled >= limit:
            count, filled = count + 1, 0.0
    return max(1, count + (filled > 0))


def _chunk_tensors(layer: tuple[float, ...], layers: int, params: float) -> list[float]:
    """Elements one rank holds of each parameter tensor of ``params``: ``layers`` layers' tensors
    (``layer``, :func:`_layer_tensors`) and what is left of ``params`` (embeddings, output layer)
    as one tensor; scaled to ``params`` where the layers alone exceed it (a stage's dense layers
    among experts take the MoE layer's tensors)."""
    tensors = list(layer) * layers
    total = sum(tensors)
    rest = params - total
    if rest < 0:
        return [size * params / total for size in tensors]
    return tensors + [rest] if rest > 0 else tensors


def calls_per_chunk(ctx: Context, stage: int, params: float, grad_bytes: float, expert: bool = False) -> int:
    """Calls of one model chunk's share of ``stage``'s ``params`` (its ``v`` chunks share the
    stage's calls), >= 1."""
    chunks = ctx.scenario.parallelism.virtual_stages
    return max(1, math.ceil(reduce_calls(ctx, stage, params, grad_bytes, expert) / chunks))
