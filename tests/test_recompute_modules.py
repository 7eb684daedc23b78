"""Megatron-Core's fine-grained selective recompute (``parallelism.recompute_modules``): the
default module reproduces the stack's selective recompute exactly, each module frees the
activations Megatron-Core's checkpoint frees (closed forms) and re-runs its forward kernels
(additive over disjoint modules, its FLOPs in closed form), both engines agree, and each
combination Megatron-Core refuses gets one message and exit status 2."""

from __future__ import annotations

import pytest
import yaml
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, Recompute, RecomputeModule
from simulator.engine.flops import step_flops
from simulator.workload.layer_activations import activation_bytes_per_layer

M = RecomputeModule
FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
LLAMA = {"cluster": {"node": "dgx-h100", "nodes": 1, "fabric": FABRIC},
         "model": {"preset": "llama3-8b"},
         "training": {"global_batch": 16, "micro_batch": 1, "stack": "megatron-core"},
         "parallelism": {"tp": 2, "pp": 1, "sequence_parallel": True, "recompute": "selective"},
         "simulate": {"contention": False}}
DEEPSEEK = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": FABRIC},
            "model": {"preset": "deepseek-v3", "layers": 6, "first_dense_layers": 2, "experts": 32,
                      "dense_ffn": 12288, "mtp_layers": 0},
            "training": {"global_batch": 32, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 1, "pp": 2, "ep": 16, "recompute": "selective"},
            "simulate": {"contention": False}}
DSV3 = ModelConfig(**MODEL_PRESETS["deepseek-v3"])


def _modules(base: dict, *names: str) -> dict:
    return _with(base, parallelism={"recompute_modules": list(names)})


@pytest.mark.parametrize("attention", ["flash", "unfused"])
def test_core_attn_alone_is_the_stacks_selective_recompute(tmp_path, attention):
    """Megatron-Core's default ``["core_attn"]`` is what ``selective`` meant before the key:
    the same step time, memory and hardware FLOPs, byte for byte."""
    base = _with(LLAMA, training={"attention": attention})
    plain, named = _run(tmp_path, base), _run(tmp_path, _modules(base, "core_attn"))
    assert named.step_time_s == plain.step_time_s
    assert named.memory_per_gpu_bytes == plain.memory_per_gpu_bytes
    assert named.hardware_flops_per_gpu == plain.hardware_flops_per_gpu


def test_no_module_recomputes_nothing(tmp_path):
    """An empty list under selective recompute re-runs nothing: no recompute seconds, and with
    flash attention the step of ``recompute: none``."""
    empty = _run(tmp_path, _modules(LLAMA, ))
    none = _run(tmp_path, _with(LLAMA, parallelism={"recompute": "none"}))
    assert all(s.recompute_s == 0.0 for s in empty.stages)
    assert empty.step_time_s == none.step_time_s
    assert empty.memory_per_gpu_bytes == none.memory_per_gpu_bytes


def _per_layer(model: ModelConfig, modules, tp=1, sp=False, fp8=False) -> float:
    return activation_bytes_per_layer(model, 1, tp, sp, Recompute.SELECTIVE, 1, 2, fp8,
                                      frozenset(modules))


def test_mlp_frees_the_dense_mlps_input_and_inner_activations():
    """A dense GELU MLP keeps its fc1 input (2h bytes, replicated) and its input and output of
    the activation (2 x 2f bytes, split by TP) per token [K22 sec. 4.1]: ``mlp`` frees
    ``s (2h + 4f/t)`` per sequence."""
    gpt = ModelConfig(**MODEL_PRESETS["gpt3-175b"])
    s, h, f, t = gpt.seq_len, gpt.hidden, gpt.ffn_hidden, 8
    freed = _per_layer(gpt, {M.CORE_ATTN}, t) - _per_layer(gpt, {M.CORE_ATTN, M.MLP}, t)
    assert freed == pytest.approx(s * (2 * h + 4 * f / t), rel=1e-12)


def test_mla_up_proj_frees_q_k_v_and_the_normed_latents():
    """DeepSeek-V3: Q and K of ``a d_qk`` and V of ``a d_v`` (split by TP) and the normed latents
    ``r_q + r_kv + d_r`` (replicated, split by SP), 2 bytes each."""
    s, a, t = DSV3.seq_len, DSV3.heads, 4
    mla = DSV3.mla
    freed = _per_layer(DSV3, {M.CORE_ATTN}, t, True) - _per_layer(DSV3, {M.CORE_ATTN, M.MLA_UP_PROJ}, t, True)
    widths = a * (2 * (mla.qk_head_dim + mla.qk_rope_head_dim) + mla.v_head_dim)
    assert freed == pytest.approx(s * 2 * (widths + mla.latent_width) / t, rel=1e-12)


