"""QK-norm (``model.qk_norm``): one more memory-bound kernel a layer over the queries and keys,
its input kept for backward; the closed forms, and Qwen3's presets carry it."""

from __future__ import annotations

import pytest

from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, Recompute
from simulator.workload.layer_activations import activation_bytes_per_layer
from simulator.workload.layer_shape import LayerShape
from simulator.workload.transformer import layer_forward

OLMO_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=11008, mlp="swiglu", seq_len=4096)
LLAMA_GQA = dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, mlp="swiglu", seq_len=4096)


def _extra_bytes(model: dict, fused: bool, tp: int = 1, micro_batch: int = 2) -> float:
    """Forward memory-bound bytes a layer moves with QK-norm over without."""
    def moved(qk: bool) -> float:
        shape = LayerShape(ModelConfig(**model, qk_norm=qk), micro_batch, tp, fused=fused)
        return float(layer_forward(shape).memory_bytes.sum())
    return moved(True) - moved(False)


@pytest.mark.parametrize("model", [OLMO_7B, LLAMA_GQA])
@pytest.mark.parametrize("fused, per_byte", [(True, 2.0), (False, 18.0)])
@pytest.mark.parametrize("tp", [1, 4])
def test_forward_traffic_is_a_norm_over_the_queries_and_keys(model, fused, per_byte, tp):
    """``c b s (a + k) d / t x 2 B``: c = 2 fused (read and write), 18 eager (fp32 RMSNorm ops)."""
    heads, kv, d = model["heads"], model["kv_heads"], model["hidden"] // model["heads"]
    elements = 2 * model["seq_len"] * (heads + kv) * d / tp
    assert _extra_bytes(model, fused, tp) == pytest.approx(per_byte * elements * 2, rel=1e-12)


@pytest.mark.parametrize("tp, sp", [(1, False), (4, False), (4, True)])
def test_kept_input_is_the_queries_and_keys(tp, sp):
    """The norm's input, ``s b (a + k) d / t`` elements of 2 B, kept per layer; nothing under
    full recompute (only the layer's input is kept)."""
    def kept(qk: bool, recompute=Recompute.NONE) -> float:
        return activation_bytes_per_layer(ModelConfig(**LLAMA_GQA, qk_norm=qk), 2, tp, sp, recompute)
    expected = 2 * LLAMA_GQA["seq_len"] * (32 + 8) * 128 / tp * 2
    assert kept(True) - kept(False) == pytest.approx(expected, rel=1e-12)
    assert kept(True, Recompute.FULL) == kept(False, Recompute.FULL)


def test_off_by_default_and_on_in_qwen3_presets():
    assert ModelConfig(**OLMO_7B).qk_norm is False
    qwen3 = [name for name in MODEL_PRESETS if name.startswith("qwen3")]
    assert qwen3 and all(MODEL_PRESETS[name]["qk_norm"] for name in qwen3)
    others = [name for name in MODEL_PRESETS if not name.startswith("qwen3")]
    assert not any(MODEL_PRESETS[name].get("qk_norm") for name in others)
