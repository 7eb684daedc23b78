"""Collectives inside a layer that leave the server, for the discrete-event engine.

A layer runs tensor-parallel collectives (2 all-reduces per pass, or 2 all-gathers and 2
reduce-scatters with sequence parallelism; Shoeybi et al. 2019, Korthikanti et al. 2022; one
of each where a mixture of experts' dispatcher gathers instead,
:func:`~simulator.cost.in_layer.tp_site_count`),
the context-parallel collectives of :mod:`simulator.cost.context_parallel` (ring attention:
K/V all-gathers and, with the ``torch`` ring, the backward's dK/dV ring shifts, replayed half
in each pass as priced) and, with
experts, a dispatch and a combine all-to-all per pass (Lepikhin et al. 2020, GShard);
full recompute repeats the forward's tensor-parallel collectives before the backward.
Collectives the stack overlaps with GEMMs (the backward input-gradient all-reduce or
reduce-scatter with ``overlap_dgrad_comm``; all of them with ``comm_overlap``; the expert
all-to-alls with ``expert_parallel.a2a_overlap``, :mod:`simulator.cost.ep_overlap`) are not
replayed: their exposed remainder stays in the compute segments, as priced. Nor is the flex
dispatcher's deduplicated dispatch (``expert_parallel.dispatcher`` deepep or hybridep,
:mod:`simulator.cost.ep_dedup`), whose schedule no registered algorithm rebuilds per group: it
keeps its priced duration.
Inside a server they ride NVLink, which carries no other traffic, and keep the cost
model's duration. Across servers they share NICs and uplinks with the other groups of the
stage (priced together by :mod:`simulator.cost.in_layer`) and with everything else
(only the DES sees that), so the DES replays them as flows between compute segments.
Tensor- and context-parallel groups lie inside one (replica, stage) entity; an
expert-parallel group spans ``Layout.expert_replicas`` replicas, which exchange in step
(a barrier).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.config.loader import scenario_stack
from simulator.config.scenario import Recompute
from simulator.config.stack import EpDispatcher
from simulator.cost.collective import PricedCollective
from simulator.cost.context_parallel import cp_cost
from simulator.cost.in_layer import ep_collective, spans_servers, tp_collectives, tp_site_count
from simulator.cost.tp_exposure import tp_site
from simulator.engine.context import Context
from simulator.workload.params import hybrid_kinds
from simulator.workload.recompute_modules import reruns_dispatch, reruns_mlp_collectives
from simulator.workload.stage_layers import stage_kinds


@dataclass(frozen=True)
class InLayerKind:
    """One collective a stage's tasks run ``forward`` / ``backward`` times per chunk.

    ``dimension`` is tp, cp or ep: it names whose groups run it (the entity's own, or the
    expert-parallel block's ``ep`` replicas).
    """

    dimension: str
    collective: PricedCollective
    forward: int
    backward: int

    def count(self, forward: bool) -> int:
        return self.forward if forward else self.backward


def in_layer_kinds(ctx: Context, stage: int) -> list[InLayerKind]:
    """The cross-server in-layer collectives of ``stage``'s tasks (empty if none)."""
    par, lay = ctx.scenario.parallelism, ctx.layout
    decoder, _, _, dense, mtp, pattern = stage_kinds(ctx.scenario.model, par)[stage]
    layers = (decoder + mtp) / par.virtual_stages
    routed = layers - dense / par.virtual_stages          # the layers with experts
    if pattern:
        routed = pattern.count("E") / par.virtual_stages

    def spans(group) -> bool:
        return spans_servers(ctx.collectives, group)

    kinds = []
    overlap = scenario_stack(ctx.scenario).tensor_parallel
    if lay.tp > 1 and spans(lay.tp_group(stage)) and not overlap.comm_overlap:
        kinds += _tp_kinds(ctx, layers, layers - routed, pattern)
    cp = cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives, lay)
    if cp is not None and cp.replayed and spans(lay.cp_group(stage)):
        kinds += [InLayerKind("cp", c.collective, *_per_pass_counts(c.per_pass * layers))
                  for c in cp.collectives]
    experts = scenario_stack(ctx.scenario).expert_parallel
    ep = ep_collective(ctx.shape, ctx.collectives, lay, experts.dispatcher)
    replayed = not experts.a2a_overlap and experts.dispatcher == EpDispatcher.ALLTOALL
    if ep is not None and spans(lay.expert_group(0, stage)) and replayed:
        modules = par.recomputed_modules
        again = modules is not None and reruns_dispatch(ctx.scenario.model, modules)
        kinds.append(InLayerKind("ep", ep, round(2 * routed), round((4 if again else 2) * routed)))
    return [k for k in kinds if k.forward or k.backward]


