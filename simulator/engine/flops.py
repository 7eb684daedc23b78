"""FLOPs of one training step, counted as Narayanan et al. (SC21) count them.

Model FLOPs: forward + backward = 3 x forward GEMM FLOPs of every layer and the
logits, full (non-causal) attention (a mixture of experts: ``top_k`` experts' MLPs and the
shared experts' per token; its ``first_dense_layers`` their dense MLP; each multi-token
prediction layer a layer, its ``2h -> h`` projection and the output layer again, as
Megatron-Bridge's ``flop_utils.transformer_flops`` counts them; sliding-window layers,
``model.attention_window``, count twice their band's pairs, as causal layers count twice their
triangle's: Megatron-Bridge's count at v0.4.2 has no window term, but counting full attention
there reports more FLOP/s than the GPU has at long sequences, an MFU above 1); for GPT this is
72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
Hardware FLOPs add the recomputed forward: full recompute gives
96 B s l h^2 (1 + s/(6h) + V/(16 l h)); selective recompute adds the attention core, or with
``recompute_modules`` the modules' forward kernels (:mod:`simulator.workload.recompute_modules`),
or under torchtitan's per-op checkpointing (the stack's ``recompute.selective:
every_second_matmul``) the matmuls it re-runs, as the cost model prices them
(:func:`simulator.cost.layer._op_sac_recompute`): every linear under float8 or async TP, else
every second one (wk, wo, w3), never the attention core, whose output it saves.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.config.loader import scenario_stack
from simulator.config.scenario import ModelConfig, Recompute, Scenario
from simulator.config.stack import SelectiveRecompute
from simulator.cost.context_parallel import attention_recomputed
from simulator.workload.attention_window import local_layer_share, pair_fraction
from simulator.workload.head_kernels import logits_forward, mtp_forward
from simulator.workload.layer_shape import Attention, LayerShape
from simulator.workload.mlp_kernels import mlp_forward_flops, shared_expert_flops
from simulator.workload.params import hybrid_kinds
from simulator.workload.recompute_modules import recompute_forward
from simulator.workload.transformer import layer_forward


def step_flops(scenario: Scenario, work: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) of one optimizer step over all GPUs.

    ``work``: the mean token and attention factors ``(E[t], E[a])`` of the scenario's
    documents (:mod:`simulator.workload.documents`): the attention core's FLOPs scale by
    ``E[a]`` (``sum l_i^2`` per sequence), every other FLOP by ``E[t]``.
    """
    mdl, training = scenario.model, scenario.training
    full = LayerShape(mdl, training.global_batch, tp=1, attention=Attention.UNFUSED)
    shape = replace(full, model=mdl.model_copy(update={"experts": 1})) if mdl.experts > 1 else full
    parts = _layer_parts(full)
    window = _window_pairs(mdl)
    priced = [(_layer_flops(part, window), n) for part, n in parts]
    layer_flops = sum(n * per for (per, _), n in priced)
    core = sum(n * attention for (_, attention), n in priced)
    mtp = mdl.mtp_layers
    logits = (1 + mtp) * logits_forward(shape).flops + mtp * mtp_forward(shape).flops
    model = 3 * (layer_flops + logits)
    recompute = scenario.parallelism.recompute
    modules = scenario.parallelism.recomputed_modules
    stack = scenario_stack(scenario)
    op_sac = stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL
    if recompute == Recompute.FULL:
        extra = scenario.parallelism.full_recompute_share * layer_flops
    elif modules is not None:
        extra = sum(n * recompute_forward(part, layer_forward(part), modules).flops for part, n in parts)
    elif recompute == Recompute.SELECTIVE and op_sac:
        extra = _op_sac_flops(full, mdl.layers + mtp)
    elif recompute == Recompute.SELECTIVE:
        extra = core
    else:
        extra = 0.0
    if work == (1.0, 1.0):
        return model, model + extra
    core_extra = core * attention_recomputed(scenario, stack)
    t, a = work
    scaled_model = (model - 3 * core) * t + 3 * core * a
    return scaled_model, scaled_model + (extra - core_extra) * t + core_extra * a


def _layer_parts(full: LayerShape) -> list[tuple[LayerShape, int]]:
    """(the step's shape of one kind of layer, how many): the model's layers and multi-token
    prediction layers, its ``first_dense_layers`` dense, or a hybrid pattern's kinds
    (:func:`~simulator.workload.params.hybrid_kinds`)."""
    mdl = full.model
    if mdl.hybrid_pattern is not None:
        return [(replace(full, model=kind), n) for kind, n in hybrid_kinds(mdl)]
    layers, dense = mdl.layers + mdl.mtp_layers, mdl.first_dense_layers
    return [(full, layers - dense)] + ([(replace(full, model=mdl.dense_model()), dense)] if dense else [])


def _layer_flops(full: LayerShape, window: float) -> tuple[float, float]:
    """(forward model FLOPs of one layer of ``full``'s model, of them its attention core's):
    the layer's GEMMs with SC21's full ``s^2`` attention core (``window``: the share of it
    the layer's attention counts, :func:`_window_pairs`), a mixture of experts' ``top_k``
    experts' MLPs and shared experts per token."""
    mdl = full.model
    shape = replace(full, model=mdl.model_copy(update={"experts": 1})) if mdl.experts > 1 else full
    layer = layer_forward(shape)
    g = layer.gemms[1:3] if mdl.block.has_attention else np.zeros((0, 4))
    core = float((2 * g[:, 0] * g[:, 1] * g[:, 2] * g[:, 3]).sum())
    unwindowed = (1.0 - window) * core
    per_layer = layer.flops - unwindowed
    if mdl.experts > 1 and mdl.block.has_mlp:
        per_layer += (mdl.top_k - 1) * mlp_forward_flops(shape) + shared_expert_flops(full)
    return per_layer, core - unwindowed


def _window_pairs(model: ModelConfig) -> float:
    """The attention core's count over a layer's mean as a share of full attention's ``s^2``:
    1 without a window, else ``(1 - f) + f 2 p_w / s^2`` for a share ``f`` of local layers of
    ``p_w`` pairs each (:func:`~simulator.workload.attention_window.pair_fraction`: the causal
    layers keep SC21's full count, the local ones count their band twice, as the causal ones
    count their triangle)."""
    share = local_layer_share(model.attention_window, model.full_attention_every, model.layers)
    return pair_fraction(model.seq_len, model.attention_window, share)


def _op_sac_flops(full: LayerShape, layers: int) -> float:
    """FLOPs torchtitan's per-op selective checkpointing re-runs over ``layers`` layers: every
    second matmul, wk, wo and w3, under float8 linears and async TP too (both are still
    ``aten.mm`` when the policy decides): ``2 T (n_kv d h + h c + f h)`` per layer for ``T``
    tokens of the step (:func:`simulator.cost.layer._op_sac_recompute`)."""
    mdl = full.model
    per_token = mdl.kv_heads * full.head_dim * mdl.hidden + mdl.hidden * mdl.context_width \
        + mdl.ffn_hidden * mdl.hidden
    return layers * 2.0 * full.tokens * per_token
