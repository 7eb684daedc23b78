"""The training what-ifs in the analytical step (docs/what_ifs.md): gradient compression
(its compute, what it sends), a cluster across sites (the WAN ring after each site's
reduction), local SGD / DiLoCo (the mean step over ``sync_every``) and the input pipeline
(the steady-state stall). Each adds its figures to
:attr:`simulator.results.StepResult.what_if`; absent, nothing here runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives import Op
from simulator.engine.compressed_sync import stage_compressions
from simulator.engine.context import Context
from simulator.engine.gradient_sync import replica_gradient_bytes
from simulator.engine.local_sgd import OUTER_TRAFFIC_BYTES_PER_PARAM, mean_step
from simulator.topology.multisite import effective_bandwidth, wan_bytes, wan_seconds
from simulator.workload.compression import wire_bytes
from simulator.workload.data_loader import load_seconds, replicas_per_node


@dataclass(frozen=True)
class StepParts:
    """The analytical step's parts (s): pipeline, exposed end-of-step reduction, fixed
    (optimizer and step overhead), DP communication, input stall."""

    pipe: float
    dp_exposed: float
    fixed: float
    dp_comm: float
    stall: float = 0.0

    @property
    def step(self) -> float:
        return self.pipe + self.dp_exposed + self.fixed + self.stall


def active(ctx: Context) -> bool:
    """Whether any training what-if is set (or the cluster spans sites)."""
    return ctx.scenario.training_what_if is not None


def apply(ctx: Context, parts: StepParts, params_per_gpu: float,
          syncs) -> tuple[StepParts, dict[str, float]]:
    """The step's parts with the what-ifs applied, and their figures (SI units).

    ``params_per_gpu``: parameters of the most loaded GPU (the outer optimizer's size);
    ``syncs``: per stage, its priced gradient collectives (their bytes are reported).
    """
    notes: dict[str, float] = {}
    if ctx.scenario.training.gradient_compression is not None:
        notes.update(compression_notes(ctx))
    if ctx.scenario.cluster.sites is not None:
        parts = _across_sites(ctx, parts, notes)
    if ctx.scenario.training.sync_every > 1:
        parts = _local_sgd(ctx, parts, params_per_gpu, notes, dp_bytes_per_gpu(ctx, syncs))
    if ctx.scenario.training.data_loader is not None:
        parts = _input_stall(ctx, parts, notes)
    return parts, notes


def compression_notes(ctx: Context) -> dict[str, float]:
    """Compute added and bytes one GPU sends for its gradients, compressed and not (the
    stage that sends most)."""
    stages = stage_compressions(ctx)
    if stages is None:
        return {}
    p, zero = ctx.layout.gradient_ranks, ctx.scenario.parallelism.zero_stage
    dense_op = Op.ALL_REDUCE if zero == 0 else Op.REDUCE_SCATTER
    sent = max(wire_bytes(s.plan.collectives, p) for s in stages)
    dense = max(wire_bytes([(dense_op, s.dense_bytes)], p) for s in stages)
    return {"compression_compute_s": max(s.compute_s for s in stages),
            "dp_bytes_sent_per_gpu": sent, "dp_bytes_uncompressed_per_gpu": dense,
            "dp_bytes_saved_per_gpu": dense - sent}


def _across_sites(ctx: Context, parts: StepParts, notes: dict) -> StepParts:
    """The WAN ring between sites after the reduction inside each (:mod:`simulator.topology.multisite`),
    in series: it starts when the slowest site has reduced."""
    sites = ctx.scenario.cluster.sites
    replica = replica_gradient_bytes(ctx)
    wan = wan_seconds(sites, replica)
    notes.update({"sites": float(sites.count), "wan_s": wan, "wan_bytes_per_sync": wan_bytes(sites, replica),
                  "wan_effective_Bps": effective_bandwidth(sites.wan)})
    return StepParts(parts.pipe, parts.dp_exposed + wan, parts.fixed, parts.dp_comm + wan, parts.stall)


def dp_bytes_per_gpu(ctx: Context, syncs) -> float:
    """Bytes one GPU sends in its stage's gradient collectives (the most of any stage;
    nccl-tests bus factor of the group size)."""
    sites = ctx.scenario.cluster.sites
    group = ctx.layout.gradient_ranks // (sites.count if sites is not None else 1)
    return max((wire_bytes([(c.op, c.size_bytes) for c in stage], group) for stage in syncs), default=0.0)


def _local_sgd(ctx: Context, parts: StepParts, params: float, notes: dict, sent: float) -> StepParts:
    """Mean step over ``K`` steps: the reduction and the outer optimizer once per period."""
    k = ctx.scenario.training.sync_every
    notes.update({"dp_bytes_per_sync_per_gpu": sent, "dp_bytes_per_step_per_gpu": sent / k})
    if "wan_bytes_per_sync" in notes:
        notes["wan_bytes_per_step"] = notes["wan_bytes_per_sync"] / k
    outer = (float(ctx.compute.memory_time(OUTER_TRAFFIC_BYTES_PER_PARAM * params))
             if ctx.layout.gradient_ranks > 1 else 0.0)
    local = parts.pipe + parts.fixed
    sync = local + parts.dp_exposed + outer
    notes.update({"sync_every": float(k), "local_step_time_s": local, "sync_step_time_s": sync,
                  "outer_optimizer_s": outer, "dp_comm_per_sync_s": parts.dp_comm})
    notes["mean_step_time_s"] = mean_step(local, sync, k)
    return StepParts(parts.pipe, parts.dp_exposed / k, parts.fixed + outer / k, parts.dp_comm / k,
                     parts.stall)


def _input_stall(ctx: Context, parts: StepParts, notes: dict) -> StepParts:
    """Steady state: the step waits ``max(0, T_load - T_step)`` for its batch."""
    cfg, lay = ctx.scenario.training.data_loader, ctx.layout
    samples = ctx.scenario.training.global_batch / lay.dp
    per_node = ctx.collectives.cluster.hw.gpus_per_node
    shared = replicas_per_node([lay.gpu(dp_rank=r, pp_rank=0) for r in range(lay.dp)], per_node)
    load = load_seconds(cfg, samples, shared)
    step = parts.step
    stall = max(0.0, load - step)
    notes.update({"input_load_s": load, "input_stall_s": stall, "input_load_over_step": load / step,
                  "input_replicas_per_node": float(shared)})
    return StepParts(parts.pipe, parts.dp_exposed, parts.fixed, parts.dp_comm, parts.stall + stall)
