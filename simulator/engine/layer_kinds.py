"""A pipeline stage's layers when they are not all alike: dense layers among a mixture of
experts' layers (``model.first_dense_layers``) and multi-token prediction layers
(``model.mtp_layers``).

A stage of kind ``(L_s, first, last, D, M)`` (:func:`~simulator.workload.stage_layers.stage_kinds`)
runs ``L_s - D`` layers of the model, ``D`` of :meth:`~simulator.config.scenario.ModelConfig.dense_model`
and ``M`` multi-token prediction layers, each a layer of the model plus its own projection and
norms (:func:`~simulator.workload.head_kernels.mtp_forward`) and another pass through the shared
output layer and loss. The stage is priced as ``n = L_s + M`` layers of their mean
(:func:`stage_layer`): every sum over its layers is exact; what is priced per layer (a ZeRO-3
unit's compute that hides the next unit's gather) takes the mean.

References
----------
DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, sec. 2.2 (multi-token
prediction) and sec. 4.2 (the first three layers dense). Megatron-Core
``MultiTokenPredictionLayer`` (megatron/core/transformer/multi_token_prediction.py) and
``moe_layer_freq`` (megatron/core/transformer/transformer_config.py).
"""

from __future__ import annotations

from dataclasses import fields, replace

from simulator.config.hybrid import pattern_counts
from simulator.cost.layer import LayerCost, kernels_time, layer_cost
from simulator.engine.context import Context, memoised
from simulator.workload.head_kernels import mtp_forward
from simulator.workload.params import full_pattern
from simulator.workload.stage_layers import stage_kinds

__all__ = ["dense_context", "dense_layer_cost", "hybrid_layer_costs", "layer_pass_seconds", "model_context",
           "model_layer_cost", "mtp_head_seconds", "stage_layer", "stage_layers", "sublayer_context"]


def model_layer_cost(ctx: Context, stack) -> LayerCost:
    """:func:`~simulator.cost.layer.layer_cost` of one of the model's layers, memoised by what
    it reads of a layout."""
    return memoised(ctx, _layer_key(ctx, "layer"), lambda: layer_cost(
        ctx.scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout, ctx.memo))


def layer_pass_seconds(layer: LayerCost) -> tuple[float, float]:
    """(forward, backward) seconds of one layer and microbatch as a pipeline stage runs it:
    compute plus the tensor- and context-parallel time in line and half the exposed
    expert-parallel time each, ``t_f = f + tp_f + cp + ep / 2``, ``t_b = b + tp_b + cp + ep / 2``
    (recompute aside: the stage adds it to the backward)."""
    half_ep = layer.ep / 2
    return (layer.forward + layer.tp_forward + layer.cp + half_ep,
            layer.backward + layer.tp_backward + layer.cp + half_ep)


def _layer_key(ctx: Context, name: str) -> tuple:
    """The memo key of a layer cost: what it reads of a layout."""
    par = ctx.scenario.parallelism
    return (name, ctx.layout, ctx.shape.micro_batch, par.sequence_parallel, par.recompute, ctx.microbatches,
            par.virtual_stages, par.recompute_modules, par.recompute_fraction)


def stage_layers(ctx: Context, stack) -> list[LayerCost]:
    """Per pipeline stage, its mean layer (:func:`stage_layer` of its kind)."""
    layer, dense = model_layer_cost(ctx, stack), dense_layer_cost(ctx, stack)
    hybrid = hybrid_layer_costs(ctx, stack)
    kinds = stage_kinds(ctx.scenario.model, ctx.scenario.parallelism)
    return [stage_layer(layer, dense, kind, hybrid)[1] for kind in kinds]


def dense_context(ctx: Context) -> Context:
    """``ctx`` for one of the model's dense layers: its scenario and layer shape with
    :meth:`~simulator.config.scenario.ModelConfig.dense_model`, and a memo of its own (the
    layer kernels' keys name the shape, not the model)."""
    return model_context(ctx, ctx.scenario.model.dense_model(), "dense")


