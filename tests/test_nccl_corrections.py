"""NCCL's corrections of its own alpha-beta model (src/graph/tuning.cc ``ncclTopoGetAlgoTime``):
the tree all-reduce's bandwidth at 64 B x 2^i is ``treeCorrectionFactor`` i times the plain one
(interpolated in log2 of the size between powers of two, so that a larger message never takes
less time), a Simple ring all-reduce across servers pays 1.4 times its latency ("plateau
effect of ring"), and every step of a ring across servers costs at least the hosts' net overhead
(``getNetOverhead``)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster
from oracles import replay_alone_seconds

from simulator.collectives import Algorithm, Group, Op, build_schedule
from simulator.config import HardwareLibrary
from simulator.config.hardware import Protocol, ProtocolTable
from simulator.cost import CollectiveModel
from simulator.cost.network import size_factor
from simulator.engine.replay import replay_of

# NVIDIA/nccl src/graph/tuning.cc treeCorrectionFactor (LL, LL128, Simple), 2.18.5 to 2.29.
NCCL_TABLE = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9,
           1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9,
              .9, .9, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7,
               .8, .9, .9),
}
_CACHE: dict = {}


def _protocols() -> ProtocolTable:
    return HardwareLibrary().protocols("nccl")


def _two_servers() -> CollectiveModel:
    if "model" not in _CACHE:
        _CACHE["model"] = CollectiveModel(make_cluster(nodes=2, topology="single-switch"))
    return _CACHE["model"]


def _tree_terms():
    model = _two_servers()
    group = Group(model.cluster, tuple(range(16)))
    return model.terms(Op.ALL_REDUCE, Algorithm.TREE, group)


def test_the_library_carries_nccls_table():
    table = _protocols().tree_correction
    assert {str(proto): tuple(values) for proto, values in table.items()} == NCCL_TABLE


@pytest.mark.parametrize("proto", sorted(NCCL_TABLE))
def test_ncclss_factor_at_every_power_of_two_and_one_outside(proto):
    factors = NCCL_TABLE[proto]
    sizes = 64.0 * 2.0 ** np.arange(len(factors))
    assert np.array_equal(size_factor(factors, sizes), np.array(factors))
    assert size_factor(factors, 32.0) == 1.0
    assert size_factor(factors, 16.0) == 1.0
    assert size_factor(factors, 2.0**29) == 1.0
    assert size_factor(factors, 2.0**34) == 1.0


@pytest.mark.parametrize("proto", sorted(NCCL_TABLE))
def test_a_larger_message_never_takes_less_time(proto):
    """``n / f(n)`` increases (NCCL's step table would not: at 4 MiB LL128's factor steps
    from 0.6 to 0.8, so 4 MiB would take 25% less than 4 MiB - 1 B)."""
    sizes = np.logspace(3.0, 33.0, 20001, base=2.0)
    assert np.all(np.diff(sizes / size_factor(NCCL_TABLE[proto], sizes)) > 0.0)


@pytest.mark.parametrize("proto", sorted(NCCL_TABLE))
def test_one_size_and_an_array_give_the_same_bits(proto):
    """The scalar path (the pricing's) and numpy's ``interp`` (sweeps, replays) agree exactly,
    so both engines and every entry point see the same time."""
    rng = np.random.default_rng(3)
    sizes = np.concatenate([2.0 ** rng.uniform(-2.0, 35.0, 4000), 64.0 * 2.0 ** np.arange(-3, 26)])
    one = np.array([size_factor(NCCL_TABLE[proto], float(n)) for n in sizes])
    assert np.array_equal(one, size_factor(NCCL_TABLE[proto], sizes))


def test_a_table_whose_entry_doubles_is_refused_in_one_line():
    """A user's protocol file whose correction would make a larger message faster is refused
    with the file, the key and the reason (no dump of the whole section)."""
    from simulator.config.yaml_io import validate_model
    from simulator.errors import ConfigError

    data = _protocols().model_dump(mode="json")
    data["tree_correction"] = {"LL128": [0.4, 0.9]}
    with pytest.raises(ConfigError) as caught:
        validate_model(ProtocolTable, data, "nccl.yaml")
    text = str(caught.value)
    assert "nccl.yaml" in text and "tree_correction.LL128: an entry may not double" in text
    assert "a dict" not in text and "\n" not in text


@pytest.mark.parametrize("size", [2.0**23, 3.0 * 2**20, 2.0**28, 2.0**30])
def test_tree_time_divides_the_bandwidth_term_by_the_factor(size):
    for terms in _tree_terms():
        factor = size_factor(NCCL_TABLE[terms.protocol.value], size)
        expected = terms.latency_s + terms.seconds_per_byte * size / factor
        assert terms.time(size) == pytest.approx(expected, rel=1e-12, abs=0)
        assert terms.seconds(size) == pytest.approx(expected, rel=1e-12, abs=0)


def test_only_the_tree_all_reduce_is_corrected():
    model = _two_servers()
    group = Group(model.cluster, tuple(range(16)))
    for op, algorithm in [(Op.ALL_REDUCE, Algorithm.RING), (Op.ALL_GATHER, Algorithm.RING),
                          (Op.ALL_REDUCE, Algorithm.NVLS_TREE)]:
        for terms in model.terms(op, algorithm, group):
            assert terms.size_factors is None        # NVLS-Tree keeps its chunk loop only


def test_launches_pay_the_factor_of_one_call():
    """A bucketed reduction of 64 MiB in 16 calls runs 4 MiB calls, each at 4 MiB's factor."""
    from simulator.cost.collective import PricedCollective

    for terms in _tree_terms():
        priced = PricedCollective(Op.ALL_REDUCE, 2.0**26, terms, launches=16)
        factor = size_factor(NCCL_TABLE[terms.protocol.value], 2.0**22)
        expected = 16 * terms.latency_s + terms.seconds_per_byte * 2.0**26 / factor
        assert priced.time_s == pytest.approx(expected, rel=1e-12, abs=0)
        launched = priced.launched_terms
        assert launched.linear
        assert launched.seconds(2.0**26) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("size", [2.0**23, 3.0 * 2**20])
def test_a_corrected_tree_replayed_alone_takes_the_cost_model_time(size):
    model = _two_servers()
    efficiency = model.cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    for terms in _tree_terms():
        replay = replay_of(terms, size, model.network.router, efficiency, "steps")
        assert replay_alone_seconds(model.cluster, replay) == pytest.approx(
            float(terms.time(size)), rel=1e-9)


def test_auto_prices_the_corrected_tree():
    """The candidate chosen for a size is the fastest with the correction applied."""
    model = _two_servers()
    group = Group(model.cluster, tuple(range(16)))
    sizes = np.logspace(10.0, 30.0, 41, base=2.0)
    best = model.sweep(Op.ALL_REDUCE, None, group, sizes).time_s
    tree = model.sweep(Op.ALL_REDUCE, Algorithm.TREE, group, sizes).time_s
    expected = np.min([t.time(sizes) for t in _tree_terms()], axis=0)
    assert np.allclose(tree, expected, rtol=1e-12, atol=0)
    assert np.all(best <= tree * (1 + 1e-12))


def _ring_latencies(model: CollectiveModel, gpus: tuple[int, ...], op: Op = Op.ALL_REDUCE) -> dict:
    group = Group(model.cluster, gpus)
    return {t.protocol.value: t.latency_s for t in model.terms(op, Algorithm.RING, group)}


def _unscaled_latency(model: CollectiveModel, gpus: tuple[int, ...], proto: str,
                      op: Op = Op.ALL_REDUCE, floored: bool = True) -> float:
    """``base + sum of the steps' hop latencies`` (each hop at least NCCL's net-overhead floor
    when the ring spans servers and ``floored``), as priced before the plateau factor."""
    network = model.network
    schedule = build_schedule(op, Algorithm.RING, Group(model.cluster, gpus))
    protocol = Protocol(proto)
    spans = len({gpu // model.cluster.hw.gpus_per_node for gpu in gpus}) > 1
    floor = network._ring_step_floor(schedule, protocol) if spans and floored else 0.0
    steps = sum(step.repeat * network._step_latency(network._step_load(step), "ring", protocol, floor)
                for step in schedule.steps)
    return network.protocols.base_latency_us["ring"][protocol] * 1e-6 + steps


def test_a_simple_ring_all_reduce_across_servers_pays_the_plateau_factor():
    model = _two_servers()
    gpus = tuple(range(16))
    latencies = _ring_latencies(model, gpus)
    assert _protocols().ring_plateau_latency_factor == 1.4
    assert latencies["Simple"] == pytest.approx(1.4 * _unscaled_latency(model, gpus, "Simple"),
                                                rel=1e-12, abs=0)
    for proto in ("LL", "LL128"):
        assert latencies[proto] == pytest.approx(_unscaled_latency(model, gpus, proto),
                                                 rel=1e-12, abs=0)


def test_no_plateau_inside_a_server_or_for_other_collectives():
    model = _two_servers()
    inside = tuple(range(8))
    assert _ring_latencies(model, inside)["Simple"] == pytest.approx(
        _unscaled_latency(model, inside, "Simple"), rel=1e-12, abs=0)
    gather = _ring_latencies(model, tuple(range(16)), Op.ALL_GATHER)["Simple"]
    assert gather == pytest.approx(_unscaled_latency(model, tuple(range(16)), "Simple",
                                                     Op.ALL_GATHER), rel=1e-12, abs=0)


# -- NCCL's net-overhead floor on a multi-node ring's steps (getNetOverhead) -------------------

def _servers(node: str, nodes: int) -> CollectiveModel:
    key = ("servers", node, nodes)
    if key not in _CACHE:
        _CACHE[key] = CollectiveModel(make_cluster(node=node, nodes=nodes, topology="single-switch"))
    return _CACHE[key]


@pytest.mark.parametrize("node,floors", [
    ("dgx-a100-80gb", {"LL": 2.0, "LL128": 2.0, "Simple": 6.0}),   # AMD hosts (2x EPYC 7742)
    ("dgx-h100", {"LL": 1.0, "LL128": 1.0, "Simple": 3.0}),        # Intel hosts
])
def test_a_ring_across_servers_pays_at_least_the_hosts_net_overhead_per_step(node, floors):
    """NCCL prices every step of a ring that spans nodes, NVLink steps included, at no less than
    the host's net overhead (1 us Intel, 2 us AMD, three times it under Simple): the ring's
    latency is the floored hop latencies' sum, more than the unfloored one where the floor
    exceeds the NVLink hop (LL on both hosts; LL128 and Simple on AMD hosts only)."""
    model = _servers(node, 2)
    gpus = tuple(range(16))
    schedule = model.terms(Op.ALL_GATHER, Algorithm.RING, Group(model.cluster, gpus))[0].schedule
    nvlink = _protocols().hop_latency_us["nvlink"]["ring"]
    latencies = _ring_latencies(model, gpus, Op.ALL_GATHER)
    for proto, floor_us in floors.items():
        assert model.network._ring_step_floor(schedule, Protocol(proto)) == pytest.approx(floor_us * 1e-6)
        floored = _unscaled_latency(model, gpus, proto, Op.ALL_GATHER)
        assert latencies[proto] == pytest.approx(floored, rel=1e-12, abs=0)
        plain = _unscaled_latency(model, gpus, proto, Op.ALL_GATHER, floored=False)
        if floor_us > nvlink[proto]:
            assert floored > plain
        else:
            assert floored == pytest.approx(plain, rel=1e-12, abs=0)


def test_no_floor_inside_a_server_or_for_a_ring_broadcast():
    """One server's ring has no network step; a broadcast NCCL prices apart."""
    model = _servers("dgx-a100-80gb", 2)
    inside = tuple(range(8))
    assert _ring_latencies(model, inside, Op.ALL_GATHER)["Simple"] == pytest.approx(
        _unscaled_latency(model, inside, "Simple", Op.ALL_GATHER, floored=False), rel=1e-12, abs=0)
    broadcast = build_schedule(Op.BROADCAST, Algorithm.RING, Group(model.cluster, tuple(range(16))))
    assert model.network._ring_step_floor(broadcast, Protocol.SIMPLE) == 0.0


# -- NCCL's LL ceiling (llMaxBws) ---------------------------------------------------------------

def _ll_terms(node: str, nodes: int, algorithm: Algorithm, op: Op = Op.ALL_REDUCE, gpus_per_node=None):
    extra = {"gpus_per_node": gpus_per_node} if gpus_per_node else {}
    key = ("ll", node, nodes, gpus_per_node)
    if key not in _CACHE:
        _CACHE[key] = CollectiveModel(make_cluster(node=node, nodes=nodes, topology="single-switch", **extra))
    model = _CACHE[key]
    group = Group(model.cluster, tuple(range(model.cluster.gpus)))
    (terms,) = [t for t in model.terms(op, algorithm, group) if t.protocol.value == "LL"]
    return terms, model.cluster.gpus


@pytest.mark.parametrize("node,nodes,busbw", [
    ("dgx-h100", 2, 39.0),        # Intel hosts, two nodes
    ("dgx-h100", 3, 20.4),        # Intel hosts, three or more
    ("dgx-a100-80gb", 2, 22.5),   # AMD hosts (DGX A100: 2x EPYC 7742)
    ("dgx-a100-80gb", 4, 19.0),
])
def test_an_ll_ring_across_nodes_runs_at_nccls_ceiling(node, nodes, busbw):
    """A ring all-reduce with LL moves ``2 (p-1)/p`` of the message per bus byte; across
    nodes NCCL caps its bus bandwidth at ``llMaxBws`` by host CPU, which binds on these
    servers (their NICs would carry 100-400 GB/s of LL)."""
    terms, p = _ll_terms(node, nodes, Algorithm.RING)
    assert terms.seconds_per_byte == pytest.approx(2 * (p - 1) / p / (busbw * 1e9), rel=1e-12, abs=0)


def test_an_ll_tree_across_nodes_runs_at_half_the_ceiling():
    """NCCL prices a tree's algorithm bandwidth at half its bus bandwidth (ratio 0.5)."""
    terms, _ = _ll_terms("dgx-h100", 2, Algorithm.TREE)
    assert terms.seconds_per_byte == pytest.approx(2 / 39.0e9, rel=1e-12, abs=0)


def test_inside_a_node_the_ceiling_is_the_gpus_and_only_nccls_gpus_have_one():
    from simulator.cost.nccl_ceilings import communicator_nodes, ll_ceiling_GBps

    for node, expected in [("dgx-h100", 141.0), ("dgx-a100-80gb", 87.7), ("dgx-b200", 282.0),
                           ("mi300x-platform", None)]:
        model = CollectiveModel(make_cluster(node=node, nodes=1))
        group = Group(model.cluster, tuple(range(model.cluster.gpus)))
        schedule = next(iter(model.terms(Op.ALL_REDUCE, Algorithm.RING, group))).schedule
        assert ll_ceiling_GBps(model.cluster, communicator_nodes(schedule, model.cluster)) == expected


def test_the_ceiling_leaves_ll128_and_simple_alone():
    model = CollectiveModel(make_cluster(nodes=2, topology="single-switch"))
    group = Group(model.cluster, tuple(range(16)))
    rates = {t.protocol.value: t.seconds_per_byte for t in model.terms(Op.ALL_REDUCE, Algorithm.RING, group)}
    assert rates["LL128"] < 2 * 15 / 16 / 39.0e9 and rates["Simple"] < rates["LL128"]


# -- NCCL's per-channel tree ceilings (perChMaxTreeBws, perChMaxTreeLL128Bws) -------------------

@pytest.mark.parametrize("node,nodes,proto,busbw", [
    ("dgx-b200", 2, "LL128", 31.67),   # NCCL 2.28's Blackwell figures, two nodes
    ("dgx-b200", 2, "Simple", 42.8),
    ("dgx-b200", 3, "LL128", 20.0),    # three or more
    ("dgx-b200", 3, "Simple", 24.0),
])
def test_a_blackwell_tree_across_nodes_runs_at_its_channels_ceiling(node, nodes, proto, busbw):
    """Two DGX B200 with 8 NICs each: 16 tree channels (2 per NIC), each at most NCCL's
    per-channel bus bandwidth; the tree's algorithm bandwidth is half its bus bandwidth, so
    ``b >= 2 / (16 x ceiling)``, which binds where the NICs alone would allow more."""
    key = ("tree", node, nodes)
    if key not in _CACHE:
        _CACHE[key] = CollectiveModel(make_cluster(node=node, nodes=nodes, topology="single-switch"))
    model = _CACHE[key]
    group = Group(model.cluster, tuple(range(model.cluster.gpus)))
    (terms,) = [t for t in model.terms(Op.ALL_REDUCE, Algorithm.TREE, group) if t.protocol.value == proto]
    assert terms.seconds_per_byte == pytest.approx(2 / (16 * busbw * 1e9), rel=1e-12, abs=0)


def test_no_tree_ceiling_inside_one_node_or_for_a_ring():
    from simulator.config.hardware import Protocol
    from simulator.cost.nccl_ceilings import floors_seconds_per_byte

    one = CollectiveModel(make_cluster(node="dgx-b200", nodes=1))
    two = CollectiveModel(make_cluster(node="dgx-b200", nodes=2, topology="single-switch"))
    inside = one.terms(Op.ALL_REDUCE, Algorithm.TREE, Group(one.cluster, tuple(range(8))))[0].schedule
    ring = two.terms(Op.ALL_REDUCE, Algorithm.RING, Group(two.cluster, tuple(range(16))))[0].schedule
    for schedule, cluster in ((inside, one.cluster), (ring, two.cluster)):
        assert floors_seconds_per_byte(schedule, cluster).get(Protocol.SIMPLE, 0.0) == 0.0


def test_concurrent_groups_inside_their_servers_count_as_one_node():
    """Four 8-GPU groups, one per server, priced together (a merged schedule touches four
    servers): each communicator is one node, so the one-node LL ceiling applies, not the
    multi-node one; eight rail groups across the four servers are four-node communicators."""
    from simulator.cost.nccl_ceilings import communicator_nodes, ll_ceiling_GBps

    model = CollectiveModel(make_cluster(nodes=4, topology="single-switch"))
    inside = [tuple(range(8 * s, 8 * s + 8)) for s in range(4)]
    rails = [tuple(8 * s + r for s in range(4)) for r in range(8)]
    for groups, expected in ((inside, 141.0), (rails, 20.4)):
        terms = model.concurrent_terms(Op.ALL_REDUCE, groups, 2.0**20, Algorithm.RING)
        nodes = communicator_nodes(terms.schedule, model.cluster)
        assert ll_ceiling_GBps(model.cluster, nodes) == expected
