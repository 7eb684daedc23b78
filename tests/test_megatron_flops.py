"""Megatron-LM's 2026 model FLOP count (:mod:`simulator.validation.megatron_flops`).

Megatron-Bridge's performance tables publish each row's tokens/s and model TFLOP/s per GPU, both
from Megatron's ``num_floating_point_operations``; their ratio is the count per token
(NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ 067f987df, section "26.06
NeMo Container"). The published TFLOP/s are whole numbers (4 digits: +-0.05%) and the ratios of
different GPUs' rows of one model agree to 0.1%, so the count must match within 0.3%.
"""

from __future__ import annotations

import pytest

from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig
from simulator.validation.megatron_flops import megatron_flops_per_token


def _model(name: str, **update) -> ModelConfig:
    return ModelConfig(**{**MODEL_PRESETS[name], "seq_len": 4096, **update})


@pytest.mark.parametrize("preset, tokens_per_s, tflops", [
    ("qwen3-30b-a3b", 45275, 1041),       # GB300, 8 GPUs
    ("qwen3-30b-a3b", 40706, 936),        # GB200, 8 GPUs
    ("qwen3-235b-a22b", 9015, 1335),      # GB300, 256 GPUs
    ("qwen3-235b-a22b", 7376, 1092),      # GB200, 256 GPUs
    ("deepseek-v3", 6304, 1640),          # GB300, 256 GPUs (MLA, 3 dense layers, MTP)
    ("deepseek-v3", 4928, 1280),          # GB200
])
def test_count_matches_megatron_bridge_published_ratio(preset, tokens_per_s, tflops):
    published = tflops * 1e12 / tokens_per_s
    assert megatron_flops_per_token(_model(preset)) == pytest.approx(published, rel=3e-3)


def test_dense_gqa_count_is_the_closed_form():
    """A dense GQA transformer: ``L (6 h (3 f) + 6 (h (q + 2 c) + q h) + 6 q s) + 6 h V`` per
    token (SwiGLU, causal-halved scores)."""
    m = _model("qwen3-32b")
    h, f, s, q, c = m.hidden, m.ffn_hidden, m.seq_len, m.q_width, m.kv_width
    per_layer = 6 * h * 3 * f + 6 * (h * (q + 2 * c) + q * h) + 6 * q * s
    assert megatron_flops_per_token(m) == pytest.approx(m.layers * per_layer + 6 * h * m.vocab)


def test_scores_are_counted_causal_half():
    """Doubling the sequence adds ``6 q s`` per layer: half of full attention's ``12 q s``."""
    short, long = _model("qwen3-30b-a3b"), _model("qwen3-30b-a3b", seq_len=8192)
    added = megatron_flops_per_token(long) - megatron_flops_per_token(short)
    assert added == pytest.approx(short.layers * 6 * short.q_width * 4096)
