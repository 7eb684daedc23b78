"""Tensor-parallel exposure per stack (simulator/cost/tp_exposure.py): closed forms of the
layout copies, fp8 all-gathers, async-TP's unfused input-gradient reduce-scatters and fused
sums, each against the same layer with the field off."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.config.stack import Fp8Scaling
from simulator.cost import CollectiveModel
from simulator.cost.in_layer import tp_collectives
from simulator.cost.layer import layer_cost
from simulator.cost.tp_exposure import (
    FP8_GATHER_SCALE,
    chunked_exposed,
    gather_scale,
    pipelined_rs_exposed,
    tp_exposed,
    tp_site,
)
from simulator.engine.context import make_context
from simulator.topology import build_cluster

TP_FIELDS = ("layout_copies", "fp8_all_gather", "comm_overlap_input_grad", "sum_after_exchange",
             "fp8_grad_all_gather", "fused_pairs", "fused_gather_major")


def _scenario(micro_batch=4, dtype="bf16", recompute="none", **tensor_parallel):
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "llama3-8b", "seq_len": 4096},
            "training": {"global_batch": micro_batch, "micro_batch": micro_batch, "dtype": dtype,
                         "stack": {"base": "megatron-core",
                                   "tensor_parallel": {"overlap_dgrad_comm": False,
                                                       **tensor_parallel}}},
            "parallelism": {"tp": 8, "pp": 1, "dp": 1, "sequence_parallel": True,
                            "recompute": recompute, "zero_stage": 0}}
    return scenario_from_mapping(data, "<test>")


def _layer(scenario):
    cluster = build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary()))
    ctx = make_context(scenario, CollectiveModel(cluster))
    stack = scenario_stack(scenario)
    cost = layer_cost(scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout)
    return ctx, stack, cost


def _site(ctx, stack):
    found = tp_collectives(ctx.scenario, ctx.shape, ctx.collectives, ctx.layout)
    return tp_site(stack, ctx.compute, found, ctx.shape.micro_batch, ctx.layout.tp)


def test_layout_copies_add_one_read_and_write_of_each_collectives_activation():
    """Per pass: 2 sites x (all-gather + reduce-scatter) x memory_time(2 n), n = b s h 2 bytes."""
    ctx, _, plain = _layer(_scenario())
    _, _, copied = _layer(_scenario(layout_copies=True))
    n = ctx.shape.tokens * ctx.shape.model.hidden * 2
    per_pass = 2 * 2 * float(ctx.compute.memory_time(2.0 * n))
    assert copied.tp_forward - plain.tp_forward == pytest.approx(per_pass, rel=1e-12)
    assert copied.tp_backward - plain.tp_backward == pytest.approx(per_pass, rel=1e-12)
    assert copied.forward == plain.forward and copied.backward == plain.backward


def test_layout_copies_vanish_at_micro_batch_one():
    """_maybe_view_chunk_cat returns a view when the leading (batch) dim is 1."""
    _, _, plain = _layer(_scenario(micro_batch=1))
    _, _, copied = _layer(_scenario(micro_batch=1, layout_copies=True))
    assert (copied.tp_forward, copied.tp_backward) == (plain.tp_forward, plain.tp_backward)


def test_fp8_all_gather_halves_the_forward_gathers_bytes_only():
    ctx, stack, _ = _layer(_scenario(dtype="fp8", fp8_all_gather=True, fp8_grad_all_gather=False))
    site = _site(ctx, stack)
    fwd = {c.op: c for c in site.forward}
    bwd = {c.op: c for c in site.backward}
    assert fwd[Op.ALL_GATHER].size_bytes == FP8_GATHER_SCALE * bwd[Op.ALL_GATHER].size_bytes
    assert fwd[Op.REDUCE_SCATTER] == bwd[Op.REDUCE_SCATTER]
    ctx16, stack16, _ = _layer(_scenario(dtype="bf16", fp8_all_gather=True))
    assert _site(ctx16, stack16).forward == _site(ctx16, stack16).backward  # bf16: no change


def test_transformer_engine_stacks_gather_fp8_in_both_passes():
    """TE gathers the quantized norm output in forward and the quantized output gradient in
    backward (megatron-core, nemo): every all-gather of an fp8 layer at half the bf16 bytes,
    the reduce-scatters unchanged."""
    for base in ("megatron-core", "nemo"):
        data = _scenario(dtype="fp8").model_dump(mode="json", exclude_none=True)
        data["training"]["stack"] = base
        ctx, stack, _ = _layer(scenario_from_mapping(data, "<test>"))
        ctx16, stack16, _ = _layer(scenario_from_mapping(
            {**data, "training": {**data["training"], "dtype": "bf16"}}, "<test>"))
        fp8, bf16 = _site(ctx, stack), _site(ctx16, stack16)
        for got, ref in ((fp8.forward, bf16.forward), (fp8.backward, bf16.backward)):
            pairs = {c.op: (c.size_bytes, r.size_bytes) for c, r in zip(got, ref, strict=True)}
            assert pairs[Op.ALL_GATHER][0] == FP8_GATHER_SCALE * pairs[Op.ALL_GATHER][1]
            assert pairs[Op.REDUCE_SCATTER][0] == pairs[Op.REDUCE_SCATTER][1]


def test_async_tp_without_input_grad_overlap_leaves_the_reduce_scatters_in_line():
    """Backward exposure = sum over sites of chunked(all-gathers) + reduce-scatters in line."""
    ctx, stack, cost = _layer(_scenario(comm_overlap=True, comm_overlap_input_grad=False))
    _, _, full = _layer(_scenario(comm_overlap=True))
    site = _site(ctx, stack)
    rs = sum(c.time_s for c in site.backward if c.op == Op.REDUCE_SCATTER)
    ag = sum(c.time_s for c in site.backward if c.op == Op.ALL_GATHER)
    assert cost.tp_forward == full.tp_forward
    assert cost.tp_backward >= 2 * rs > full.tp_backward
    gemm_free = chunked_exposed(ag, 0.0, ctx.layout.tp) + rs
    assert cost.tp_backward <= 2 * gemm_free * (1 + 1e-12)


def test_fused_reduce_scatter_sum_reads_the_full_activation_once():
    """sum_after_exchange adds memory_time(n (1 + 1/t)) per fused reduce-scatter: 2 per pass."""
    ctx, _, plain = _layer(_scenario(comm_overlap=True, userbuffers=False))
    _, _, summed = _layer(_scenario(comm_overlap=True, userbuffers=False, sum_after_exchange=True))
    n = ctx.shape.tokens * ctx.shape.model.hidden * 2
    extra = 2 * float(ctx.compute.memory_time(n * (1 + 1 / ctx.layout.tp)))
    assert summed.tp_forward - plain.tp_forward == pytest.approx(extra, rel=1e-9)
    assert summed.tp_backward - plain.tp_backward == pytest.approx(extra, rel=1e-9)


def test_the_fields_default_to_megatrons_behaviour():
    """Megatron-Core's profile: sequence-first activations, NCCL reduce-scatters, and (TE)
    fp8 all-gathers in both passes under fp8."""
    stack = scenario_stack(_scenario())
    defaults = {f: getattr(stack.tensor_parallel, f) for f in TP_FIELDS}
    assert defaults == {"layout_copies": False, "fp8_all_gather": True,
                        "comm_overlap_input_grad": True, "sum_after_exchange": False,
                        "fp8_grad_all_gather": True, "fused_pairs": False,
                        "fused_gather_major": False}


def test_fp8_grad_all_gather_halves_the_backward_gathers_bytes_only():
    """torchao casts the output gradient on its shard before the all-gather: under fp8 the
    backward all-gather moves 1 byte per element; reduce-scatters and bf16 runs unchanged."""
    ctx, stack, _ = _layer(_scenario(dtype="fp8", fp8_grad_all_gather=True, fp8_all_gather=False))
    site = _site(ctx, stack)
    fwd = {c.op: c for c in site.forward}
    bwd = {c.op: c for c in site.backward}
    assert bwd[Op.ALL_GATHER].size_bytes == FP8_GATHER_SCALE * fwd[Op.ALL_GATHER].size_bytes
    assert fwd[Op.REDUCE_SCATTER] == bwd[Op.REDUCE_SCATTER]
    ctx16, stack16, _ = _layer(_scenario(dtype="bf16", fp8_grad_all_gather=True))
    assert _site(ctx16, stack16).forward == _site(ctx16, stack16).backward


def test_fused_pairs_pipeline_each_collective_with_its_own_matmuls():
    """Forward per site: x(AG, g_col) + x(RS, g_row) + stage; backward: x(AG, dgrad_row) +
    stage + the in-line reduce-scatter, x = chunked_exposed, stage = memory_time(2 n / t)."""
    fields = {"comm_overlap": True, "comm_overlap_input_grad": False, "fused_pairs": True}
    ctx, stack, cost = _layer(_scenario(**fields))
    site = _site(ctx, stack)
    t = ctx.layout.tp
    n = ctx.shape.tokens * ctx.shape.model.hidden * 2
    stage = float(ctx.compute.memory_time(2.0 * n / t))
    assert site.stage_forward == site.stage_backward == pytest.approx(stage, rel=1e-12)
    ag = next(c.time_s for c in site.forward if c.op == Op.ALL_GATHER)
    rs = next(c.time_s for c in site.forward if c.op == Op.REDUCE_SCATTER)
    gemms = [(4e-3, 2e-3), (9e-3, 5e-3)]
    dgrads = [(3e-3, 0.0), (6e-3, 0.0)]
    fwd, bwd = tp_exposed(stack, site, t, None, (0.0, 0.0),
                          lambda backward: dgrads if backward else gemms)
    want_fwd = sum(chunked_exposed(ag, a, t) + chunked_exposed(rs, r, t) + stage
                   for a, r in gemms)
    want_bwd = sum(chunked_exposed(ag, d, t) + stage + rs for d, _ in dgrads)
    assert fwd == pytest.approx(want_fwd, rel=1e-12)
    assert bwd == pytest.approx(want_bwd, rel=1e-12)
    _, _, pooled = _layer(_scenario(comm_overlap=True, comm_overlap_input_grad=False))
    assert cost.tp_backward >= pooled.tp_backward  # the wgrad no longer hides the gather


def test_fused_gather_major_copies_each_weight_gradients_operands_in_backward():
    """Backward adds, per site, memory_time(2 (2 n + r)), r = proj's input n/t (Llama: heads x
    head_dim = hidden) or fc2's n f / (h t); nothing at micro-batch 1 or under fp8."""
    fields = {"comm_overlap": True, "comm_overlap_input_grad": False, "fused_pairs": True}
    ctx, _, plain = _layer(_scenario(**fields))
    _, _, major = _layer(_scenario(fused_gather_major=True, **fields))
    mdl, t = ctx.shape.model, ctx.layout.tp
    n = ctx.shape.tokens * mdl.hidden * 2
    rows = (ctx.shape.tokens * mdl.heads * ctx.shape.head_dim * 2 / t,
            ctx.shape.tokens * mdl.ffn_hidden * 2 / t)
    extra = sum(float(ctx.compute.memory_time(2.0 * (2.0 * n + r))) for r in rows)
    assert major.tp_backward - plain.tp_backward == pytest.approx(extra, rel=1e-9)
    assert major.tp_forward == plain.tp_forward
    for kwargs in ({"micro_batch": 1}, {"dtype": "fp8"}):
        _, _, off = _layer(_scenario(**kwargs, **fields))
        _, _, on = _layer(_scenario(fused_gather_major=True, **kwargs, **fields))
        assert on.tp_backward == off.tp_backward


