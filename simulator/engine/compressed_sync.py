"""Gradient compression in the data-parallel synchronisation of each stage (docs/what_ifs.md).

With ``training.gradient_compression`` the stage's gradient reduction (the all-reduce, or
the reduce-scatter under ZeRO 1-2) becomes the compressor's collectives
(:mod:`simulator.workload.compression`), priced by the same cost model; under ZeRO 1-2
the updated weights are still all-gathered. The compressor's kernels
(:func:`simulator.cost.compression.compression_seconds`) run on the GPU between the
backward's kernels, so they hide behind nothing: they add to the step in series,

    step = pipeline + compressor compute + exposed compressed collectives + optimizer,

while its collectives overlap the backward bucket by bucket as the uncompressed ones do:
with ``overlap_grad_reduce`` the last bucket (``f = bucket / (n g)`` of each collective,
at that size with its full latency) is what cannot hide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.cost.compression import compression_seconds
from simulator.engine.context import Context
from simulator.workload.compression import Compression, compression
from simulator.workload.matrices import stage_matrices
from simulator.workload.memory import stage_parameters
from simulator.workload.stage_layers import stage_kinds


@dataclass(frozen=True)
class StageCompression:
    """One stage's compressor on one GPU: its plan, the uncompressed gradient bytes it
    replaces and the seconds of its compute."""

    plan: Compression
    dense_bytes: float
    compute_s: float


def stage_compressions(ctx: Context) -> list[StageCompression] | None:
    """Per stage, its compressor; None without ``gradient_compression`` or data parallelism."""
    cfg = ctx.scenario.training.gradient_compression
    if cfg is None or ctx.layout.gradient_ranks == 1:
        return None
    par, model = ctx.scenario.parallelism, ctx.scenario.model
    dp_cfg = scenario_stack(ctx.scenario).data_parallel
    g = float(dp_cfg.grad_reduce_dtype.nbytes(Dtype(ctx.scenario.training.dtype)))
    made, out = {}, []
    for kind in stage_kinds(model, par):
        if kind not in made:
            n = float(sum(stage_parameters(model, par, *kind)))
            buckets = max(math.ceil(n * g / dp_cfg.bucket_bytes), 1)
            plan = compression(cfg, n, stage_matrices(model, par, *kind[:3]), g, ctx.layout.gradient_ranks,
                               buckets)
            made[kind] = StageCompression(plan, n * g, compression_seconds(plan, ctx.compute))
        out.append(made[kind])
    return out


def compute_seconds(ctx: Context) -> list[float] | None:
    """Per stage, the compressor's compute seconds; None without compression."""
    stages = stage_compressions(ctx)
    return None if stages is None else [s.compute_s for s in stages]


def compressed_tails(ctx: Context, syncs, bucket_bytes: float) -> list[float]:
    """Per stage, the last bucket's compressed collectives: each at ``f = bucket / (n g)`` of
    its size."""
    out = []
    for stage, comp in zip(syncs, stage_compressions(ctx), strict=True):
        f = min(1.0, bucket_bytes / comp.dense_bytes)
        ops = stage[:len(comp.plan.collectives)]
        out.append(sum(c.terms.time(c.size_bytes * f).item() for c in ops))
    return out
