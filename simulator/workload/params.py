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

from simulator.config.scenario import Mlp, ModelConfig


def layer_parameters(model: ModelConfig) -> int:
    """Parameters of one transformer layer (all experts included)."""
    h, f = model.hidden, model.ffn_hidden
    q_width, kv_width = model.q_width, model.kv_width
    attention = 2 * h * q_width + 2 * h * kv_width if model.mla is None else sum(_attention_tensors(model))
    gelu = model.mlp == Mlp.GELU
    mlp = (2 if gelu else 3) * h * f
    if gelu:
        attention += q_width + 2 * kv_width + h      # Q, K, V and output biases
        mlp += f + h                           # the two MLP biases
    norms = 4 * h if gelu else 2 * h
    router = h * model.experts if model.experts > 1 else 0
    return attention + model.experts * mlp + norms + router + sum(shared_expert_tensor_sizes(model))


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
    k = model.first_dense_layers
    layers = (model.layers - k + model.mtp_layers) * layer_parameters(model)
    layers += k * layer_parameters(model.dense_model()) if k else 0
    return layers + model.mtp_layers * mtp_extra_parameters(model) + embedding_parameters(model)


def active_parameter_count(model: ModelConfig) -> int:
    """Parameters a token touches: only ``top_k`` of the experts' MLPs (the dense layers and the
    multi-token prediction layers' extras whole)."""
    if model.experts == 1:
        return parameter_count(model)
    per_expert = (layer_parameters(model) - non_expert_parameters(model)) // model.experts
    active_layer = non_expert_parameters(model) + model.top_k * per_expert
    k = model.first_dense_layers
    dense = k * layer_parameters(model.dense_model()) if k else 0
    return ((model.layers - k + model.mtp_layers) * active_layer + dense
            + model.mtp_layers * mtp_extra_parameters(model) + embedding_parameters(model))


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
    h, f = model.hidden, model.ffn_hidden
    mlp = (2 * h * f + f + h) if model.mlp == Mlp.GELU else 3 * h * f
    return layer_parameters(model) - model.experts * mlp


def layer_tensor_sizes(model: ModelConfig, experts: int | None = None) -> list[int]:
    """Elements of each parameter tensor of one layer, as frameworks register them.

    GPT (Megatron): fused QKV weight and bias, output projection weight and bias, two
    LayerNorms (weight, bias), fc1 and fc2 weights and biases: 12 tensors. Llama: wq, wk,
    wv, wo, w1, w3, w2 and two RMSNorm weights: 9 tensors. MoE layers list each expert's
    MLP matrices and the router. The sizes sum to :func:`layer_parameters`; with ``experts``
    (an expert-parallel rank's ``E / ep``) only that many experts' matrices are listed.
    """
    h, q, kv = model.hidden, model.q_width, model.kv_width
    if model.mlp == Mlp.GELU:
        attention = [h * (q + 2 * kv), q + 2 * kv, q * h, h]
        norms = [h, h, h, h]
    else:
        attention = [h * q, h * kv, h * kv, q * h]
        norms = [h, h]
    if model.mla is not None:
        attention = _attention_tensors(model)
    router = [h * model.experts] if model.experts > 1 else []
    return attention + mlp_tensor_sizes(model, experts) + shared_expert_tensor_sizes(model) + norms + router


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
    return [h * f, f * h] if model.mlp == Mlp.GELU else [h * f, h * f, f * h]


def mlp_tensor_sizes(model: ModelConfig, experts: int | None = None) -> list[int]:
    """Elements of each MLP parameter tensor of one layer (:func:`layer_tensor_sizes`): GELU's
    fc1 and fc2 weights and biases, SwiGLU's w1, w3 and w2; every expert's, or ``experts``
    experts' of a mixture of experts."""
    h, f = model.hidden, model.ffn_hidden
    mlp = [h * f, f, f * h, h] if model.mlp == Mlp.GELU else [h * f, h * f, f * h]
    return mlp * (model.experts if experts is None else experts)
