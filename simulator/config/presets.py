"""Model presets: published transformer shapes that ``model.preset`` fills in.

Sources
-------
- GPT-3 175B: Brown et al., "Language Models are Few-Shot Learners" (2020), Table 2.1;
  vocabulary padded to 51200 as in Megatron-LM.
- ``megatron-*``: Narayanan et al., "Efficient Large-Scale Language Model Training on
  GPU Clusters Using Megatron-LM" (SC21, arXiv:2104.04473), Table 1.
- Llama 2 7B: Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat Models"
  (arXiv:2307.09288), Table 1 and sec. 2.2 (4k context, multi-head attention at 7B); FFN
  11008 and vocabulary 32000 from the released config (meta-llama/Llama-2-7b-hf
  ``config.json``: intermediate_size, vocab_size).
- Llama 3: Llama Team, "The Llama 3 Herd of Models" (arXiv:2407.21783), Table 3;
  sequence length 8192 for pre-training.
- Mixtral 8x7B: Jiang et al., "Mixtral of Experts" (arXiv:2401.04088), Table 1.
- Qwen3 4B, 32B and 30B-A3B: the released configs (Qwen/Qwen3-4B, Qwen/Qwen3-32B and
  Qwen/Qwen3-30B-A3B ``config.json``: hidden_size, num_hidden_layers, num_attention_heads,
  num_key_value_heads, head_dim 128, intermediate_size (the MoE's moe_intermediate_size 768,
  every layer MoE, 128 experts, 8 per token), vocab_size 151936, tie_word_embeddings), whose
  parameter counts match the model cards (4.0B / 32.8B / 30.5B with 3.3B active;
  ``tests/test_head_dim.py``); sequence 4,096, the length of the
  Qwen3 Technical Report's general and reasoning pre-training stages (arXiv:2505.09388), whose
  sec. 2 adds QK-Norm to every Qwen3 model (``model.qk_norm``; transformers' ``Qwen3Attention``
  normalises each query and key head with ``q_norm`` and ``k_norm``).
  Qwen3 235B-A22B likewise (Qwen/Qwen3-235B-A22B ``config.json``: 94 layers, hidden 4096, 64
  heads, 4 key-value heads, head_dim 128, moe_intermediate_size 1536, 128 experts, 8 per token,
  vocabulary 151936, untied embeddings; 235B parameters with 22B active, the model card).
- Qwen1.5-MoE-A2.7B and Qwen2-57B-A14B, mixtures of experts with shared experts: the released
  configs (Qwen/Qwen1.5-MoE-A2.7B: 24 layers, hidden 2048, 16 heads (multi-head), 60 experts of
  moe_intermediate_size 1408 with 4 per token, shared_expert_intermediate_size 5632;
  Qwen/Qwen2-57B-A14B: 28 layers, hidden 3584, 28 heads, 4 key-value heads, 64 experts of 2560
  with 8 per token, shared_expert_intermediate_size 20480; both vocabulary 151936, untied
  embeddings, every layer MoE), whose counts match the published totals (14.3B with 2.7B
  activated, the Qwen1.5-MoE release post; 57B with 14B activated, the Qwen2 Technical Report,
  arXiv:2407.10671, Table 1; ``tests/test_shared_experts.py``). The q/k/v biases and the shared
  expert's one-output gate (``h + 1`` per layer) are not counted. Sequence 4,096.
- DeepSeek-V3 and Kimi K2, latent attention with dense layers first: the released configs
  (deepseek-ai/DeepSeek-V3 ``config.json``: 61 layers, hidden 7168, 128 heads, q_lora_rank 1536,
  kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 256 routed experts
  of moe_intermediate_size 2048 with 8 per token, one shared expert, first_k_dense_replace 3 with
  intermediate_size 18432, num_nextn_predict_layers 1, vocabulary 129280, untied embeddings;
  moonshotai/Kimi-K2-Instruct ``config.json``: the same but 64 heads, 384 experts,
  first_k_dense_replace 1, no prediction layer, vocabulary 163840), whose counts match the
  published totals (671B main-model parameters with 37B activated plus 14B of the MTP module,
  DeepSeek-V3 Technical Report, arXiv:2412.19437, sec. 4.2 and the model card, against 671.0B,
  37.6B and 11.6B + its embedding and output layer copies, 1.9B, here; Kimi K2 "1 trillion total
  parameters" with "32 billion activated", its model card, against 1.026T and 32.9B;
  ``tests/test_dense_layers.py``). Sequence 4,096, DeepSeek-V3's
  pre-training length (sec. 4.2) and Megatron-Bridge's recipes'. DeepSeek-V3's node-limited
  routing: ``n_group`` 8, ``topk_group`` 4 in its ``config.json`` (a token's experts from 4 of 8
  expert groups, "sent to at most M = 4 nodes", the Technical Report sec. 2.1.2), which
  Megatron-Bridge's DeepSeekV3 provider sets as ``moe_router_num_groups`` 8 and
  ``moe_router_group_topk`` 4; Kimi K2's config has ``n_group`` 1 (no groups).
- GPT-OSS 120B: the released config (openai/gpt-oss-120b ``config.json``, the defaults of
  transformers' and vLLM's ``GptOssConfig``: 36 layers, hidden 2880, 64 query heads of head_dim
  64 and 8 key-value heads, 128 experts of intermediate_size 2880 with 4 per token, gated
  activation, vocabulary 201088, untied embeddings, ``sliding_window`` 128 on every other layer
  from the first, ``layer_types``; Megatron-Bridge's bridge sets ``window_size`` (127, 0) and
  ``window_attn_skip_freq`` 2), whose counts match OpenAI's model card (117B total, 5.1B active)
  against 116.8B and 5.7B with both embedding matrices here (``tests/test_attention_window.py``).
  The attention sinks (a learned logit per head in each softmax) and the linears' biases are not
  counted as parameters; the experts' second-linear bias is priced as the passes Megatron-Core
  runs for it (``expert_bias``). Sequence 4,096, its ``initial_context_length`` and
  Megatron-Bridge's recipes'. YaRN rotary embedding with ``rope_scaling.factor`` 32 and no
  ``mscale``: concentration ``0.1 ln 32 + 1`` = 1.346574 (``rope_concentration``; the bridge's
  ``yarn_mscale`` and ``yarn_mscale_all_dim`` None, ``models/gpt_oss/gpt_oss_bridge.py``).
- Nemotron 3 Nano 30B-A3B, a hybrid of Mamba-2, attention and mixture-of-experts layers
  (``hybrid_pattern``, :mod:`simulator.config.hybrid`): Megatron-Bridge v0.4.2
  ``src/megatron/bridge/recipes/nemotronh/nemotron_3_nano.py`` (the literal provider its
  performance recipes build; ``models/nemotronh/nemotron_h_provider.py`` ``Nemotron3NanoProvider``
  the same): 52 layers ``MEMEM*EMEMEM*...`` (23 Mamba, 23 MoE, 6 attention), hidden 2688, 32
  query heads of kv_channels 128 with 2 key-value groups, Mamba 64 heads of head_dim 64, state 128,
  8 groups (Megatron-Core's conv 4 and chunk 128), 128 experts of moe_ffn_hidden_size 1856 with 6
  per token and a shared expert of 3712, squared ReLU, no position embedding, RMSNorm, no
  biases, untied embeddings, vocabulary 131072 (the tokenizer's; the table's model TFLOP/s
  reproduce with it). Sequence 8,192, the performance recipes'. 31.58B parameters, 3.58B active
  here, against the model card's "31.6 billion total parameters" and "about 3.6 billion at a
  time" (``tests/test_hybrid.py``).
- Nemotron 3 Super 120B-A12B, a latent mixture of experts (``moe_latent``): the Hugging Face
  config Megatron-Bridge's recipes load (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16
  ``config.json``, as Megatron-LM d98e8a64dd carries it in
  ``examples/post_training/modelopt/conf/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16.sh`` and
  ``tests/functional_tests/test_cases/nemotron/nemotron3_super_release_gb200/model_config.yaml``):
  88 layers ``MEMEMEM*E...`` (40 Mamba, 40 MoE, 8 attention), hidden 4096, 32 heads of 128 with 2
  key-value groups, Mamba 128 heads of 64, state 128, 8 groups, 512 experts of 2688 with 22 per
  token working at the latent width 1024, a shared expert of 5376, vocabulary 131072, untied; its
  one multi-token prediction block ``*E`` run twice with its weights shared (Megatron-Bridge v0.4.2
  ``recipes/nemotronh/nemotron_3_super.py``: ``mtp_num_layers`` 2, ``mtp_use_repeated_layer``).
  123,611,008,000 parameters here: Megatron-Bridge's verification card
  (``examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml``) counts
  123,611,033,088, the difference the final norm (4,096) and the routers' expert-bias vectors
  (512 for each of the 41 MoE layers), which the count here leaves out (``tests/test_hybrid.py``).
"""

