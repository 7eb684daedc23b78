"""Collectives replayed as flows in the discrete-event engine (issue #4): the replay of a
schedule alone on the network takes exactly the cost model's time, and gradient traffic
meets the pipeline's sends on the links they share."""

from __future__ import annotations

import pytest
from oracles import replay_alone_seconds

from simulator.collectives import Algorithm, Op
from simulator.config import scenario_from_mapping
from simulator.engine.replay import replay_of
from simulator.pipeline import session_from_scenario


def _session(nodes=4, node="dgx-h100", link="ib-ndr", oversubscription=1.0):
    data = {"cluster": {"node": node, "nodes": nodes,
                        "fabric": {"topology": "fat-tree", "link": link, "switch_radix": 16,
                                   "oversubscription": oversubscription}}}
    return session_from_scenario(scenario_from_mapping(data, "replay.yaml"))


def _replayed_time(session, replay) -> float:
    return replay_alone_seconds(session.cluster, replay)


@pytest.mark.parametrize("mode", ["steps", "pairs"])
@pytest.mark.parametrize("op,algorithm", [
    (Op.ALL_REDUCE, Algorithm.RING), (Op.REDUCE_SCATTER, Algorithm.RING),
    (Op.ALL_GATHER, Algorithm.RING), (Op.ALL_REDUCE, Algorithm.TREE),
    (Op.ALL_REDUCE, Algorithm.HALVING_DOUBLING), (Op.ALL_TO_ALL, Algorithm.DIRECT),
])

def test_a_replay_alone_takes_the_cost_model_time(op, algorithm, mode):
    """Eight data-parallel groups (one per rail) across 4 DGX H100, 256 MiB each: the
    flows of the merged schedule, alone on the network, finish at ``a + b n``."""
    session = _session()
    groups = [tuple(node * 8 + rail for node in range(4)) for rail in range(8)]
    size = 2.0**28
    terms = session.collectives.concurrent_terms(op, groups, size, algorithm)
    efficiency = session.cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    replay = replay_of(terms, size, session.collectives.network.router, efficiency, mode)
    assert _replayed_time(session, replay) == pytest.approx(float(terms.time(size)), rel=1e-9)


def test_a_collapsed_replay_is_floored_at_the_price_of_all_groups():
    """tp-collapsed fidelity replays one group; it must not finish before all would."""
    session = _session(node="dgx-a100-80gb", link="ib-hdr", oversubscription=4.0)
    groups = [tuple(node * 8 + rail for node in range(4)) for rail in range(8)]
    size = 2.0**28
    terms = session.collectives.concurrent_terms(Op.ALL_REDUCE, groups, size, Algorithm.RING)
    efficiency = session.cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    replay = replay_of(terms, size, session.collectives.network.router, efficiency, "pairs",
                       only_group=groups[0])
    assert _replayed_time(session, replay) >= float(terms.time(size)) * (1 - 1e-12)


def _training(overlap=True, fidelity="per-rank", nodes=4, tp=8, pp=2):
    data = {"name": "nic", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                       "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": 32, "micro_batch": 1},
            "parallelism": {"tp": tp, "pp": pp, "overlap_grad_reduce": overlap},
            "simulate": {"engine": "des", "fidelity": fidelity}}
    session = session_from_scenario(scenario_from_mapping(data, "nic.yaml"))
    return session.scenario, session.collectives


def test_gradient_traffic_and_the_last_pipeline_send_share_a_nic():
    """Stage 1 starts reducing its gradients with its last backward (overlap_grad_reduce);
    that backward's send to stage 0 then leaves through the NIC the ring already uses, so
    with contention its bandwidth part takes twice as long (max-min: half the NIC each),
    and the step is slower than without contention."""
    from simulator.engine.des import timeline

    scenario, collectives = _training()
    sends = {}
    for contention in (False, True):
        frame = timeline(scenario, collectives, contention=contention)
        last = frame[(frame.kind == "send") & (frame.gpu == 16)].iloc[-1]
        sends[contention] = last.end_s - last.start_s
        sync = frame[(frame.kind == "dp") & (frame.gpu == 16)].iloc[0]
        assert sync.start_s < last.start_s < sync.end_s      # they overlap in time
    from simulator.engine.analytical import simulate_step
    from simulator.engine.context import make_context
    from simulator.engine.des_plan import step_plan

    plan = step_plan(make_context(scenario, collectives), simulate_step(scenario, collectives),
                     contention=True)
    alpha = plan.p2p_latency_s                  # the send's latency, which is not shared
    assert sends[False] == pytest.approx(plan.p2p_s, rel=1e-12)
    assert sends[True] - alpha == pytest.approx(2 * (sends[False] - alpha), rel=1e-6)


def test_contention_slows_the_step_when_gradients_overlap_the_drain():
    from simulator.engine.des import simulate_steps_des

    scenario, collectives = _training()
    off = simulate_steps_des(scenario, collectives, steps=1, contention=False).step_time_s
    on = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    assert on > off


