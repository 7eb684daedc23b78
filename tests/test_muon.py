"""Muon (``training.optimizer: muon``): the matrices it orthogonalises add up to the layers'
parameters, its Newton-Schulz iterations cost ``4 m^2 n + 2 m^3`` FLOPs each as three GEMMs, and
the step and the state change as its mechanism says (simulator/workload/muon.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config import load_scenario, scenario_from_mapping
from simulator.config.hardware import Dtype
from simulator.config.library import HardwareLibrary
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.cost.compute import ComputeModel
from simulator.cost.newton_schulz import newton_schulz_seconds
from simulator.engine.analytical import simulate_step
from simulator.pipeline import session_from_scenario
from simulator.workload.matrices import matrix_elements
from simulator.workload.muon import expert_matrices, layer_matrices, stage_matrices
from simulator.workload.params import layer_parameters

ROOT = Path(__file__).resolve().parent.parent


def _model(preset: str) -> ModelConfig:
    return ModelConfig(**MODEL_PRESETS[preset])


def _elements(matrices) -> float:
    return matrix_elements(matrices)


@pytest.mark.parametrize("preset", ["llama3-8b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k2", "mixtral-8x7b"])
def test_matrices_are_the_layer_less_its_norms(preset):
    """On one rank, the Muon matrices of a layer (routed experts included) are every parameter
    of the layer but its 1-D norm weights: two RMSNorms, plus latent attention's two latent norms
    (the parameter count leaves QK-norm's per-head weights out)."""
    model = _model(preset)
    matrices = _elements(layer_matrices(model, 1, split_qkv=True))
    if model.experts > 1:
        matrices += model.experts * _elements(expert_matrices(model, 1))
    norms = 2 * model.hidden
    if model.mla is not None:
        norms += model.mla.q_lora_rank + model.mla.kv_lora_rank
    assert matrices == layer_parameters(model) - norms


def test_tensor_parallel_shards_and_the_split_qkv():
    """Blockwise: each rank holds ``1/t`` of every split matrix; the fused QKV is three blocks."""
    model = _model("llama3-8b")
    whole, split = layer_matrices(model, 1, True), layer_matrices(model, 4, True)
    assert _elements(split) == pytest.approx(_elements(whole) / 4)
    assert split[:2] == [(4096, 4096 / 4, 1), (4096, 1024 / 4, 2)]
    fused = layer_matrices(model, 4, False)
    assert fused[0] == (4096, 6144 / 4, 1) and len(fused) == len(split) - 1


def test_stage_counts_routed_dense_and_prediction_layers():
    model = _model("deepseek-v3")
    dense, expert = stage_matrices(model, ParallelismConfig(tp=1, ep=32, etp=1), split_qkv=True,
                                   layers=5, dense_layers=3, mtp_layers=1)
    routed = 5 - 3 + 1
    assert [count for _, _, count in expert] == [routed * 256 / 32] * 2
    expected = (routed * _elements(layer_matrices(model, 1, True))
                + 3 * _elements(layer_matrices(model.dense_model(), 1, True)) + 2 * model.hidden ** 2)
    assert matrix_elements(dense) == pytest.approx(expected)


def test_newton_schulz_is_three_gemms_per_step_on_the_smaller_side():
    compute = ComputeModel(HardwareLibrary().gpu("h100-sxm"), Dtype.BF16)
    matrices = [(2048.0, 7168.0, 3.0), (7168.0, 2048.0, 1.0)]
    per_step = (compute.gemm_time(2048, 2048, 7168) + compute.gemm_time(2048, 2048, 2048)
                + compute.gemm_time(2048, 7168, 2048))
    assert newton_schulz_seconds(compute, matrices, 5) == pytest.approx(5 * 4 * per_step)
    flops = 2 * (2048 * 2048 * 7168 + 2048 ** 3 + 2048 * 7168 * 2048)
    assert flops == 4 * 2048 ** 2 * 7168 + 2 * 2048 ** 3


def _scenario(optimizer, zero_stage=1, dtype="bf16"):
    data = {"name": "muon", "cluster": {"node": "dgx-h100", "nodes": 2,
                                        "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 16, "micro_batch": 1, "dtype": dtype, "stack": "megatron-core",
                         "optimizer": optimizer},
            "parallelism": {"tp": 2, "pp": 1, "dp": 8, "zero_stage": zero_stage}}
    return scenario_from_mapping(data, "<test>")


def _result(optimizer, zero_stage=1, dtype="bf16"):
    scenario = _scenario(optimizer, zero_stage, dtype)
    return simulate_step(scenario, session_from_scenario(scenario).collectives)


def test_muon_step_is_adams_plus_its_iterations_and_keeps_one_moment(tmp_path):
    """Against Adam on the same run: a longer optimizer step, growing with the iterations, and
    4 bytes less state per matrix element over the shard group (zero_stage 1 over dp 8)."""
    results = {}
    for name, optimizer in [("adam", "adam"), ("muon", "muon"), ("ten", {"name": "muon", "ns_steps": 10})]:
        results[name] = _result(optimizer)
    adam, muon, ten = results["adam"], results["muon"], results["ten"]
    assert muon.optimizer_s > adam.optimizer_s
    assert ten.optimizer_s - muon.optimizer_s == pytest.approx(muon.optimizer_s - adam.optimizer_s, rel=0.3)
    model = _model("llama3-8b")
    matrices = 32 * _elements(layer_matrices(model, 2, True))
    assert adam.memory_per_gpu_bytes - muon.memory_per_gpu_bytes == pytest.approx(4 * matrices / 8, rel=1e-9)
    assert muon.step_time_s - adam.step_time_s == pytest.approx(muon.optimizer_s - adam.optimizer_s, rel=1e-6)


def test_unsharded_muon_state_and_fp32_training():
    adam, muon = _result("adam", 0), _result("muon", 0)
    matrices = 32 * _elements(layer_matrices(_model("llama3-8b"), 2, True))
    assert adam.memory_per_gpu_bytes - muon.memory_per_gpu_bytes == pytest.approx(4 * matrices, rel=1e-9)
    fp32 = _result("muon", 1, "fp32")
    assert 0 < fp32.mfu <= 1 and np.isfinite(fp32.optimizer_s)


@pytest.mark.parametrize("optimizer,zero_stage,message", [
    ("sgd", 1, "training.optimizer: 'sgd' is not one of 'adam' or 'muon'"),
    ({"name": "muon", "ns_steps": 0}, 1, "training.optimizer.ns_steps"),
    ("muon", 3, "training.optimizer: muon with parallelism.zero_stage 3 is not modelled"),
])
def test_bad_optimizer_is_one_message_and_exit_2(tmp_path, capsys, optimizer, zero_stage, message):
    path = tmp_path / "s.yaml"
    data = yaml.safe_load((ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml").read_text())
    data["training"]["optimizer"] = optimizer
    data["parallelism"]["zero_stage"] = zero_stage
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and str(path) in err


def test_the_default_is_adam():
    assert load_scenario(ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml").training.optimizer.name == "adam"


def test_first_step_peak_leaves_out_the_moments_not_the_master_weights():
    """A training log's first-step peak has no optimizer moments yet: Adam's 8 of its 12 bytes
    per parameter of the state, Muon's 4 of 8 on its matrices (simulator/validation/training_memory.py)."""
    from simulator.validation.training_memory import RUNTIME_PARTS, predicted_bytes
    for name in ("adam", "muon"):
        scenario = _scenario(name)
        result = simulate_step(scenario, session_from_scenario(scenario).collectives)
        parts = result.stages[0].memory
        allocated = sum(v for k, v in parts.items() if k not in RUNTIME_PARTS)
        moments = allocated - predicted_bytes("max_allocated_step1", scenario, None, result)
        if name == "adam":
            assert moments == pytest.approx(8 / 12 * parts["optimizer"], rel=1e-12)
        else:
            matrices = 32 * _elements(layer_matrices(_model("llama3-8b"), 2, True)) / 8
            adam_part = parts["optimizer"] - 8 * matrices
            assert moments == pytest.approx(4 * matrices + 8 / 12 * adam_part, rel=1e-9)
