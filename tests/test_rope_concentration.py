"""YaRN's concentration factor and Megatron-Core's unfused RoPE (``model.rope_concentration``):
TransformerEngine's fused RoPE takes no factor, so a rotary embedding whose factor is not 1 runs
as eager ops (megatron/core/models/common/embeddings/rope_utils.py, core_v0.16.0 on)."""

from __future__ import annotations

import math

import pytest

from simulator.config import scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.errors import ConfigError
from simulator.workload.layer_shape import LayerShape
from simulator.workload.transformer import UNFUSED_ROPE_BYTES, rotary_bytes, rotated_elements


def _model(preset: str, **overrides):
    data = {"cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": preset, **overrides},
            "training": {"global_batch": 8, "micro_batch": 1, "dtype": "bf16"},
            "parallelism": {"tp": 1, "pp": 1, "dp": 8}}
    return scenario_from_mapping(data, "rope.yaml").model


def test_gpt_oss_preset_carries_yarn_concentration_of_factor_32():
    """0.1 ln(s) + 1 at s = 32 (Megatron-Core ``_yarn_get_mscale``; the GPT-OSS bridge leaves
    ``yarn_mscale`` and ``yarn_mscale_all_dim`` None); presets without YaRN's factor keep 1."""
    expected = 0.1 * math.log(32) + 1
    assert MODEL_PRESETS["gpt-oss-120b"]["rope_concentration"] == pytest.approx(expected, abs=1e-6)
    assert _model("deepseek-v3").rope_concentration == 1.0
    assert _model("llama3-8b").rope_concentration == 1.0


def test_unfused_rope_moves_twelve_bytes_per_byte_where_fused_moves_two():
    """The eager bshd path: t*cos (2), the negated half (1), its cat (2), *sin (2), the add (3),
    the final cat (2) = 12 per byte of the rotated queries and keys; fused 2; an eager stack's own
    RoPE (fp32 complex product) 10 whatever the factor."""
    assert UNFUSED_ROPE_BYTES == 2 + 1 + 2 + 2 + 3 + 2
    oss = _model("gpt-oss-120b")
    plain = oss.model_copy(update={"rope_concentration": 1.0})
    for fused, expected in ((True, UNFUSED_ROPE_BYTES / 2.0), (False, 1.0)):
        yarn, base = (LayerShape(m, micro_batch=1, tp=1, fused=fused) for m in (oss, plain))
        assert rotary_bytes(yarn) / rotary_bytes(base) == pytest.approx(expected)
        assert rotary_bytes(base) == pytest.approx((2.0 if fused else 10.0) * rotated_elements(base) * 2)


def test_rope_concentration_is_checked():
    """A factor of 0 or below, or not finite, is refused with the key named."""
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="rope_concentration"):
            _model("gpt-oss-120b", rope_concentration=bad)