def test_moe_act_frees_the_fc2_inputs_at_their_saved_width():
    """The routed experts' fc2 input, ``top_k f`` per token: 2 bytes, or the 1-byte fp8 copy the
    linear would have kept under fp8 (TE saves the original, which is discarded)."""
    s, k, f = DSV3.seq_len, DSV3.top_k, DSV3.ffn_hidden
    for fp8, nbytes in ((False, 2), (True, 1)):
        freed = (_per_layer(DSV3, {M.CORE_ATTN}, fp8=fp8)
                 - _per_layer(DSV3, {M.CORE_ATTN, M.MOE_ACT}, fp8=fp8))
        assert freed == pytest.approx(s * k * f * nbytes, rel=1e-12)


def test_moe_frees_at_least_what_its_parts_free():
    """``moe`` checkpoints the whole block: it frees the routed and shared experts' activations,
    more than ``moe_act`` and ``shared_experts`` together (which keep the fc1 outputs)."""
    core = _per_layer(DSV3, {M.CORE_ATTN})
    parts = core - _per_layer(DSV3, {M.CORE_ATTN, M.MOE_ACT, M.SHARED_EXPERTS})
    whole = core - _per_layer(DSV3, {M.CORE_ATTN, M.MOE})
    assert whole > parts > 0.0


def test_recompute_seconds_add_over_disjoint_modules(tmp_path):
    """Without tensor parallelism the re-run kernels of disjoint modules add up: the recompute
    seconds of {mla_up_proj, layernorm} and {moe_act} sum to those of all three."""
    a = _run(tmp_path, _modules(DEEPSEEK, "mla_up_proj", "layernorm")).stages
    b = _run(tmp_path, _modules(DEEPSEEK, "moe_act")).stages
    both = _run(tmp_path, _modules(DEEPSEEK, "mla_up_proj", "layernorm", "moe_act")).stages
    for x, y, z in zip(a, b, both, strict=True):
        assert x.recompute_s > 0.0 and y.recompute_s > 0.0
        assert z.recompute_s == pytest.approx(x.recompute_s + y.recompute_s, rel=1e-12)


def test_mlp_recompute_adds_the_mlps_forward_flops():
    """Hardware FLOPs gain the dense MLP's forward GEMMs per layer: SwiGLU fc1 ``2 T (2f) h`` and fc2
    ``2 T h f``, ``6 T f h`` over the step's ``T`` tokens."""
    scenario = scenario_from_mapping(_modules(LLAMA, "core_attn", "mlp"), "<test>", HardwareLibrary())
    base = scenario_from_mapping(_modules(LLAMA, "core_attn"), "<test>", HardwareLibrary())
    model = scenario.model
    tokens = scenario.training.global_batch * model.seq_len
    extra = step_flops(scenario)[1] - step_flops(base)[1]
    assert extra == pytest.approx(model.layers * 6 * tokens * model.ffn_hidden * model.hidden, rel=1e-12)
    assert step_flops(scenario)[0] == step_flops(base)[0]


def test_moe_recompute_runs_the_all_to_alls_again(tmp_path):
    """``moe`` re-runs the dispatch and combine in backward: the in-line expert all-to-all
    seconds grow by half (two of the four per layer again)."""
    plain = _run(tmp_path, _modules(DEEPSEEK, "core_attn")).stages
    again = _run(tmp_path, _modules(DEEPSEEK, "core_attn", "moe")).stages
    for p, q in zip(plain, again, strict=True):
        assert p.ep_comm_s > 0.0
        assert q.ep_comm_s == pytest.approx(1.5 * p.ep_comm_s, rel=1e-12)
        assert q.recompute_s > p.recompute_s


def test_deepseek_recipe_trades_memory_for_a_little_time(tmp_path):
    """DeepSeek-V3's recipe (``mla_up_proj``): Q, K and V are ~60% of a layer's kept activations,
    so memory falls by more than the step time rises."""
    none = _run(tmp_path, _with(DEEPSEEK, parallelism={"recompute": "none"}))
    mla = _run(tmp_path, _modules(DEEPSEEK, "mla_up_proj"))
    time_cost = mla.step_time_s / none.step_time_s - 1
    memory_gain = 1 - mla.memory_per_gpu_bytes / none.memory_per_gpu_bytes
    assert 0.0 < time_cost < memory_gain


@pytest.mark.parametrize("modules", [["mla_up_proj", "layernorm", "moe_act"], ["moe", "mlp"]])
def test_both_engines_agree(tmp_path, modules):
    """DES = analytical with contention off; ep 16 spans two servers, so the DES replays the
    expert all-to-alls (and under ``moe`` their re-run) as flows."""
    mapping = _modules(DEEPSEEK, *modules)
    analytical, des = _run(tmp_path, mapping), _run(tmp_path, mapping, engine="des")
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
    assert 0.0 < analytical.mfu <= 1.0