def test_fused_pairs_run_their_gemms_in_tp_chunks():
    """The fused ops' matmuls are t GEMMs of M/t rows: the pairs' GEMM seconds are
    t T(M/t, N, K), and the layer's exposure grows by their excess over T(M, N, K) (every
    forward linear; the data gradients of proj and fc2 in backward); never negative, and
    nothing without fused_pairs."""
    import numpy as np

    from simulator.cost.layer import _chunked_linears
    from simulator.workload.transformer import layer_forward

    fields = {"comm_overlap": True, "comm_overlap_input_grad": False, "fused_pairs": True}
    ctx, stack, cost = _layer(_scenario(**fields))
    t, c = ctx.layout.tp, ctx.compute
    fwd = layer_forward(ctx.shape)
    rows = np.flatnonzero(fwd.linear_mask)
    chunked_fwd, chunked_dgrad = _chunked_linears(c, fwd, fwd.backward(), t)
    g = fwd.gemms[rows]
    full = c.gemm_time(g[:, 0], g[:, 1], g[:, 2], g[:, 3], True)
    assert chunked_fwd == pytest.approx(t * c.gemm_time(g[:, 0] / t, g[:, 1], g[:, 2], g[:, 3], True))
    assert (chunked_fwd >= full).all()
    d = fwd.backward().gemms[rows]
    dgrad_full = c.gemm_time(d[:, 0], d[:, 1], d[:, 2], d[:, 3], True)
    site = _site(ctx, stack)

    def pairs(arrays):
        a, b = arrays
        return lambda backward: ([(b[1], 0.0), (b[3], 0.0)] if backward
                                 else [(a[0], a[1]), (a[2], a[3])])
    base = tp_exposed(stack, site, t, None, (0.0, 0.0), pairs((chunked_fwd, chunked_dgrad)))
    excess = (float(chunked_fwd.sum() - full.sum()),
              float(chunked_dgrad[[1, 3]].sum() - dgrad_full[[1, 3]].sum()))
    assert (cost.tp_forward, cost.tp_backward) == pytest.approx(
        (base[0] + excess[0], base[1] + excess[1]), rel=1e-12)
    _, _, unfused = _layer(_scenario(comm_overlap=True, comm_overlap_input_grad=False))
    assert unfused.forward == cost.forward   # the GEMMs themselves are priced whole