def _per_pass_counts(per_pass: float) -> tuple[int, int]:
    """(forward, backward) whole collectives for ``per_pass`` of them in each pass: the
    rounded total ``round(2 x)`` split as evenly as it goes, so a half (15 layers x 1.5) is
    replayed as 22 in forward and 23 in backward rather than lost from both."""
    total = round(2.0 * per_pass)
    return total // 2, total - total // 2


def _tp_kinds(ctx: Context, layers: float, dense: float, pattern: str = "") -> list[InLayerKind]:
    """The in-line tensor-parallel collectives of a stage's tasks (``layers`` per chunk,
    ``dense`` of them without experts; a hybrid stage's ``pattern``, each layer its block's
    sites): the forward's (fp8-sized all-gathers where the stack gathers fp8) run once per site
    in forward and again in a full recompute, the MLP's again where ``recompute_modules``
    re-run the MLP block; the backward's once per site unless overlapped with wgrad."""
    stack = scenario_stack(ctx.scenario)
    found = tp_collectives(ctx.scenario, ctx.shape, ctx.collectives, ctx.layout)
    sites = tp_site_count(ctx.shape, ctx.layout)
    site = tp_site(stack, ctx.compute, found, ctx.shape.micro_batch, ctx.layout.tp, count=sites)
    if pattern:
        site_layers, again = _hybrid_sites(ctx, pattern)
    else:
        site_layers, again = sites * layers, _recomputed_sites(ctx, sites, layers, dense)
    kinds = []
    for i, (fwd, bwd) in enumerate(zip(site.forward, site.backward, strict=True)):
        hidden = stack.tensor_parallel.overlap_dgrad_comm and i == len(found) - 1
        backward = 0 if hidden else site_layers
        if fwd == bwd:
            kinds.append(InLayerKind("tp", fwd, round(site_layers), round(backward + again)))
            continue
        kinds.append(InLayerKind("tp", fwd, round(site_layers), round(again)))
        kinds.append(InLayerKind("tp", bwd, 0, round(backward)))
    return kinds


def _hybrid_sites(ctx: Context, pattern: str) -> tuple[float, float]:
    """(tensor-parallel sites of a hybrid stage's layers per chunk, of them re-run in backward):
    each kind's :func:`tp_site_count`; all again under full recompute, a kind's MLP site where
    ``recompute_modules`` re-run its MLP block."""
    par, model = ctx.scenario.parallelism, ctx.scenario.model
    sites, again = 0.0, 0.0
    for kind, n in hybrid_kinds(model, pattern):
        count = tp_site_count(replace(ctx.shape, model=kind), ctx.layout) * n / par.virtual_stages
        modules = par.recomputed_modules
        rerun = modules is not None and count and reruns_mlp_collectives(kind, modules)
        sites += count
        again += count * par.full_recompute_share if par.recompute == Recompute.FULL else count * rerun
    return sites, again


def _recomputed_sites(ctx: Context, sites: int, layers: float, dense: float) -> float:
    """Tensor-parallel sites re-run in backward over ``layers`` (``dense`` without experts):
    every site under full recompute; the MLP's where ``recompute_modules`` re-run its block
    (:func:`~simulator.workload.recompute_modules.reruns_mlp_collectives`)."""
    par, model = ctx.scenario.parallelism, ctx.scenario.model
    if par.recompute == Recompute.FULL:
        return sites * layers * par.full_recompute_share
    modules = par.recomputed_modules
    if modules is None or sites < 2:
        return 0.0
    routed = layers - dense
    dense_again = dense if dense and reruns_mlp_collectives(model.dense_model(), modules) else 0.0
    return dense_again + (routed if reruns_mlp_collectives(model, modules) else 0.0)


def task_sequence(kinds: list[InLayerKind], forward: bool) -> list[int]:
    """Indices into ``kinds``, one per collective of a task, interleaved round-robin."""
    counts = [k.count(forward) for k in kinds]
    return [i for step in range(max(counts, default=0)) for i, n in enumerate(counts) if step < n]


def entity_groups(ctx: Context, dimension: str, replica: int, stage: int) -> list[tuple[int, ...]]:
    """The groups that run ``dimension``'s collective for the entity (or its ep block)."""
    lay = ctx.layout
    if dimension == "tp":
        return lay.entity_tp_groups(replica, stage)
    if dimension == "cp":
        return lay.entity_cp_groups(replica, stage)
    return lay.replica_expert_groups(replica, stage)
