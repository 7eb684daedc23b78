"""Memory model against Korthikanti et al. 2022 (Table 2), ZeRO (sec. 3.1, 5) and Megatron's schedules."""

from __future__ import annotations

import pytest

from simulator.config.hardware import Dtype
from simulator.config.library import HardwareLibrary
from simulator.config.scenario import Mlp, ModelConfig, ParallelismConfig, Recompute, Schedule, TrainingConfig
from simulator.workload.layer_activations import activation_bytes_per_layer
from simulator.workload.memory import (
    chunk_layers,
    layer_split,
    microbatches_in_flight,
    model_state_bytes,
    stage_memory,
)
from simulator.workload.params import parameter_count

GPT3 = ModelConfig(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=51200)
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H                     # 25_165_824
CORE = 5 * A * S / H                # 80: the attention-core term 5as/h


@pytest.mark.parametrize(("tp", "sp", "recompute", "expected"), [
    (1, False, Recompute.NONE, 2_868_903_936),       # s b h (34 + 5as/h) = 114 sbh
    (T, False, Recompute.NONE, 578_813_952),         # s b h (10 + 24/t + 5as/(ht)) = 23 sbh
    (T, True, Recompute.NONE, 358_612_992),          # s b h/t (34 + 5as/h) = 114 sbh / 8
    (T, True, Recompute.SELECTIVE, 106_954_752),     # 34 s b h / t
    (T, False, Recompute.SELECTIVE, 327_155_712),    # s b h (10 + 24/t) = 13 sbh
    (T, False, Recompute.FULL, 50_331_648),          # 2 s b h
    (T, True, Recompute.FULL, 6_291_456),            # 2 s b h / t
])
def test_korthikanti_table2_gpt3(tp, sp, recompute, expected):
    """Korthikanti et al. 2022, Table 2, for GPT-3 175B (s=2048, b=1, h=12288, a=96)."""
    assert activation_bytes_per_layer(GPT3, B, tp, sp, recompute) == expected


def test_tensor_parallel_formula_term_by_term():
    expected = SBH * (10 + 24 / T + CORE / T)
    got = activation_bytes_per_layer(GPT3, B, T, False, Recompute.NONE)
    assert got == pytest.approx(expected, rel=1e-12)