def _sync_seconds(ratio: float, contention: bool, topology: str = "fat-tree") -> float:
    """Longest gradient synchronisation of a stage: Megatron 7.5B on 64 A100 (tp 2, pp 4,
    dp 8) on a radix-16 ``topology`` whose leaves are ``ratio``:1 oversubscribed."""
    from simulator.engine.des import timeline

    data = {"name": "over", "cluster": {
        "node": "dgx-a100-80gb", "nodes": 8,
        "fabric": {"topology": topology, "link": "ib-hdr", "oversubscription": ratio,
                   "switch_radix": 16}},
        "model": {"preset": "megatron-7.5b"}, "training": {"global_batch": 128, "micro_batch": 1},
        "parallelism": {"tp": 2, "pp": 4}, "simulate": {"fidelity": "per-rank"}}
    session = session_from_scenario(scenario_from_mapping(data, "over.yaml"))
    frame = timeline(session.scenario, session.collectives, contention=contention)
    sync = frame[frame.kind == "dp"]
    return float((sync.end_s - sync.start_s).max())


def test_oversubscribed_uplinks_slow_the_gradient_collectives_of_colliding_stages():
    """1:1: every stage's rings fit the fabric, so contention changes nothing. 2:1 and
    4:1: the stages' reductions (staggered by the pipeline drain, each priced alone when
    uncontended) meet on the leaf uplinks and take longer than their uncontended price,
    by less than the 4x an uplink's share could fall to."""
    alone = {r: _sync_seconds(r, contention=False) for r in (1.0, 2.0, 4.0)}
    shared = {r: _sync_seconds(r, contention=True) for r in (1.0, 2.0, 4.0)}
    assert shared[1.0] == pytest.approx(alone[1.0], rel=1e-9)
    assert alone[1.0] < alone[2.0] <= alone[4.0]
    assert shared[1.0] < shared[2.0] < shared[4.0]
    for ratio in (2.0, 4.0):
        assert 1.1 * alone[ratio] < shared[ratio] < 4 * alone[ratio]


def _moe(nodes: int, topology: str, fidelity: str = "per-rank", overlap: bool = True, **fabric):
    """Mixtral 8x7B, tp 2, ep 8, pp 1: each expert-parallel group spans two DGX H100."""
    data = {"name": "moe", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                       "fabric": {"topology": topology, "link": "ib-ndr", **fabric}},
            "model": {"preset": "mixtral-8x7b"},
            "training": {"global_batch": 4 * nodes, "micro_batch": 1},
            "parallelism": {"tp": 2, "ep": 8, "zero_stage": 1, "overlap_grad_reduce": overlap},
            "simulate": {"engine": "des", "fidelity": fidelity}}
    session = session_from_scenario(scenario_from_mapping(data, "moe.yaml"))
    return session.scenario, session.collectives


def test_expert_all_to_alls_alone_replay_to_the_analytical_step():
    """One expert-parallel block (2 servers, one switch): its all-to-alls, replayed as flows
    between compute segments in step with the peer replicas, meet nothing else, so the
    step is the analytical one (the segments and replays add up to the task durations).
    With overlap_grad_reduce the gradient flows meet the last backward's all-to-alls on
    the NICs, and the step is slower."""
    from simulator.engine.analytical import simulate_step
    from simulator.engine.des import simulate_steps_des

    for overlap in (False, True):
        scenario, collectives = _moe(nodes=2, topology="single-switch", overlap=overlap)
        analytical = simulate_step(scenario, collectives).step_time_s
        des = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
        if overlap:
            assert analytical < des < 1.1 * analytical
        else:
            assert des == pytest.approx(analytical, rel=1e-9)


def test_expert_groups_meet_on_a_rail_optimized_spine():
    """Four expert-parallel blocks x 2 tensor-parallel ranks on 8 DGX H100, rail-optimized
    with radix-16 switches at 2:1: an all-to-all sends most bytes across rails, through the
    oversubscribed spines, where the groups meet (at 1:1 the per-rail spine choice gives
    them the NICs' bandwidth; tests/test_rails.py).
    The cost model prices all groups together (slower than one alone); the DES replay of
    the same lockstep flows reproduces it exactly; only with overlap_grad_reduce do the
    gradient flows add contention that the finer fidelities see and tp-collapsed does not."""
    from simulator.collectives import Group
    from simulator.cost.in_layer import ep_collective
    from simulator.engine.analytical import simulate_step
    from simulator.engine.context import make_context
    from simulator.engine.des import simulate_steps_des

    oversubscribed = {"switch_radix": 16, "oversubscription": 2.0}
    scenario, collectives = _moe(nodes=8, topology="rail-optimized", overlap=False, **oversubscribed)
    ctx = make_context(scenario, collectives)
    nbytes = ep_collective(ctx.shape, collectives, ctx.layout).size_bytes
    alone = collectives.sweep(Op.ALL_TO_ALL, None, Group(collectives.cluster, ctx.layout.expert_group()),
                              [nbytes]).time_s[0]
    together = collectives.concurrent_time(Op.ALL_TO_ALL, ctx.layout.stage_expert_groups(), nbytes)[0]
    assert together > 1.2 * alone
    analytical = simulate_step(scenario, collectives).step_time_s
    des = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    assert des == pytest.approx(analytical, rel=1e-9)

    scenario, collectives = _moe(nodes=8, topology="rail-optimized", overlap=True, **oversubscribed)
    analytical = simulate_step(scenario, collectives).step_time_s
    fine = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    coarse_scenario, _ = _moe(nodes=8, topology="rail-optimized", fidelity="tp-collapsed",
                              **oversubscribed)
    coarse = simulate_steps_des(coarse_scenario, collectives, steps=1, contention=True).step_time_s
    assert coarse == pytest.approx(analytical, rel=1e-9)
    assert analytical < fine < 1.2 * analytical


