"""Collective schedules against DESIGN.md's closed forms, conservation laws and monotonicity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import make_cluster
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.collectives import Algorithm, Group, Op, build_schedule, whole_cluster
from simulator.config import Protocol
from simulator.cost import CollectiveModel, NetworkCostModel
from simulator.errors import InfeasibleError
from simulator.units import US

NVLINK4_B = 18 * 25e9 * 0.82        # DGX H100 per-GPU NVLink bandwidth in the specs (B/s)


def _simple(model: NetworkCostModel, schedule):
    return next(t for t in model.terms(schedule) if t.protocol == Protocol.SIMPLE)


def _hop(model, family="ring", cls="nvlink"):
    table = model.protocols
    return table.hop_latency_us[cls][family][Protocol.SIMPLE] * US, \
        table.base_latency_us[family][Protocol.SIMPLE] * US


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_all_reduce_matches_closed_form(h100_node, p):
    """T = base + 2(p-1) a + 2(p-1)/p * n/B on one NVSwitch (DESIGN.md)."""
    model = NetworkCostModel(h100_node)
    terms = _simple(model, build_schedule(Op.ALL_REDUCE, Algorithm.RING,
                                          Group(h100_node, tuple(range(p)))))
    hop, base = _hop(model)
    assert terms.latency_s == pytest.approx(base + 2 * (p - 1) * hop, rel=1e-12)
    assert terms.seconds_per_byte == pytest.approx(2 * (p - 1) / p / NVLINK4_B, rel=1e-12, abs=0)


@pytest.mark.parametrize("op,factor", [(Op.REDUCE_SCATTER, 1), (Op.ALL_GATHER, 1)])
def test_ring_half_collectives_closed_form(h100_node, op, factor):
    p = 8
    model = NetworkCostModel(h100_node)
    terms = _simple(model, build_schedule(op, Algorithm.RING, whole_cluster(h100_node)))
    hop, base = _hop(model)
    assert terms.latency_s == pytest.approx(base + (p - 1) * hop, rel=1e-12)
    assert terms.seconds_per_byte == pytest.approx((p - 1) / p / NVLINK4_B, rel=1e-12, abs=0)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_halving_doubling_matches_closed_form(h100_node, p):
    """T = base + 2 log2(p) a + 2(p-1)/p * n/B for p a power of two."""
    model = NetworkCostModel(h100_node)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.HALVING_DOUBLING,
                              Group(h100_node, tuple(range(p))))
    terms = _simple(model, schedule)
    hop, base = _hop(model)
    assert schedule.step_count == 2 * int(math.log2(p))
    assert terms.latency_s == pytest.approx(base + 2 * math.log2(p) * hop, rel=1e-12)
    assert terms.seconds_per_byte == pytest.approx(2 * (p - 1) / p / NVLINK4_B, rel=1e-12, abs=0)


def test_halving_doubling_non_power_of_two_adds_two_full_steps(h100_node):
    model = NetworkCostModel(h100_node)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.HALVING_DOUBLING,
                              Group(h100_node, tuple(range(6))))
    assert schedule.step_count == 2 * 2 + 2
    terms = _simple(model, schedule)
    assert terms.seconds_per_byte == pytest.approx((2 * 3 / 4 + 2) / NVLINK4_B, rel=1e-12, abs=0)


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_every_byte_sent_is_received(algorithm):
    """Per schedule, bytes leaving all GPUs' ports equal bytes arriving (flow conservation)."""
    cluster = make_cluster(nodes=2)
    model = NetworkCostModel(cluster)
    op = Op.ALL_REDUCE
    try:
        schedule = build_schedule(op, algorithm, whole_cluster(cluster))
    except InfeasibleError:
        pytest.skip(f"{algorithm} cannot serve this group")
    for step in schedule.steps:
        inc = model.router.incidence(step.src, step.dst)
        load = inc.T @ step.frac
        for vertex in cluster.graph.nodes:
            out_edges = [d["eid"] for _, _, d in cluster.graph.out_edges(vertex, data=True)]
            in_edges = [d["eid"] for _, _, d in cluster.graph.in_edges(vertex, data=True)]
            sent = step.frac[step.src == vertex].sum()
            received = step.frac[step.dst == vertex].sum()
            assert load[out_edges].sum() - load[in_edges].sum() == pytest.approx(sent - received)


def test_ring_all_reduce_moves_2_p_minus_1_over_p_per_rank(h100_node):
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.RING, whole_cluster(h100_node))
    per_rank = sum(s.sent_fraction for s in schedule.steps) / 8
    assert per_rank == pytest.approx(2 * 7 / 8)


def test_nvls_moves_n_times_one_plus_one_over_p_each_way(h100_node):
    model = NetworkCostModel(h100_node)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS, whole_cluster(h100_node))
    loads = model.edge_loads(schedule)
    gpu0 = h100_node.gpu_vertex(0)
    graph = h100_node.graph
    switch = h100_node.nvswitch_vertex(0)
    assert loads[graph[gpu0][switch]["eid"]] == pytest.approx(1 + 1 / 8)
    assert loads[graph[switch][gpu0]["eid"]] == pytest.approx(1 + 1 / 8)


def test_nvls_needs_an_nvswitch_with_reduction():
    cluster = make_cluster(node="dgx-a100-80gb")
    with pytest.raises(InfeasibleError, match="in-switch reduction"):
        build_schedule(Op.ALL_REDUCE, Algorithm.NVLS, whole_cluster(cluster))