def test_gqa_saves_exactly_the_smaller_k_and_v():
    """K and V shrink from h to k h / a wide: 2 bytes * 2 tensors * (h - kh/a) per token, / t."""
    gqa = GPT3.model_copy(update={"kv_heads": 8})
    saved = 2 * 2 * (H - 8 * H // A) * S * B / T
    full = activation_bytes_per_layer(GPT3, B, T, False, Recompute.SELECTIVE)
    assert activation_bytes_per_layer(gqa, B, T, False, Recompute.SELECTIVE) == pytest.approx(
        full - saved, rel=1e-12)


def test_swiglu_inner_is_three_f_wide():
    """SwiGLU keeps fc1's 2f output and the f-wide fc2 input: 6 f bytes per token vs GELU's 4 f."""
    swiglu = GPT3.model_copy(update={"mlp": Mlp.SWIGLU})
    gelu = activation_bytes_per_layer(GPT3, B, 1, False, Recompute.SELECTIVE)
    assert activation_bytes_per_layer(swiglu, B, 1, False, Recompute.SELECTIVE) == gelu + 2 * 4 * H * S * B


def test_no_dropout_keeps_no_masks():
    """At dropout 0 PyTorch's dropout returns its input and keeps no mask: the layer loses the two
    1-byte masks of the residual branches, 2 s b h (not split by t without SP); GELU models
    default to Megatron's 0.1, SwiGLU models to 0."""
    plain = GPT3.model_copy(update={"dropout": 0.0})
    with_masks = activation_bytes_per_layer(GPT3, B, T, False, Recompute.SELECTIVE)
    assert with_masks - activation_bytes_per_layer(plain, B, T, False, Recompute.SELECTIVE) == 2 * SBH
    assert GPT3.dropout == 0.1
    assert ModelConfig(layers=2, hidden=64, heads=4, seq_len=16, vocab=32, mlp="swiglu").dropout == 0.0


def test_fp8_linear_inputs_keep_one_byte():
    """TransformerEngine keeps each linear input's fp8 cast for the weight gradient: the QKV and
    fc1 inputs (h each, split by t under SP) and the fc2 input (f = 4h, split by t) drop from 2
    bytes to 1, and the proj layer adds a 1-byte copy of the attention output (h / t) that the
    attention keeps in 2 bytes: (2h + 4h - h) s b / t fewer bytes with SP, GPT-3 shape."""
    bf16 = activation_bytes_per_layer(GPT3, B, T, True, Recompute.SELECTIVE)
    fp8 = activation_bytes_per_layer(GPT3, B, T, True, Recompute.SELECTIVE, fp8_inputs=True)
    assert bf16 - fp8 == pytest.approx(5 * SBH / T, rel=1e-12)
    assert fp8 == pytest.approx(29 * SBH / T, rel=1e-12)      # 34 - 5 bytes per s b h / t


def test_fp8_saved_inputs_are_the_transformer_engine_profiles():
    """``kernels.fp8_saved_inputs`` is set by the TE-based megatron-core and nemo profiles only
    (torchtitan's float8 and the pre-fp8 stacks keep 2-byte inputs)."""
    library = HardwareLibrary()
    assert library.stack("megatron-core").kernels.fp8_saved_inputs
    assert library.stack("nemo").kernels.fp8_saved_inputs
    assert not library.stack("torchtitan").kernels.fp8_saved_inputs
    assert not library.stack("megatron-lm-2021").kernels.fp8_saved_inputs


def test_recompute_is_monotone():
    full, selective, none = (activation_bytes_per_layer(GPT3, B, T, True, r)
                             for r in (Recompute.FULL, Recompute.SELECTIVE, Recompute.NONE))
    assert full < selective < none


def test_context_parallel_keeps_local_queries_against_all_keys():
    s = S / 2
    expected = s * B * H * (10 + 24 / T) + 5 * A * s * S * B / T
    assert activation_bytes_per_layer(GPT3, B, T, False, Recompute.NONE, cp=2) == pytest.approx(
        expected, rel=1e-12)


@pytest.mark.parametrize(("stage", "weights", "grads", "optimizer"), [
    (0, 2e9, 2e9, 12e9),
    (1, 2e9, 2e9, 1.5e9),
    (2, 2e9, 0.25e9, 1.5e9),
    (3, 0.25e9, 0.25e9, 1.5e9),
])
def test_zero_stages_mixed_precision(stage, weights, grads, optimizer):
    """ZeRO sec. 3.1: 2 + 2 + 12 bytes per parameter; stages shard optimizer, grads, weights by dp."""
    assert model_state_bytes(1e9, 8, stage, Dtype.BF16) == (weights, grads, optimizer)


def test_fp32_model_state_has_no_master_copy():
    assert model_state_bytes(1e9, 8, 0, Dtype.FP32) == (4e9, 4e9, 8e9)


def test_one_f_one_b_in_flight():
    pp, m = 8, 32
    counts = [microbatches_in_flight(Schedule.ONE_F_ONE_B, pp, i, m) for i in range(pp)]
    assert counts == [8, 7, 6, 5, 4, 3, 2, 1]
    assert microbatches_in_flight(Schedule.ONE_F_ONE_B, pp, 0, 3) == 3
    assert all(microbatches_in_flight(Schedule.GPIPE, pp, i, m) == m for i in range(pp))


@pytest.mark.parametrize(("pp", "v"), [(4, 2), (8, 3), (16, 4)])
def test_interleaved_first_stage_matches_korthikanti(pp, v):
    """Stage 0 holds p (1 + (p-1)/(p v)) stage-equivalents (Korthikanti sec. 4.2.3)."""
    got = microbatches_in_flight(Schedule.INTERLEAVED, pp, 0, 4 * pp, v)
    assert got == pytest.approx(pp * (1 + (pp - 1) / (pp * v)), rel=1e-12)


def test_interleaved_megatron_special_cases():
    # last stage: (v-1) p warm-up chunks + 1, in stage units
    assert microbatches_in_flight(Schedule.INTERLEAVED, 4, 3, 8, 2) == (4 + 1) / 2
    # m == p: Megatron runs every forward first, all m v chunks
    assert microbatches_in_flight(Schedule.INTERLEAVED, 4, 3, 4, 2) == 4
    # v == 1 is plain 1F1B
    assert microbatches_in_flight(Schedule.INTERLEAVED, 4, 1, 8, 1) == 3
    with pytest.raises(ValueError):
        microbatches_in_flight(Schedule.ONE_F_ONE_B, 4, 4, 8)


def test_layer_split():
    assert layer_split(96, 8) == [12] * 8
    llama = layer_split(126, 16)
    assert sum(llama) == 126 and llama[0] == llama[-1] == 7 and set(llama[1:-1]) == {8}
    assert layer_split(96, 8, 2) == [12] * 8
    assert layer_split(10, 4) == [2, 3, 3, 2]
    assert layer_split(9, 4) == [2, 2, 3, 2]
    with pytest.raises(ValueError):
        layer_split(7, 8)
    with pytest.raises(ValueError):
        layer_split(8, 4, 3)


def test_llama3_chunks_hold_only_the_embedding_and_the_output_at_the_ends():
    """Llama 3 405B (126 layers) on 16 stages x 8 chunks: "the first model chunk on the first
    stage has only the embedding, and the last model chunk on the last stage has only output
    projection and loss" (Llama 3 paper, sec. 3.3.2); every other chunk one layer. Only the
    two end chunks may be empty, and only with interleaving (no stage is ever empty)."""
    chunks = chunk_layers(126, 16, 8)
    assert chunks[0] == chunks[-1] == 0 and set(chunks[1:-1]) == {1} and len(chunks) == 128
    assert layer_split(126, 16, 8) == [7] + [8] * 14 + [7]
    assert chunk_layers(127, 16, 8)[0] == 0 and set(chunk_layers(127, 16, 8)[1:]) == {1}
    with pytest.raises(ValueError):
        chunk_layers(125, 16, 8)           # a middle chunk would be empty
    with pytest.raises(ValueError):
        chunk_layers(14, 16, 1)            # without interleaving a whole stage would be


def _gpt3_stage0(first: bool, recompute=Recompute.NONE, attention="unfused"):
    training = TrainingConfig(global_batch=64, micro_batch=1, attention=attention)
    par = ParallelismConfig(tp=8, pp=8, dp=1, zero_stage=0, recompute=recompute)
    return stage_memory(GPT3, training, par, 0, 12, 1, first=first, last=False)


def test_gpt3_stage0_activations():
    """tp=8, pp=8, 1F1B: stage 0 holds 8 micro-batches of 12 layers (+ embedding dropout mask)."""
    per_layer = SBH * (10 + 24 / T + CORE / T)
    assert _gpt3_stage0(first=False).activations == pytest.approx(12 * 8 * per_layer, rel=1e-12)
    assert _gpt3_stage0(first=True).activations == pytest.approx(12 * 8 * per_layer + 8 * SBH, rel=1e-12)


def test_stage_memory_recompute_is_monotone():
    full, selective, none = (_gpt3_stage0(True, r).total
                             for r in (Recompute.FULL, Recompute.SELECTIVE, Recompute.NONE))
    assert full < selective < none


def test_flash_attention_stores_no_score_matrix():
    """Fused attention keeps the selective-recompute activations even without recompute."""
    flash = _gpt3_stage0(False, Recompute.NONE, attention="flash").activations
    assert flash == _gpt3_stage0(False, Recompute.SELECTIVE).activations


def test_full_recompute_workspace_is_one_recomputed_layer():
    assert _gpt3_stage0(True, Recompute.FULL).workspace == SBH * (10 + 24 / T)
    assert _gpt3_stage0(True).workspace == 0


def test_last_stage_logits_and_output_layer():
    """Korthikanti sec. 4.3: 4 s b h / t (1 + V/h) with SP, on the last stage (1 micro-batch in flight)."""
    training = TrainingConfig(global_batch=64, micro_batch=1)
    par = ParallelismConfig(tp=8, pp=8, dp=1, sequence_parallel=True)
    last = stage_memory(GPT3, training, par, 7, 12, 1, first=False, last=True)
    mid = stage_memory(GPT3, training, par, 7, 12, 1, first=False, last=False)
    assert last.activations - mid.activations == pytest.approx(4 * SBH / T * (1 + 51200 / H), rel=1e-12)


@pytest.mark.parametrize(("mlp", "extra_copy"), [(Mlp.SWIGLU, 0), (Mlp.GELU, 51200 * 1024)])
def test_stage_weights_sum_to_parameter_count(mlp, extra_copy):
    """tp=1: weights over stages = 2 B x (parameters + GPT's tied output copy on the last stage)."""
    model = ModelConfig(layers=10, hidden=1024, heads=16, mlp=mlp)
    training = TrainingConfig(global_batch=8)
    par = ParallelismConfig(pp=4, dp=1, zero_stage=0)
    split = layer_split(10, 4)
    weights = sum(stage_memory(model, training, par, i, n, 1, i == 0, i == 3).weights
                  for i, n in enumerate(split))
    assert weights == 2 * (parameter_count(model) + extra_copy)


def test_breakdown_parts_sum_to_total():
    memory = _gpt3_stage0(True, Recompute.FULL)
    assert sum(memory.as_dict().values()) == memory.total


def test_des_equals_analytical_with_empty_end_chunks():
    """A pipeline whose first and last chunks hold only the embedding and the output layer
    (6 layers in 4 x 2 chunks) runs in both engines, the DES equal to the analytical step
    with contention off and never faster with it on."""
    from des_checks import assert_des_brackets_analytical

    from simulator.config import scenario_from_mapping
    from simulator.pipeline import session_from_scenario

    data = {"name": "chunks", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"layers": 6, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
                      "mlp": "swiglu", "seq_len": 4096, "vocab": 128256},
            "training": {"global_batch": 16, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 2, "pp": 4, "dp": 1, "schedule": "interleaved-1f1b",
                            "virtual_stages": 2}}
    session = session_from_scenario(scenario_from_mapping(data, "chunks.yaml"))
    assert chunk_layers(6, 4, 2) == [0, 1, 1, 1, 1, 1, 1, 0]
    assert_des_brackets_analytical(session.scenario, session.collectives)