def test_pipelined_reduce_scatter_leaves_its_last_chunk_and_the_sm_margin_exposed():
    """TE ``pipeline``: n GEMM chunks of g'/n (g' = slow g), each chunk's reduce-scatter c/n
    during the next chunk: exposed g'/n + (n-1) max(g'/n, c/n) + c/n - g."""
    g, c = 8e-3, 2e-3
    assert pipelined_rs_exposed(c, g, 4) == pytest.approx(c / 4, rel=1e-12)     # GEMM-bound
    assert pipelined_rs_exposed(4 * g, g, 4) == pytest.approx(g / 4 + 3 * g + g - g, rel=1e-12)
    slow = 132 / (132 - 24)
    assert pipelined_rs_exposed(c, g, 4, slow) == pytest.approx(g * (slow - 1) + c / 4, rel=1e-12)
    assert pipelined_rs_exposed(c, g, 1) == pytest.approx(c, rel=1e-12)         # nothing to hide behind


def test_userbuffers_pair_each_forward_collective_with_its_own_gemm():
    """``userbuffers``: per site the all-gather against the column GEMM (ring exchange, t
    chunks) and the reduce-scatter against the row GEMM, by ``pipeline`` (proj: 4 splits, 24
    SMs withheld) or ring exchange (fc2: 1 SM withheld); backward as the pooled model."""
    fields = {"comm_overlap": True, "userbuffers": True, "rs_splits": [4, 0], "rs_sm_margin": [24, 1]}
    ctx, stack, _ = _layer(_scenario(**fields))
    site = _site(ctx, stack)
    t, sms = ctx.layout.tp, ctx.compute.gpu.sm_count
    ag = next(c.time_s for c in site.forward if c.op == Op.ALL_GATHER)
    rs = next(c.time_s for c in site.forward if c.op == Op.REDUCE_SCATTER)
    gemms = [(4e-3, 2e-3), (9e-3, 5e-3)]
    sites = lambda backward: (6e-3, 14e-3)                                       # noqa: E731
    fwd, bwd = tp_exposed(stack, site, t, sites, (0.0, 0.0), lambda backward: gemms)
    fc2_slow = sms / (sms - 1)
    want = (chunked_exposed(ag, 4e-3, t) + pipelined_rs_exposed(rs, 2e-3, 4, sms / (sms - 24))
            + chunked_exposed(ag, 9e-3, t) + chunked_exposed(rs, 5e-3 * fc2_slow, t)
            + 5e-3 * (fc2_slow - 1))
    assert fwd == pytest.approx(want, rel=1e-12)
    pooled = stack.model_copy(update={"tensor_parallel": stack.tensor_parallel.model_copy(
        update={"userbuffers": False})})
    assert bwd == pytest.approx(tp_exposed(pooled, site, t, sites, (0.0, 0.0))[1], rel=1e-12)


