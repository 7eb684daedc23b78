"""Seeded random scenarios across nodes, models (dense and mixtures of experts, shared
experts, latent attention, dense layers among experts, multi-token prediction), stacks, dtypes
and fp8 recipes (NVFP4 included), pipeline layouts, Megatron-Core's recompute modules, fabrics
with up to four NICs per GPU and layouts: each is refused with
a ConfigError or gives a physical result (finite step, MFU in (0, 1]); a sample also through
the discrete-event engine with contention. Fuzzing this way on 2026-11-28 found the contention
replay's crash on GPipe over PCIe servers (tests/test_des_prefix.py), and later that day a MoE
layer with shared experts raising in the fp8 casts and reporting MFU above 1."""

from __future__ import annotations

import math
import random

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.errors import ConfigError
from simulator.topology import build_cluster

NODES = ["dgx-a100-80gb", "dgx-h100", "hgx-h200", "mi300x-platform", "dgx-b200", "pcie-a100x8", "dgx-b300"]
MODULES = ["core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"]
PRESETS = ["llama3-8b", "qwen3-4b", "mixtral-8x7b", "qwen3-30b-a3b", "megatron-7.5b", "qwen1.5-moe-a2.7b"]
STACKS = ["megatron-core", "fsdp", "fsdp2", "torchtitan", "deepspeed", "nemo", "megatron-lm-2021"]
EXPERTS = {"mixtral-8x7b": 8, "qwen3-30b-a3b": 128, "qwen1.5-moe-a2.7b": 60}
MLA = {"q_lora_rank": 512, "kv_lora_rank": 256, "qk_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64}


def _random_scenario(rng: random.Random, index: int) -> dict:
    """One scenario mapping; its layout may well be invalid (then the loader says why)."""
    nodes, tp = rng.choice([1, 2]), rng.choice([1, 2, 4, 8])
    pp, cp = rng.choice([1, 2, 4]), rng.choice([1, 2])
    dp = max(1, 8 * nodes // (tp * pp * cp))
    preset = rng.choice(PRESETS)
    experts = EXPERTS.get(preset, 1)
    ep = rng.choice([e for e in (1, 2, 4, 8) if experts % e == 0]) if experts > 1 else 1
    micro = rng.choice([1, 2])
    parallelism = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "zero_stage": rng.choice([0, 1, 2, 3]),
                   "sequence_parallel": tp > 1 and rng.random() < 0.7,
                   "schedule": rng.choice(["1f1b", "gpipe"]),
                   "recompute": rng.choice(["none", "selective", "full"])}
    if experts > 1 and rng.random() < 0.4:
        parallelism["etp"] = rng.choice([e for e in (1, 2, 4, 8) if tp % e == 0])
    model = _random_model(rng, preset, experts)
    if rng.random() < 0.2:
        parallelism["pipeline_layout"] = _layout(pp, model.get("mtp_layers", 0))
    scenario = {"name": f"random-{index}", "cluster": {"node": rng.choice(NODES), "nodes": nodes},
                "model": model,
                "training": {"global_batch": dp * micro * rng.choice([1, 4]), "micro_batch": micro,
                             "dtype": rng.choice(["bf16", "fp8"]), "stack": _random_stack(rng, experts)},
                "parallelism": parallelism}
    if parallelism["recompute"] == "selective" and rng.random() < 0.5:
        parallelism["recompute_modules"] = rng.sample(MODULES, rng.randint(0, 3))
    fabric = _random_fabric(random.Random(f"fabric-{index}"))
    if fabric:
        scenario["cluster"]["fabric"] = fabric
    return scenario


def _random_fabric(rng: random.Random) -> dict | None:
    """Half the time a fabric of its own, on its own generator (the other draws stay as they
    were): its kind, PXN, and 4 to 32 NICs per 8-GPU server (two and four per GPU included)."""
    if rng.random() < 0.5:
        return None
    return {"topology": rng.choice(["fat-tree", "rail-optimized", "single-switch"]),
            "nics_per_node": rng.choice([4, 8, 16, 32]), "pxn": rng.random() < 0.3}


def _random_model(rng: random.Random, preset: str, experts: int) -> dict:
    """The preset cut to 4 layers, sometimes with latent attention or (MoE) shared experts."""
    model = {"preset": preset, "layers": 4, "seq_len": rng.choice([2048, 4096])}
    if rng.random() < 0.2:
        model["mla"] = {**MLA, "q_lora_rank": rng.choice([0, 512])}
    if experts > 1 and rng.random() < 0.3:
        model["shared_expert_ffn"] = rng.choice([512, 2048])
    if experts > 1 and rng.random() < 0.3:
        model["first_dense_layers"] = rng.choice([1, 2])
        model["dense_ffn"] = rng.choice([2048, 8192])
    if rng.random() < 0.2:
        model["mtp_layers"] = 1
    return model


def _layout(pp: int, mtp: int) -> str:
    """A Megatron-Core layout of the 4 layers (and MTP) on ``pp`` chunks, the embedding first."""
    slots = ["t"] * 4 + ["m"] * mtp
    chunks = [slots[i::pp] for i in range(pp)]          # interleaved letters: m may land early
    ordered = sorted(slots, key=lambda s: s == "m")
    sizes = [len(c) for c in chunks]
    out, start = [], 0
    for size in sizes:
        out.append("".join(ordered[start:start + size]))
        start += size
    out[0], out[-1] = "E" + out[0], out[-1] + "L"
    return "|".join(out)


def _random_stack(rng: random.Random, experts: int) -> str | dict:
    """A stack, sometimes with another fp8 recipe or (MoE) the expert all-to-all overlap and the
    flex dispatcher's deduplicated kernels."""
    stack: dict = {"base": rng.choice(STACKS)}
    if rng.random() < 0.3:
        stack["kernels"] = {"fp8_scaling": rng.choice(["delayed", "dynamic", "mxfp8", "nvfp4"]),
                            "grouped_gemm_streams": rng.choice([0, 4])}
        if stack["kernels"]["fp8_scaling"] == "nvfp4" and rng.random() < 0.5:
            stack["data_parallel"] = {"param_gather_dtype": "fp4"}
    if experts > 1 and rng.random() < 0.3:
        stack["expert_parallel"] = {"a2a_overlap": True, "delay_wgrad": rng.random() < 0.5}
    if experts > 1 and rng.random() < 0.3:
        stack.setdefault("expert_parallel", {})["dispatcher"] = rng.choice(["deepep", "hybridep"])
    return stack if len(stack) > 1 else stack["base"]


def _cases(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    return [_random_scenario(rng, i) for i in range(count)]


def _loaded(data: dict):
    try:
        scenario = scenario_from_mapping(data, "<random>")
    except ConfigError:
        return None
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def _physical(result) -> bool:
    return (math.isfinite(result.step_time_s) and result.step_time_s > 0 and 0 < result.mfu <= 1
            and math.isfinite(result.memory_per_gpu_bytes))


def test_random_scenarios_are_refused_or_physical():
    loaded = [found for found in map(_loaded, _cases(2026, 120)) if found is not None]
    assert len(loaded) > 40              # many random layouts are valid: the check has teeth
    for scenario, collectives in loaded:
        assert _physical(simulate_step(scenario, collectives)), scenario.name


@pytest.mark.parametrize("index", range(6))
def test_random_scenarios_replay_with_contention(index):
    found = None
    for data in _cases(1128 + index, 20):
        found = _loaded(data)
        if found is not None:
            break
    assert found is not None
    scenario, collectives = found
    result = simulate_steps_des(scenario, collectives, steps=1, contention=True)
    assert _physical(result), scenario.name
