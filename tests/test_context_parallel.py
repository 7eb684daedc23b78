"""Context parallelism (simulator.cost.context_parallel): closed forms of the generic and
the PyTorch ring, and the DES still equal to the analytical step."""

from __future__ import annotations

import pytest
from des_checks import assert_des_brackets_analytical

from simulator.collectives import Op
from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.context_parallel import (
    GENERIC_PASSES,
    attention_recomputed,
    cp_cost,
    cp_seconds,
    exchanged_elements,
    torch_merge_bytes,
)
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario


def _session(stack="torchtitan", cp=4, nodes=1, recompute="full", seq=32768):
    data = {"name": "cp", "cluster": {"node": "dgx-h100", "nodes": nodes},
            "model": {"preset": "llama3-8b", "seq_len": seq},
            "training": {"global_batch": max(8 * nodes // cp, 1), "micro_batch": 1, "stack": stack},
            "parallelism": {"cp": cp, "recompute": recompute}}
    return session_from_scenario(scenario_from_mapping(data, "cp.yaml"))


def _ctx(**kw):
    session = _session(**kw)
    return make_context(session.scenario, session.collectives)


def test_torch_merge_bytes_closed_form():
    """Forward E_q (12 + 10 (cp-1)) + 4 E_kv, backward E_q (10 cp + 6) + E_kv (20 cp + 16)."""
    assert torch_merge_bytes(3.0, 5.0, 4) == (3 * 42 + 20, 3 * 46 + 5 * 96)
    assert torch_merge_bytes(1.0, 1.0, 2) == (22 + 4, 26 + 56)


def test_torchtitan_exchanges_every_query_head():
    """torchtitan repeats K/V to the query heads before SDPA: E_kv = E_q = b a (s/cp) d."""
    ctx = _ctx(cp=4)
    e_q, e_kv = exchanged_elements(scenario_stack(ctx.scenario), ctx.shape)
    assert e_q == e_kv == 32 * (32768 // 4) * 128
    generic = _ctx(stack="megatron-core", cp=4)
    e_q, e_kv = exchanged_elements(scenario_stack(generic.scenario), generic.shape)
    assert e_kv == e_q * 8 / 32


def test_torch_ring_collectives_and_counts():
    """One bf16 K/V all-gather per forward ring (again in backward, and for the recomputed
    forward), cp fp32 dK/dV ring shifts in backward."""
    ctx = _ctx(cp=4)
    stack = scenario_stack(ctx.scenario)
    cost = cp_cost(ctx.scenario, stack, ctx.shape, ctx.collectives, ctx.layout)
    gather, shift = cost.collectives
    block = 2 * 32 * (32768 // 4) * 128
    assert (gather.collective.op, gather.collective.size_bytes) == (Op.ALL_GATHER, 4 * block * 2)
    assert (gather.forward, gather.backward) == (1, 2)
    assert (shift.collective.op, shift.collective.size_bytes) == (Op.SENDRECV, block * 4)
    assert (shift.forward, shift.backward) == (0, 4)
    merge_f, merge_b = torch_merge_bytes(block / 2, block / 2, 4)
    assert cost.merge_forward_bytes == merge_f
    assert cost.merge_backward_bytes == pytest.approx(merge_b + merge_f)
    expected = (1.5 * gather.collective.time_s + 2 * shift.collective.time_s
                + float(ctx.compute.memory_time(merge_f * 2 + merge_b)) / 2)
    assert cp_seconds(cost, ctx.compute) == pytest.approx(expected, rel=1e-12)


def test_ring_not_recomputed_without_recompute():
    ctx = _ctx(cp=2, recompute="none")
    stack = scenario_stack(ctx.scenario)
    assert not attention_recomputed(ctx.scenario, stack)
    gather, _ = cp_cost(ctx.scenario, stack, ctx.shape, ctx.collectives, ctx.layout).collectives
    assert (gather.forward, gather.backward) == (1, 1)


def test_generic_ring_is_three_kv_all_gathers_per_pass():
    """Stacks not checked keep the first cp model: 3 all-gathers of the K/V heads per pass."""
    ctx = _ctx(stack="megatron-core", cp=2)
    cost = cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives, ctx.layout)
    (gather,) = cost.collectives
    assert gather.collective.size_bytes == 2 * (32768 // 2) * 8 * 128 * 2 * 2
    assert cp_seconds(cost, ctx.compute) == GENERIC_PASSES * gather.collective.time_s


def test_no_cp_no_cost():
    ctx = _ctx(cp=1)
    assert cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives,
                   ctx.layout) is None


@pytest.mark.parametrize(("cp", "nodes"), [(4, 1), (16, 2)])
def test_des_equals_analytical_with_the_torch_ring(cp, nodes):
    """In one server and spanning two (the DES then replays the all-gathers and ring
    shifts): with contention off the DES equals the analytical step, with it on it is never
    faster."""
    from simulator.engine.in_layer import in_layer_kinds

    session = _session(cp=cp, nodes=nodes)
    kinds = in_layer_kinds(make_context(session.scenario, session.collectives), 0)
    assert [k.collective.op for k in kinds] == ([Op.ALL_GATHER, Op.SENDRECV] if nodes > 1 else [])
    assert_des_brackets_analytical(session.scenario, session.collectives)
