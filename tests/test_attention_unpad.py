"""flash-attn's unpad/pad copies around attention (``kernels.attention_unpad``, llm-foundry's
MPT ``flash_attn_fn``): one more memory-bound kernel a layer, its closed form, off by default."""

from __future__ import annotations

import pytest

from simulator.config.scenario import ModelConfig
from simulator.config.stack import KernelProfile
from simulator.engine.context import make_context
from simulator.pipeline import open_scenario
from simulator.workload.layer_shape import LayerShape
from simulator.workload.transformer import layer_forward

MPT_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=16384, mlp="gelu", seq_len=2048)
LLAMA_GQA = dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, mlp="swiglu", seq_len=4096)


def _extra_bytes(model: dict, tp: int, micro_batch: int) -> float:
    """Forward memory-bound bytes a layer moves with the unpad/pad copies over without."""
    def moved(unpad: bool) -> float:
        shape = LayerShape(ModelConfig(**model), micro_batch, tp, fused=False, attention_unpad=unpad)
        return float(layer_forward(shape).memory_bytes.sum())
    return moved(True) - moved(False)


@pytest.mark.parametrize("tp", [1, 2])
def test_multi_head_copies_are_nine_activations(tp):
    """With every head its own key and value: q, k, v gathered (read + write each, 6 act) and
    the output zero-filled and scattered into (3 act), ``act = b s h / t`` elements of 2 B."""
    act = 6 * MPT_7B["seq_len"] * MPT_7B["hidden"] / tp * 2
    assert _extra_bytes(MPT_7B, tp, micro_batch=6) == pytest.approx(9 * act, rel=1e-12)


def test_grouped_query_copies_follow_the_key_and_value_widths():
    """``2 b s (a d + 2 k d) + 3 b s a d`` elements of 2 B with 8 of 32 heads' keys and values."""
    b, s, d = 2, LLAMA_GQA["seq_len"], 128
    elements = 2 * b * s * (32 * d + 2 * 8 * d) + 3 * b * s * 32 * d
    assert _extra_bytes(LLAMA_GQA, tp=1, micro_batch=b) == pytest.approx(2 * elements, rel=1e-12)


def test_off_by_default_and_on_in_the_flash_attention_mpt_rows():
    """No stack profile unpads; the llm-foundry rows that ran flash-attn 2 (1B, 3B, 7B, 70B) say
    so, the Triton-attention rows (13B, 30B) do not."""
    assert KernelProfile().attention_unpad is False
    for name, unpads in [("mpt-7b-128gpu-bf16", True), ("mpt-13b-128gpu-bf16", False)]:
        session = open_scenario(f"validation/scenarios/llm_foundry/{name}.yaml")
        assert make_context(session.scenario, session.collectives).shape.attention_unpad is unpads
