"""Where a noisy job's time goes, and what the usual mitigations would buy (issue 15, item 5).

Every figure comes from the max-plus fast path (:mod:`simulator.engine.fastpath`, contention
off) over the same steps and seed, so runs differ only in what they switch off: each cause
draws from its own random stream (:class:`simulator.engine.noise_process.Variant`).

Causes: ``stage_imbalance`` (the stages' different work per micro-batch: the embedding, the LM
head and loss, uneven layer counts; removed by giving every stage the mean stage's chunk
durations), ``sequences`` (micro-batch work from ``training.documents``; removed: every
micro-batch the mean one), ``slow_workers`` (slow GPUs and servers, episodes, fail-slow),
``jitter`` (i.i.d. jitter and throttling), ``host_pauses`` and ``network`` (NIC and pipeline
link faults). Static fabric faults (``noise.links``) are part of the cluster in every run.

Attribution: with ``v(S)`` the mean step with the causes ``S`` on, the slowdown
``v(N) - v({})`` is split into Shapley values (L. S. Shapley, "A value for n-person games",
1953: the split that is additive by construction and symmetric in the causes)

    phi_c = sum over S not containing c of |S|! (n - |S| - 1)! / n! (v(S + c) - v(S)),

so the shares sum to the total (to round-off) and a cause alone gets exactly its isolated
slowdown ``v({c}) - v({})``; each cause's leave-one-out ``v(N) - v(N - c)`` (what ByteDance's
what-if analysis measures by idealising one kind of operation, Lin et al., OSDI'25) and
isolated slowdown are reported beside it. ``2^n`` runs, ``n <= 6``. The mean (the job's time over its
steps) is attributed; the p50/p95/p99 of the noisy run are reported with it.

What-ifs (each the full noisy run with one change): ``spares`` (the ``k`` servers with the
most slow GPU-steps replaced by healthy ones), ``rebalance_stages`` (Megatron-Core first/last
stage layer counts, :mod:`simulator.config.stage_split`: the few best by the analytical step
run noisy, the best kept), ``synchronized_gc`` (host pauses all at a step's start,
Megatron-LM's ``--manual-gc``), ``balance_sequences``
(:func:`simulator.workload.documents.balanced`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from math import factorial

import numpy as np

from simulator.config.scenario import Scenario
from simulator.config.stage_split import uneven_split
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.context import Context, make_context
from simulator.engine.des_plan import StepPlan, step_plan
from simulator.engine.fastpath import step_times
from simulator.engine.noise_process import NO_CHANGE, NoiseSource, Variant

NOISE_CAUSES = ("sequences", "slow_workers", "jitter", "host_pauses", "network")
METHOD = ("Shapley values of the mean step over the causes present, each run on the fast path "
          "(contention off) with the same steps and seed; a cause removed draws nothing, the "
          "others keep their random streams")


@dataclass(frozen=True)
class _Job:
    """One priced scenario: its context, plan, the noise-free step (for fail-slow rates)."""

    ctx: Context
    plan: StepPlan
    step_s: float
    seed: int
    steps: int

    def times(self, variant: Variant = NO_CHANGE, balanced_stages: bool = False,
              source_out: list | None = None) -> np.ndarray:
        """Step seconds of the job under ``variant`` (stages evened out if asked)."""
        plan = _even_stages(self.plan) if balanced_stages else self.plan
        source = NoiseSource(self.ctx, plan, self.step_s, self.seed, variant)
        if source_out is not None:
            source_out.append(source)
        return np.concatenate([step_times(self.ctx, plan, block) for block in source.blocks(self.steps)])


def attribute(scenario: Scenario, collectives: CollectiveModel, steps: int, seed: int,
              spares: int = 1) -> dict:
    """The ``stragglers`` field of a result: slowdown, its distribution, each cause's share
    and the mitigation what-ifs (module docstring)."""
    job = _job(scenario, collectives, steps, seed)
    causes = present_causes(scenario, job.plan)
    value, noisy, source = _values(job, causes)
    total = value[causes] - value[()]
    shares = shapley(causes, value)
    quiet = value[("stage_imbalance",)] if "stage_imbalance" in causes else value[()]
    out = {"method": METHOD, "steps": steps, "seed": seed, "path": "fast path (contention off)",
           "mean_step_s": value[causes], "noise_off_step_s": quiet, "ideal_step_s": value[()],
           "slowdown": value[causes] / quiet,
           **{f"{q}_s": float(np.percentile(noisy, int(q[1:]))) for q in ("p50", "p95", "p99")},
           "total_s": total, "residual_s": total - sum(shares.values()),
           "causes": {c: _cause(c, causes, value, shares[c], total) for c in causes}}
    out["what_ifs"] = what_ifs(job, scenario, collectives, value[causes], source, spares)
    return out


def _job(scenario: Scenario, collectives: CollectiveModel, steps: int, seed: int) -> _Job:
    base = simulate_step(scenario, collectives)
    ctx = make_context(scenario, collectives)
    return _Job(ctx, step_plan(ctx, base, False), base.step_time_s, seed, steps)


def present_causes(scenario: Scenario, plan: StepPlan) -> tuple[str, ...]:
    """The causes the scenario has, in :data:`NOISE_CAUSES` order after ``stage_imbalance``."""
    noise = scenario.noise
    have = {
        "stage_imbalance": bool(np.ptp(plan.forward) > 0 or np.ptp(plan.backward) > 0),
        "sequences": plan.attention_part is not None,
        "slow_workers": bool(noise.slow_gpus or noise.slow_nodes or noise.episodes
                             or any(f.rate_per_hour > 0 and f.factor > 1 for f in noise.fail_slow)),
        "jitter": (noise.straggler.sigma > 0 and noise.straggler.distribution.value != "none")
        or (noise.throttle.probability > 0 and noise.throttle.factor > 1),
        "host_pauses": noise.host_pause.probability > 0 and noise.host_pause.duration_s > 0,
        "network": bool(noise.nic_faults),
    }
    return tuple(c for c in ("stage_imbalance", *NOISE_CAUSES) if have[c])


def _values(job: _Job, causes: tuple[str, ...]):
    """Mean step for every subset of ``causes`` (keyed by the sorted tuple), the all-on steps
    and the all-on noise source (its per-server fail-slow record)."""
    value, noisy, source = {}, None, []
    for mask in product((False, True), repeat=len(causes)):
        on = tuple(c for c, m in zip(causes, mask, strict=True) if m)
        off = frozenset(NOISE_CAUSES) - set(on)
        times = job.times(Variant(off=off), "stage_imbalance" not in on,
                          source if len(on) == len(causes) else None)
        value[on] = float(times.mean())
        if len(on) == len(causes):
            noisy = times
    return value, noisy, source[0]


def shapley(causes: tuple[str, ...], value: dict) -> dict[str, float]:
    """Each cause's Shapley value of ``value`` (keyed by ordered subsets of ``causes``)."""
    n = len(causes)
    out = {}
    for c in causes:
        others = [x for x in causes if x != c]
        phi = 0.0
        for mask in product((False, True), repeat=n - 1):
            chosen = {x for x, m in zip(others, mask, strict=True) if m}
            weight = factorial(len(chosen)) * factorial(n - len(chosen) - 1) / factorial(n)
            with_c = tuple(x for x in causes if x in chosen or x == c)
            without = tuple(x for x in causes if x in chosen)
            phi += weight * (value[with_c] - value[without])
        out[c] = phi
    return out


