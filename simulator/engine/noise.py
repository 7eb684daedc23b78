"""Per-GPU slowdowns of one training step that have no memory: i.i.d. jitter and throttling,
and the fixed slow GPUs and servers of the scenario's ``noise`` section.

Processes with memory (episodes, fail-slow Markov processes, host pauses, NIC faults) are in
:mod:`simulator.engine.noise_process`, which calls :func:`gpu_factors` once per step so the
random stream of a seed is the one it has always been.
"""

from __future__ import annotations

import numpy as np

from simulator.config.scenario import NoiseDistribution
from simulator.engine.context import Context


def gpu_factors(ctx: Context, rng: np.random.Generator, jitter: bool = True,
                fixed: bool = True) -> np.ndarray:
    """(dp, pp, tp*cp) per-GPU slowdown factors of one step (dimensionless, > 0).

    Per GPU and step: lognormal jitter ``exp(N(0, sigma))`` times, with probability
    ``throttle.probability``, a throttling ``factor``; ``slow_gpus`` and every GPU of
    ``slow_nodes`` are always slower. Draws, in this order: ``normal(shape)`` if jitter is
    on, then ``random(shape)`` if throttling is on. ``jitter`` / ``fixed`` False leave out the
    random part (no draws) or the fixed slow GPUs and servers (attribution's what-ifs).
    """
    lay, noise = ctx.layout, ctx.scenario.noise
    shape = (lay.dp, lay.pp, lay.tp * lay.cp)
    factors = np.ones(shape)
    if jitter:
        _jitter(noise, rng, factors)
    if not fixed:
        return factors
    per_node = ctx.collectives.cluster.hw.gpus_per_node
    slow = [(s.gpu, s.factor) for s in noise.slow_gpus]
    slow += [(n.node * per_node + g, n.factor) for n in noise.slow_nodes for g in range(per_node)]
    for gpu, factor in slow:
        dp_rank, pp_rank, within = gpu_position(ctx, gpu)
        factors[dp_rank, pp_rank, within] *= factor
    return factors


def _jitter(noise, rng: np.random.Generator, factors: np.ndarray) -> None:
    """Multiply ``factors`` by the step's lognormal jitter and throttling (in place)."""
    shape = factors.shape
    jitter = noise.straggler
    if jitter.distribution == NoiseDistribution.LOGNORMAL and jitter.sigma > 0:
        factors *= np.exp(rng.normal(0.0, jitter.sigma, size=shape))
    throttle = noise.throttle
    if throttle.probability > 0 and throttle.factor > 1:
        factors *= np.where(rng.random(shape) < throttle.probability, throttle.factor, 1.0)


def gpu_position(ctx: Context, gpu: int) -> tuple[int, int, int]:
    """(data-parallel rank, pipeline stage, index among the entity's tp*cp GPUs) of ``gpu``
    (:meth:`simulator.workload.layout.Layout.gpu`: tp fastest, then cp, dp, pp)."""
    lay = ctx.layout
    rest, within = divmod(gpu, lay.tp * lay.cp)
    pp_rank, dp_rank = divmod(rest, lay.dp)
    return dp_rank, pp_rank, within


def entity_slowdown(ctx: Context, rng: np.random.Generator) -> np.ndarray:
    """(dp, pp) slowdown factors of one step: the max over each entity's tp*cp GPUs of
    :func:`gpu_factors` (tensor-parallel GPUs synchronise every layer, so an entity runs at
    the pace of its slowest GPU)."""
    return gpu_factors(ctx, rng).max(axis=2)
