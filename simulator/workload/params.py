"""Parameter counts of decoder-only transformers (GPT with GELU, Llama-style SwiGLU/GQA, MoE).

Per layer, with hidden h, FFN width f, a heads of dimension d (``model.head_dim``, h/a by
default) and k kv heads: attention ``h*a*d (Q) + 2*h*k*d (K, V) + a*d*h (out)``; MLP ``2 h f`` (GELU) or
``3 h f`` (SwiGLU), times the expert count for MoE plus an ``h * E`` router and the shared
experts' MLP of width ``f_s`` (``model.shared_expert_ffn``: ``2 h f_s`` or ``3 h f_s``, no biases,
as Megatron-Core's ``SharedExpertMLP`` asserts).
GPT-style models add biases and two LayerNorms (``13 h`` per layer in all) and
learned positions ``s h``; Llama-style models use two RMSNorms (``2 h``) and an
untied output layer (``V h``). For GPT this equals Narayanan et al. (SC21) eq.:
``12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))``; GPT-3 175B gives 174.6e9.
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.config.hybrid import Block, pattern_counts
from simulator.config.scenario import Mlp, ModelConfig


def layer_parameters(model: ModelConfig) -> int:
    """Parameters of one layer (all experts included): a transformer layer's attention and MLP,
    or the one block ``model.block`` names (:mod:`simulator.config.hybrid`; a Mamba-2 mixer's
    :meth:`~simulator.config.hybrid.MambaConfig.tensor_sizes`)."""
    block = model.block
    if block == Block.MAMBA:
        return sum(model.mamba.tensor_sizes(model.hidden))
    h = model.hidden
    q_width, kv_width = model.q_width, model.kv_width
    attention = 2 * h * q_width + 2 * h * kv_width if model.mla is None else sum(_attention_tensors(model))
    gelu = model.mlp == Mlp.GELU
    mlp = _mlp_parameters(model)
    if gelu:
        attention += q_width + 2 * kv_width + h      # Q, K, V and output biases
    norm = 2 * h if gelu else h
    router = h * model.experts if model.experts > 1 else 0
    total = attention + norm if block.has_attention else 0
    if block.has_mlp:
        total += (model.experts * mlp + norm + router + sum(shared_expert_tensor_sizes(model))
                  + model.latent_projection_parameters())
    return total


def _mlp_parameters(model: ModelConfig) -> int:
    """One MLP's (one expert's) parameters: GELU ``2 h f`` and its two biases, SwiGLU ``3 h f``,
    squared ReLU ``2 h f``; a latent mixture of experts' experts with ``L`` for ``h``."""
    h, f = model.expert_width, model.ffn_hidden
    if model.mlp == Mlp.GELU:
        return 2 * h * f + f + h
    return (3 if model.mlp == Mlp.SWIGLU else 2) * h * f


def embedding_parameters(model: ModelConfig) -> int:
    """Token embedding, learned positions (GPT) and the output layer unless it is tied to the
    embedding (``model.tied_embeddings``)."""
    h = model.hidden
    positions = model.seq_len * h if model.mlp == Mlp.GELU else 0
    return model.vocab * h * (1 if model.tied_embeddings else 2) + positions


def parameter_count(model: ModelConfig) -> int:
    """Total parameters (final norm excluded, as in the SC21 formula): the decoder layers
    (``first_dense_layers`` of them dense), the multi-token prediction layers
    (:func:`mtp_layer_parameters`) and the embeddings."""
    if model.hybrid_pattern is not None:
        layers = hybrid_layer_parameters(model, full_pattern(model), model.mtp_layers)
        return layers + embedding_parameters(model)
    k = model.first_dense_layers
    layers = (model.layers - k + model.mtp_layers) * layer_parameters(model)
    layers += k * layer_parameters(model.dense_model()) if k else 0
    return layers + model.mtp_layers * mtp_extra_parameters(model) + embedding_parameters(model)


def hybrid_layer_parameters(model: ModelConfig, pattern: str, mtp_layers: int,
                            one: Callable[[ModelConfig], int] | None = None, extras: bool = True) -> int:
    """Parameters of a hybrid model's layers in ``pattern`` (a stage's, with its ``mtp_layers``
    prediction depths' ``mtp_pattern`` layers among them) and each depth's projection and norms
    (:func:`mtp_extra_parameters`; not with ``extras`` false), the depths' once if they share
    their weights (``mtp_shared``): ``one`` of each layer's model (default
    :func:`layer_parameters`; :func:`active_layer_parameters` counts what a token touches)."""
    one = one or layer_parameters
    per_depth = pattern_counts(model.mtp_pattern) if mtp_layers else {}
    held = 1 if model.mtp_shared and mtp_layers else mtp_layers
    total = 0
    for kind, n in pattern_counts(pattern).items():
        n += (held - mtp_layers) * per_depth.get(kind, 0)      # shared depths' layers held once
        total += n * one(model.sublayer_model(kind))
    return total + (held * mtp_extra_parameters(model) if extras else 0)


def full_pattern(model: ModelConfig) -> str:
    """A hybrid model's layers, its ``mtp_layers`` prediction depths' ``mtp_pattern`` after them."""
    return model.hybrid_pattern + (model.mtp_pattern or "") * model.mtp_layers


def hybrid_kinds(model: ModelConfig, pattern: str | None = None) -> list[tuple[ModelConfig, int]]:
    """(the model of one kind of layer, how many) over ``pattern`` (default :func:`full_pattern`):
    :meth:`~simulator.config.scenario.ModelConfig.sublayer_model` of each character present."""
    counts = pattern_counts(full_pattern(model) if pattern is None else pattern)
    return [(model.sublayer_model(kind), n) for kind, n in counts.items()]


