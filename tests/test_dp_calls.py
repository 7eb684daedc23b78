"""The NCCL calls an overlapped data-parallel reduction goes out in, each paying the
collective's latency (simulator/engine/dp_calls.py): per bucket (PyTorch DDP, DeepSpeed),
Megatron-Core's buckets on the first pipeline rank's first chunk only, Apex's one group per
layer (NeMo); and Megatron-Core's bucket of ``max(40M, 1M x dp)`` parameters."""

from __future__ import annotations

import math

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.engine.analytical import _stage_clocks, complete_step, stage_step
from simulator.engine.dp_calls import bucket_bytes, reduce_calls
from simulator.engine.gradient_sync import all_gradient_collectives, last_bucket_times
from simulator.topology import build_cluster
from simulator.workload.memory import stage_parameters


def _ctx(stack, pp=1, v=1, dp=64, nodes=8, layers=8, overlap=True, cp=1):
    tp = 8 * nodes // (dp * pp * cp)
    data = {"name": "calls", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                         "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b", "layers": layers},
            "training": {"global_batch": 8 * dp, "micro_batch": 1, "stack": stack},
            "parallelism": {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "zero_stage": 1,
                            "virtual_stages": v, "overlap_grad_reduce": overlap,
                            "schedule": "interleaved-1f1b" if v > 1 else "1f1b"}}
    scenario = scenario_from_mapping(data, "<test>")
    model = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    return stage_step(scenario, model).ctx


def _stage_params(ctx, stage):
    sc = ctx.scenario
    layers = sc.model.layers // sc.parallelism.pp
    return sum(stage_parameters(sc.model, sc.parallelism, layers, stage == 0, stage == sc.parallelism.pp - 1))


def test_megatron_core_bucket_grows_with_the_data_parallel_ranks():
    """megatron-core: B = max(160 MB, 1M x dp x g); at dp 64 with fp32 gradients 256 MB,
    at dp 16 the profile's 160 MB; a stated bucket_MB is used as given."""
    assert bucket_bytes(_ctx("megatron-core", dp=64), 4.0) == pytest.approx(1e6 * 64 * 4.0)
    small = _ctx("megatron-core", dp=16, nodes=2)
    assert bucket_bytes(small, 4.0) == scenario_stack(small.scenario).data_parallel.bucket_bytes == 160e6
    stated = _ctx({"base": "megatron-core", "data_parallel": {"bucket_MB": 100.0}}, dp=64)
    assert scenario_stack(stated.scenario).data_parallel.bucket_params_per_rank == 0.0
    assert bucket_bytes(stated, 4.0) == pytest.approx(100e6)


def _stated(stack, megabytes, **kwargs):
    return _ctx({"base": stack, "data_parallel": {"bucket_MB": megabytes}}, **kwargs)


def test_a_bucket_smaller_than_a_tensor_holds_that_tensor_alone():
    """Buckets close after the tensor that fills them: with a 1-byte bucket every tensor is a
    call (8 Llama layers of 9 tensors, and the embedding and output as one rest), with a
    bucket larger than the model one call; fp32 gradients."""
    tiny, huge = _stated("fsdp", 1e-6, dp=64), _stated("fsdp", 1e5, dp=64)
    params = _stage_params(tiny, 0)
    assert reduce_calls(tiny, 0, params, 4.0) == 8 * 9 + 1
    assert reduce_calls(huge, 0, params, 4.0) == 1
    ddp = _ctx("fsdp", dp=64)                                  # 25 MiB: between the two
    assert 1 < reduce_calls(ddp, 0, params, 4.0) <= 8 * 9 + 1
    assert reduce_calls(ddp, 0, params, 4.0) <= math.ceil(params * 4.0 / bucket_bytes(ddp, 4.0))


def test_megatron_core_buckets_only_the_first_chunk_of_the_first_stage():
    """pp 2 x v 2 (2 layers per chunk): stage 0 buckets its first chunk (one call per tensor
    with a 1-byte bucket: 2 layers of 9 and the embedding) and makes one call for its other
    chunk; stage 1 makes one call per chunk whatever the bucket."""
    tiny = _stated("megatron-core", 1e-6, pp=2, v=2, dp=32)
    assert reduce_calls(tiny, 0, _stage_params(tiny, 0), 4.0) == 2 * 9 + 1 + 1
    assert reduce_calls(tiny, 1, _stage_params(tiny, 1), 4.0) == 2
    ctx = _ctx("megatron-core", pp=2, v=2, dp=32)
    assert 2 <= reduce_calls(ctx, 0, _stage_params(ctx, 0), 4.0) <= 2 * 9 + 2


def test_apex_groups_a_layer_and_no_overlap_makes_one_call():
    """nemo (Apex DistributedFusedAdam): one coalesced group per layer (per chunk with virtual
    stages); without overlap_grad_reduce the whole buffer is one call."""
    nemo = _ctx("nemo", dp=64, layers=8)
    assert reduce_calls(nemo, 0, _stage_params(nemo, 0), 2.0) == 8
    chunked = _ctx("nemo", pp=2, v=2, dp=32)
    assert reduce_calls(chunked, 1, _stage_params(chunked, 1), 2.0) == 2
    flat = _ctx("megatron-core", dp=64, overlap=False)
    assert reduce_calls(flat, 0, _stage_params(flat, 0), 4.0) == 1


