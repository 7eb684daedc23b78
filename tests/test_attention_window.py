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
from simulator.engine.flops import step_flops
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.attention_window import local_layer_share, pair_fraction, window_pairs
from simulator.workload.layer_shape import AttentionShape
from simulator.workload.params import active_parameter_count, parameter_count
from simulator.workload.transformer import layer_forward


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


def _gpt_oss(window: bool, cp: int = 1, ring: str | None = None, seq: int = 4096):
    model = {"preset": "gpt-oss-120b", "layers": 4, "seq_len": seq}
    if not window:
        model.update({"attention_window": None, "full_attention_every": None})
    stack = {"base": "megatron-core", **({"context_parallel": {"ring": ring}} if ring else {})}
    data = {"cluster": {"node": "dgx-b200", "nodes": 1},
            "model": model,
            "training": {"global_batch": 32, "micro_batch": 4, "dtype": "bf16", "stack": stack},
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


@pytest.mark.parametrize("ring", [None, "p2p", "torch"])
def test_window_with_a_ring_that_has_no_window_path_is_refused(ring):
    """TransformerEngine refuses fused attention over a window with p2p (Megatron-Core's
    default), and PyTorch's ring attention has no window mask."""
    with pytest.raises(ConfigError, match="context parallelism") as raised:
        _gpt_oss(True, cp=2, ring=ring)
    assert raised.value.key == "model.attention_window"
    assert f"'{ring or 'p2p'}'" in str(raised.value)


@pytest.mark.parametrize("ring", ["all_gather", "ulysses"])
def test_a_gathered_window_splits_the_same_pairs_over_the_ranks(ring):
    """With the keys gathered (TE's all_gather, Ulysses' all-to-all), a rank's queries attend
    their window: cp ranks share the pairs one rank computes without context parallelism, and
    the band kernel runs at the same efficiency (it depends on the window, not the sequence)."""
    seq = 32768
    alone = make_context(*_session_parts(_gpt_oss(True, seq=seq)))
    split = make_context(*_session_parts(_gpt_oss(True, cp=2, ring=ring, seq=seq)))
    flops = [layer_forward(c.shape).attention_flops for c in (alone, split)]
    assert flops[1] * 2 == pytest.approx(flops[0], rel=1e-12)
    shapes = [layer_forward(c.shape).attention_shape for c in (alone, split)]
    assert shapes[1].full_seq == shapes[0].full_seq == seq
    # the kernels' time weights are the whole sequence's pairs: a local layer's band over the
    # causal count of the 32K sequence, not of a rank's 16K (closed form of _tile_factor)
    c = 3.75                                                   # B200's tile overhead
    band = window_pairs(seq, 128) / (seq * seq / 2)
    causal = causal_tile_efficiency(seq / 2, 2, c)
    tiles = (0.5 + 0.5 * band) / (0.5 / causal + 0.5 * band / window_tile_efficiency(128, c))
    expected = tiles / causal_tile_efficiency(8192, 1, c) * (64 / 86.5) / (128 / 150.5)
    assert attention_shape_factor(shapes[1], c) == pytest.approx(expected, rel=1e-12)


def test_windowed_model_flops_count_the_band_and_mfu_stays_below_one():
    """Model FLOPs count a local layer's band twice, as SC21 counts a causal layer's triangle
    twice (full ``s^2``): at 512K tokens on 16 GPUs full attention counted in every layer would
    report an MFU above 1."""
    short, long = _gpt_oss(True).scenario, _gpt_oss(True, cp=8, ring="all_gather", seq=524288).scenario
    for scenario in (short, long):
        unwindowed = scenario.model_copy(update={"model": scenario.model.model_copy(
            update={"attention_window": None, "full_attention_every": None})})
        mdl = scenario.model
        core = 3 * mdl.layers * 4 * 32 * mdl.seq_len ** 2 * mdl.heads * mdl.d_head   # 2 GEMMs, fwd + bwd
        counted = pair_fraction(mdl.seq_len, 128, 0.5)
        saved = step_flops(unwindowed)[0] - step_flops(scenario)[0]
        assert saved == pytest.approx((1 - counted) * core, rel=1e-9)
    session = _gpt_oss(True, cp=8, ring="all_gather", seq=524288)
    assert 0.0 < simulate_step(session.scenario, session.collectives).mfu <= 1.0


def _session_parts(session):
    return session.scenario, session.collectives


def test_full_attention_every_needs_a_window():
    data = {"cluster": {"node": "dgx-b200", "nodes": 1},
            "model": {"preset": "llama3-8b", "layers": 4, "full_attention_every": 2},
            "training": {"global_batch": 8, "micro_batch": 1, "dtype": "bf16"},
            "parallelism": {"tp": 1, "dp": 8}}
    library = HardwareLibrary()
    with pytest.raises(ConfigError) as raised:
        session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    assert raised.value.key == "model.full_attention_every"
