"""Attention heads whose width is not ``hidden / heads`` (``model.head_dim``): Qwen3 and Gemma
decouple it, so the query and attention-output projections are ``heads * head_dim`` wide.

Published counts (Qwen/Qwen3-4B and Qwen/Qwen3-32B model cards on Hugging Face, their
``config.json``): Qwen3-4B, 36 layers, hidden 2,560, 32 query and 8 key/value heads of 128,
FFN 9,728, vocabulary 151,936, tied embeddings: 4.0B parameters, 3.6B without the embedding;
Qwen3-32B, 64 layers, hidden 5,120, 64 and 8 heads of 128, FFN 25,600, untied: 32.8B and 31.2B;
Qwen3-30B-A3B, 48 layers, hidden 2,048, 32 and 4 heads of 128, 128 experts of FFN 768 with 8 per
token, untied: 30.5B, 3.3B active, 29.9B without the embedding.
The cards round to 0.1B, so the counts are asserted to within 0.05B (Qwen3's per-head query and
key RMSNorms, 256 parameters a layer, are not counted).
"""

from __future__ import annotations

import pytest

from simulator.config import scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig
from simulator.errors import ConfigError
from simulator.workload.layer_shape import LayerShape
from simulator.workload.params import (
    active_parameter_count,
    layer_parameters,
    layer_tensor_sizes,
    parameter_count,
)
from simulator.workload.transformer import layer_forward

QWEN3 = {"mlp": "swiglu", "vocab": 151936, "kv_heads": 8, "head_dim": 128, "qk_norm": True}
QWEN3_4B = ModelConfig(layers=36, hidden=2560, heads=32, ffn_hidden=9728, tied_embeddings=True, **QWEN3)
QWEN3_32B = ModelConfig(layers=64, hidden=5120, heads=64, ffn_hidden=25600, tied_embeddings=False, **QWEN3)


@pytest.mark.parametrize(("model", "total", "body"), [(QWEN3_4B, 4.0e9, 3.6e9), (QWEN3_32B, 32.8e9, 31.2e9)])
def test_qwen3_parameter_counts(model, total, body):
    assert parameter_count(model) == pytest.approx(total, abs=0.05e9)
    assert model.layers * layer_parameters(model) == pytest.approx(body, abs=0.05e9)


@pytest.mark.parametrize(("preset", "model"), [("qwen3-4b", QWEN3_4B), ("qwen3-32b", QWEN3_32B)])
def test_presets_are_the_counted_shapes(preset, model):
    assert ModelConfig(**MODEL_PRESETS[preset]).model_copy(update={"seq_len": 2048}) == model


def test_qwen3_moe_counts():
    model = ModelConfig(**MODEL_PRESETS["qwen3-30b-a3b"])
    assert parameter_count(model) == pytest.approx(30.5e9, abs=0.05e9)
    # the card's "3.3B activated" is rounded or truncated to 0.1B: [3.25, 3.4); 3.35B here
    assert 3.25e9 <= active_parameter_count(model) < 3.4e9
    assert model.layers * layer_parameters(model) == pytest.approx(29.9e9, abs=0.05e9)


def test_qwen3_235b_counts():
    """Qwen3 235B-A22B (the model card: 235B parameters, 22B activated, each to the unit)."""
    model = ModelConfig(**MODEL_PRESETS["qwen3-235b-a22b"])
    assert parameter_count(model) == pytest.approx(235e9, abs=0.5e9)
    assert active_parameter_count(model) == pytest.approx(22e9, abs=0.5e9)


def test_default_is_hidden_over_heads_and_changes_nothing():
    """Without ``head_dim`` the widths are ``hidden`` and ``kv_heads * hidden / heads``; giving
    that same value explicitly gives the same counts and the same kernels."""
    implicit = ModelConfig(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, mlp="swiglu")
    explicit = implicit.model_copy(update={"head_dim": 128})
    assert (implicit.d_head, implicit.q_width, implicit.kv_width) == (128, 4096, 1024)
    assert parameter_count(implicit) == parameter_count(explicit)
    a, b = (layer_forward(LayerShape(m, 1, tp=1)) for m in (implicit, explicit))
    assert a.flops == b.flops


def test_query_and_output_projections_take_the_head_width():
    """Qwen3-4B's wq is 2,560 x 4,096 and wo 4,096 x 2,560; the forward GEMMs of one token carry
    2 (h q + 2 h k_w + q h + 3 h f) FLOPs plus attention."""
    sizes = layer_tensor_sizes(QWEN3_4B)
    assert sizes[:4] == [2560 * 4096, 2560 * 1024, 2560 * 1024, 4096 * 2560]
    kernels = layer_forward(LayerShape(QWEN3_4B.model_copy(update={"seq_len": 1}), 1, tp=1))
    h, q, k, f = 2560, 4096, 1024, 9728
    linear = 2 * (h * q + 2 * h * k + q * h + 3 * h * f)
    assert kernels.flops - kernels.attention_flops == pytest.approx(linear)


def test_head_dim_lets_heads_not_divide_hidden():
    """The divisibility rule applies only when the width is derived from ``hidden / heads``."""
    mapping = {"cluster": {"node": "dgx-h100", "nodes": 1},
               "model": {"layers": 2, "hidden": 2560, "heads": 48, "kv_heads": 8, "mlp": "swiglu"},
               "training": {"global_batch": 8, "micro_batch": 1},
               "parallelism": {"tp": 1, "pp": 1, "dp": 8}}
    with pytest.raises(ConfigError, match="model.head_dim"):
        scenario_from_mapping(mapping, "t.yaml")
    mapping["model"]["head_dim"] = 64
    assert scenario_from_mapping(mapping, "t.yaml").model.q_width == 48 * 64
