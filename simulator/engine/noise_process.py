"""The noise of many steps at once: per-entity slowdown factors, host pauses and slowed
pipeline sends, for blocks of consecutive steps, drawn once and used by both paths of the
discrete-event engine (the event replay and the max-plus fast path,
:mod:`simulator.engine.fastpath`), so the same scenario and seed give the same steps on both.

Sources (the scenario's ``noise`` section, docs/scenario_extensions.md):

- memoryless, per GPU and step: lognormal jitter and throttling, fixed slow GPUs and servers
  (:func:`simulator.engine.noise.gpu_factors`, drawn step by step from the generator seeded
  with the seed itself, so a seed gives the numbers it always gave);
- ``episodes``: a GPU or server slowed by a factor from a start step for a number of steps;
- ``fail_slow``: per GPU or server, an on/off Markov process in whole steps. With step time
  ``T`` (the noise-free step, s), a healthy unit starts an episode in a step with probability
  ``1 - exp(-rate T / 3600)`` and a slowed one recovers with ``1 - exp(-T / D)`` (``D`` the
  mean episode, s): the exponential up and down times of a continuous-time two-state chain,
  sampled at step boundaries. A run starts from the chain's stationary distribution, so the
  slowed share of unit-steps is ``p_on / (p_on + p_off)`` (tests/test_noise_process.py);
- ``host_pause``: per server and step a pause of ``duration_s`` with ``probability``, before
  a task drawn uniformly from the entity's ``2 m v`` tasks (the earliest over an entity's
  servers); synchronised, all entities pause before their first task, once per paused step;
- ``training.documents``: per (step, replica, microbatch) the work factors of the
  microbatch's sequences (:mod:`simulator.workload.documents`), drawn in that order from
  child 2 of ``SeedSequence(seed)``, less the means the plan was priced at
  (:mod:`simulator.engine.document_work`);
- ``nic_faults``: pipeline sends over a faulty NIC or link take
  ``alpha + latency_s + (p2p - alpha) / fraction`` (``alpha`` the send's latency part); a
  NIC fault (no ``peer``) also stretches its stage's gradient synchronisation to
  ``a + (sync - a) / fraction`` (``a`` the collectives' latency part).

An entity (data-parallel replica, pipeline stage) runs at the pace of its slowest GPU (its
tensor- and context-parallel GPUs synchronise every layer), so per-GPU factors reduce by max.
Memory is bounded: a block holds at most :data:`BLOCK_GPU_STEPS` GPU-steps (or sequence-steps).
A :class:`Variant` leaves causes out or changes them for attribution's what-ifs
(:mod:`simulator.engine.attribution`); each cause keeps its own stream, so leaving one out
does not move another's draws.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from simulator.config.scenario import FailSlowScope
from simulator.engine.context import Context
from simulator.engine.des_plan import StepPlan
from simulator.engine.document_work import mean_work
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.engine.noise import gpu_factors, gpu_position
from simulator.workload.documents import DocumentStream, balanced, microbatch_work

BLOCK_GPU_STEPS = 4_000_000
"""GPU-steps per block of noise (32 MB of float64 per array)."""


@dataclass(frozen=True)
class StepNoise:
    """The noise of ``k`` consecutive steps (arrays indexed by step, replica, stage).

    ``factor`` (k, dp, pp): compute slowdown of each entity. ``pause_at`` (k, dp, pp): the
    position (in the stage's task order) of the task before which the entity's host pauses
    ``pause_s`` seconds, -1 for none (None: no pauses at all). ``send_s`` (k, dp, pp, 2):
    seconds of the entity's send after a backward [0] or forward [1] task (None: the plan's
    ``p2p_s``); ``send_extra_s`` and ``send_fraction`` the latency added and bandwidth share
    behind it (for the flow replay). ``sync_scale`` (k, pp): stretch of each stage's gradient
    synchronisation (None: 1). ``attention_delta`` and ``token_delta`` (k, dp, m): each
    micro-batch's attention and token work factors less their means, ``a - E[a]`` and
    ``t - E[t]`` (:mod:`simulator.engine.document_work`; None: no documents, or packed).
    """

    factor: np.ndarray
    pause_s: float = 0.0
    pause_at: np.ndarray | None = None
    send_s: np.ndarray | None = None
    send_extra_s: np.ndarray | None = None
    send_fraction: np.ndarray | None = None
    sync_scale: np.ndarray | None = None
    attention_delta: np.ndarray | None = None
    token_delta: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return self.factor.shape[0]

    def step(self, i: int) -> StepNoise:
        """Step ``i`` of the block, as a block of one step (views, no copies)."""
        def one(a):
            return None if a is None else a[i:i + 1]
        return StepNoise(self.factor[i:i + 1], self.pause_s, one(self.pause_at), one(self.send_s),
                         one(self.send_extra_s), one(self.send_fraction), one(self.sync_scale),
                         one(self.attention_delta), one(self.token_delta))


CAUSES = ("jitter", "slow_workers", "host_pauses", "network", "sequences")
"""The noise causes a :class:`Variant` can remove: i.i.d. jitter and throttling; slow GPUs and
servers, episodes and fail-slow processes; host pauses; NIC and pipeline-link faults;
micro-batch work from document lengths."""


@dataclass(frozen=True)
class Variant:
    """A what-if on the noise: ``off`` the causes left out (:data:`CAUSES`), ``spares`` servers
    whose slow GPUs, episodes and fail-slow episodes are gone (replaced by healthy spares),
    ``balance`` documents re-dealt over micro-batches
    (:func:`simulator.workload.documents.balanced`). Removing a cause never shifts another's
    random stream: each cause draws from its own."""

    off: frozenset[str] = frozenset()
    spares: frozenset[int] = frozenset()
    balance: bool = False

    def on(self, cause: str) -> bool:
        return cause not in self.off


NO_CHANGE = Variant()
"""The scenario's noise as it is."""