def test_te_defaults_by_version():
    """NeMo 24.07 (TE 1.8): ``pipeline`` reduce-scatters, no SM margin; Megatron-Core (TE 2.x):
    the same with 16 SMs withheld (``set_sm_margin = not ring_exchange``)."""
    library = HardwareLibrary()
    nemo, core = library.stack("nemo").tensor_parallel, library.stack("megatron-core").tensor_parallel
    assert (nemo.userbuffers, nemo.rs_splits, nemo.rs_sm_margin) == (True, (4, 4), (0, 0))
    assert (core.userbuffers, core.rs_splits, core.rs_sm_margin) == (True, (4, 4), (16, 16))
    assert library.stack("torchtitan").tensor_parallel.userbuffers is False


def test_dgrad_overlap_slows_the_weight_gradient_by_the_sms_nccl_holds():
    """Megatron-Core's async input-gradient reduce-scatter (``overlap_dgrad_comm``) runs beside
    the QKV and fc1 weight-gradient GEMMs: per site the in-line backward collectives, less that
    one, plus max(w + f min(c, w / (1 - f)), c) - w, f the NCCL kernels' SM share (16 CTAs of
    the H100's 132 inside one NVSwitch server)."""
    ctx, stack, _ = _layer(_scenario(overlap_dgrad_comm=True))
    found = tp_collectives(ctx.scenario, ctx.shape, ctx.collectives, ctx.layout)
    share = 16 / 132
    site = tp_site(stack, ctx.compute, found, ctx.shape.micro_batch, ctx.layout.tp, nccl_share=share)
    comm = site.backward[-1].time_s
    wgrads = (3 * comm, comm / 2)                 # one GEMM outlasting the collective, one not
    _, backward = tp_exposed(stack, site, ctx.layout.tp, None, wgrads)
    rest = site.in_line(True) - comm
    want = (rest + share * comm) + (rest + comm - comm / 2)
    assert backward == pytest.approx(want, rel=1e-12)
    _, unshared = tp_exposed(stack, _site(ctx, stack), ctx.layout.tp, None, wgrads)
    assert unshared == pytest.approx(2 * rest + comm - comm / 2, rel=1e-12)


