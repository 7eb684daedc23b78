"""Tensor-parallel exposure per stack (simulator/cost/tp_exposure.py): closed forms of the
layout copies, fp8 all-gathers, async-TP's unfused input-gradient reduce-scatters and fused
sums, each against the same layer with the field off."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.cost.in_layer import tp_collectives
from simulator.cost.layer import layer_cost
from simulator.cost.tp_exposure import FP8_GATHER_SCALE, chunked_exposed, tp_site
from simulator.engine.context import make_context
from simulator.topology import build_cluster

TP_FIELDS = ("layout_copies", "fp8_all_gather", "comm_overlap_input_grad", "sum_after_exchange")


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
    ctx, stack, _ = _layer(_scenario(dtype="fp8", fp8_all_gather=True))
    site = _site(ctx, stack)
    fwd = {c.op: c for c in site.forward}
    bwd = {c.op: c for c in site.backward}
    assert fwd[Op.ALL_GATHER].size_bytes == FP8_GATHER_SCALE * bwd[Op.ALL_GATHER].size_bytes
    assert fwd[Op.REDUCE_SCATTER] == bwd[Op.REDUCE_SCATTER]
    ctx16, stack16, _ = _layer(_scenario(dtype="bf16", fp8_all_gather=True))
    assert _site(ctx16, stack16).forward == _site(ctx16, stack16).backward  # bf16: no change


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
    ctx, _, plain = _layer(_scenario(comm_overlap=True))
    _, _, summed = _layer(_scenario(comm_overlap=True, sum_after_exchange=True))
    n = ctx.shape.tokens * ctx.shape.model.hidden * 2
    extra = 2 * float(ctx.compute.memory_time(n * (1 + 1 / ctx.layout.tp)))
    assert summed.tp_forward - plain.tp_forward == pytest.approx(extra, rel=1e-9)
    assert summed.tp_backward - plain.tp_backward == pytest.approx(extra, rel=1e-9)


def test_the_fields_default_to_megatrons_behaviour():
    """Off by default: a stack that sets none of them prices TP as before (sequence-first
    activations, NCCL reduce-scatters, bf16 gathers)."""
    stack = scenario_stack(_scenario())
    defaults = {f: getattr(stack.tensor_parallel, f) for f in TP_FIELDS}
    assert defaults == {"layout_copies": False, "fp8_all_gather": False,
                        "comm_overlap_input_grad": True, "sum_after_exchange": False}