def active_parameter_count(model: ModelConfig) -> int:
    """Parameters a token touches: only ``top_k`` of the experts' MLPs (the dense layers and the
    multi-token prediction layers' extras whole)."""
    if model.experts == 1:
        return parameter_count(model)
    if model.hybrid_pattern is not None:
        active = hybrid_layer_parameters(model, full_pattern(model), model.mtp_layers,
                                         active_layer_parameters)
        return active + embedding_parameters(model)
    per_expert = (layer_parameters(model) - non_expert_parameters(model)) // model.experts
    active_layer = non_expert_parameters(model) + model.top_k * per_expert
    k = model.first_dense_layers
    dense = k * layer_parameters(model.dense_model()) if k else 0
    return ((model.layers - k + model.mtp_layers) * active_layer + dense
            + model.mtp_layers * mtp_extra_parameters(model) + embedding_parameters(model))


def active_layer_parameters(model: ModelConfig) -> int:
    """Parameters of one layer a token touches: its ``top_k`` experts' and the rest."""
    if model.experts == 1:
        return layer_parameters(model)
    return non_expert_parameters(model) + model.top_k * _mlp_parameters(model)


def mtp_extra_parameters(model: ModelConfig) -> int:
    """Parameters of one multi-token prediction layer besides its transformer layer: the
    embedding and hidden-state RMSNorms, the ``2h -> h`` projection ``eh_proj`` (no bias) and
    the final norm, ``2 h^2 + 3 h`` (Megatron-Core ``MultiTokenPredictionLayer``,
    megatron/core/transformer/multi_token_prediction.py: ``enorm``, ``hnorm``, ``eh_proj``,
    ``final_layernorm``; it shares the embedding and output layer)."""
    h = model.hidden
    return 2 * h * h + 3 * h


def dense_layer_parameters(model: ModelConfig) -> int:
    """Parameters of one layer outside its experts: the whole layer for a dense model."""
    return layer_parameters(model) if model.experts == 1 else non_expert_parameters(model)


def non_expert_parameters(model: ModelConfig) -> int:
    """Parameters of one layer outside its experts' MLPs."""
    experts = model.experts * _mlp_parameters(model) if model.block.has_mlp else 0
    return layer_parameters(model) - experts


def layer_tensor_sizes(model: ModelConfig, experts: int | None = None) -> list[int]:
    """Elements of each parameter tensor of one layer, as frameworks register them.

    GPT (Megatron): fused QKV weight and bias, output projection weight and bias, two
    LayerNorms (weight, bias), fc1 and fc2 weights and biases: 12 tensors. Llama: wq, wk,
    wv, wo, w1, w3, w2 and two RMSNorm weights: 9 tensors. MoE layers list each expert's
    MLP matrices and the router. The sizes sum to :func:`layer_parameters`; with ``experts``
    (an expert-parallel rank's ``E / ep``) only that many experts' matrices are listed.
    """
    h, q, kv, block = model.hidden, model.q_width, model.kv_width, model.block
    if block == Block.MAMBA:
        return model.mamba.tensor_sizes(h)
    if model.mlp == Mlp.GELU:
        attention = [h * (q + 2 * kv), q + 2 * kv, q * h, h]
        norms = [h, h] * block.sites
    else:
        attention = [h * q, h * kv, h * kv, q * h]
        norms = [h] * block.sites
    if model.mla is not None:
        attention = _attention_tensors(model)
    router = [h * model.experts] if model.experts > 1 else []
    latent = [h * model.moe_latent] * 2 if model.latent_projection_parameters() else []
    mlp = mlp_tensor_sizes(model, experts) + shared_expert_tensor_sizes(model) + latent
    mlp = mlp if block.has_mlp else []
    return (attention if block.has_attention else []) + mlp + norms + (router if block.has_mlp else [])


def _attention_tensors(model: ModelConfig) -> list[int]:
    """Latent attention's weight tensors (:meth:`~simulator.config.mla.MlaConfig.attention_tensor_sizes`:
    down and up projections, the two latent norms, the output projection; no biases)."""
    return model.mla.attention_tensor_sizes(model.hidden, model.heads)


def shared_expert_tensor_sizes(model: ModelConfig) -> list[int]:
    """Elements of the shared experts' weight tensors (fc1 and fc2; SwiGLU's fc1 as two), none
    without ``model.shared_expert_ffn``. They are the layer's, not an expert's: every
    expert-parallel rank holds them and they reduce over the whole data-parallel group."""
    h, f = model.hidden, model.shared_expert_ffn
    if not f or model.experts == 1:
        return []
    return [h * f, h * f, f * h] if model.mlp == Mlp.SWIGLU else [h * f, f * h]


def mlp_tensor_sizes(model: ModelConfig, experts: int | None = None) -> list[int]:
    """Elements of each MLP parameter tensor of one layer (:func:`layer_tensor_sizes`): GELU's
    fc1 and fc2 weights and biases, SwiGLU's w1, w3 and w2; every expert's, or ``experts``
    experts' of a mixture of experts."""
    h, f = model.expert_width, model.ffn_hidden
    mlp = {Mlp.GELU: [h * f, f, f * h, h], Mlp.SWIGLU: [h * f, h * f, f * h]}.get(model.mlp, [h * f, f * h])
    return mlp * (model.experts if experts is None else experts)
