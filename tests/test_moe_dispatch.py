"""The router and token permutations of a mixture-of-experts layer
(simulator/workload/moe_dispatch.py, read from Megatron-Core's moe_utils.py and router.py)."""

from __future__ import annotations

from math import comb

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.engine.context import make_context
from simulator.engine.flops import step_flops
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.mlp_kernels import moe_kernel_bytes
from simulator.workload.moe_dispatch import flex_permutation_parts, moe_layer_bytes, permutation_bytes
from simulator.workload.transformer import layer_forward

HIDDEN, SEQ, MICRO = 1024, 2048, 2


def _ctx(experts: int = 8, ep: int = 8, tp: int = 1, fused: bool | None = None):
    data = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"layers": 4, "hidden": HIDDEN, "heads": 16, "kv_heads": 4, "ffn_hidden": 2048,
                      "mlp": "swiglu", "seq_len": SEQ, "vocab": 32000, "experts": experts,
                      "top_k": 2 if experts > 1 else 1},
            "training": {"global_batch": 64, "micro_batch": MICRO},
            "parallelism": {"tp": tp, "ep": ep, "sequence_parallel": tp > 1}}
    if fused is not None:
        data["training"]["stack"] = {"base": "megatron-core", "kernels": {"moe_permute_fusion": fused}}
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    return make_context(session.scenario, session.collectives)


def test_unfused_permutations_move_the_counted_copies():
    """x = one copy of the local tokens: permute 2k x, un-permute (3k + 3) x, and with more
    than one local expert two sorts of the received rows, 2 R h each (module docstring)."""
    x, received = 1000.0, 3000.0
    assert sum(permutation_bytes(x, received, 2, 1, fused=False)) == pytest.approx((4 + 9) * x)
    assert sum(permutation_bytes(x, received, 2, 4, fused=False)) == pytest.approx(13 * x + 4 * received)
    assert sum(permutation_bytes(x, received, 8, 1, fused=True)) == pytest.approx((9 + 9) * x)


def test_the_layer_adds_the_router_gemm_and_the_dispatch_bytes_to_an_moe_layer_only():
    """b s = 4,096 tokens at h 1,024 in bf16: x = 8 MiB; k 2, one local expert: 13 x of
    permutations plus the router's 17 T E bytes; the router GEMM is (T, E, h)."""
    moe, dense = _ctx(), _ctx(experts=1, ep=1)
    tokens = MICRO * SEQ
    extra = layer_forward(moe.shape).memory_bytes.sum() - layer_forward(dense.shape).memory_bytes.sum()
    mlp_extra = tokens * 2048 * 2 * (2 - 1) * 3.0        # the SwiGLU activation of k = 2 experts' rows
    expected = 13 * tokens * HIDDEN * 2 + 17 * tokens * 8 + mlp_extra
    assert extra == pytest.approx(expected, rel=1e-12)
    router = layer_forward(moe.shape).gemms[2]
    assert tuple(router) == (tokens, 8, HIDDEN, 1)
    assert len(layer_forward(dense.shape).gemms) == 4


def test_sequence_parallel_ranks_permute_their_shard_and_sort_the_gathered_rows():
    """With t = 4 and sequence parallelism each rank permutes b s / t tokens; the received
    rows after the tensor-parallel gather are b s k (two local experts: sorts run)."""
    ctx = _ctx(experts=16, ep=8, tp=4)
    tokens = MICRO * SEQ
    got = moe_layer_bytes(tokens / 4, tokens, HIDDEN, 16, 2, 8, 2, 1.0, False)
    x, received = tokens / 4 * HIDDEN * 2, tokens * 2 * HIDDEN * 2
    assert got.sum() == pytest.approx(13 * x + 4 * received + 17 * tokens / 4 * 16)
    assert layer_forward(ctx.shape).memory_bytes[-len(got):] == pytest.approx(got)


def test_fused_permutations_are_cheaper_and_the_stack_flag_reaches_the_layer():
    plain, fused = _ctx(fused=False), _ctx(fused=True)
    assert fused.shape.moe_permute_fused and not plain.shape.moe_permute_fused
    assert layer_forward(fused.shape).memory_bytes.sum() < layer_forward(plain.shape).memory_bytes.sum()


