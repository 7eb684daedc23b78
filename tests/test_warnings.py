"""The result's warnings (simulator/results/warnings.py), ``run --strict``, ``check``'s verdict,
and the memory the runtime and the stack's gradient dtype add (simulator/workload/memory.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import Dtype
from simulator.config.scenario import ModelConfig, ParallelismConfig, TrainingConfig
from simulator.pipeline import run_scenario
from simulator.workload.memory import (
    CUDA_CONTEXT_BYTES,
    NCCL_BUFFER_BYTES,
    NCCL_CHANNELS,
    gradient_bytes,
    model_state_bytes,
    stage_memory,
)

BASE = {
    "name": "w",
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "model": {"preset": "megatron-1.7b"},
    "training": {"global_batch": 16, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 2, "dp": 4},
}


def _write(tmp_path, **sections) -> str:
    data = json.loads(json.dumps(BASE))
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_clean_scenario_has_no_warnings(tmp_path):
    assert run_scenario(_write(tmp_path)).warnings == []


def test_does_not_fit_says_by_how_much_and_where(tmp_path):
    path = _write(tmp_path, model={"preset": "gpt3-175b"}, parallelism={"tp": 8, "pp": 2, "dp": 1})
    result = run_scenario(path)
    assert not result.fits_in_memory
    [warning] = [w for w in result.warnings if w.startswith("does not fit")]
    worst = max(result.stages, key=lambda s: s.memory_bytes)
    assert f"stage {worst.stage}" in warning and "GiB more than" in warning


@pytest.mark.parametrize(("sections", "named"), [
    ({"simulate": {"steps": 50}}, ["simulate.steps (50)"]),
    ({"simulate": {"seed": 7, "fidelity": "per-rank"}},
     ["simulate.fidelity (per-rank)", "simulate.seed (7)"]),
    ({"noise": {"straggler": {"distribution": "lognormal", "sigma": 0.05}}}, ["noise.straggler"]),
    ({"noise": {"slow_gpus": [{"gpu": 3, "factor": 1.5}]}}, ["noise.slow_gpus"]),
])
def test_des_only_keys_are_named_when_the_analytical_engine_runs(tmp_path, sections, named):
    path = _write(tmp_path, **sections)
    [warning] = run_scenario(path).warnings
    assert warning.startswith("the analytical engine ignores") and all(n in warning for n in named)
    assert not [w for w in run_scenario(path, "des", steps=2).warnings if "ignores" in w]


def test_link_faults_are_not_des_only(tmp_path):
    path = _write(tmp_path, cluster={"nodes": 4, "fabric": {"switch_radix": 8}},
                  parallelism={"dp": 8},
                  training={"global_batch": 32},
                  noise={"links": [{"between": ["fabric/leaf0", "fabric/spine0"], "fraction": 0.5}]})
    assert run_scenario(path).warnings == []


def test_identical_des_steps_are_flagged_and_noisy_ones_are_not(tmp_path):
    quiet = run_scenario(_write(tmp_path), "des", steps=4)
    assert len(set(quiet.step_times_s)) == 1
    assert any(w.startswith("all 4 simulated steps are identical") for w in quiet.warnings)
    noisy = run_scenario(_write(tmp_path, noise={"straggler": {"distribution": "lognormal",
                                                               "sigma": 0.1}}), "des", steps=4)
    assert len(set(noisy.step_times_s)) > 1
    assert not any("identical" in w for w in noisy.warnings)
    assert not any("identical" in w for w in run_scenario(_write(tmp_path), "des", steps=1).warnings)


@pytest.mark.parametrize(("parallelism", "stack", "fragment"), [
    ({"pp": 2, "dp": 4, "schedule": "interleaved-1f1b", "virtual_stages": 5},
     "megatron-core", "virtual_stages 5 does not divide the 12 layers per stage"),
    ({"pp": 2, "dp": 4, "schedule": "interleaved-1f1b", "virtual_stages": 5}, "nemo",
     "virtual_stages 5"),
])
def test_layouts_megatron_refuses_are_flagged_for_megatron_stacks(tmp_path, parallelism, stack, fragment):
    path = _write(tmp_path, parallelism=parallelism, training={"stack": stack})
    assert any(fragment in w and "Megatron-LM" in w for w in run_scenario(path).warnings)


def test_megatron_rules_do_not_apply_to_other_stacks(tmp_path):
    path = _write(tmp_path, parallelism={"schedule": "interleaved-1f1b", "virtual_stages": 5,
                                         "zero_stage": 1}, training={"stack": "fsdp2"})
    assert not any("Megatron" in w for w in run_scenario(path).warnings)


def test_uneven_stages_without_interleaving(tmp_path):
    path = _write(tmp_path, model={"preset": "megatron-1.7b", "layers": 23})
    [warning] = run_scenario(path).warnings
    assert "model.layers 23 do not divide over pp 2 stages" in warning


def test_sequence_parallel_without_tensor_parallel_has_no_effect(tmp_path):
    path = _write(tmp_path, parallelism={"tp": 1, "dp": 8, "sequence_parallel": True})
    assert any("sequence_parallel has no effect" in w for w in run_scenario(path).warnings)


def test_run_strict_exits_1_after_printing_and_0_without_warnings(tmp_path, capsys):
    noisy = _write(tmp_path, simulate={"steps": 20})
    assert main(["run", noisy, "--strict", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["warnings"]
    assert captured.err.strip().splitlines() == ["error: --strict: 1 warning (listed in the result)"]
    assert main(["run", _write(tmp_path), "--strict"]) == 0


def test_check_reports_does_not_fit_instead_of_valid(tmp_path, capsys):
    big = _write(tmp_path, model={"preset": "gpt3-175b"}, parallelism={"tp": 8, "pp": 2, "dp": 1})
    assert main(["check", big]) == 0
    out = capsys.readouterr().out
    assert "w: does not fit" in out and ": valid" not in out and "warning: does not fit" in out
    assert main(["check", big, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "does not fit" and record["fits_in_memory"] is False
    assert main(["check", _write(tmp_path)]) == 0
    assert "w: valid" in capsys.readouterr().out


GPT = ModelConfig(layers=24, hidden=2304, heads=24)


def test_megatron_core_keeps_fp32_main_grads_and_megatron_2021_does_not():
    """Megatron Core's distributed-optimizer guide: bf16 params with fp32 grads are 6 + 12/d
    bytes per parameter with the distributed optimizer; Megatron-LM 2021 reduced fp16 grads."""
    core = TrainingConfig(global_batch=8, stack="megatron-core")
    sc21 = TrainingConfig(global_batch=8, stack="megatron-lm-2021", dtype=Dtype.FP16)
    assert gradient_bytes(core, 1) == 4.0 and gradient_bytes(sc21, 0) is None
    assert gradient_bytes(core, 3) is None             # ZeRO-3: sharded, ZeRO's accounting
    weights, grads, optimizer = model_state_bytes(1e9, 8, 1, Dtype.BF16, gradient_bytes(core, 1))
    assert (weights + grads + optimizer) / 1e9 == pytest.approx(6 + 12 / 8)


def test_runtime_memory_counts_context_buffers_and_fragmentation():
    training = TrainingConfig(global_batch=8, micro_batch=1)
    alone = stage_memory(GPT, training, ParallelismConfig(dp=1), 0, 24, 1, True, True)
    three_d = stage_memory(GPT, training, ParallelismConfig(tp=2, pp=2, dp=2), 0, 12, 2, True, False)
    assert alone.cuda_context == three_d.cuda_context == CUDA_CONTEXT_BYTES
    assert alone.nccl_buffers == 0                       # one GPU: no communicator
    assert three_d.nccl_buffers == 3 * NCCL_BUFFER_BYTES * NCCL_CHANNELS * 2   # tp, pp, dp rings
    assert 0 < three_d.fragmentation < 0.01 * three_d.activations
    assert three_d.total == pytest.approx(sum(three_d.as_dict().values()))
    bare = stage_memory(GPT, training, ParallelismConfig(tp=2, pp=2, dp=2), 0, 12, 2, True, False,
                        runtime=False)
    assert three_d.total - bare.total == pytest.approx(
        three_d.cuda_context + three_d.nccl_buffers + three_d.fragmentation)


def test_expert_all_to_all_connects_every_peer():
    model = ModelConfig(layers=8, hidden=1024, heads=16, experts=8, top_k=2)
    training = TrainingConfig(global_batch=8)
    memory = stage_memory(model, training, ParallelismConfig(dp=8, ep=8), 0, 8, 8, True, True)
    assert memory.nccl_buffers == (2 + 7) * NCCL_BUFFER_BYTES * NCCL_CHANNELS   # dp ring + ep peers


def test_uneven_layers_name_megatrons_embedding_and_loss_accounting(tmp_path):
    """94 layers over pp 8 x v 4 (Qwen3 235B in Megatron-Bridge): refused as layers alone, accepted
    when the embedding and the loss count as layers (96 slots over 32 chunks); the warning says so.
    23 layers over pp 2 x v 5 have no such way out, and the warning does not offer one."""
    path = _write(tmp_path, model={"preset": "megatron-1.7b", "layers": 94},
                  parallelism={"pp": 8, "dp": 1, "schedule": "interleaved-1f1b", "virtual_stages": 4})
    assert any("96 slots divide over 32 chunks" in w for w in run_scenario(path).warnings)
    other = _write(tmp_path, model={"preset": "megatron-1.7b", "layers": 23},
                   parallelism={"pp": 2, "dp": 4, "schedule": "interleaved-1f1b", "virtual_stages": 5})
    assert not any("slots divide" in w for w in run_scenario(other).warnings)


def test_a_pipeline_layout_or_uneven_stages_are_not_refused_layouts(tmp_path):
    """Megatron-Core places the layers as ``--pipeline-model-parallel-layout`` or
    ``--decoder-first/last-pipeline-num-layers`` say: no divisibility warning with either."""
    laid = _write(tmp_path, model={"preset": "megatron-1.7b", "layers": 23},
                  parallelism={"pipeline_layout": "E" + "t" * 11 + "|" + "t" * 12 + "L"})
    assert not any("do not divide" in w for w in run_scenario(laid).warnings)
    uneven = _write(tmp_path, model={"preset": "megatron-1.7b", "layers": 23},
                    parallelism={"first_stage_layers": 11})
    assert not any("do not divide" in w for w in run_scenario(uneven).warnings)