def test_auto_picks_the_fastest_candidate(h100_node_model):
    group = whole_cluster(h100_node_model.cluster)
    sizes = np.logspace(3, 33, 31, base=2.0)
    best = h100_node_model.sweep(Op.ALL_REDUCE, None, group, sizes).time_s
    for algorithm in (Algorithm.RING, Algorithm.TREE, Algorithm.NVLS):
        fixed = h100_node_model.sweep(Op.ALL_REDUCE, algorithm, group, sizes).time_s
        assert np.all(best <= fixed + 1e-15)


@settings(max_examples=40, deadline=None)
@given(scale=st.floats(1.0, 8.0), size=st.floats(1.0, 2.0**34),
       algorithm=st.sampled_from([Algorithm.RING, Algorithm.TREE, Algorithm.HIERARCHICAL,
                                  Algorithm.HALVING_DOUBLING]))
def test_more_bandwidth_or_fewer_bytes_is_never_slower(scale, size, algorithm):
    cluster = _two_nodes()
    schedule = build_schedule(Op.ALL_REDUCE, algorithm, whole_cluster(cluster))
    base = NetworkCostModel(cluster)
    faster = NetworkCostModel(_with_bandwidth(cluster, scale))
    for slow, fast in zip(base.terms(schedule), faster.terms(schedule), strict=True):
        assert fast.time(size) <= slow.time(size) * (1 + 1e-12)
        assert slow.time(size / scale) <= slow.time(size) * (1 + 1e-12)


_CACHE: dict = {}


def _two_nodes():
    if "two" not in _CACHE:
        _CACHE["two"] = make_cluster(nodes=2, gpus_per_node=4, nics_per_node=4)
    return _CACHE["two"]


def _with_bandwidth(cluster, scale):
    from dataclasses import replace
    return replace(cluster, bandwidth_Bps=cluster.bandwidth_Bps * scale)


def test_mesh_rings_use_different_links_per_channel():
    """MI300X mesh: 14 rings (7 Hamiltonian cycles and their reverses, as RCCL's
    rome_model_79) load all 56 directed GPU-to-GPU links equally, so every link carries
    a seventh of what a single ring would put on it (tests/test_mesh.py has the rest)."""
    cluster = make_cluster(node="mi300x-platform")
    model = NetworkCostModel(cluster)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.RING, whole_cluster(cluster))
    assert schedule.channels == 14
    loads = model.edge_loads(schedule)
    assert loads.max() == pytest.approx(2 * 7 / 8 / 7)
    assert np.count_nonzero(np.isclose(loads, loads.max())) == 56


def test_step_merges_duplicate_pairs_in_first_appearance_order():
    """Step.of sums the fractions of repeated (src, dst) pairs, keeps pairs in the order they
    first appear and drops self-flows and empty ones (checked against a plain dict)."""
    from simulator.collectives.schedule import Step

    rng = np.random.default_rng(3)
    flows = [(int(s), int(d), float(f)) for s, d, f in zip(rng.integers(0, 9, 200), rng.integers(0, 40, 200),
                                                           rng.choice([0.0, 0.25, 1 / 3], 200), strict=True)]
    expected: dict[tuple[int, int], list[float]] = {}
    for s, d, f in flows:
        if s != d and f > 0:
            expected.setdefault((s, d), []).append(f)
    step = Step.of(flows)
    assert list(zip(step.src.tolist(), step.dst.tolist(), strict=True)) == list(expected)
    assert step.frac.tolist() == [float(np.bincount(np.zeros(len(v), int), weights=v)[0])
                                  for v in expected.values()]
    assert Step.of([(2, 2, 1.0), (3, 4, 0.0)]).src.size == 0


@pytest.fixture(scope="module")
def h800_node():
    """The collective model of one HGX H800 server and the group of its 8 GPUs."""
    model = CollectiveModel(make_cluster(node="hgx-h800"))
    return model, whole_cluster(model.cluster)


def test_h800_all_gather_reaches_the_nvlink_rate_deepep_measured(h800_node):
    """An HGX H800 (8 NVLink4 links per GPU, 400 GB/s both ways) moves a 1 GiB ring all-gather
    at DeepEP's measured ceiling for that NVLink, "~160 GB/s" (deepseek-ai/DeepEP README: its
    intranode kernels 153-158 GB/s on H800), within 10%."""
    model, group = h800_node
    sweep = model.sweep(Op.ALL_GATHER, Algorithm.RING, group, np.array([2.0**30]))
    assert sweep.busbw_Bps[0] == pytest.approx(160e9, rel=0.10)


def test_h800_all_reduce_uses_nvls_at_the_busbw_measured_on_an_h800_server(h800_node):
    """An 8-H800 server's all-reduce measured 215 GB/s busbw (NVIDIA/nccl#1374) with NCCL's
    NVLink SHARP, which NCCL runs on H800 (nccl-tests#153): the cheapest algorithm the model
    finds at 8 GiB is NVLS, within 10% of that figure."""
    model, group = h800_node
    sweep = model.sweep(Op.ALL_REDUCE, None, group, np.array([2.0**33]))
    assert sweep.busbw_Bps[0] == pytest.approx(215e9, rel=0.10)
    assert sweep.records()[0]["algorithm"] == "nvls"


def test_an_all_to_all_too_large_to_schedule_says_why():
    """1,040 ranks (130 servers) is past the direct all-pairs schedule's 1,024-rank limit
    (simulator/collectives/direct.py): the error names the refusing algorithm and its reason, and
    leaves out the algorithms that do not serve all-to-all at all."""
    model = CollectiveModel(make_cluster(nodes=130))
    group = tuple(range(1040))
    with pytest.raises(InfeasibleError, match=r"groups of 1040 ranks \(direct: .*1024-rank limit\)$"):
        model.concurrent_terms(Op.ALL_TO_ALL, [group], 1e6)
