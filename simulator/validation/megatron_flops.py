"""Megatron-LM's model FLOP count of 2026, the figure its logs and tables report as "TFLOP/s/GPU".

``num_floating_point_operations`` / ``transformer_flops`` in ``megatron/training/training.py``
(NVIDIA/Megatron-LM dev @ d48bd6be0a, 2026-08; the causal halving of the core attention has
been in it since 2025-10, c7590d8c37). Per token of a training step (forward and backward:
every product 3 times, 2 FLOPs per multiply-add), for ``L`` layers of width ``h``, sequence
``s`` and ``m`` multi-token-prediction layers (counted as layers of the last layer's kind):

    6 h (f_d g D + f_e k g E + f_s g E)                      MLPs: dense, routed, shared experts
    + (L + m) (A_lin + A_core s)                             attention
    + 6 m (3 h + 2 h^2) + 6 h V (m + 1)                       MTP projections, logits

with ``g`` 3 for SwiGLU (2 otherwise), ``D`` dense layers, ``E`` MoE layers, ``k`` experts per
token, ``V`` the padded vocabulary. Grouped-query attention: ``A_lin = 6 (h (q + 2 c) + q h)``
for query width ``q = a d`` and key width ``c``, ``A_core = 6 q`` (two ``s^2``-sized products,
halved for the causal mask). Multi-latent attention: ``A_lin = 6 (Q + r_kv (h + a (d_n + d_v)
+ 1) + h d_r + a d_v h)`` with ``Q = r_q (h + a (d_n + d_r) + 1)`` (``h a (d_n + d_r)`` without
a query latent), ``A_core = 6 a (d_n + d_r + d_v) / 2``.

Checked against the tables that publish both figures (``tests/test_megatron_flops.py``):
Megatron-Bridge's 26.06 rows give 22.99 GFLOP per token for Qwen3 30B-A3B (1,041 TFLOP/s at
45,275 tokens/s), 148.1 for Qwen3 235B-A22B and 260.2 for DeepSeek-V3, all at sequence 4,096.
"""

from __future__ import annotations

from simulator.config.scenario import ModelConfig


def megatron_flops_per_token(model: ModelConfig) -> float:
    """Megatron-LM's training FLOPs per token of ``model`` (the module docstring's formula)."""
    h, extra = model.hidden, model.mtp_layers
    moe_layers, dense_layers = _mlp_layer_counts(model)
    gated = 3.0 if model.mlp.value == "swiglu" else 2.0
    dense_width = (model.dense_ffn or model.ffn_hidden) if model.experts > 1 else model.ffn_hidden
    mlps = 6.0 * h * gated * (dense_width * dense_layers
                              + (model.ffn_hidden * model.top_k + model.shared_expert_ffn) * moe_layers)
    linear, core = _attention_terms(model)
    attention = (model.layers + extra) * (linear + core * model.seq_len)
    heads_out = 6.0 * extra * (3.0 * h + 2.0 * h * h) + 6.0 * h * model.vocab * (extra + 1)
    return mlps + attention + heads_out


def _mlp_layer_counts(model: ModelConfig) -> tuple[int, int]:
    """(MoE layers, dense layers), the multi-token-prediction layers counted as MoE layers
    when the model's last layer is one (``last_layer_is_moe``)."""
    if model.experts <= 1:
        return 0, model.layers + model.mtp_layers
    moe = model.layers - model.first_dense_layers
    return moe + model.mtp_layers, model.first_dense_layers


def _attention_terms(model: ModelConfig) -> tuple[float, float]:
    """(token-linear FLOPs per token and layer, core FLOPs per token, layer and key)."""
    h, a = model.hidden, model.heads
    mla = model.mla
    if mla is None:
        q = model.q_width
        return 6.0 * (h * (q + 2.0 * model.kv_width) + q * h), 6.0 * q
    rope, d_n, d_v = mla.qk_rope_head_dim, mla.qk_head_dim, mla.v_head_dim
    heads_qk = a * (d_n + rope)
    query = mla.q_lora_rank * (h + heads_qk + 1.0) if mla.q_lora_rank else h * heads_qk
    key_value = mla.kv_lora_rank * (h + a * (d_n + d_v) + 1.0)
    linear = 6.0 * (query + key_value + h * rope + a * d_v * h)
    return linear, 6.0 * a * (d_n + rope + d_v) / 2.0
