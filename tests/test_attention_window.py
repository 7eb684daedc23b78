"""Sliding-window attention (``model.attention_window``, ``model.full_attention_every``): the
pairs a local layer computes, the band kernel's tile efficiency, and GPT-OSS 120B's shape."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig
from simulator.cost.compute import (
    ATTENTION_TILE_OVERHEAD,
    attention_shape_factor,
    causal_tile_efficiency,
    window_tile_efficiency,
)
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.attention_window import local_layer_share, pair_fraction, window_pairs
from simulator.workload.params import active_parameter_count, parameter_count
from simulator.workload.transformer import AttentionShape, layer_forward


def test_window_pairs_closed_form():
    """``w (w + 1) / 2 + (s - w) w``: 4,096 tokens with a 128-token window, counted query by query."""
    seq, window = 4096, 128
    assert window_pairs(seq, window) == sum(min(i + 1, window) for i in range(seq))
    assert window_pairs(100, 128) == 100 * 101 / 2            # the window covers the sequence


def test_alternating_layers_average_the_pairs():
    """GPT-OSS: half the layers local, so a layer's mean pairs are half the causal count plus
    half the band's."""
    seq = 4096
    band = window_pairs(seq, 128) / (seq * seq / 2)
    assert local_layer_share(128, 2, 36) == 0.5
    assert pair_fraction(seq, 128, local_layer_share(128, 2, 36)) == pytest.approx(0.5 + 0.5 * band)
    assert pair_fraction(seq, None, local_layer_share(None, None, 36)) == 1.0
    assert pair_fraction(seq, 8192, local_layer_share(8192, None, 36)) == 1.0   # a window past the sequence


def test_full_layers_are_counted_as_megatron_numbers_them():
    """Layers 1..L, full where the number divides by n: 62 layers at n = 6 keep 10 full (not
    62/6), and n above L keeps none."""
    assert local_layer_share(1024, 6, 62) == pytest.approx(52 / 62)
    assert local_layer_share(1024, 100, 36) == 1.0


def test_band_tile_efficiency():
    """A 128-token band on 128-row tiles computes two key tiles per query tile for one tile of
    pairs, plus the prologue: ``1 / (2 + c)``; a wide band wastes only the one tile it straddles
    per query tile, less than the causal triangle's diagonal half (where the window covers the
    sequence the causal kernel is used: ``_tile_factor``)."""
    assert window_tile_efficiency(128) == pytest.approx(1 / (2 + ATTENTION_TILE_OVERHEAD))
    assert window_tile_efficiency(8192) > causal_tile_efficiency(8192)


def test_local_layers_share_the_kernel_time_by_pairs():
    """The effective factor makes the mean pairs take the two kernels' mean time:
    ``P / factor = (1 - f) P_c / r_c + f P_w / r_w`` (the head-dimension factor aside)."""
    seq, window, share = 4096, 128, 0.5
    full = AttentionShape(seq)
    mixed = AttentionShape(seq, window=window, local_share=share)
    band = window_pairs(seq, window) / (seq * seq / 2)
    causal, local = causal_tile_efficiency(seq), window_tile_efficiency(window)
    expected = (0.5 + 0.5 * band) / (0.5 / causal + 0.5 * band / local)
    assert attention_shape_factor(mixed) / attention_shape_factor(full) == pytest.approx(expected / causal)


def test_gpt_oss_counts_match_the_model_card():
    """117B parameters with 5.1B active (OpenAI's gpt-oss model card): 116.8B and 5.7B here with
    both embedding matrices (0.58B each), within 1% and (less one) 2%."""
    model = ModelConfig(**MODEL_PRESETS["gpt-oss-120b"])
    assert parameter_count(model) == pytest.approx(117e9, rel=0.01)
    embedding = model.vocab * model.hidden
    assert active_parameter_count(model) - embedding == pytest.approx(5.1e9, rel=0.02)


def _gpt_oss(window: bool, cp: int = 1):
    model = {"preset": "gpt-oss-120b", "layers": 4}
    if not window:
        model.update({"attention_window": None, "full_attention_every": None})
    data = {"cluster": {"node": "dgx-b200", "nodes": 1},
            "model": model,
            "training": {"global_batch": 32, "micro_batch": 4, "dtype": "bf16",
                         "stack": {"base": "megatron-core"}},
            "parallelism": {"tp": 1, "dp": 8 // cp, "cp": cp, "ep": 8 // cp}}
    library = HardwareLibrary()
    return session_from_scenario(scenario_from_mapping(data, "<test>", library), library)


def test_the_window_shortens_attention_but_not_by_its_flops():
    """Local layers skip most of attention's work, so attention and the step are shorter, the
    attention by less than its FLOPs (the band's kernel runs at under a third of the causal
    one's rate)."""
    sessions = [_gpt_oss(w) for w in (True, False)]
    contexts = [make_context(s.scenario, s.collectives) for s in sessions]
    kernels = [layer_forward(c.shape) for c in contexts]
    flops = kernels[0].attention_flops / kernels[1].attention_flops
    seconds = (contexts[0].compute.kernels_attention_time(kernels[0])
               / contexts[1].compute.kernels_attention_time(kernels[1]))
    assert flops < seconds < 1.0
    steps = [simulate_step(s.scenario, s.collectives).step_time_s for s in sessions]
    assert steps[0] < steps[1]


def test_window_with_context_parallelism_is_refused():
    with pytest.raises(ConfigError, match="context parallelism") as raised:
        _gpt_oss(True, cp=2)
    assert raised.value.key == "model.attention_window"


def test_full_attention_every_needs_a_window():
    data = {"cluster": {"node": "dgx-b200", "nodes": 1},
            "model": {"preset": "llama3-8b", "layers": 4, "full_attention_every": 2},
            "training": {"global_batch": 8, "micro_batch": 1, "dtype": "bf16"},
            "parallelism": {"tp": 1, "dp": 8}}
    library = HardwareLibrary()
    with pytest.raises(ConfigError) as raised:
        session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    assert raised.value.key == "model.full_attention_every"