class NoiseSource:
    """Blocks of :class:`StepNoise` for one run: ``ctx``'s noise section, its ``plan``, the
    noise-free step ``step_s`` (s, to turn durations into steps) and the ``seed``.

    Independent streams: the memoryless noise draws from ``default_rng(seed)`` step by step;
    fail-slow processes and host pauses from children of ``SeedSequence(seed)``.
    """

    def __init__(self, ctx: Context, plan: StepPlan, step_s: float, seed: int,
                 variant: Variant = NO_CHANGE):
        lay, noise = ctx.layout, ctx.scenario.noise
        self.ctx, self.plan, self.step_s, self.variant = ctx, plan, step_s, variant
        self.rng = np.random.default_rng(seed)
        fail_rng, self.pause_rng, docs_rng = (np.random.default_rng(s)
                                              for s in np.random.SeedSequence(seed).spawn(3))
        self.documents = _documents(ctx, plan, docs_rng, variant.balance) if variant.on("sequences") else None
        self.per_node = ctx.collectives.cluster.hw.gpus_per_node
        self.gpus = lay.gpus
        self.nodes = -(-self.gpus // self.per_node)
        self.fail_slow = [(f, _OnOff(self.gpus if f.scope == FailSlowScope.GPU else self.nodes,
                                     _per_step(f.rate_per_hour / 3600.0, step_s),
                                     _per_step(1.0 / f.mean_duration_s, step_s), fail_rng))
                          for f in noise.fail_slow if f.rate_per_hour > 0 and f.factor > 1
                          and variant.on("slow_workers")]
        sequences = ctx.scenario.training.global_batch if self.documents is not None else 0
        self.block = max(1, BLOCK_GPU_STEPS // max(self.gpus, sequences))
        self.node_excess = np.zeros(self.nodes)   # fail-slow (factor - 1) x GPU-steps, per server
        self.sync_alpha = _sync_alpha(ctx) if any(f.peer is None for f in noise.nic_faults) else None

    def blocks(self, steps: int) -> Iterator[StepNoise]:
        """The noise of steps ``0 .. steps - 1``, in blocks of at most ``self.block`` steps."""
        for start in range(0, steps, self.block):
            yield self._block(start, min(self.block, steps - start))

    def _block(self, t0: int, k: int) -> StepNoise:
        lay, noise = self.ctx.layout, self.ctx.scenario.noise
        f = np.empty((k, lay.dp, lay.pp, lay.tp * lay.cp))
        jitter, slow = self.variant.on("jitter"), self.variant.on("slow_workers")
        for i in range(k):
            f[i] = gpu_factors(self.ctx, self.rng, jitter, slow)
        for e in noise.episodes if slow else ():
            lo, hi = _window(e.start_step, e.steps, t0, k)
            if lo < hi:
                gpus = [e.gpu] if e.gpu is not None else self._node_gpus(e.node)
                for gpu in gpus:
                    r, s, w = gpu_position(self.ctx, gpu)
                    f[lo:hi, r, s, w] *= e.factor
        for config, process in self.fail_slow:
            on = process.block(k)
            if config.scope == FailSlowScope.NODE:
                on = np.repeat(on, self.per_node, axis=1)[:, :self.gpus]
            if self.variant.spares:
                on[:, self._spare_gpus()] = False
            self.node_excess += np.bincount(np.arange(self.gpus) // self.per_node,
                                            on.sum(axis=0) * (config.factor - 1.0), self.nodes)
            f *= self._entity_order(np.where(on, config.factor, 1.0))
        paused = noise.host_pause.probability > 0 and noise.host_pause.duration_s > 0
        pause_at = self._pauses(k) if paused and self.variant.on("host_pauses") else None
        faulted = noise.nic_faults and self.variant.on("network")
        sends = self._nic_faults(t0, k) if faulted else (None, None, None, None)
        work = self.documents.block(k) if self.documents is not None else (None, None)
        return StepNoise(f.max(axis=3), noise.host_pause.duration_s, pause_at, *sends, *work)

    def _spare_gpus(self) -> np.ndarray:
        """GPUs (in GPU order) of the servers the variant replaced by spares."""
        gpus = np.arange(self.gpus)
        return gpus[np.isin(gpus // self.per_node, sorted(self.variant.spares))]

    def _node_gpus(self, node: int) -> list[int]:
        return [g for g in range(node * self.per_node, (node + 1) * self.per_node) if g < self.gpus]

    def _entity_order(self, per_gpu: np.ndarray) -> np.ndarray:
        """(k, gpus) in GPU order -> (k, dp, pp, tp*cp), the order of the factor array."""
        lay = self.ctx.layout
        k = per_gpu.shape[0]
        return per_gpu.reshape(k, lay.pp, lay.dp, lay.tp * lay.cp).transpose(0, 2, 1, 3)

    def _pauses(self, k: int) -> np.ndarray:
        """(k, dp, pp) task position of each entity's host pause, -1 for none."""
        lay, pause = self.ctx.layout, self.ctx.scenario.noise.host_pause
        tasks = 2 * self.ctx.microbatches * self.ctx.scenario.parallelism.virtual_stages
        if pause.synchronized:
            paused = self.pause_rng.random(k) < pause.probability
            return np.broadcast_to(np.where(paused, 0, -1)[:, None, None], (k, lay.dp, lay.pp)).copy()
        paused = self.pause_rng.random((k, self.nodes)) < pause.probability
        where = np.where(paused, self.pause_rng.random((k, self.nodes)), np.inf)
        per_gpu = where[:, np.arange(self.gpus) // self.per_node]
        first = self._entity_order(per_gpu).min(axis=3)
        return np.where(np.isfinite(first), np.floor(np.minimum(first, 1.0) * tasks), -1).astype(np.int64)

    def _nic_faults(self, t0: int, k: int):
        """(send seconds, extra latency, bandwidth share, sync stretch) of the block's NIC faults."""
        lay, plan = self.ctx.layout, self.plan
        extra = np.zeros((k, lay.dp, lay.pp, 2))
        fraction = np.ones((k, lay.dp, lay.pp, 2))
        scale = np.ones((k, lay.pp))
        for fault in self.ctx.scenario.noise.nic_faults:
            lo, hi = _window(fault.start_step, fault.steps, t0, k)
            if lo >= hi:
                continue
            for r, s, direction in self._fault_sends(fault):
                extra[lo:hi, r, s, direction] += fault.latency_s
                np.minimum(fraction[lo:hi, r, s, direction], fault.fraction,
                           out=fraction[lo:hi, r, s, direction])
            if fault.peer is None and self.sync_alpha is not None:
                s = gpu_position(self.ctx, fault.gpu)[1]
                scale[lo:hi, s] = np.maximum(scale[lo:hi, s], _stretch(plan.sync_s[s], self.sync_alpha[s],
                                                                       fault.fraction))
        faulted = (extra > 0) | (fraction < 1)
        alpha = plan.p2p_latency_s
        send = np.where(faulted, alpha + extra + (plan.p2p_s - alpha) / fraction, plan.p2p_s)
        return send, extra, fraction, (scale if (scale != 1).any() else None)

    def _fault_sends(self, fault) -> list[tuple[int, int, int]]:
        """(replica, stage, direction) of every send that crosses the faulty NIC or link;
        direction 1 is a forward send (to stage s + 1), 0 a backward one (to s - 1)."""
        p = self.ctx.layout.pp
        r, s, _ = gpu_position(self.ctx, fault.gpu)
        if fault.peer is None:
            return [(r, s, 0), (r, s, 1), (r, (s - 1) % p, 1), (r, (s + 1) % p, 0)]
        s2 = gpu_position(self.ctx, fault.peer)[1]
        out = []
        if s2 == (s + 1) % p:
            out += [(r, s, 1), (r, s2, 0)]
        if s2 == (s - 1) % p:
            out += [(r, s2, 1), (r, s, 0)]
        return out


class _Documents:
    """Each step's micro-batch work from the scenario's documents: sequences drawn in the
    order (step, replica, micro-batch, sequence), optionally re-dealt
    (:func:`simulator.workload.documents.balanced`), averaged per micro-batch, less the
    means the plan was priced at."""

    def __init__(self, ctx: Context, plan: StepPlan, rng: np.random.Generator, balance: bool):
        sc, lay = ctx.scenario, ctx.layout
        self.stream = DocumentStream(sc.training.documents, sc.model.seq_len, rng)
        self.dp, self.m, self.b = lay.dp, ctx.microbatches, sc.training.micro_batch
        self.mean = mean_work(ctx)
        self.packing = sc.training.documents.packing
        work = plan.attention_part.sum(), plan.token_part.sum()
        self.rho = float(work[0] / work[1]) if balance and work[1] > 0 else None

    def block(self, k: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(attention delta, token delta or None when packed), each (k, dp, m)."""
        n = self.dp * self.m * self.b
        t, a = self.stream.sequences(k * n)
        t, a = t.reshape(k, n), a.reshape(k, n)
        if self.rho is not None:
            t, a = balanced(t, a, self.rho, self.dp, self.m)
        t, a = microbatch_work(t.reshape(k, self.dp, self.m * self.b), a.reshape(k, self.dp, self.m * self.b),
                               self.b)
        return a - self.mean[1], (None if self.packing else t - self.mean[0])


def _documents(ctx: Context, plan: StepPlan, rng: np.random.Generator, balance: bool) -> _Documents | None:
    return None if plan.attention_part is None else _Documents(ctx, plan, rng, balance)


class _OnOff:
    """Per unit, a two-state Markov chain in whole steps: healthy -> slowed with probability
    ``p_on`` per step, slowed -> healthy with ``p_off``; sojourns are geometric. Starts from
    the stationary distribution; only state changes cost random draws."""

    def __init__(self, units: int, p_on: float, p_off: float, rng: np.random.Generator):
        self.p = (p_on, p_off)
        self.rng = rng
        share = p_on / (p_on + p_off) if p_on > 0 else 0.0
        self.on = rng.random(units) < share
        self.left = self._sojourn(self.on)

    def _sojourn(self, on: np.ndarray) -> np.ndarray:
        """Steps until the next change (>= 1; never, as a huge count, when ``p_on`` is 0)."""
        p = np.where(on, self.p[1], self.p[0])
        left = np.full(on.shape, np.iinfo(np.int64).max // 4, dtype=np.int64)
        live = p > 0
        left[live] = self.rng.geometric(p[live])
        return left

    def block(self, k: int) -> np.ndarray:
        """(k, units) bool: slowed in each of the next ``k`` steps."""
        units = self.on.shape[0]
        diff = np.zeros((k + 1, units), dtype=np.int32)
        t = np.zeros(units, dtype=np.int64)
        active = np.arange(units)
        while active.size:
            end = np.minimum(t[active] + self.left[active], k)
            on = active[self.on[active]]
            np.add.at(diff, (t[on], on), 1)
            np.add.at(diff, (end[self.on[active]], on), -1)
            self.left[active] -= end - t[active]
            t[active] = end
            flip = active[self.left[active] == 0]
            self.on[flip] = ~self.on[flip]
            self.left[flip] = self._sojourn(self.on[flip])
            active = active[t[active] < k]
        return np.cumsum(diff[:k], axis=0) > 0


def _per_step(rate_per_s: float, step_s: float) -> float:
    """Probability that an exponential clock of ``rate_per_s`` rings within one step."""
    return float(-np.expm1(-rate_per_s * step_s))


def _window(start: int, steps: int | None, t0: int, k: int) -> tuple[int, int]:
    """Block-relative [lo, hi) of the steps ``start .. start + steps - 1`` (to the end if None)."""
    end = t0 + k if steps is None else start + steps
    return min(max(start - t0, 0), k), min(max(end - t0, 0), k)


def _sync_alpha(ctx: Context) -> np.ndarray:
    """Per stage, the latency part of its gradient collectives (s): their time at 0 bytes."""
    return np.array([sum(float(np.asarray(c.terms.time(0.0)).item()) for c in stage)
                     for stage in all_gradient_collectives(ctx)])


def _stretch(sync_s: float, alpha_s: float, fraction: float) -> float:
    """``(a + (sync - a) / fraction) / sync``: the bandwidth part slowed, the latency kept."""
    if sync_s <= 0:
        return 1.0
    alpha = min(max(alpha_s, 0.0), sync_s)
    return (alpha + (sync_s - alpha) / fraction) / sync_s