from __future__ import annotations

from types import MappingProxyType

_GPT = {"mlp": "gelu", "seq_len": 2048, "vocab": 51200}


def _megatron(layers: int, hidden: int, heads: int) -> dict:
    return {**_GPT, "layers": layers, "hidden": hidden, "heads": heads}


_LLAMA3 = {"mlp": "swiglu", "seq_len": 8192, "vocab": 128256, "kv_heads": 8}
_QWEN3 = {"mlp": "swiglu", "seq_len": 4096, "vocab": 151936, "kv_heads": 8, "head_dim": 128, "qk_norm": True}

MODEL_PRESETS = MappingProxyType({
    "gpt3-175b": _megatron(96, 12288, 96),
    "megatron-1.7b": _megatron(24, 2304, 24),
    "megatron-3.6b": _megatron(30, 3072, 32),
    "megatron-7.5b": _megatron(36, 4096, 32),
    "megatron-18b": _megatron(40, 6144, 48),
    "megatron-39b": _megatron(48, 8192, 64),
    "megatron-76b": _megatron(60, 10240, 80),
    "megatron-145b": _megatron(80, 12288, 96),
    "megatron-310b": _megatron(96, 16384, 128),
    "megatron-530b": _megatron(105, 20480, 128),
    "megatron-1t": _megatron(128, 25600, 160),
    "llama2-7b": {"mlp": "swiglu", "seq_len": 4096, "vocab": 32000, "layers": 32, "hidden": 4096,
                  "heads": 32, "kv_heads": 32, "ffn_hidden": 11008},
    "llama3-8b": {**_LLAMA3, "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 14336},
    "llama3-70b": {**_LLAMA3, "layers": 80, "hidden": 8192, "heads": 64, "ffn_hidden": 28672},
    "llama3-405b": {**_LLAMA3, "layers": 126, "hidden": 16384, "heads": 128, "ffn_hidden": 53248},
    "qwen3-4b": {**_QWEN3, "layers": 36, "hidden": 2560, "heads": 32, "ffn_hidden": 9728,
                 "tied_embeddings": True},
    "qwen3-32b": {**_QWEN3, "layers": 64, "hidden": 5120, "heads": 64, "ffn_hidden": 25600,
                  "tied_embeddings": False},
    "qwen3-30b-a3b": {**_QWEN3, "layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4,
                      "ffn_hidden": 768, "experts": 128, "top_k": 8, "tied_embeddings": False},
    "qwen3-235b-a22b": {**_QWEN3, "layers": 94, "hidden": 4096, "heads": 64, "kv_heads": 4,
                        "ffn_hidden": 1536, "experts": 128, "top_k": 8, "tied_embeddings": False},
    "qwen1.5-moe-a2.7b": {"mlp": "swiglu", "seq_len": 4096, "vocab": 151936, "layers": 24, "hidden": 2048,
                          "heads": 16, "ffn_hidden": 1408, "experts": 60, "top_k": 4,
                          "shared_expert_ffn": 5632, "tied_embeddings": False},
    "qwen2-57b-a14b": {"mlp": "swiglu", "seq_len": 4096, "vocab": 151936, "layers": 28, "hidden": 3584,
                       "heads": 28, "kv_heads": 4, "ffn_hidden": 2560, "experts": 64, "top_k": 8,
                       "shared_expert_ffn": 20480, "tied_embeddings": False},
    "mixtral-8x7b": {
        "mlp": "swiglu", "seq_len": 4096, "vocab": 32000, "layers": 32, "hidden": 4096,
        "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "experts": 8, "top_k": 2,
    },
    "deepseek-v3": {
        "mlp": "swiglu", "seq_len": 4096, "vocab": 129280, "layers": 61, "hidden": 7168, "heads": 128,
        "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_rope_head_dim": 64,
                "v_head_dim": 128},
        "ffn_hidden": 2048, "experts": 256, "top_k": 8, "shared_expert_ffn": 2048,
        "first_dense_layers": 3, "dense_ffn": 18432, "mtp_layers": 1, "tied_embeddings": False,
        "router_groups": 8, "router_group_topk": 4,
    },
    "gpt-oss-120b": {
        "mlp": "swiglu", "seq_len": 4096, "vocab": 201088, "layers": 36, "hidden": 2880, "heads": 64,
        "kv_heads": 8, "head_dim": 64, "ffn_hidden": 2880, "experts": 128, "top_k": 4,
        "tied_embeddings": False, "attention_window": 128, "full_attention_every": 2, "expert_bias": True,
        "rope_concentration": 1.346574,
    },
    "kimi-k2": {
        "mlp": "swiglu", "seq_len": 4096, "vocab": 163840, "layers": 61, "hidden": 7168, "heads": 64,
        "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_rope_head_dim": 64,
                "v_head_dim": 128},
        "ffn_hidden": 2048, "experts": 384, "top_k": 8, "shared_expert_ffn": 2048,
        "first_dense_layers": 1, "dense_ffn": 18432, "tied_embeddings": False,
    },
    "nemotron-3-nano-30b-a3b": {
        "mlp": "squared-relu", "seq_len": 8192, "vocab": 131072, "layers": 52, "hidden": 2688, "heads": 32,
        "kv_heads": 2, "head_dim": 128, "ffn_hidden": 1856, "experts": 128, "top_k": 6,
        "shared_expert_ffn": 3712, "tied_embeddings": False,
        "mamba": {"heads": 64, "head_dim": 64, "state": 128, "groups": 8},
        "hybrid_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    },
    "nemotron-3-super-120b-a12b": {
        "mlp": "squared-relu", "seq_len": 8192, "vocab": 131072, "layers": 88, "hidden": 4096, "heads": 32,
        "kv_heads": 2, "head_dim": 128, "ffn_hidden": 2688, "experts": 512, "top_k": 22,
        "shared_expert_ffn": 5376, "moe_latent": 1024, "tied_embeddings": False,
        "mamba": {"heads": 128, "head_dim": 64, "state": 128, "groups": 8},
        "hybrid_pattern": ("MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM"
                           "*EMEMEMEME"),
        "mtp_layers": 2, "mtp_pattern": "*E", "mtp_shared": True,
    },
})
