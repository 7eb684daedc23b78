"""Per-GPU slowdowns of one training step (the scenario's ``noise`` section)."""

from __future__ import annotations

import numpy as np

from simulator.config.scenario import NoiseDistribution
from simulator.engine.context import Context


def entity_slowdown(ctx: Context, rng: np.random.Generator) -> np.ndarray:
    """(dp, pp) slowdown factors: the max over each entity's tp*cp GPUs of per-GPU noise.

    Per GPU and step: lognormal jitter ``exp(N(0, sigma))`` times, with probability
    ``throttle.probability``, a throttling ``factor``; ``slow_gpus`` and every GPU of
    ``slow_nodes`` are always slower.
    Tensor-parallel GPUs synchronise every layer, so an entity runs at the pace of its
    slowest GPU.
    """
    lay, noise = ctx.layout, ctx.scenario.noise
    shape = (lay.dp, lay.pp, lay.tp * lay.cp)
    factors = np.ones(shape)
    jitter = noise.straggler
    if jitter.distribution == NoiseDistribution.LOGNORMAL and jitter.sigma > 0:
        factors *= np.exp(rng.normal(0.0, jitter.sigma, size=shape))
    throttle = noise.throttle
    if throttle.probability > 0 and throttle.factor > 1:
        factors *= np.where(rng.random(shape) < throttle.probability, throttle.factor, 1.0)
    per_node = ctx.collectives.cluster.hw.gpus_per_node
    slow = [(s.gpu, s.factor) for s in noise.slow_gpus]
    slow += [(n.node * per_node + g, n.factor) for n in noise.slow_nodes for g in range(per_node)]
    for gpu, factor in slow:
        rest, within = divmod(gpu, lay.tp * lay.cp)
        pp_rank, dp_rank = divmod(rest, lay.dp)
        factors[dp_rank, pp_rank, within] *= factor
    return factors.max(axis=2)