def _cause(c: str, causes: tuple[str, ...], value: dict, share: float, total: float) -> dict:
    alone = value[(c,)] - value[()]
    loo = value[causes] - value[tuple(x for x in causes if x != c)]
    return {"share_s": share, "share": share / total if total > 0 else 0.0, "alone_s": alone,
            "leave_one_out_s": loo}


def _even_stages(plan: StepPlan) -> StepPlan:
    """Every stage at the mean stage's chunk durations (and document parts): the same total
    work, no stage imbalance."""
    def mean(a):
        return None if a is None else np.broadcast_to(a.mean(axis=0), a.shape).copy()
    return replace(plan, forward=mean(plan.forward), backward=mean(plan.backward),
                   attention_part=mean(plan.attention_part), token_part=mean(plan.token_part))


def what_ifs(job: _Job, scenario: Scenario, collectives: CollectiveModel, noisy_mean: float,
             source: NoiseSource, spares: int) -> dict:
    """Each applicable mitigation: its mean and p99 step and speedup over the noisy job."""
    out = {}
    for name, run in (("spares", lambda: _spares(job, scenario, source, spares)),
                      ("rebalance_stages", lambda: _rebalanced(job, scenario, collectives)),
                      ("synchronized_gc", lambda: _synchronized(job, scenario)),
                      ("balance_sequences", lambda: _balanced_documents(job))):
        found = run()
        if found is not None:
            times, detail = found
            mean = float(times.mean())
            out[name] = {"mean_step_s": mean, "p99_s": float(np.percentile(times, 99)),
                         "speedup": noisy_mean / mean, "detail": detail}
    return out


