"""Rails as NCCL runs them (issue "fidelity", part 3): D-mod-K within a rail, ring and tree
channels whose network hops stay on their rail, and PXN for cross-rail point-to-point.

Closed forms: a ring all-reduce of ``p`` ranks with ``k`` of them per server, one channel
per NIC, moves ``2(p-1)/p * n / k`` through every NIC, so ``b = 2(p-1)/p / (k B_nic)`` and
busbw -> ``k B_nic`` (NCCL's ring bandwidth; Patarasuk & Yuan 2009). Both engines are held
to it: the cost model exactly, the discrete-event replay to the cost model's ``a + b n``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster
from oracles import replay_alone_seconds

from simulator.collectives import Algorithm, Group, Op, build_schedule
from simulator.collectives.concurrent import merge_schedules
from simulator.config import HardwareLibrary, Protocol, scenario_from_mapping
from simulator.config.hardware import MAX_GPUS_PER_NODE
from simulator.cost import CollectiveModel
from simulator.engine.replay import replay_of
from simulator.errors import ConfigError
from simulator.topology.graph import VertexKind

NODES = 16
_MODELS: dict = {}


def _model(topology="rail-optimized", radix=16, pxn=False, nodes=NODES, **fabric) -> CollectiveModel:
    """DGX H100 servers on an NDR fabric of radix-``radix`` switches, 1:1 unless told."""
    key = (topology, radix, pxn, nodes, tuple(sorted(fabric.items())))
    if key not in _MODELS:
        _MODELS[key] = CollectiveModel(make_cluster(nodes=nodes, topology=topology, pxn=pxn,
                                                    switch_radix=radix, **fabric))
    return _MODELS[key]


def _dp_groups(tp: int, nodes=NODES) -> list[tuple[int, ...]]:
    """Data-parallel groups of a tp-``tp`` layout: tp rank t's group holds the GPUs with
    local index = t mod tp on every server (8 // tp of them per server)."""
    return [tuple(s * 8 + t + j * tp for s in range(nodes) for j in range(8 // tp))
            for t in range(tp)]


def _simple(model: CollectiveModel, schedule):
    return next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)


def _nic_Bps(model: CollectiveModel) -> float:
    return float(model.cluster.hw.nic_link.effective_Bps)


def _label(model: CollectiveModel, vertex: int) -> str:
    return model.cluster.graph.nodes[vertex]["label"]


def _edge_labels(model: CollectiveModel, path) -> list[tuple[str, str]]:
    ends = {d["eid"]: (u, v) for u, v, d in model.cluster.graph.edges(data=True)}
    return [(_label(model, ends[e][0]), _label(model, ends[e][1])) for e in path]


def _spine_edges(model: CollectiveModel) -> np.ndarray:
    graph = model.cluster.graph
    spine = {VertexKind.SPINE, VertexKind.CORE}
    return np.array([d["eid"] for u, v, d in graph.edges(data=True)
                     if graph.nodes[u]["kind"] in spine or graph.nodes[v]["kind"] in spine],
                    dtype=np.int64)


def _spine_load(model: CollectiveModel, schedule) -> float:
    return float(model.network.edge_loads(schedule)[_spine_edges(model)].sum())


def _replayed_time(model: CollectiveModel, terms, size: float, mode: str) -> float:
    """The discrete-event engine's time for ``terms``' schedule alone on the network."""
    efficiency = model.cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    return replay_alone_seconds(model.cluster,
                                replay_of(terms, size, model.network.router, efficiency, mode))


# -- 1a: D-mod-K within a rail --------------------------------------------------------------
def _spine_of(model: CollectiveModel, src_gpu: int, dst_gpu: int) -> str:
    cluster = model.cluster
    path = model.network.router.path(cluster.gpu_vertex(src_gpu), cluster.gpu_vertex(dst_gpu))
    spines = {v for _, v in _edge_labels(model, path) if "spine" in v}
    assert len(spines) == 1
    return spines.pop()


@pytest.mark.parametrize("rail", [0, 5])
def test_one_rails_destinations_reach_every_spine(rail):
    """16 servers, radix 16 (8 down, 8 up): rail r has two leaves joined by 8 spines. The
    8 destinations of the second leaf are keyed by their index within the rail (their
    server), so flows to them from the first leaf take 8 different spines; the global NIC
    index (8 s + r) would have sent all of them to spine r (8 s + r = r mod 8)."""
    model = _model()
    spines = {_spine_of(model, rail, s * 8 + rail) for s in range(8, 16)}
    assert spines == {f"fabric/spine{j}" for j in range(8)}


def test_fat_tree_keeps_dmodk_on_the_global_nic_index():
    """Fat-tree, radix 16: one leaf per server; a flow to NIC d (global index 8 s + k)
    climbs to spine d mod 8 = k, as before the rail change."""
    model = _model(topology="fat-tree")
    for dst in range(8, 16):
        assert _spine_of(model, 0, dst) == f"fabric/spine{dst % 8}"


# -- 1b: rings and trees on their rail ------------------------------------------------------
def _rail_of(model: CollectiveModel, vertex: int) -> int:
    layout = model.cluster.layout
    return layout.nics.index(vertex % layout.vertices)


def _gpu_rail(model: CollectiveModel, vertex: int) -> int:
    layout = model.cluster.layout
    return layout.rail_nic(layout.gpus.index(vertex % layout.vertices))


def _inter_hops(group: Group, channel: int) -> list[tuple[int, int]]:
    segments = group.segments(channel)
    return [(a[-1], b[0]) for a, b in zip(segments, segments[1:] + segments[:1], strict=True)]


@pytest.mark.parametrize("tp", [8, 4, 2, 1])
@pytest.mark.parametrize("pxn", [False, True])
def test_each_ring_channel_enters_and_leaves_every_server_on_its_rail(tp, pxn):
    """Channel c enters each server at the GPU next to NIC R[c] and leaves through R[c]:
    tp 8 (one GPU per server) trivially; tp 1 from the GPU sharing that NIC's PCIe switch
    (NCCL path type PIX); tp 4 and 2, whose groups have no such GPU, with PXN (over NVLink
    to the entry GPU); without PXN those cross rails through the fabric (NCCL_CROSS_NIC's
    fallback), the other cases never do."""
    model = _model(pxn=pxn)
    router = model.network.router
    group = Group(model.cluster, _dp_groups(tp)[0])
    assert group.channels == 8 // tp
    for c in range(group.channels):
        rail = {_gpu_rail(model, seg[0]) for seg in group.segments(c)}
        assert len(rail) == 1                   # every server entered next to the same rail
        leave = {_rail_of(model, router.exit_nic(s, d)[0]) for s, d in _inter_hops(group, c)}
        assert (leave == rail) == (pxn or tp in (8, 1))


def test_rings_use_every_nic_of_the_group_once():
    """DGX H100 with 4 NICs (2 GPUs per NIC), whole servers: the 4 channels enter at GPUs
    0, 2, 4, 6, one per NIC, and leave from their PCIe neighbours 1, 3, 5, 7 (rank rotation
    would have put two channels on each of NICs 0 and 1)."""
    model = _model(nics_per_node=4)
    group = Group(model.cluster, tuple(range(8 * NODES)))
    assert group.channels == 4
    n, gpus = model.cluster.layout.vertices, model.cluster.layout.gpus
    ends = [(group.segments(c)[0][0] % n, group.segments(c)[0][-1] % n) for c in range(4)]
    assert ends == [(gpus[0], gpus[1]), (gpus[2], gpus[3]), (gpus[4], gpus[5]), (gpus[6], gpus[7])]


@pytest.mark.parametrize("algorithm", [Algorithm.RING, Algorithm.TREE])
@pytest.mark.parametrize("tp", [8, 4, 2, 1])
def test_rail_aligned_collectives_leave_the_spines_alone(tp, algorithm):
    """Radix 64: each rail is one leaf, so traffic on one rail never climbs to a spine. With
    PXN every data-parallel ring and tree of every layout stays there (trees join the heads,
    which are the rings' entry GPUs: same NIC up and down, as NCCL's trees)."""
    model = _model(radix=64, pxn=True)
    schedule = merge_schedules([build_schedule(Op.ALL_REDUCE, algorithm, Group(model.cluster, g))
                                for g in _dp_groups(tp)])
    assert _spine_load(model, schedule) == 0.0


@pytest.mark.parametrize("pxn", [False, True])
@pytest.mark.parametrize("tp", [8, 4, 2])
def test_data_parallel_all_reduce_gets_the_nics_full_bandwidth(tp, pxn):
    """All tp ranks' data-parallel groups at once (the stage's gradient reduction), 16
    servers, 1:1, two leaves per rail: ``b = 2(p-1)/p / (k B_nic)`` exactly, with
    ``k = 8/tp`` GPUs (NICs) per server; busbw at 16 GiB within 1% of ``k B_nic``; one group
    alone gets the same. Before the rail change tp 4 and 2 reached 12-25% of it here."""
    model = _model(pxn=pxn)
    groups = _dp_groups(tp)
    p, k = len(groups[0]), 8 // tp
    closed = 2 * (p - 1) / p / (k * _nic_Bps(model))
    alone = _simple(model, build_schedule(Op.ALL_REDUCE, Algorithm.RING, Group(model.cluster, groups[0])))
    together = model.concurrent_terms(Op.ALL_REDUCE, groups, 2.0**34, Algorithm.RING)
    assert alone.seconds_per_byte == pytest.approx(closed, rel=1e-12, abs=0)
    assert together.seconds_per_byte == pytest.approx(closed, rel=1e-12, abs=0)
    size = 2.0**34
    busbw = size / float(together.time(size)) * 2 * (p - 1) / p
    assert busbw == pytest.approx(k * _nic_Bps(model), rel=0.01)
    assert busbw < k * _nic_Bps(model)


@pytest.mark.parametrize("mode", ["steps", "pairs"])
@pytest.mark.parametrize("pxn", [False, True])
@pytest.mark.parametrize("tp", [8, 4, 2])
def test_replayed_data_parallel_all_reduce_takes_the_cost_model_time(tp, pxn, mode):
    """The discrete-event engine replays the same merged rings over the same routes as
    max-min fair flows: alone on the network they finish at ``a + b n`` (1 GiB)."""
    model = _model(pxn=pxn)
    size = 2.0**30
    terms = model.concurrent_terms(Op.ALL_REDUCE, _dp_groups(tp), size, Algorithm.RING)
    assert _replayed_time(model, terms, size, mode) == pytest.approx(float(terms.time(size)),
                                                                     rel=1e-9)


# -- 1c: PXN --------------------------------------------------------------------------------
def _expert_groups(nodes=8) -> list[tuple[int, ...]]:
    """ep 8 x tp 2: each block of two servers holds two expert groups (even, odd GPUs)."""
    return [tuple(s * 8 + t + 2 * j for s in (b, b + 1) for j in range(4))
            for b in range(0, nodes, 2) for t in range(2)]


def test_pxn_routes_a_cross_rail_send_over_nvlink_to_the_destination_rail():
    """GPU 0 of server 0 to GPU 2 of server 1: without PXN it leaves through its own NIC 0
    and crosses to rail 2 at a spine; with PXN it goes over NVLink to GPU 2 of server 0,
    which hands it to NIC 2 (paths.cc PATH_PXN), and stays on rail 2's leaf."""
    expected = {
        False: ["n0/gpu0", "n0/pcie0", "n0/nic0", "fabric/rail0-leaf0", "fabric/spine1",
                "fabric/rail2-leaf0", "n1/nic2", "n1/pcie1", "n1/gpu2"],
        True: ["n0/gpu0", "n0/nvswitch", "n0/gpu2", "n0/pcie1", "n0/nic2", "fabric/rail2-leaf0",
               "n1/nic2", "n1/pcie1", "n1/gpu2"],
    }
    for pxn, hops in expected.items():
        model = _model(radix=64, pxn=pxn, nodes=8)
        cluster = model.cluster
        path = model.network.router.path(cluster.gpu_vertex(0), cluster.gpu_vertex(10))
        labels = _edge_labels(model, path)
        assert [labels[0][0]] + [v for _, v in labels] == hops


def test_pxn_moves_a_cross_rail_all_to_all_off_the_spines():
    """Expert all-to-alls of ep 8 x tp 2 on 8 servers, one leaf per rail: three quarters of
    each GPU's cross-server bytes go to other rails, over the spines; with PXN none do."""
    spine = {}
    for pxn in (False, True):
        model = _model(radix=64, pxn=pxn, nodes=8)
        schedule = merge_schedules([build_schedule(Op.ALL_TO_ALL, Algorithm.DIRECT,
                                                   Group(model.cluster, g)) for g in _expert_groups()])
        spine[pxn] = _spine_load(model, schedule)
    # 64 GPUs each send 4 peers x 1/8 across servers, 3 of them on other rails: up + down
    assert spine[False] == pytest.approx(64 * 3 / 8 * 2)
    assert spine[True] == 0.0


def test_pxn_keeps_concurrent_all_to_alls_from_meeting_on_oversubscribed_spines():
    """Radix 16 at 2:1 (11 down, 5 up per leaf): without PXN the stage's expert groups
    meet on the spines and take longer together than one alone; with PXN each GPU's
    NIC is its only network bottleneck, alone or together. The replay of the PXN flows
    takes the cost model's time."""
    ratio = {}
    for pxn in (False, True):
        model = _model(radix=16, pxn=pxn, nodes=8, oversubscription=2.0)
        size = 2.0**27
        alone = model.sweep(Op.ALL_TO_ALL, None, Group(model.cluster, _expert_groups()[0]), [size])
        together = model.concurrent_terms(Op.ALL_TO_ALL, _expert_groups(), size)
        ratio[pxn] = float(together.time(size)) / float(alone.time_s[0])
        if pxn:
            assert _replayed_time(model, together, size, "pairs") == pytest.approx(
                float(together.time(size)), rel=1e-9)
    assert ratio[False] > 1.3
    assert ratio[True] == pytest.approx(1.0, rel=1e-12)


def test_pxn_needs_nvlink_to_the_relay():
    """PCIe-only servers have no NVLink to relay over: PXN leaves their routes alone."""
    routes = {}
    for pxn in (False, True):
        cluster = make_cluster(node="pcie-h100x8", nodes=2, topology="rail-optimized", pxn=pxn)
        router = CollectiveModel(cluster).network.router
        routes[pxn] = router.path(cluster.gpu_vertex(0), cluster.gpu_vertex(8 + 6))
    assert routes[True] == routes[False]


# -- fat-tree results unchanged ---------------------------------------------------------------
# (latency s, s/byte) of the Simple protocol, computed before the rail change (commit 03ae2bd);
# the s/byte values are also the closed forms named in each case.
_FAT_TREE = {
    # whole cluster ring: 2(p-1)/p / (8 B_nic), p = 128; its latency times NCCL's 1.4 for a
    # Simple ring all-reduce across servers (tuning.cc, "plateau effect of ring"; 2026-11-29)
    ("ring-all-reduce", 16, 1.0): (0.0012720499999999998 * 1.4, 2 * 127 / 128 / (8 * 48e9)),
    ("ring-all-reduce", 64, 1.0): (0.0012244249999999995 * 1.4, 2 * 127 / 128 / (8 * 48e9)),
    # NCCL's double tree (trees.cc, mirrored on 16 servers): each server is inner (2 children
    # and a parent: 3 shares of n/(2 C) each way) in one tree and a leaf (1) in the other, so
    # each of its C = 8 NICs carries 2 n / C, at the tree's Simple efficiency 0.92 (NCCL's
    # tuning.cc; 0.9 before 2026-11-29; 7.23e-12, 2.5 shares, with the in-order balanced trees
    # used before that day)
    ("tree-all-reduce", 16, 1.0): (0.0001923999999999999, 2 / 8 / (48e9 * 0.92)),
    # tp 2 data-parallel all-gathers together: (p-1)/p / (4 B_nic), p = 64
    ("ring-all-gather-tp2", 16, 1.0): (0.00042105000000000007, 63 / 64 / (4 * 48e9)),
    ("ring-all-gather-tp2", 16, 2.0): (0.0004129289062500001, 1.5380859375e-11),
    # two servers' all-to-all: half of n leaves each GPU, at the p2p efficiency 0.9
    ("all-to-all-2-servers", 16, 1.0): (2.4399999999999997e-05, 0.5 / (48e9 * 0.9)),
}


@pytest.mark.parametrize("case,radix,ratio", list(_FAT_TREE))
def test_fat_tree_collectives_are_unchanged(case, radix, ratio):
    model = _model(topology="fat-tree", radix=radix, oversubscription=ratio)
    cluster = model.cluster
    whole = Group(cluster, tuple(range(cluster.gpus)))
    schedules = {
        "ring-all-reduce": lambda: [build_schedule(Op.ALL_REDUCE, Algorithm.RING, whole)],
        "tree-all-reduce": lambda: [build_schedule(Op.ALL_REDUCE, Algorithm.TREE, whole)],
        "ring-all-gather-tp2": lambda: [build_schedule(Op.ALL_GATHER, Algorithm.RING,
                                                       Group(cluster, g)) for g in _dp_groups(2)],
        "all-to-all-2-servers": lambda: [build_schedule(Op.ALL_TO_ALL, Algorithm.DIRECT,
                                                        Group(cluster, tuple(range(16))))],
    }[case]()
    terms = _simple(model, merge_schedules(schedules))
    latency, per_byte = _FAT_TREE[(case, radix, ratio)]
    assert terms.latency_s == pytest.approx(latency, rel=1e-12)
    assert terms.seconds_per_byte == pytest.approx(per_byte, rel=1e-12, abs=0)


def test_three_tier_dmodk_spreads_cross_rail_flows_over_every_core():
    """8 DGX H100 servers on radix-8 switches (4 down, 4 up): each rail has two leaves, the 16
    leaves exceed one spine layer, so pods of 4 leaves (two rails each) join over 4 groups of 4
    cores. Every server's rail-0 GPU sends to the next server's rail-2 GPU, and its rail-1 GPU
    to the next server's rail-3 GPU: 16 flows from pod 0 to pod 1 over its 16 core uplinks.
    D-mod-K on the destination's place in the fabric (leaf, then port: Zahavi 2010) gives each
    flow its own uplink and core; keyed by the destination server alone (0-7), a rail-0 and a
    rail-1 flow to the same server met on every switch-to-switch link above the leaf (load 2)."""
    model = _model(radix=8, nodes=8)
    assert any("core" in _label(model, v) for v in model.cluster.graph.nodes)
    router, cluster = model.network.router, model.cluster
    switch_kinds = {VertexKind.SPINE, VertexKind.CORE}
    kinds = cluster.graph.nodes(data="kind")
    ends = {d["eid"]: (u, v) for u, v, d in cluster.graph.edges(data=True)}
    load: dict[int, int] = {}
    for s in range(8):
        for src, dst in ((0, 2), (1, 3)):
            path = router.path(cluster.gpu_vertex(s * 8 + src), cluster.gpu_vertex((s + 1) % 8 * 8 + dst))
            for e in path:
                if kinds[ends[e][0]] in switch_kinds or kinds[ends[e][1]] in switch_kinds:
                    load[e] = load.get(e, 0) + 1
    assert load and max(load.values()) == 1


@pytest.mark.parametrize(("topology", "tiers", "largest"), [
    ("fat-tree", 2, 4), ("fat-tree", None, 16), ("rail-optimized", None, 16)])
def test_fabric_size_is_checked_from_counts_at_the_builders_limit(topology, tiers, largest):
    """Radix 8 (4 ports down, 4 up), 8 NICs a DGX H100: two tiers join 8 leaves (32 NICs, 4
    servers), three tiers 8 pods of 4 leaves (128 NICs, 16 servers; on rails 8 x 4 leaves). The
    largest such cluster builds; one server more is refused from the counts, before any graph
    (a million servers took minutes and gigabytes to reach the builder's refusal)."""
    fabric = {"switch_radix": 8} | ({"tiers": tiers} if tiers else {})
    assert make_cluster(nodes=largest, topology=topology, **fabric).gpus == 8 * largest
    with pytest.raises(ConfigError, match="cluster.fabric") as caught:
        make_cluster(nodes=largest + 1, topology=topology, **fabric)
    assert "leaves" in str(caught.value)


def test_a_node_holds_at_most_max_gpus_per_node():
    """An inline node of 100,000 GPUs was accepted and then priced pair by pair for minutes;
    one node (one NVLink domain) now stops at MAX_GPUS_PER_NODE, with the key named."""
    node = HardwareLibrary().node("dgx-h100").model_dump(exclude_none=True)
    node.update(gpus=MAX_GPUS_PER_NODE + 1)
    with pytest.raises(ConfigError, match="cluster.node.gpus"):
        scenario_from_mapping({"cluster": {"node": node, "nodes": 1}}, "<test>", HardwareLibrary())