@pytest.mark.parametrize(("base", "change", "words"), [
    (LLAMA, {"parallelism": {"recompute_modules": ["mla_up_proj"]}}, "latent attention"),
    (LLAMA, {"parallelism": {"recompute_modules": ["moe_act"]}}, "mixture of experts"),
    (LLAMA, {"parallelism": {"recompute_modules": ["mlp", "mlp"]}}, "once"),
    (LLAMA, {"parallelism": {"recompute_modules": ["attention"]}}, "core_attn"),
    (LLAMA, {"training": {"stack": "torchtitan"}, "parallelism": {"recompute_modules": ["mlp"]}},
     "Megatron-Core"),
    (DEEPSEEK, {"training": {"dtype": "fp8"}, "parallelism": {"recompute_modules": ["moe_act"]}},
     "delayed"),
    (LLAMA, {"parallelism": {"recompute_modules": -1}}, "-1: expected a list of module names"),
    (LLAMA, {"parallelism": {"recompute_modules": "mlp"}},
     "'mlp': expected a list of module names, e.g. [core_attn, mlp]; valid names: core_attn, moe_act, "
     "layernorm, mla_up_proj, mlp, moe, shared_experts"),
    (LLAMA, {"parallelism": {"recompute_modules": {"mlp": True}}}, "expected a list of module names"),
])
def test_mistakes_get_one_message_and_exit_2(tmp_path, capsys, base, change, words):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_with(base, **change)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "parallelism.recompute_modules" in err and words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "tuple" not in err


def test_moe_with_the_all_to_all_overlap_is_refused(tmp_path, capsys):
    """Megatron-Core asserts ``moe`` is not recomputed with ``overlap_moe_expert_parallel_comm``."""
    stack = {"name": "megatron-core", "expert_parallel": {"a2a_overlap": True}}
    mapping = _with(DEEPSEEK, training={"stack": stack},
                    parallelism={"pp": 1, "recompute_modules": ["moe"]})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(mapping))
    assert main(["run", str(path)]) == 2
    assert "a2a_overlap" in capsys.readouterr().err


def test_modules_outside_selective_recompute_are_unused_and_warned_about(tmp_path):
    """Megatron-Core reads ``recompute_modules`` only with selective granularity: under full (or
    no) recompute the step is full recompute's, and the result says the key did nothing (a
    search's other recompute settings keep the scenario's modules this way)."""
    full = _run(tmp_path, _with(LLAMA, parallelism={"recompute": "full"}))
    named = _run(tmp_path, _with(LLAMA, parallelism={"recompute": "full", "recompute_modules": ["mlp"]}))
    assert named.step_time_s == full.step_time_s
    assert any("has no effect with parallelism.recompute full" in w for w in named.warnings)


def test_a_module_with_nothing_to_recompute_is_warned_about(tmp_path):
    """Megatron-Core accepts ``layernorm`` on a dense Llama (both norms fused into the next
    linear, Identity modules) and does nothing: the result says so."""
    result = _run(tmp_path, _modules(LLAMA, "core_attn", "layernorm"))
    assert any("layernorm has no effect" in w for w in result.warnings)
    assert not any("no effect" in w for w in _run(tmp_path, _modules(DEEPSEEK, "layernorm")).warnings)


def test_import_log_maps_the_modules():
    """A logged ``recompute_modules ['mla_up_proj', 'moe_act']`` under selective recompute
    becomes the key; Megatron-Core's default ``['core_attn']`` leaves it unset."""
    from dataclasses import replace
    from pathlib import Path

    from simulator.measure.draft import draft_from_log
    from simulator.measure.megatron_log import read_megatron_log
    log = read_megatron_log(Path(__file__).resolve().parents[1] / "validation" / "training_logs"
                            / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    selective = {**log.arguments, "recompute_granularity": "selective"}
    named = {**selective, "recompute_modules": "['moe_act', 'layernorm']"}
    draft = draft_from_log(replace(log, arguments=named), "mi325x-platform", 8).scenario
    assert draft["parallelism"]["recompute_modules"] == ["moe_act", "layernorm"]
    default = {**selective, "recompute_modules": "['core_attn']"}
    draft = draft_from_log(replace(log, arguments=default), "mi325x-platform", 8).scenario
    assert "recompute_modules" not in draft["parallelism"]


def test_check_names_the_modules(tmp_path, capsys):
    """``clustersim check`` says what selective recompute re-runs."""
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(_modules(DEEPSEEK, "mla_up_proj", "moe_act")))
    assert main(["check", str(path)]) == 0
    assert "recompute selective (mla_up_proj, moe_act)" in capsys.readouterr().out
