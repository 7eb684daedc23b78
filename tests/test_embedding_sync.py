"""The tied embedding's gradient all-reduce between the first and last pipeline stages
(simulator/engine/gradient_sync.py ``embedding_sync_seconds``; Megatron-Core
``finalize_model_grads._allreduce_word_embedding_grads``, NeMo 1
``allreduce_first_last_embeddings``, DeepSpeed ``ReduceTiedGrads``)."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step, stage_step
from simulator.engine.gradient_sync import embedding_sync_seconds
from simulator.topology import build_cluster
from simulator.workload.layout import Layout


def _scenario(pp=4, tied=None, vocab=51200, stack="megatron-core", zero_stage=1, grad_dtype=None):
    data_parallel = {} if grad_dtype is None else {"grad_reduce_dtype": grad_dtype}
    stack = stack if isinstance(stack, dict) else {"base": stack, "data_parallel": data_parallel}
    model = {"preset": "megatron-7.5b", "vocab": vocab}
    if tied is not None:
        model["tied_embeddings"] = tied
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": 8, "gpus_per_node": 8,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": model,
            "training": {"global_batch": 64, "micro_batch": 1,
                         "stack": stack},
            "parallelism": {"tp": 2, "pp": pp, "zero_stage": zero_stage}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def _seconds(*args, **kwargs) -> float:
    return embedding_sync_seconds(stage_step(*_scenario(*args, **kwargs)).ctx)


def test_embedding_groups_pair_the_first_and_last_stages():
    layout = Layout(tp=2, pp=4, dp=3, cp=2)
    groups = layout.embedding_groups()
    assert len(groups) == 2 * 3 * 2
    firsts = {layout.gpu(t, c, d, 0) for t in range(2) for c in range(2) for d in range(3)}
    lasts = {layout.gpu(t, c, d, 3) for t in range(2) for c in range(2) for d in range(3)}
    assert {a for a, _ in groups} == firsts and {b for _, b in groups} == lasts
    assert all(b - a == 3 * layout.gpus // 4 for a, b in groups)


def test_only_a_tied_embedding_split_over_stages_is_reduced():
    """GELU models tie by default; Llama-style and untied models, one stage, and ZeRO 3 (no
    Megatron embedding group) reduce nothing."""
    assert _seconds() > 0
    assert _seconds(tied=False) == 0.0
    assert _seconds(pp=1) == 0.0
    assert _seconds(stack="fsdp", zero_stage=3) == 0.0


def test_seconds_follow_the_bytes():
    """V h / t elements in the main gradient's dtype: fp32 doubles bf16's bandwidth term, and
    twice the vocabulary twice the bytes (a latency-bound floor apart)."""
    bf16, fp32 = _seconds(grad_dtype="bf16"), _seconds(grad_dtype="fp32")
    double = _seconds(grad_dtype="bf16", vocab=102400)
    assert fp32 - bf16 == pytest.approx(double - bf16, rel=1e-6)
    assert 1.9 < fp32 / bf16 < 2.0


def test_step_pays_it_after_the_data_parallel_reduction():
    """The all-reduce runs in series after every stage's reduction: two scenarios that differ
    only in the embedding gradient's dtype differ in step time by exactly the difference of
    their all-reduces, and the exposed data-parallel time holds it."""
    steps, seconds = [], []
    for dtype in ("bf16", "fp32"):
        stack = {"base": "nemo", "data_parallel": {"embedding_grad_dtype": dtype}}
        scenario, collectives = _scenario(stack=stack)
        steps.append(simulate_step(scenario, collectives))
        seconds.append(embedding_sync_seconds(stage_step(scenario, collectives).ctx))
    assert steps[1].step_time_s - steps[0].step_time_s == pytest.approx(seconds[1] - seconds[0], rel=1e-9)
    assert steps[1].dp_comm_exposed_s >= seconds[1] > seconds[0] > 0