def test_each_call_pays_the_latency_once():
    """The stage's reduce-scatter in k calls: k a + b n with (a, b) the terms chosen for one
    call's bytes."""
    ctx = _ctx("megatron-core", dp=64, layers=32)
    (reduce,) = [c for c in all_gradient_collectives(ctx)[0] if c.op == Op.REDUCE_SCATTER]
    assert reduce.launches > 1
    assert reduce.launches == reduce_calls(ctx, 0, _stage_params(ctx, 0), 4.0) > 1
    terms = reduce.terms
    assert reduce.time_s == pytest.approx(reduce.launches * terms.latency_s
                                          + terms.seconds_per_byte * reduce.size_bytes, rel=1e-12)
    assert reduce.launched_terms.latency_s == pytest.approx(reduce.launches * terms.latency_s)


def test_bucketing_off_makes_a_chunk_one_bucket():
    """``param_gather_with_optimizer`` (Megatron-Core's overlap_param_gather_with_optimizer_step
    turns bucketing off): one call per model chunk on every stage, and the exposed tail is the
    last chunk's whole reduction, 1 / v of the stage's (here v 2, so half of it)."""
    ctx = _ctx({"base": "megatron-core", "data_parallel": {"param_gather_with_optimizer": True}},
               pp=2, v=2, dp=32)
    assert reduce_calls(ctx, 0, _stage_params(ctx, 0), 4.0) == 2
    assert reduce_calls(ctx, 1, _stage_params(ctx, 1), 4.0) == 2
    syncs = all_gradient_collectives(ctx)
    tails = last_bucket_times(ctx, syncs)
    for stage, tail in zip(syncs, tails, strict=True):
        (reduce,) = [c for c in stage if c.op == Op.REDUCE_SCATTER]
        assert tail == pytest.approx(reduce.terms.seconds(reduce.size_bytes / 2), rel=1e-12)


def test_a_shared_memo_keeps_the_calls_of_each_layout():
    """Layouts that share a memo (a sweep) but differ in overlap_grad_reduce or virtual stages
    get the weight gathers of their own call counts: the same as each priced alone."""
    from simulator.engine.gradient_sync import chunk_gather_seconds, rest_gather_seconds

    def gathers(memo, **kwargs):
        ctx = _ctx({"base": "megatron-core", "data_parallel": {"param_gather_launch": "bucket"}},
                   layers=32, **kwargs)
        ctx = stage_step(ctx.scenario, ctx.collectives, memo=memo).ctx
        return rest_gather_seconds(ctx), chunk_gather_seconds(ctx)

    variants = [dict(dp=64, overlap=True), dict(dp=64, overlap=False),
                dict(pp=2, v=2, dp=32, overlap=True), dict(pp=2, dp=32, overlap=True)]
    shared = {}
    for kwargs in variants:
        rest, chunk = gathers(shared, **kwargs)
        alone_rest, alone_chunk = gathers(None, **kwargs)
        assert (rest is None) == (alone_rest is None) and (chunk is None) == (alone_chunk is None)
        if rest is not None:
            assert list(rest) == list(alone_rest)


def test_a_shared_memo_keeps_each_stage_split():
    """Layouts that share a memo but move layers between the first and last stages
    (``first_stage_layers`` / ``last_stage_layers``) get the gradient synchronisation and
    weight gathers of their own split: every figure as priced alone."""
    base = _ctx({"base": "megatron-core", "data_parallel": {"param_gather_launch": "bucket"}},
                pp=2, dp=32, layers=32)

    def step(memo, first):
        par = base.scenario.parallelism.model_copy(update={"first_stage_layers": first,
                                                           "last_stage_layers": 32 - first})
        scenario = base.scenario.model_copy(update={"parallelism": par})
        staged = stage_step(scenario, base.collectives, memo=memo)
        finish, last_start = _stage_clocks(staged.ctx, staged.forward, staged.backward, staged.p2p)
        return complete_step(staged, finish, last_start).to_json_dict()

    shared = {}
    for first in (16, 12, 20):
        assert step(shared, first) == step(None, first)


def test_expert_and_dense_buckets_hold_their_own_tensors():
    """Megatron-Core keeps the experts' gradients in a buffer of their own (reduced over the
    expert-data-parallel groups): its buckets fill with the rank's experts' MLP tensors (over
    etp), the other buffer's with everything else (over tp); each list sums to its part of the
    layer."""
    from simulator.config.presets import MODEL_PRESETS
    from simulator.config.scenario import ModelConfig
    from simulator.engine.dp_calls import _layer_tensors
    from simulator.workload.params import layer_parameters, mlp_tensor_sizes
    model = ModelConfig(**MODEL_PRESETS["mixtral-8x7b"])
    experts = _layer_tensors(model, 2, 4, 1, True)
    rest = _layer_tensors(model, 2, 4, 1, False)
    assert sum(experts) == pytest.approx(sum(mlp_tensor_sizes(model)) / 4, rel=1e-12)
    assert sum(rest) == pytest.approx((layer_parameters(model) - sum(mlp_tensor_sizes(model))) / 2, rel=1e-12)
    dense = ModelConfig(**MODEL_PRESETS["llama3-8b"])
    assert sum(_layer_tensors(dense, 2, 1, 2, False)) == pytest.approx(layer_parameters(dense) / 2, rel=1e-12)
