"""The activations a selective recompute brings back at once in backward (the layer's
``workspace``): each module's re-run restores exactly what it stopped keeping for one layer
(closed forms through ``activation_bytes_per_layer``), several modules hold the largest of
theirs, a fused attention kernel restores nothing, and so no layout's selective peak exceeds
its peak without recompute."""

from __future__ import annotations

import pytest
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run
from test_recompute_modules import DEEPSEEK

from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, Recompute, RecomputeModule
from simulator.workload.layer_activations import activation_bytes_per_layer, recompute_transient_bytes
from simulator.workload.recompute_modules import separate_norms

M = RecomputeModule
DSV3 = ModelConfig(**MODEL_PRESETS["deepseek-v3"])
GPT3 = ModelConfig(**MODEL_PRESETS["gpt3-175b"])


def _kept(model, modules, tp, sp, fp8=False):
    return activation_bytes_per_layer(model, 1, tp, sp, Recompute.SELECTIVE, 1, 2, fp8, frozenset(modules))


def _transient(model, modules, tp, sp, fp8=False, flash=True):
    return recompute_transient_bytes(model, 1, tp, sp, 1, 2, fp8, frozenset(modules), flash)


@pytest.mark.parametrize(("model", "module", "tp", "sp", "fp8"), [
    (DSV3, M.MOE, 1, False, False),
    (DSV3, M.MOE, 4, True, False),
    (DSV3, M.MOE, 1, False, True),
    (DSV3, M.MOE_ACT, 2, True, False),
    (DSV3, M.SHARED_EXPERTS, 1, False, False),
    (DSV3, M.MLA_UP_PROJ, 4, True, False),
    (GPT3, M.MLP, 8, True, False),
    (GPT3, M.MLP, 8, False, True),
])
def test_a_module_brings_back_what_it_stopped_keeping(model, module, tp, sp, fp8):
    """``T_m`` is one layer's kept bytes without the module less those with it: the re-run
    restores the tensors the checkpoint dropped (Megatron-Core ``CheckpointFunction.backward``)."""
    freed = _kept(model, {M.CORE_ATTN}, tp, sp, fp8) - _kept(model, {M.CORE_ATTN, module}, tp, sp, fp8)
    assert freed > 0.0
    assert _transient(model, {module}, tp, sp, fp8) == pytest.approx(freed, rel=1e-12)


def test_layernorm_brings_back_one_norm_at_a_time():
    """DeepSeek-V3 has two norms outside TransformerEngine's fused linears (the latent
    attention's input norm, the MoE layer's pre-MLP norm); backward reaches them one at a time."""
    assert separate_norms(DSV3) == 2
    freed = _kept(DSV3, {M.CORE_ATTN}, 1, False) - _kept(DSV3, {M.CORE_ATTN, M.LAYERNORM}, 1, False)
    assert _transient(DSV3, {M.LAYERNORM}, 1, False) == pytest.approx(freed / 2, rel=1e-12)
    assert freed / 2 == pytest.approx(DSV3.seq_len * 2 * DSV3.hidden, rel=1e-12)


def test_several_modules_hold_the_largest_of_theirs():
    modules = {M.MOE, M.MOE_ACT, M.LAYERNORM, M.MLA_UP_PROJ}
    singles = [_transient(DSV3, {m}, 2, True) for m in modules]
    assert _transient(DSV3, modules, 2, True) == max(singles) == _transient(DSV3, {M.MOE}, 2, True)


def test_unfused_core_attention_brings_back_its_scores_and_flash_nothing():
    """[K22] sec. 4.1: softmax output, dropout mask and dropout output, ``5 a s^2 b / t`` bytes
    at 2-byte activations with a 1-byte mask (GPT-3 has dropout); a fused kernel keeps no scores."""
    s, a, t = GPT3.seq_len, GPT3.heads, 8
    unfused = _transient(GPT3, {M.CORE_ATTN}, t, True, flash=False)
    assert unfused == pytest.approx(5 * a * s * s / t, rel=1e-12)
    assert _transient(GPT3, {M.CORE_ATTN}, t, True, flash=True) == 0.0
    assert _transient(GPT3, set(), t, True, flash=False) == 0.0


def test_the_stage_holds_its_moe_layers_recompute(tmp_path):
    """On the DeepSeek proxy (tp 1, micro batch 1, no sequence parallelism) the workspace of a
    stage that recomputes ``moe`` is one MoE layer's experts' inner activations and inputs."""
    result = _run(tmp_path, _with(DEEPSEEK, parallelism={"recompute_modules": ["moe"]}))
    model = ModelConfig(**{**MODEL_PRESETS["deepseek-v3"], **DEEPSEEK["model"]})
    inner = 3 * (model.top_k * model.ffn_hidden + model.shared_expert_ffn) * 2
    inputs = model.top_k * model.hidden * 2
    expected = model.seq_len * (inner + inputs)
    assert max(stage.memory["workspace"] for stage in result.stages) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("modules", [["moe"], ["moe_act", "layernorm"], ["mla_up_proj", "shared_experts"],
                                     ["core_attn"]])
def test_no_selective_peak_exceeds_the_peak_without_recompute(tmp_path, modules):
    selective = _run(tmp_path, _with(DEEPSEEK, parallelism={"recompute_modules": modules}))
    none = _run(tmp_path, _with(DEEPSEEK, parallelism={"recompute": "none"}))
    assert selective.memory_per_gpu_bytes <= none.memory_per_gpu_bytes
