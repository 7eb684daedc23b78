"""Multi-head latent attention (``model.mla``): DeepSeek-V3's attention tensors as its released
config shapes them, the layer's FLOPs and activation bytes in closed form, the down projections
on each rank's own tokens under sequence parallelism, both engines agreeing, the user errors,
and ``clustersim import-log``'s mapping."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.scenario import ModelConfig, Recompute
from simulator.measure.draft import draft_from_log
from simulator.measure.megatron_log import read_megatron_log
from simulator.pipeline import run_scenario
from simulator.workload.layer_activations import activation_bytes_per_layer
from simulator.workload.layer_shape import LayerShape
from simulator.workload.params import layer_parameters, layer_tensor_sizes
from simulator.workload.transformer import layer_forward

# deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, num_attention_heads 128, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
MLA = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_rope_head_dim": 64,
       "v_head_dim": 128}
V3 = {"layers": 4, "hidden": 7168, "heads": 128, "mla": MLA, "ffn_hidden": 18432, "mlp": "swiglu",
      "seq_len": 4096, "vocab": 129280}
# The same checkpoint's attention tensors (model.safetensors.index.json shapes): q_a_proj
# [1536, 7168], q_a_layernorm [1536], q_b_proj [24576, 1536], kv_a_proj_with_mqa [576, 7168],
# kv_a_layernorm [512], kv_b_proj [32768, 512], o_proj [7168, 16384].
V3_ATTENTION = [1536 * 7168, 1536, 24576 * 1536, 576 * 7168, 512, 32768 * 512, 7168 * 16384]
LOG = Path(__file__).resolve().parents[1] / "validation" / "training_logs"


def test_attention_tensors_are_deepseek_v3s():
    model = ModelConfig(**V3)
    assert layer_tensor_sizes(model)[:7] == V3_ATTENTION
    h, f = model.hidden, model.ffn_hidden
    assert sum(V3_ATTENTION) == 187_107_328
    assert layer_parameters(model) == sum(V3_ATTENTION) + 3 * h * f + 2 * h


def _linear_flops(tokens: float, local: float, t: int) -> float:
    """``2 x`` the multiply-adds of DeepSeek-V3's attention linears on one GPU: the down
    projections on ``local`` tokens at full width, the up and output projections on all
    ``tokens`` over ``t``."""
    h, a, r_q, r_kv = 7168, 128, 1536, 512
    down = local * (h * r_q + h * (r_kv + 64))
    up = tokens * (r_q * a * 192 + r_kv * a * 256 + a * 128 * h) / t
    return 2.0 * (down + up)


@pytest.mark.parametrize(("tp", "sequence_parallel"), [(1, False), (4, True), (4, False)])
def test_layer_flops_in_closed_form(tp, sequence_parallel):
    """Attention linears (above), flash attention ``2 b (a/t) s^2 (d_qk + d_v) / 2`` (causal)
    and the dense SwiGLU MLP ``2 b s 3 h f / t``; without sequence parallelism every rank runs
    the down projections on the whole microbatch."""
    model = ModelConfig(**V3)
    shape = LayerShape(model, 1, tp=tp, sequence_parallel=sequence_parallel)
    tokens, s = shape.tokens, model.seq_len
    local = tokens / tp if sequence_parallel else tokens
    flash = 2.0 * (128 / tp) * s * s * (192 + 128) / 2
    mlp = 2.0 * tokens * 3 * 7168 * 18432 / tp
    expected = _linear_flops(tokens, local, tp) + flash + mlp
    assert layer_forward(shape).flops == pytest.approx(expected, rel=1e-12)


def test_activation_bytes_in_closed_form():
    """Selective recompute (no s^2 attention core kept), bf16, no tensor parallelism: per token
    ``2 (4h + 2 (r_q + r_kv + d_r))`` and ``2 (a d_qk + a d_v + a d_qk + a d_v + 3 f)`` (Q,
    context, K, V, the SwiGLU inner tensors); no dropout masks (a SwiGLU model's dropout is 0),
    ``2 h`` more with dropout."""
    model = ModelConfig(**V3)
    h, a, f = 7168, 128, 18432
    per_token = 2 * (4 * h + 2 * (1536 + 512 + 64)) + 2 * (2 * a * 192 + 2 * a * 128 + 3 * f)
    got = activation_bytes_per_layer(model, 1, 1, False, Recompute.SELECTIVE)
    assert got == pytest.approx(per_token * model.seq_len)
    dropped = activation_bytes_per_layer(model.model_copy(update={"dropout": 0.1}), 1, 1, False,
                                         Recompute.SELECTIVE)
    assert dropped == pytest.approx((per_token + 2 * h) * model.seq_len)


def test_both_engines_agree_on_a_latent_attention_mixture_of_experts(tmp_path):
    fabric = {"topology": "rail-optimized", "link": "ib-ndr"}
    data = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": fabric},
            "model": {**V3, "hidden": 2048, "heads": 16, "ffn_hidden": 1408, "experts": 64, "top_k": 6,
                      "shared_expert_ffn": 2816, "mla": {**MLA, "q_lora_rank": 0}},
            "training": {"global_batch": 32, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 2, "pp": 2, "ep": 8, "sequence_parallel": True},
            "simulate": {"contention": False}}
    path = tmp_path / "mla.yaml"
    path.write_text(yaml.safe_dump(data))
    analytical, des = run_scenario(path), run_scenario(path, engine="des")
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
    assert 0.0 < analytical.mfu <= 1.0


@pytest.mark.parametrize(("extra", "key"), [({"head_dim": 128}, "model.head_dim"),
                                            ({"kv_heads": 8}, "model.kv_heads")])
def test_latent_attention_refuses_head_keys_it_replaces(tmp_path, capsys, extra, key):
    data = {"cluster": {"node": "dgx-h100", "nodes": 1}, "model": {**V3, **extra},
            "training": {"global_batch": 8}, "parallelism": {"tp": 8}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert key in err and "Traceback" not in err


def test_import_log_maps_the_latent_ranks():
    log = read_megatron_log(LOG / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "multi_latent_attention": True, "q_lora_rank": None,
                                  "kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64,
                                  "v_head_dim": 128})
    model = draft_from_log(log, "mi325x-platform", 8).scenario["model"]
    assert model["mla"] == {**MLA, "q_lora_rank": 0} and "kv_heads" not in model


def test_a_preset_with_latent_attention_drops_the_head_keys_it_set(tmp_path, capsys):
    """Qwen3's preset sets head_dim 128 and 4 key-value heads; explicit ``model.mla`` replaces
    both (only keys the user writes are refused)."""
    data = {"cluster": {"node": "dgx-h100", "nodes": 2}, "model": {"preset": "qwen3-30b-a3b", "mla": MLA},
            "training": {"global_batch": 16}, "parallelism": {"ep": 16}}
    path = tmp_path / "qwen-mla.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path)]) == 0, capsys.readouterr().err


def test_a_partial_mla_overrides_only_its_fields_of_the_presets():
    """``model.mla: {kv_lora_rank: 256}`` on the deepseek-v3 preset changes that one field; the
    preset's other latent-attention widths stay (as a top-level key overrides a preset's)."""
    from simulator.config import scenario_from_mapping
    data = {"cluster": {"node": "dgx-h100", "nodes": 2},
            "model": {"preset": "deepseek-v3", "layers": 4, "mla": {"kv_lora_rank": 256}},
            "training": {"global_batch": 16}, "parallelism": {"ep": 16}}
    mla = scenario_from_mapping(data, "x.yaml").model.mla
    assert mla.model_dump() == {**MLA, "kv_lora_rank": 256}
    assert data["model"]["mla"] == {"kv_lora_rank": 256}

@pytest.mark.parametrize(("shared", "width"), [(0, 1536 + 512 + 64), (2048, (1536 + 512 + 64 + 7168) / 2)])
def test_the_tensor_parallel_gather_carries_the_latents(shared, width):
    """Under sequence parallelism latent attention gathers its latents (r_q + r_kv + d_r per
    token), not the hidden state; the reduce-scatter after the output projection is the hidden
    state's. A MoE layer without shared experts has that one site; with them the MLP's site
    gathers the hidden state, and the site's gather is the mean of the two."""
    from simulator.config import scenario_from_mapping
    from simulator.cost.in_layer import tp_collectives
    from simulator.engine.context import make_context
    from simulator.pipeline import session_from_scenario
    data = {"cluster": {"node": "dgx-h100", "nodes": 2},
            "model": {**V3, "experts": 16, "top_k": 2, "ffn_hidden": 2048, "shared_expert_ffn": shared},
            "training": {"global_batch": 16}, "parallelism": {"tp": 2, "ep": 8, "sequence_parallel": True}}
    scenario = scenario_from_mapping(data, "x.yaml")
    ctx = make_context(scenario, session_from_scenario(scenario).collectives)
    gather, scatter = tp_collectives(scenario, ctx.shape, ctx.collectives, ctx.layout)
    tokens = ctx.shape.tokens
    assert gather.size_bytes == pytest.approx(tokens * width * 2)
    assert scatter.size_bytes == pytest.approx(tokens * 7168 * 2)