@pytest.mark.parametrize("parallelism", [
    {"tp": 16},                                                      # all-reduces
    {"tp": 16, "sequence_parallel": True, "recompute": "full"},      # AG + RS, repeated
    {"tp": 8, "cp": 2},                                              # ring-attention gathers
], ids=["tp16", "tp16-sp-recompute", "cp2"])
@pytest.mark.parametrize("stack", ["megatron-lm-2021", "megatron-core"])
def test_cross_server_tensor_and_context_collectives_replay_to_the_analytical_step(parallelism, stack):
    """Groups that span two DGX A100: the DES replays their collectives as flows between
    compute segments (per-rank fidelity). On one switch nothing else meets them, so the
    counts per pass (2 or 4 per layer, 2 more with full recompute, 3 for ring attention)
    and the segments add up to the analytical task durations exactly. With in-line tensor
    parallelism (Megatron-LM 2021) the replayed collectives are exactly the stage's priced
    in-layer communication; Megatron-Core overlaps the backward input-gradient collective
    with the weight-gradient GEMM, which is not replayed, so less is replayed than priced
    in full but the step is still the analytical one; its ring attention (TransformerEngine's
    overlapped K/V ring) is not replayed at all."""
    from simulator.engine.analytical import simulate_step
    from simulator.engine.context import make_context
    from simulator.engine.des import simulate_steps_des
    from simulator.engine.in_layer import in_layer_kinds

    data = {"name": "wide", "cluster": {"node": "dgx-a100-80gb", "nodes": 4,
                                        "fabric": {"topology": "single-switch", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": 8, "micro_batch": 1, "stack": stack},
            "parallelism": {**parallelism, "overlap_grad_reduce": False},
            "simulate": {"engine": "des", "fidelity": "per-rank"}}
    session = session_from_scenario(scenario_from_mapping(data, "wide.yaml"))
    scenario, collectives = session.scenario, session.collectives
    kinds = in_layer_kinds(make_context(scenario, collectives), 0)
    result = simulate_step(scenario, collectives)
    stage = result.stages[0]
    replayed = sum((k.forward + k.backward) * k.collective.time_s for k in kinds)
    priced = {"tp": stage.tp_comm_s, "cp": stage.cp_comm_s, "ep": stage.ep_comm_s}
    expected = sum(priced[d] for d in {k.dimension for k in kinds})
    if stack == "megatron-core" and "cp" in parallelism:
        assert kinds == [] and stage.cp_comm_s > 0
    elif stack == "megatron-lm-2021" or "cp" in parallelism:
        assert kinds and replayed == pytest.approx(expected, rel=1e-12)
    else:
        assert kinds and replayed < expected
    des = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    assert des == pytest.approx(result.step_time_s, rel=1e-9)


def test_rails_keep_gradient_rings_off_the_oversubscribed_uplinks():
    """Same job, rail-optimized at 4:1: every data-parallel ring stays on its rail switch,
    so the stages' reductions take their uncontended time, while the 4:1 fat-tree's
    mixed leaves send them over the shared uplinks."""
    rails = _sync_seconds(4.0, contention=True, topology="rail-optimized")
    assert rails == pytest.approx(_sync_seconds(4.0, contention=False, topology="rail-optimized"),
                                  rel=1e-9)
    assert rails < _sync_seconds(4.0, contention=True)


def test_timeline_shows_replayed_all_to_alls_inside_their_tasks():
    """Per-rank fidelity: each backward/forward of the MoE stage holds 2 all-to-alls per
    layer, logged as ``ep`` rows within the task's span; gradient rows carry their bytes."""
    from simulator.engine.des import timeline

    scenario, collectives = _moe(nodes=2, topology="single-switch", overlap=False)
    frame = timeline(scenario, collectives, contention=True)
    ep, tasks = frame[frame.kind == "ep"], frame[frame.kind.isin(["forward", "backward"])]
    layers = scenario.model.layers
    assert len(ep) == len(tasks) * 2 * layers
    first = tasks.iloc[0]
    inside = ep[(ep.gpu == first.gpu) & (ep.start_s >= first.start_s) & (ep.end_s <= first.end_s)]
    assert len(inside) == 2 * layers and (inside.bytes > 0).all()
    assert (frame[frame.kind == "dp"].bytes > 0).all()
