"""Servers with more NICs than GPUs (OCI's BM.GPU.H100.8 and BM.GPU4.8: 16 ports for 8 GPUs;
AWS p5: 32): NCCL drives every NIC, so a GPU's traffic leaves over all the NICs beside it.

Closed form (as tests/test_rails.py): a ring all-reduce of ``p`` ranks, ``k`` per server,
one channel per GPU, moves ``2(p-1)/p * n / k`` through each GPU's NICs; with ``m`` NICs
per GPU of rate ``B`` each, ``b = 2(p-1)/p / (k m B)``. Measured: two BM.GPU4.8 servers
all-reduce 10 GiB at 223 GB/s of bus bandwidth (validation/nccl_tests), more than the 8 x
12 GB/s one NIC per GPU could carry.
"""

from __future__ import annotations

import pytest
from conftest import make_cluster
from oracles import replay_alone_seconds

from simulator.collectives import Algorithm, Group, Op, build_schedule
from simulator.config import Protocol, scenario_from_mapping
from simulator.config.library import HardwareLibrary
from simulator.config.resolved import resolve_cluster
from simulator.cost import CollectiveModel
from simulator.engine.replay import replay_of

NODES = 4


def _model(nics: int, topology: str) -> CollectiveModel:
    return CollectiveModel(make_cluster(nodes=NODES, link="roce-200g", topology=topology,
                                        nics_per_node=nics, switch_radix=16))


def _ring_terms(model: CollectiveModel, tp: int):
    groups = [tuple(s * 8 + t + j * tp for s in range(NODES) for j in range(8 // tp))
              for t in range(tp)]
    terms = model.concurrent_terms(Op.ALL_REDUCE, groups, 2.0**30, Algorithm.RING)
    return terms, len(groups[0]), 8 // tp


@pytest.mark.parametrize("topology", ["fat-tree", "rail-optimized"])
@pytest.mark.parametrize("tp", [8, 4, 1])
@pytest.mark.parametrize("nics", [8, 16, 32])
def test_every_nic_of_a_gpu_carries_its_ring(nics, tp, topology):
    """``b = 2(p-1)/p / (k m B)`` exactly, with m = nics / 8 NICs per GPU, for every
    data-parallel group of a layout at once, on a non-blocking fabric of either kind (the
    bonded ports fill the leaves as the NICs would, so the fabric stays non-blocking).
    32 NICs (4 per GPU) are bound by the GPU's own PCIe 5 link, 50.4 GB/s effective."""
    model = _model(nics, topology)
    terms, p, k = _ring_terms(model, tp)
    per_gpu = min(nics / 8 * model.cluster.hw.nic_link.effective_Bps,
                  model.cluster.hw.pcie_link.effective_Bps)
    assert terms.seconds_per_byte == pytest.approx(2 * (p - 1) / p / (k * per_gpu), rel=1e-12, abs=0)


def test_replayed_ring_on_sixteen_nics_takes_the_cost_model_time():
    """The discrete-event engine replays the merged rings over the same bonded ports:
    alone on the network they finish at the cost model's ``a + b n`` (1 GiB)."""
    model = _model(16, "rail-optimized")
    terms, _, _ = _ring_terms(model, 4)
    efficiency = model.cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    replay = replay_of(terms, 2.0**30, model.network.router, efficiency, "steps")
    assert replay_alone_seconds(model.cluster, replay) == pytest.approx(float(terms.time(2.0**30)),
                                                                        rel=1e-9)


def test_a_server_with_more_nics_than_gpus_has_one_port_per_gpu():
    """16 NICs on 8 GPUs: 8 ports of 2 NICs; 4 NICs: 4 ports of one; 12 NICs: 8 of 1.5."""
    library = HardwareLibrary()
    for nics, ports, lanes in ((16, 8, 2.0), (4, 4, 1.0), (12, 8, 1.5), (32, 8, 4.0)):
        data = {"cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"nics_per_node": nics}}}
        hw = resolve_cluster(scenario_from_mapping(data, "<test>", library).cluster, library)
        assert (hw.nic_ports, hw.nic_lanes) == (ports, lanes)
        assert hw.port_link.bandwidth_GBps == pytest.approx(lanes * hw.nic_link.bandwidth_GBps)
    assert hw.port_link.name != hw.nic_link.name     # the graph caches link values by name


def test_tree_on_two_bm_gpu4_8_servers_uses_both_nics_of_each_gpu():
    """The measured server pair (16 x 100 GbE on 8 A100): NCCL's tree for 10 GiB is priced
    NIC-bound at twice one NIC per GPU's rate less nothing else; with 8 NICs it would be
    half as fast (the model read -26% against the log before the NICs were bonded)."""
    sizes = 10 * 2.0**30
    times = {}
    for nics in (8, 16):
        cluster = make_cluster(node="dgx-a100-40gb", nodes=2, link="roce-100g",
                               topology="single-switch", nics_per_node=nics)
        model = CollectiveModel(cluster)
        schedule = build_schedule(Op.ALL_REDUCE, Algorithm.TREE, Group(cluster, tuple(range(16))))
        terms = next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)
        times[nics] = float(terms.time(sizes))
    assert times[16] < 0.75 * times[8]