def test_block_scaled_gathers_carry_their_scales():
    """TE gathers MXFP8's 1-byte values with an E8M0 scale per 32 and NVFP4's packed 4-bit
    values with an E4M3 scale per 16: (1 + 1/32) / 2 and (1/2 + 1/16) / 2 of the bf16 bytes;
    one scale per tensor leaves 1/2."""
    assert gather_scale(Fp8Scaling.DELAYED) == gather_scale(Fp8Scaling.DYNAMIC) == FP8_GATHER_SCALE
    assert gather_scale(Fp8Scaling.MXFP8) == pytest.approx(33 / 64)
    assert gather_scale(Fp8Scaling.NVFP4) == pytest.approx(9 / 32)
    ctx, stack, _ = _layer(_scenario(dtype="fp8"))
    nv = stack.model_copy(update={"kernels": stack.kernels.model_copy(update={"fp8_scaling": "nvfp4"})})
    per_tensor = {c.op: c.size_bytes for c in _site(ctx, stack).forward}
    block = {c.op: c.size_bytes for c in _site(ctx, nv).forward}
    assert block[Op.ALL_GATHER] == pytest.approx(per_tensor[Op.ALL_GATHER] * (9 / 32) / FP8_GATHER_SCALE)
    assert block[Op.REDUCE_SCATTER] == per_tensor[Op.REDUCE_SCATTER]
