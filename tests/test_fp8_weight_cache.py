"""TransformerEngine's cached fp8 weights in the memory model (simulator/workload/fp8_weight_cache.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.config import HardwareLibrary
from simulator.config.hardware import Dtype
from simulator.config.stack import Fp8WeightCache, StackProfile
from simulator.pipeline import run_scenario
from simulator.workload.fp8_weight_cache import cache_mode, copy_bytes, fp8_weight_memory

ROOT = Path(__file__).resolve().parent.parent
PRIMUS = ROOT / "validation" / "scenarios" / "primus_mi325x"
LIBRARY = HardwareLibrary()
GIB = 2**30


def _stack(**kernels) -> StackProfile:
    return StackProfile(name="t", kernels=kernels)


@pytest.mark.parametrize("scaling, gpu, expected", [
    ("delayed", "h100-sxm", (1.0, 1.0)),      # Hopper's fp8 GEMMs take one layout: a transposed copy
    ("dynamic", "mi325x", (1.0, 1.0)),
    ("delayed", "b200", (1.0, 0.0)),          # Blackwell reads either layout
    ("mxfp8", "b200", (1 + 1 / 32, 1 + 1 / 32)),
    ("nvfp4", "b200", (0.5 + 1 / 16, 0.5 + 1 / 16)),
])
def test_bytes_of_the_kept_copies_per_element(scaling, gpu, expected):
    assert copy_bytes(_stack(fp8_scaling=scaling), LIBRARY.gpu(gpu)) == pytest.approx(expected)


def test_the_cache_follows_the_cast_unless_stated():
    """Megatron-Core reuses the cached cast over a step (per_step): the cache exists; torchao
    and TE without is_first_microbatch cast every forward: nothing is kept."""
    assert cache_mode(LIBRARY.stack("megatron-core")) == Fp8WeightCache.FULL
    assert cache_mode(LIBRARY.stack("nemo")) == Fp8WeightCache.FULL
    for name in ("torchtitan", "fsdp", "deepspeed"):
        assert cache_mode(LIBRARY.stack(name)) == Fp8WeightCache.NONE
    stated = _stack(fp8_weight_cast="per_forward", fp8_weight_cache="rowwise")
    assert cache_mode(stated) == Fp8WeightCache.ROWWISE


@pytest.mark.parametrize("kernels, zero_stage, gathered, expected", [
    ({}, 1, "param", (2.0, 0.0)),                                     # fp8 copy and its transpose
    ({"fp8_weight_cache": "rowwise"}, 3, "param", (1.0, 0.0)),
    ({"fp8_weight_cast": "per_forward"}, 1, "param", (0.0, 0.0)),
    ({}, 1, "fp8", (1.0, 1.0)),              # fp8 parameters: 1 B less, the transpose kept
    ({"fp8_params": True, "fp8_scaling": "mxfp8"}, 1, "param", (1 + 1 / 32, 1 - 1 / 32)),
])
def test_cache_and_weight_bytes_per_linear_element(kernels, zero_stage, gathered, expected):
    stack = StackProfile(name="t", kernels=kernels, data_parallel={"param_gather_dtype": gathered})
    cache, lighter = fp8_weight_memory(1.0, Dtype.FP8, stack, zero_stage, LIBRARY.gpu("mi325x"))
    assert (cache, lighter) == pytest.approx(expected)
    assert fp8_weight_memory(1.0, Dtype.BF16, stack, zero_stage) == (0.0, 0.0)


def _llama_linear_parameters(layers, h, q_heads, kv_heads, f, d=128):
    return layers * (2 * h * q_heads * d + 2 * h * kv_heads * d + 3 * h * f)


def test_data_parallel_fp8_run_keeps_two_bytes_per_linear_weight():
    """Llama 2 7B under Megatron's distributed optimizer, FP8 with the transpose cache: every
    decoder linear's fp8 copy and transpose, 2 B per element (norm weights included: under
    0.01%)."""
    memory = run_scenario(PRIMUS / "llama2-7b-64gpu-fp8.yaml").stages[0].memory
    linears = _llama_linear_parameters(32, 4096, 32, 32, 11008)
    assert memory["fp8_weight_cache"] == pytest.approx(2 * linears, rel=1e-3)


def test_fsdp_keeps_the_whole_gathered_weight():
    """Under FSDP2 the module casts the gathered weight: the cache is every layer's whole weight
    (1 B without the transpose cache), not the 1/16 shard."""
    memory = run_scenario(PRIMUS / "llama2-70b-16gpu-fp8-fsdp2.yaml").stages[0].memory
    linears = _llama_linear_parameters(80, 8192, 64, 8, 28672)
    assert memory["fp8_weight_cache"] == pytest.approx(linears, rel=1e-3)


def test_bf16_runs_keep_no_fp8_copies():
    assert "fp8_weight_cache" not in run_scenario(PRIMUS / "mixtral-8x7b-64gpu-bf16.yaml").stages[0].memory


def test_fp8_parameters_make_the_same_run_lighter(tmp_path):
    """The same run with its weights stored as fp8 parameters: 2 B per linear element less in
    all (the 16-bit copy gone, the row-wise cache being the weight itself)."""
    path = PRIMUS / "llama2-7b-64gpu-fp8.yaml"
    data = yaml.safe_load(path.read_text())
    data["training"]["stack"].setdefault("kernels", {})["fp8_params"] = True
    variant = tmp_path / "fp8-params.yaml"
    variant.write_text(yaml.safe_dump(data))
    before, after = (run_scenario(p).memory_per_gpu_bytes for p in (path, variant))
    linears = _llama_linear_parameters(32, 4096, 32, 32, 11008)
    assert before - after == pytest.approx(2 * linears, rel=1e-3)


def test_sharded_fp8_parameters_save_their_shard_only():
    """Under ZeRO-3 the fp8 parameters are sharded: the weights hold ``(2 - 1) E / s`` less, not
    the whole model's byte per element (which once drove the weights part below zero)."""
    stack = _stack(fp8_params=True, fp8_weight_cache="none")
    assert fp8_weight_memory(64.0, Dtype.FP8, stack, 3, LIBRARY.gpu("b200"), 64) == pytest.approx((0.0, 1.0))
    assert fp8_weight_memory(64.0, Dtype.FP8, stack, 1, LIBRARY.gpu("b200"), 64) == pytest.approx((0.0, 64.0))