def slowest_servers(scenario: Scenario, job: _Job, source: NoiseSource, k: int) -> list[int]:
    """The ``k`` servers with the most slow GPU-steps, ``sum (factor - 1)`` over their GPUs
    and the steps: fixed slow GPUs and servers, episodes, and the fail-slow steps the noisy
    run drew (ties: the lower index); only servers with any."""
    per_node = job.ctx.collectives.cluster.hw.gpus_per_node
    score = source.node_excess.copy()
    noise, steps = scenario.noise, job.steps
    for s in noise.slow_gpus:
        score[s.gpu // per_node] += (s.factor - 1) * steps
    for n in noise.slow_nodes:
        score[n.node] += (n.factor - 1) * steps * per_node
    for e in noise.episodes:
        span = max(0, min(steps, e.start_step + (e.steps or steps)) - e.start_step)
        node = e.node if e.node is not None else e.gpu // per_node
        score[node] += (e.factor - 1) * span * (per_node if e.gpu is None else 1)
    ranked = [int(i) for i in np.argsort(-score, kind="stable") if score[i] > 0]
    return ranked[:k]


def _spares(job: _Job, scenario: Scenario, source: NoiseSource, k: int):
    nodes = slowest_servers(scenario, job, source, k)
    if not nodes:
        return None
    per_node = job.ctx.collectives.cluster.hw.gpus_per_node
    noise = scenario.noise
    healthy = noise.model_copy(update={
        "slow_gpus": [s for s in noise.slow_gpus if s.gpu // per_node not in nodes],
        "slow_nodes": [n for n in noise.slow_nodes if n.node not in nodes],
        "episodes": [e for e in noise.episodes
                     if (e.node if e.node is not None else e.gpu // per_node) not in nodes]})
    ctx = replace(job.ctx, scenario=scenario.model_copy(update={"noise": healthy}))
    times = replace(job, ctx=ctx).times(Variant(spares=frozenset(nodes)))
    return times, f"servers {', '.join(map(str, nodes))} replaced by healthy spares"


REBALANCE_CANDIDATES = 4
"""Layer splits (the best by the analytical step) the rebalancing what-if runs noisy."""


def _rebalanced(job: _Job, scenario: Scenario, collectives: CollectiveModel):
    """Megatron-Core first/last stage layer counts within half a stage's layers of the even
    split: the :data:`REBALANCE_CANDIDATES` with the least analytical step are run with the
    noise and the one with the least mean step is kept (a slow GPU may make a stage that the
    noise-free model would fill the wrong one to fill)."""
    par, layers = scenario.parallelism, scenario.model.layers
    if par.pp < 2:
        return None
    now = (par.first_stage_layers, par.last_stage_layers)
    even = layers // par.pp
    span = range(max(1, even - even // 2), even + even // 2 + 1)
    ranked = []
    for first, last in product(span, span):
        try:
            split = uneven_split(layers, par.pp, par.virtual_stages, first, last)
        except ValueError:
            continue
        if (first, last) == now:
            continue
        trial = scenario.model_copy(update={"parallelism": par.model_copy(
            update={"first_stage_layers": first, "last_stage_layers": last})})
        ranked.append((simulate_step(trial, collectives).step_time_s, first, last, split, trial))
    ranked.sort(key=lambda x: x[:3])
    best = None
    for _, first, last, split, trial in ranked[:REBALANCE_CANDIDATES]:
        times = _job(trial, collectives, job.steps, job.seed).times()
        if best is None or times.mean() < best[0].mean():
            best = (times, f"first_stage_layers {first}, last_stage_layers {last} "
                           f"(layers {', '.join(map(str, split))})")
    return best


def _synchronized(job: _Job, scenario: Scenario):
    pause = scenario.noise.host_pause
    if pause.synchronized or pause.probability <= 0 or pause.duration_s <= 0:
        return None
    noise = scenario.noise.model_copy(update={"host_pause": pause.model_copy(update={"synchronized": True})})
    ctx = replace(job.ctx, scenario=scenario.model_copy(update={"noise": noise}))
    return replace(job, ctx=ctx).times(), "host pauses all at a step's start (--manual-gc)"


def _balanced_documents(job: _Job):
    if job.plan.attention_part is None:
        return None
    return job.times(Variant(balance=True)), ("each step's sequences dealt over the micro-batches "
                                              "sorted by cost, boustrophedon")