MIXTRAL = ModelConfig(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, mlp="swiglu",
                      seq_len=4096, vocab=32000, experts=8, top_k=2)


@pytest.mark.parametrize(("tp", "sp", "etp", "shards"), [(1, False, None, 1.0), (4, False, None, 1.0),
                                                         (4, True, None, 1.0), (4, True, 1, 0.25)])
def test_routed_experts_keep_their_permuted_inputs(tp, sp, etp, shards):
    """A mixture of experts' layer keeps, beyond the dense formula, the ``top_k`` permuted rows its
    experts' first grouped GEMM saves for the weight gradient (TransformerEngine ``GroupedLinear``
    ``save_for_backward(*inputmats)``): ``s b k h`` elements a GPU, times ``etp / t`` under sequence
    parallelism (its experts receive ``etp`` sequence shards); one byte each under fp8;
    ``recompute_modules`` ``moe`` frees them."""
    dense = MIXTRAL.model_copy(update={"experts": 1, "top_k": 1, "ffn_hidden": 2 * 14336})
    kept = activation_bytes_per_layer(MIXTRAL, 2, tp, sp, Recompute.SELECTIVE, etp=etp)
    same_mlp = activation_bytes_per_layer(dense, 2, tp, sp, Recompute.SELECTIVE, etp=etp)
    permuted = 4096 * 2 * 2 * 4096 * shards
    assert kept - same_mlp == pytest.approx(2 * permuted, rel=1e-12)
    fp8 = activation_bytes_per_layer(MIXTRAL, 2, tp, sp, Recompute.SELECTIVE, fp8_inputs=True, etp=etp)
    dense_fp8 = activation_bytes_per_layer(dense, 2, tp, sp, Recompute.SELECTIVE, fp8_inputs=True, etp=etp)
    assert fp8 - dense_fp8 == pytest.approx(permuted, rel=1e-12)
    modules = frozenset({"moe", "core_attn"})          # RecomputeModule values
    freed = activation_bytes_per_layer(MIXTRAL, 2, tp, sp, Recompute.SELECTIVE, modules=modules, etp=etp)
    assert freed < kept - 2 * permuted * (1 - 1e-12)
