"""FLOPs of one training step, counted as Narayanan et al. (SC21) count them.

Model FLOPs: forward + backward = 3 x forward GEMM FLOPs of every layer and the
logits, full (non-causal) attention (a mixture of experts: ``top_k`` experts' MLPs and the
shared experts' per token); for GPT this is 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
Hardware FLOPs add the recomputed forward: full recompute gives
96 B s l h^2 (1 + s/(6h) + V/(16 l h)); selective recompute adds the attention core.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.config.scenario import Recompute, Scenario
from simulator.workload.transformer import (
    Attention,
    LayerShape,
    layer_forward,
    logits_forward,
    mlp_forward_flops,
    shared_expert_flops,
)


def step_flops(scenario: Scenario, work: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) of one optimizer step over all GPUs.

    ``work``: the mean token and attention factors ``(E[t], E[a])`` of the scenario's
    documents (:mod:`simulator.workload.documents`): the attention core's FLOPs scale by
    ``E[a]`` (``sum l_i^2`` per sequence), every other FLOP by ``E[t]``.
    """
    mdl, training = scenario.model, scenario.training
    full = LayerShape(mdl, training.global_batch, tp=1, attention=Attention.UNFUSED)
    shape = replace(full, model=mdl.model_copy(update={"experts": 1})) if mdl.experts > 1 else full
    layer = layer_forward(shape)
    per_layer = layer.flops
    if mdl.experts > 1:
        per_layer += (mdl.top_k - 1) * mlp_forward_flops(shape) + shared_expert_flops(full)
    logits = logits_forward(shape).flops
    model = 3 * (mdl.layers * per_layer + logits)
    recompute = scenario.parallelism.recompute
    if recompute == Recompute.FULL:
        extra = mdl.layers * per_layer
    elif recompute == Recompute.SELECTIVE:
        g = layer.gemms[1:3]
        extra = mdl.layers * float((2 * g[:, 0] * g[:, 1] * g[:, 2] * g[:, 3]).sum())
    else:
        extra = 0.0
    if work == (1.0, 1.0):
        return model, model + extra
    core = mdl.layers * float((2 * layer.gemms[1:3, 0] * layer.gemms[1:3, 1] * layer.gemms[1:3, 2]
                               * layer.gemms[1:3, 3]).sum())
    core_extra = core if recompute in (Recompute.FULL, Recompute.SELECTIVE) else 0.0
    t, a = work
    scaled_model = (model - 3 * core) * t + 3 * core * a
    return scaled_model, scaled_model + (extra - core_extra) * t + core_extra * a
