"""Context parallelism (simulator.cost.context_parallel): closed forms of the generic ring,
the PyTorch ring and TransformerEngine's overlapped K/V ring, and the DES still equal to
the analytical step."""

from __future__ import annotations

import pytest
from des_checks import assert_des_brackets_analytical

from simulator.collectives import Op
from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.context_parallel import (
    GENERIC_PASSES,
    ULYSSES_COPY_BYTES,
    attention_recomputed,
    cp_cost,
    cp_seconds,
    exchanged_elements,
    torch_merge_bytes,
)
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario


def _mapping(stack="torchtitan", cp=4, nodes=1, recompute="full", seq=32768, preset="llama3-8b"):
    return {"name": "cp", "cluster": {"node": "dgx-h100", "nodes": nodes},
            "model": {"preset": preset, "seq_len": seq},
            "training": {"global_batch": max(8 * nodes // cp, 1), "micro_batch": 1, "stack": stack},
            "parallelism": {"cp": cp, "recompute": recompute}}


def _session(**kw):
    return session_from_scenario(scenario_from_mapping(_mapping(**kw), "cp.yaml"))


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
    kept = _ctx(stack="megatron-core", cp=4)
    e_q, e_kv = exchanged_elements(scenario_stack(kept.scenario), kept.shape)
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
    ctx = _ctx(stack="fsdp2", cp=2)
    cost = cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives, ctx.layout)
    (gather,) = cost.collectives
    assert gather.collective.size_bytes == 2 * (32768 // 2) * 8 * 128 * 2 * 2
    assert cp_seconds(cost, ctx.compute) == GENERIC_PASSES * gather.collective.time_s


def _p2p(cp=4, nodes=1, recompute="none", seq=32768):
    ctx = _ctx(stack="megatron-core", cp=cp, nodes=nodes, recompute=recompute, seq=seq)
    stack = scenario_stack(ctx.scenario)
    return ctx, cp_cost(ctx.scenario, stack, ctx.shape, ctx.collectives, ctx.layout)


def test_p2p_ring_exchanges_and_merges():
    """TE's ring: cp - 1 K/V exchanges behind forward steps (again for a recomputed forward),
    behind backward steps two single and cp - 2 double (K/V with dK/dV) exchanges, none in
    line; merges 6 cp E_q + 8 E_kv forward, cp (6 E_q + 20 E_kv) backward; a step is 1/cp
    of the layer's attention, its backward 2.5x."""
    for recompute, rerun in (("none", 0), ("full", 1)):
        ctx, cost = _p2p(cp=4, recompute=recompute)
        e_q, e_kv = 32 * (32768 // 4) * 128, 8 * (32768 // 4) * 128
        single, double = cost.overlapped
        assert cost.collectives == ()
        assert (single.collective.op, single.collective.size_bytes) == (Op.SENDRECV, 2 * e_kv * 2)
        assert double.collective.size_bytes == 2 * single.collective.size_bytes
        assert (single.forward, single.backward) == (3 * (1 + rerun), 2)
        assert (double.forward, double.backward) == (0, 2)
        forward = 6 * 4 * e_q + 8 * e_kv
        assert cost.merge_forward_bytes == forward
        assert cost.merge_backward_bytes == 4 * (6 * e_q + 20 * e_kv) + rerun * forward
        assert cost.step_flops[1] == 2.5 * cost.step_flops[0] > 0


def _excess(ctx, cost) -> float:
    step_f = ctx.compute.attention_time(cost.step_flops[0], False, cost.step_shape)
    step_b = ctx.compute.attention_time(cost.step_flops[1], True, cost.step_shape)
    f = cost.sm_share

    def beside(step, x):
        slowed = step + f * min(x, step / (1 - f))
        return max(slowed, x) - step
    return sum(c.forward * beside(step_f, c.collective.time_s)
               + c.backward * beside(step_b, c.collective.time_s) for c in cost.overlapped)


def test_p2p_exposes_what_outlasts_a_step_and_the_sms_it_holds():
    """cp_seconds = half of (sum of count x (max(a', x) - a) + merge time), a' the step's
    attention a slowed by the exchange's NCCL kernels holding a share f of the SMs while it
    runs (a + f min(x, a / (1 - f))): for 32k tokens over NVLink only the slowed share (the
    step outlasts its exchange: the excess is f x per exchange), more for 4k tokens on a ring
    of 16 across two servers. Inside one DGX H100 f = 24 / 132 (NCCL's 24 channels there)."""
    excesses = []
    for seq, nodes, cp in ((32768, 1, 4), (4096, 2, 16)):
        ctx, cost = _p2p(cp=cp, nodes=nodes, seq=seq)
        merges = float(ctx.compute.memory_time(cost.merge_forward_bytes + cost.merge_backward_bytes))
        excesses.append(_excess(ctx, cost))
        assert cp_seconds(cost, ctx.compute) == pytest.approx((excesses[-1] + merges) / 2, rel=1e-12)
    ctx, cost = _p2p(cp=4, nodes=1, seq=32768)
    assert cost.sm_share == pytest.approx(24 / 132)
    shifted = sum((c.forward + c.backward) * cost.sm_share * c.collective.time_s for c in cost.overlapped)
    assert excesses[0] == pytest.approx(shifted, rel=1e-12)
    assert 0.0 < excesses[0] < excesses[1]


def test_ulysses_all_to_alls_and_copies():
    """DeepSpeed-Ulysses: per pass all-to-alls of q and the output (E_q each) and of k and v
    (E_kv each), in line, twice in backward's count under full recompute; 8 B of layout
    copies per element moved, forward and backward."""
    for recompute, rerun in (("none", 0), ("full", 1)):
        ctx = _ctx(stack="deepspeed", cp=4, recompute=recompute)
        cost = cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives, ctx.layout)
        e_q, e_kv = 32 * (32768 // 4) * 128, 8 * (32768 // 4) * 128
        q, kv = cost.collectives
        assert (q.collective.op, q.collective.size_bytes) == (Op.ALL_TO_ALL, 2 * e_q)
        assert (kv.collective.op, kv.collective.size_bytes) == (Op.ALL_TO_ALL, 2 * e_kv)
        assert (q.forward, q.backward) == (kv.forward, kv.backward) == (2, 2 * (1 + rerun))
        copies = ULYSSES_COPY_BYTES * 2 * (e_q + e_kv)
        assert (cost.merge_forward_bytes, cost.merge_backward_bytes) == (copies, copies * (1 + rerun))
        assert cost.overlapped == ()


def test_des_equals_analytical_with_ulysses_across_servers():
    """The Ulysses all-to-alls of a cp group spanning two servers are replayed as flows and
    the DES still equals the analytical step (contention off), ZeRO-3 traffic included."""
    from simulator.engine.in_layer import in_layer_kinds

    session = _session(stack="deepspeed", cp=16, nodes=2, recompute="none", seq=16384,
                       preset="llama2-7b")
    kinds = in_layer_kinds(make_context(session.scenario, session.collectives), 0)
    assert [k.collective.op for k in kinds] == [Op.ALL_TO_ALL, Op.ALL_TO_ALL]
    assert_des_brackets_analytical(session.scenario, session.collectives)


def test_ulysses_needs_heads_divisible_by_cp():
    """DeepSpeed-Ulysses scatters heads over the cp group: Llama 3 8B's 8 k/v heads cannot be
    split 16 ways (DeepSpeed asserts it), nor 32 query heads over tp 4 (8 per rank) 16 ways;
    the error names parallelism.cp and the file."""
    for kw, named in (({"cp": 16, "nodes": 2}, "model.kv_heads (8)"),
                      ({"cp": 4, "nodes": 1, "preset": "llama2-7b"}, None)):
        data = _mapping(stack="deepspeed", recompute="none", seq=16384, **kw)
        if named is None:
            scenario_from_mapping(data, "cp.yaml")        # 32 heads / 4: accepted
            continue
        with pytest.raises(ConfigError) as err:
            scenario_from_mapping(data, "cp.yaml")
        assert err.value.key == "parallelism.cp" and named in str(err.value) and "cp.yaml" in str(err.value)
    data = _mapping(stack="deepspeed", cp=16, nodes=8, recompute="none", seq=16384, preset="llama2-7b")
    data["parallelism"]["tp"] = 4
    with pytest.raises(ConfigError, match="8 heads of model.heads"):
        scenario_from_mapping(data, "cp.yaml")
    data["training"]["stack"] = "megatron-core"                      # ring attention: no such rule
    scenario_from_mapping(data, "cp.yaml")


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


def test_des_equals_analytical_with_the_p2p_ring():
    """TE's exchanges are overlapped, not replayed: the DES keeps their exposed remainder in
    the layer's time and equals the analytical step, the cp ring spanning two servers."""
    from simulator.engine.in_layer import in_layer_kinds

    session = _session(stack="megatron-core", cp=16, nodes=2, recompute="none", seq=16384)
    assert in_layer_kinds(make_context(session.scenario, session.collectives), 0) == []
    assert_des_brackets_analytical(session.scenario, session.collectives)


def test_all_gather_cp_gathers_kv_and_scatters_their_gradients_in_line():
    """TE's AttnFuncWithCPAndKVAllGather (Megatron-Core cp_comm_type all_gather, the Llama 3
    paper's cp): K and V all-gathered in forward (2 collectives of E_kv each, whole-sequence
    sized), again in backward with dK and dV reduce-scattered (2 more), again for a recomputed
    forward; no merges; charged half to each pass; not replayed by the DES."""
    stack = {"base": "megatron-core", "context_parallel": {"ring": "all_gather"}}
    for recompute, rerun in (("none", 0), ("full", 1)):
        ctx = _ctx(stack=stack, cp=4, recompute=recompute)
        cost = cp_cost(ctx.scenario, scenario_stack(ctx.scenario), ctx.shape, ctx.collectives, ctx.layout)
        e_kv = 8 * (32768 // 4) * 128                       # 8 k/v heads, tp 1
        gather, scatter = cost.collectives
        assert (gather.collective.op, gather.collective.size_bytes) == (Op.ALL_GATHER, 4 * e_kv * 2)
        assert (scatter.collective.op, scatter.collective.size_bytes) == (Op.REDUCE_SCATTER, 4 * e_kv * 2)
        counts = (gather.forward, gather.backward, scatter.forward, scatter.backward)
        assert counts == (2, 2 + 2 * rerun, 0, 2)
        assert cost.merge_forward_bytes == cost.merge_backward_bytes == 0.0 and not cost.replayed
        want = ((2 + 2 + 2 * rerun) * gather.collective.time_s + 2 * scatter.collective.time_s) / 2
        assert cp_seconds(cost, ctx.compute) == pytest.approx(want, rel=1e-12)


def test_des_equals_analytical_with_all_gather_cp_across_servers():
    """The all-gather cp's collectives stay in the layer's time in both engines."""
    stack = {"base": "megatron-core", "context_parallel": {"ring": "all_gather"}}
    session = _session(stack=stack, cp=16, nodes=2, recompute="none", seq=16384)
    assert_des_brackets_analytical(session.scenario, session.collectives)


def test_des_replays_every_cp_collective_of_an_odd_stage():
    """A 15-layer stage under full recompute runs 1.5 K/V all-gathers per layer and pass in
    the analytical engine (22.5 per pass): the DES's in-layer replay keeps the 45 of the
    microbatch, 22 in forward and 23 in backward, instead of rounding both passes down."""
    from pathlib import Path

    from simulator.config import load_scenario
    from simulator.engine.in_layer import in_layer_kinds

    root = Path(__file__).resolve().parent.parent
    session = session_from_scenario(load_scenario(
        root / "validation/scenarios/torchtitan/405b-fsdp4-tp8-pp8-cp2-64k-compile-fp8.yaml"))
    ctx = make_context(session.scenario, session.collectives)
    gather = in_layer_kinds(ctx, 0)[0]
    assert (gather.dimension, gather.forward, gather.backward) == ("cp", 22, 23)
    assert [(k.forward, k.backward) for k in in_layer_kinds(ctx, 1)] == [(24, 24), (16, 16)]


def test_eager_torch_ring_hides_its_exchanges_behind_the_ring_steps():
    """Run eagerly (NeMo AutoModel's SDPA outside torch.compile) the ring's K/V all-gathers
    (forward, recomputed forward, backward) and all but the last dK/dV shift run beside a ring
    step's attention: only the last shift stays in line, the merges are unchanged, and where
    each step outlasts its exchange (32K tokens on one server) the layer pays only the SMs NCCL
    holds beside it, so the eager price lies between the in-line price less the hidden
    collectives and the in-line price."""
    compiled = _ctx(cp=4)
    eager = _ctx(stack={"base": "torchtitan", "context_parallel": {"eager_ring": True}}, cp=4)
    costs = [cp_cost(c.scenario, scenario_stack(c.scenario), c.shape, c.collectives, c.layout)
             for c in (compiled, eager)]
    (gather, shift), (last,) = costs[0].collectives, costs[1].collectives
    assert (last.collective.op, last.collective.size_bytes, last.forward, last.backward) == \
        (shift.collective.op, shift.collective.size_bytes, 0, 1)
    assert last.collective.time_s == pytest.approx(shift.collective.time_s)
    hidden = {(c.collective.op, c.forward, c.backward) for c in costs[1].overlapped}
    assert hidden == {(Op.ALL_GATHER, 2, 1), (Op.SENDRECV, 0, 3)}
    assert costs[1].merge_forward_bytes == costs[0].merge_forward_bytes
    assert costs[1].merge_backward_bytes == costs[0].merge_backward_bytes
    seconds = [cp_seconds(c, compiled.compute) for c in costs]
    in_line_hidden = 1.5 * gather.collective.time_s + 1.5 * shift.collective.time_s
    assert seconds[0] - in_line_hidden < seconds[1] < seconds[0]


def test_des_equals_analytical_with_the_eager_torch_ring_across_servers():
    eager = {"base": "torchtitan", "context_parallel": {"eager_ring": True}}
    session = _session(stack=eager, cp=16, nodes=2)
    assert_des_brackets_analytical(session.scenario, session.collectives)