def test_down_projections_are_whole_on_every_tensor_parallel_rank():
    """Megatron-Core builds the latent down projections with ``parallel_mode='duplicated'``: a
    stage's dense weights per GPU gain ``L (h r_q + r_q + h (r_kv + d_r) + r_kv) (1 - 1/t)`` over
    an even split; DeepSeek-V3's are 15.1M of its 187.1M attention weights per layer."""
    from simulator.config.presets import MODEL_PRESETS
    from simulator.config.scenario import ParallelismConfig
    from simulator.workload.memory import stage_parameters
    model = ModelConfig(**MODEL_PRESETS["deepseek-v3"])
    h, mla = model.hidden, model.mla
    duplicated = h * 1536 + 1536 + h * (512 + 64) + 512
    assert mla.duplicated_parameters(h) == duplicated
    assert 15.1e6 < duplicated < 15.2e6
    split, whole = (stage_parameters(model, ParallelismConfig(tp=t, pp=4), 8, False, False, 0, 0)[0]
                    for t in (4, 1))
    assert split == pytest.approx(whole / 4 + 8 * duplicated * (1 - 1 / 4))


def test_attention_backward_counts_three_query_key_and_two_value_products():
    """Flash attention's backward recomputes ``Q K^T`` and forms ``dQ``, ``dK`` (``d_qk`` per
    score each), ``dP`` and ``dV`` (``d_v`` each): ``(3 d_qk + 2 d_v) / (d_qk + d_v)`` of the
    forward, 2.6 at DeepSeek-V3's 192/128 (NVIDIA/cudnn-frontend's training SDPA benchmark counts
    ``3 head_dim_qk + 2 head_dim_vo``), 2.5 with equal widths (Dao 2023)."""
    mla = layer_forward(LayerShape(ModelConfig(**V3), 1, 1))
    assert mla.backward().attention_flops / mla.attention_flops == pytest.approx(2.6, rel=1e-12)
    plain = layer_forward(LayerShape(ModelConfig(**{**V3, "mla": None}), 1, 1))
    assert plain.backward().attention_flops / plain.attention_flops == pytest.approx(2.5, rel=1e-12)