def model_context(ctx: Context, model, name: str) -> Context:
    """``ctx`` for layers of another ``model`` (a dense layer, a hybrid pattern's kind): its
    scenario and layer shape with ``model`` and a memo of its own, ``name``d."""
    return replace(ctx, scenario=ctx.scenario.model_copy(update={"model": model}),
                   shape=replace(ctx.shape, model=model), memo=memoised(ctx, (f"{name}-layer-memo",), dict))


def hybrid_layer_costs(ctx: Context, stack) -> dict[str, LayerCost]:
    """Per kind of layer in ``model.hybrid_pattern`` (:mod:`simulator.config.hybrid`), one
    layer's :func:`~simulator.cost.layer.layer_cost` (its
    :meth:`~simulator.config.scenario.ModelConfig.sublayer_model`); empty without a pattern."""
    model = ctx.scenario.model
    if model.hybrid_pattern is None:
        return {}

    def cost(kind: str) -> LayerCost:
        return memoised(ctx, _layer_key(ctx, f"hybrid-{kind}"),
                        lambda: model_layer_cost(sublayer_context(ctx, kind), stack))
    return {kind: cost(kind) for kind in pattern_counts(full_pattern(model))}


def sublayer_context(ctx: Context, kind: str) -> Context:
    """:func:`model_context` of one ``kind`` of a hybrid pattern's layers
    (:meth:`~simulator.config.scenario.ModelConfig.sublayer_model`)."""
    return model_context(ctx, ctx.scenario.model.sublayer_model(kind), f"hybrid-{kind}")


def dense_layer_cost(ctx: Context, stack) -> LayerCost | None:
    """:func:`~simulator.cost.layer.layer_cost` of one of the model's dense layers; None
    without them."""
    if not ctx.scenario.model.first_dense_layers:
        return None
    return memoised(ctx, _layer_key(ctx, "dense-layer"), lambda: model_layer_cost(dense_context(ctx), stack))


def mtp_head_seconds(ctx: Context, heads: tuple[float, float, float]) -> tuple[float, float]:
    """(forward, backward) seconds per microbatch one multi-token prediction layer adds to its
    transformer layer: :func:`~simulator.workload.head_kernels.mtp_forward` and its backward,
    plus the output layer and loss again (``heads``: embedding, logits forward, logits
    backward, :func:`~simulator.cost.layer.head_costs`)."""
    def price() -> tuple[float, float]:
        kernels = mtp_forward(ctx.shape)
        return (kernels_time(ctx.compute, kernels) + heads[1],
                kernels_time(ctx.compute, kernels.backward()) + heads[2])
    return memoised(ctx, ("mtp-heads", ctx.layout, ctx.shape.micro_batch, ctx.compute.speedup), price)


def stage_layer(layer: LayerCost, dense: LayerCost | None, kind: tuple,
                hybrid: dict[str, LayerCost] | None = None) -> tuple[int, LayerCost]:
    """(``n``, the mean layer) of a stage of ``kind`` (module docstring): ``n = L_s + M``
    layers, ``L_s - D + M`` of them ``layer`` and ``D`` of them ``dense``; a hybrid model's
    stage, ``n`` its pattern's layers (``kind``'s last field, the prediction depths' among them),
    each of its kind's cost in ``hybrid`` (:func:`hybrid_layer_costs`)."""
    layers, _, _, dense_layers, mtp_layers, pattern = kind
    n = layers + mtp_layers
    if pattern and hybrid:              # its decoder layers and its prediction depths' layers
        n = len(pattern)
        return n, _mean_cost([(hybrid[k], c) for k, c in pattern_counts(pattern).items()], n)
    if not dense_layers or dense is None or n == 0:
        return n, layer
    return n, _mean_cost([(layer, n - dense_layers), (dense, dense_layers)], n)


def _mean_cost(parts: list[tuple[LayerCost, int]], n: int) -> LayerCost:
    """The mean of ``n`` layers, ``count`` of each cost in ``parts``: field by field."""
    return LayerCost(*(sum(count * getattr(cost, f.name) for cost, count in parts) / n
                       for f in fields(LayerCost)))
