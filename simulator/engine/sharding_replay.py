"""ZeRO-3 / FSDP traffic in the discrete-event engine (contention on).

Every forward and backward chunk of a sharded stage gathers its layers' weights (and, in
backward, reduce-scatters their gradients) over the stage's shard groups, which span all
data-parallel replicas. The DES replays a task's whole ZeRO-3 traffic as one
run of flows over the routed links (each layer's gather, and in backward its reduction,
as one collective carrying all the layers' bytes), started when the last replica reaches
the task (the collectives synchronise them), and scales the task's ZeRO-3 communication by
the slowdown those flows saw against their uncontended price: the task then takes its
compute plus :func:`simulator.cost.sharding.sharding_cost`'s exposure at the slowed
communication. Alone on the network the flows take their price, the scale is 1 and the
task takes the analytical duration exactly; where they meet other traffic the exposure
grows as the cost model's own overlap rule says it would.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.collectives import Op
from simulator.config.loader import scenario_stack
from simulator.config.scenario import Fidelity
from simulator.cost.collective import PricedCollective
from simulator.cost.forced import forced_algorithm
from simulator.cost.layer import LayerCost
from simulator.cost.sharding import (
    UnitComm,
    backward_gather_seconds,
    gather_counts,
    sharding_cost,
    shards_parameters,
    stage_unit_comm,
)
from simulator.engine.context import Context
from simulator.workload.memory import shard_group_size
from simulator.workload.params import layer_parameters
from simulator.workload.stage_layers import stage_kinds, stage_layer_models


@dataclass(frozen=True)
class StageSharding:
    """One stage's ZeRO-3 replay: a chunk's compute without exposure, the unit's prices,
    the sample collectives (gather, reduce) and what a chunk's exposure needs."""

    forward_compute: float
    backward_compute: float
    comm: UnitComm
    gather: PricedCollective
    reduce: PricedCollective
    chunk_layers: float
    layer: LayerCost
    """The stage's mean layer, whose compute the unit's collectives overlap."""

    def exposed(self, ctx: Context, scale: float) -> tuple[float, float]:
        """(forward, backward) exposed seconds of a chunk with communication ``scale`` x slower."""
        comm = replace(self.comm, gather=self.comm.gather * scale, reduce=self.comm.reduce * scale,
                       recompute_regather=self.comm.recompute_regather * scale,
                       per_step_gather=self.comm.per_step_gather * scale)
        layer = self.layer
        cost = sharding_cost(ctx.scenario, scenario_stack(ctx.scenario), comm, self.chunk_layers,
                             layer.forward, layer.backward + layer.recompute, ctx.microbatches,
                             layer.memory_shares())
        return cost.forward_exposed, cost.backward_exposed

    def traffic(self, ctx: Context, forward: bool) -> list[tuple[PricedCollective, float]]:
        """What a task moves: (one layer's collective, how many of it per task on average).

        Forward gathers every layer (every microbatch if resharded after forward, else the
        first's gathers spread over the step); backward re-gathers (twice with a recompute
        re-gather) and reduce-scatters every layer (every microbatch, or once per step).
        """
        stack, m = scenario_stack(ctx.scenario), ctx.microbatches
        prof = stack.sharding
        if forward:
            gathers = 1.0 if prof.reshard_after_forward else 1.0 / m
            gathers += self._in_gathers(self.comm.per_step_gather) / m
            return [(self.gather, self.chunk_layers * gathers)]
        regathers = gather_counts(ctx.scenario, stack, m)[1]
        again = self._in_gathers(backward_gather_seconds(ctx.scenario, stack, self.comm, regathers))
        reduces = 1.0 if prof.reduce_every_microbatch else 1.0 / m
        out = [(self.gather, self.chunk_layers * again), (self.reduce, self.chunk_layers * reduces)]
        return [(c, n) for c, n in out if n > 0]

    def _in_gathers(self, seconds: float) -> float:
        """``seconds`` of the unit's gathers as a count of whole ones (the per-tensor gathers
        a unit skips or repeats, replayed as that share of the sample gather's flows)."""
        return seconds / self.comm.gather if self.comm.gather > 0 else 0.0

    def priced(self, ctx: Context, forward: bool) -> float:
        """Uncontended seconds of a task's :meth:`traffic`."""
        return sum(c.time_s * n for c, n in self.traffic(ctx, forward))


def stage_sharding(ctx: Context, stage: int, layer: LayerCost,
                   forward_chunk_s: float, backward_chunk_s: float) -> StageSharding | None:
    """The stage's ZeRO-3 replay plan for its mean ``layer``, or None when the stage shards
    nothing."""
    par, lay = ctx.scenario.parallelism, ctx.layout
    if not shards_parameters(ctx.scenario, lay):
        return None
    stack = scenario_stack(ctx.scenario)
    comm = stage_unit_comm(ctx.scenario, stack, ctx.collectives, lay, stage)
    decoder, _, _, _, mtp, _ = stage_kinds(ctx.scenario.model, par)[stage]
    layers = (decoder + mtp) / par.virtual_stages
    plan = StageSharding(0.0, 0.0, comm, *_samples(ctx, stage), layers, layer)
    fwd, bwd = plan.exposed(ctx, 1.0)
    return replace(plan, forward_compute=forward_chunk_s - fwd, backward_compute=backward_chunk_s - bwd)


def _samples(ctx: Context, stage: int) -> tuple[PricedCollective, PricedCollective]:
    """One layer's all-gather and reduce-scatter on the stage's shard groups, as priced (the
    stage's mean layer where dense layers are among its experts' layers)."""
    stack, lay = scenario_stack(ctx.scenario), ctx.layout
    dtype, params = ctx.scenario.training.dtype, _mean_layer_parameters(ctx, stage) / lay.tp
    shard = shard_group_size(ctx.scenario.parallelism, lay.dp)
    key = ("shard", lay, stage, shard)
    groups = lambda: lay.stage_shard_groups(stage, shard)  # noqa: E731
    out = []
    for op, dt in ((Op.ALL_GATHER, stack.sharding.param_gather_dtype),
                   (Op.REDUCE_SCATTER, stack.sharding.grad_reduce_dtype)):
        nbytes = params * dt.nbytes(dtype)
        terms = ctx.collectives.concurrent_terms(op, groups, nbytes,
                                                 forced_algorithm(ctx.scenario, op), key=key)
        out.append(PricedCollective(op, nbytes, terms))
    return out[0], out[1]


def _mean_layer_parameters(ctx: Context, stage: int) -> float:
    """Parameters of ``stage``'s mean layer: each kind of its layers' count weighted by its share
    (:func:`~simulator.workload.stage_layers.stage_layer_models`: dense among MoE layers, a
    hybrid stage's kinds)."""
    parts = stage_layer_models(ctx.scenario.model, ctx.scenario.parallelism, stage)
    return sum(share * layer_parameters(model) for model, share in parts)


def replay_group(ctx: Context, stage: int) -> tuple[int, ...] | None:
    """At the collapsed fidelity, the one shard group whose flows stand for the stage's."""
    if ctx.scenario.simulate.fidelity != Fidelity.TP_COLLAPSED:
        return None
    shard = shard_group_size(ctx.scenario.parallelism, ctx.layout.dp)
    return ctx.layout.stage_shard_groups(stage, shard)[0]