def test_the_router_is_not_in_the_model_flop_count():
    """MFU counts attention's and the k chosen experts' FLOPs (SC21's count): a top-2 MoE of
    2,048-wide experts counts as a dense model of a 4,096-wide MLP, the router's GEMM priced
    but not counted."""
    moe = _ctx()
    dense = _ctx(experts=1, ep=1)
    wide = dense.scenario.model_copy(update={"model": dense.scenario.model.model_copy(
        update={"ffn_hidden": 4096})})
    assert step_flops(moe.scenario) == pytest.approx(step_flops(wide), rel=1e-12)
    assert layer_forward(moe.shape).gemms[2][1] == 8        # the router's N = E, priced


def _flex_ctx(dispatcher: str, in_dispatch: bool = False, fused: bool = True):
    data = {"cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "qwen3-30b-a3b", "layers": 4},
            "training": {"global_batch": 16, "micro_batch": 2,
                         "stack": {"base": "megatron-core", "kernels": {"moe_permute_fusion": fused},
                                   "expert_parallel": {"dispatcher": dispatcher,
                                                       "permute_in_dispatch": in_dispatch}}},
            "parallelism": {"tp": 1, "ep": 8}}
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    return make_context(session.scenario, session.collectives)


def test_the_flex_dispatchers_permute_the_deduplicated_rows_and_sort_nothing():
    """DeepEP and HybridEP deliver a token once per GPU, D = R P(e) E / (e k) of its R expert
    copies (Qwen3 30B-A3B on 8 ranks: 16 experts each, P(16) = 1 - C(112, 8) / C(128, 8)); TE's
    permute reads D rows and writes R, the un-permute the reverse; no sorts, no source-side
    permute: the router and ``(D + R) + (R + D)`` rows of ``h`` bf16 elements per forward."""
    tokens, h = 2 * 4096, 2048
    hit = 1 - comb(112, 8) / comb(128, 8)
    received = tokens * 8 * h * 2
    dispatched = received * hit * 128 / (16 * 8)
    router = 17 * tokens * 128
    for dispatcher in ("deepep", "hybridep"):
        ctx = _flex_ctx(dispatcher)
        assert moe_kernel_bytes(ctx.shape) == pytest.approx([8 * tokens * 128, 9 * tokens * 128,
                                                             dispatched + received, received + dispatched])
        assert sum(moe_kernel_bytes(ctx.shape)) == pytest.approx(router + 2 * (dispatched + received))
    alltoall = sum(moe_kernel_bytes(_flex_ctx("alltoall").shape))
    assert alltoall == pytest.approx(router + 18 * tokens * h * 2 + 4 * received)   # (1+k) x twice, 2 sorts


def test_hybridep_with_the_permute_in_its_dispatch_runs_no_permutation_kernel():
    """Megatron-Core's moe_permute_fusion_into_hybridep: DeepEP's dispatch kernel writes the
    expert rows itself, so only the router's kernels are left."""
    ctx = _flex_ctx("hybridep", in_dispatch=True)
    assert len(moe_kernel_bytes(ctx.shape)) == 2


@pytest.mark.parametrize("dispatcher", ["alltoall", "deepep"])
def test_the_permute_in_dispatch_is_hybridep_only(dispatcher):
    with pytest.raises(ConfigError) as raised:
        _flex_ctx(dispatcher, in_dispatch=True)
    assert raised.value.key == "training.stack.expert_parallel.permute_in_dispatch"


def test_unfused_flex_permutations_are_index_ops_on_the_copies():
    """Without TE's kernels: permute 2 R, un-permute 2 R + D + (R + 2 D) (module docstring)."""
    assert flex_permutation_parts(1.0, 3.0, fused=False, in_dispatch=False) == ([6.0], [6.0, 1.0, 5.0])
    assert flex_permutation_parts(1.0, 3.0, fused=True, in_dispatch=False) == ([4.0], [4.0])
    assert flex_permutation_parts(1.0, 3.0, fused=True, in_dispatch=True) == ([], [])