def test_fsdp_with_fp8_parameters_keeps_every_memory_part_positive(tmp_path):
    """The Llama 2 70B FSDP2 run with fp8 parameters and no cache: every part of its memory is
    non-negative and its weights less than the bf16 shard's."""
    path = PRIMUS / "llama2-70b-16gpu-fp8-fsdp2.yaml"
    data = yaml.safe_load(path.read_text())
    data["training"]["stack"].setdefault("kernels", {}).update(fp8_params=True, fp8_weight_cache="none")
    variant = tmp_path / "fp8-params.yaml"
    variant.write_text(yaml.safe_dump(data))
    before, after = (run_scenario(p).stages[0].memory for p in (path, variant))
    assert all(value >= 0 for value in after.values())
    assert 0 < after["weights"] < before["weights"]


def test_sharded_fp8_expert_parameters_save_their_own_shard(tmp_path):
    """Mixtral 8x7B under ZeRO-3 on 64 GPUs with ep 8: the dense weights are sharded over 64
    ranks, the experts over their expert-data-parallel 8 (``expert_shard_size``), so fp8
    parameters save ``E_dense / 64 + E_expert / 8`` bytes (``(2 - 1)`` B per element, no cache);
    the router and norm weights, counted with the dense ones, are 0.003% of the saving."""
    data = yaml.safe_load((PRIMUS / "mixtral-8x7b-64gpu-bf16.yaml").read_text())
    data["training"]["dtype"] = "fp8"
    data["parallelism"].update(zero_stage=3, recompute="full")
    weights = []
    for fp8_params in (False, True):
        data["training"]["stack"]["kernels"] = {"fp8_weight_cache": "none", "fp8_params": fp8_params}
        path = tmp_path / f"mixtral-{fp8_params}.yaml"
        path.write_text(yaml.safe_dump(data))
        weights.append(run_scenario(path).stages[0].memory["weights"])
    layers, h, f = 32, 4096, 14336
    attention = layers * (2 * h * 32 * 128 + 2 * h * 8 * 128)
    one_expert_per_gpu = layers * 3 * h * f
    assert weights[0] - weights[1] == pytest.approx(attention / 64 + one_expert_per_gpu / 8, rel=1e-4)
