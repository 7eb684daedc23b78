"""Shared experts (``model.shared_expert_ffn``): a dense MLP every token of a mixture-of-experts
layer runs beside its routed experts (Megatron-Core ``SharedExpertMLP``). Checked against the
published parameter counts of two released models, the closed forms of their FLOPs, kernels
and activation memory, the tensor-parallel site they restore, and both engines agreeing."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, Recompute
from simulator.cost.in_layer import tp_site_count
from simulator.engine.flops import step_flops
from simulator.pipeline import run_scenario
from simulator.workload.layer_activations import activation_bytes_per_layer
from simulator.workload.layer_shape import LayerShape
from simulator.workload.layout import Layout
from simulator.workload.memory import stage_parameters
from simulator.workload.mlp_kernels import expert_block
from simulator.workload.params import active_parameter_count, parameter_count
from simulator.workload.transformer import layer_forward

QWEN2 = "qwen2-57b-a14b"
FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
SCENARIO = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": FABRIC},
            "model": {"preset": QWEN2, "layers": 8},
            "training": {"global_batch": 32, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 2, "pp": 2, "ep": 8, "sequence_parallel": True},
            "simulate": {"contention": False}}


def _model(name: str, **changes) -> ModelConfig:
    return ModelConfig(**{**MODEL_PRESETS[name], **changes})


@pytest.mark.parametrize(("name", "total", "active", "digits"), [
    ("qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, 0.05e9),    # Qwen1.5-MoE release post: 14.3B, 2.7B activated
    (QWEN2, 57e9, 14e9, 0.5e9)])                     # Qwen2 Technical Report, Table 1: 57B-A14B
def test_counts_match_the_published_totals(name, total, active, digits):
    """The released configs' counts, to the digits published (half a unit of the last one)."""
    model = _model(name)
    assert abs(parameter_count(model) - total) <= digits
    assert abs(active_parameter_count(model) - active) <= digits


def test_the_shared_mlp_is_one_more_dense_mlp_per_layer():
    """Each layer gains ``3 h f_s`` weights (SwiGLU, no biases), all of them dense: the
    expert-parallel share of a stage is unchanged."""
    with_shared, without = _model(QWEN2), _model(QWEN2, shared_expert_ffn=0)
    h, f_s = with_shared.hidden, with_shared.shared_expert_ffn
    assert parameter_count(with_shared) - parameter_count(without) == with_shared.layers * 3 * h * f_s
    par = scenario_from_mapping(SCENARIO, "<test>", HardwareLibrary()).parallelism
    dense, expert = stage_parameters(with_shared, par, 4, False, False)
    dense0, expert0 = stage_parameters(without, par, 4, False, False)
    assert expert == expert0 and dense - dense0 == pytest.approx(4 * 3 * h * f_s / par.tp)


def test_forward_flops_add_the_shared_gemms():
    """Per microbatch on one GPU: ``2 b s 3 h f_s / t`` more forward FLOPs; per step
    ``3 L 2 B s 3 h f_s`` more model FLOPs (every token runs the shared MLP)."""
    model, t = _model(QWEN2), 2
    shape = LayerShape(model, 2, tp=t, ep=8, sequence_parallel=True)
    bare = replace(shape, model=_model(QWEN2, shared_expert_ffn=0))
    h, f_s, tokens = model.hidden, model.shared_expert_ffn, shape.tokens
    per_microbatch = 2 * tokens * 3 * h * f_s / t
    assert layer_forward(shape).flops - layer_forward(bare).flops == pytest.approx(per_microbatch)
    block, bare_block = expert_block(shape), expert_block(bare)
    assert block.experts.flops - bare_block.experts.flops == pytest.approx(per_microbatch)
    scenario = scenario_from_mapping(SCENARIO, "<test>", HardwareLibrary())
    bare_model = scenario.model.model_copy(update={"shared_expert_ffn": 0})
    no_shared = scenario.model_copy(update={"model": bare_model})
    batch_tokens = scenario.training.global_batch * model.seq_len
    extra = 3 * scenario.model.layers * 2 * batch_tokens * 3 * h * f_s
    assert step_flops(scenario)[0] - step_flops(no_shared)[0] == pytest.approx(extra, rel=1e-12)


def test_they_restore_the_mlps_tensor_parallel_site():
    """A sequence-parallel MoE layer leaves its MLP's gather and scatter to the dispatcher (one
    site); the shared experts' linears gather and scatter as a dense MLP's (two sites)."""
    layout = Layout(tp=2, pp=1, dp=8, ep=8)
    shape = LayerShape(_model(QWEN2), 1, tp=2, ep=8, sequence_parallel=True)
    assert tp_site_count(shape, layout) == 2
    assert tp_site_count(replace(shape, model=_model(QWEN2, shared_expert_ffn=0)), layout) == 1


def test_activation_memory_keeps_the_shared_mlps_inner_tensors():
    """No recompute: ``s b 2 (3 f_s) / t`` more bytes per layer (the SwiGLU inner tensors, bf16)."""
    kw = {"micro_batch": 1, "tp": 2, "sequence_parallel": True, "recompute": Recompute.NONE}
    model = _model(QWEN2)
    extra = activation_bytes_per_layer(model, **kw) - activation_bytes_per_layer(
        _model(QWEN2, shared_expert_ffn=0), **kw)
    assert extra == pytest.approx(model.seq_len * 2 * 3 * model.shared_expert_ffn / 2)


def test_both_engines_agree_and_the_step_grows(tmp_path):
    """The discrete-event replay (contention off) gives the analytical step, with and without
    the all-to-all overlap, and the shared MLP makes the step longer."""
    steps = {}
    for name, shared, overlap in (("bare", 0, False), ("shared", None, False), ("overlap", None, True)):
        data = yaml.safe_load(yaml.safe_dump(SCENARIO))
        if shared is not None:
            data["model"]["shared_expert_ffn"] = shared
        if overlap:
            data["training"]["stack"] = {"base": "megatron-core", "expert_parallel": {"a2a_overlap": True}}
            data["parallelism"].update({"schedule": "interleaved-1f1b", "virtual_stages": 2})
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        analytical, des = run_scenario(path), run_scenario(path, engine="des")
        assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
        assert 0.0 < analytical.mfu <= 1.0
        steps[name] = analytical.step_time_s
    assert steps["shared"] > steps["bare"]


def test_a_dense_model_with_shared_experts_is_a_user_error(tmp_path, capsys):
    data = yaml.safe_load(yaml.safe_dump(SCENARIO))
    data["model"] = {"preset": "llama3-8b", "shared_expert_ffn": 4096}
    data["parallelism"] = {"tp": 2}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "model.shared_expert_ffn" in err and "mixture of experts only" in err and "Traceback" not in err
