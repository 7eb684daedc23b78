"""NCCL's chunk loop of NVLink SHARP collectives (simulator/cost/nvls_chunks.py).

Closed forms: NCCL's chunk rule (src/enqueue.cc ``computeCollChunkInfo``) and
``T(n) = a + b n + (D - 1) K c b + tau n / K (1/c - 1/c_max)`` with ``K = channels x heads``;
and a published measurement: the DGX H100 nccl-tests curve (validation/nccl_tests,
NVIDIA/dgxc-benchmarking), which the loop reproduces from 16 MiB up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import make_cluster

from simulator.collectives import Algorithm, Group, Op, build_schedule
from simulator.config import Protocol
from simulator.cost import CollectiveModel
from simulator.cost.collective import PricedCollective
from simulator.engine.replay import protocol_efficiency, replay_of
from simulator.units import KIB, MIB, US
from simulator.validation.nccl_suite import replay

FOLDER = Path(__file__).resolve().parent.parent / "validation" / "nccl_tests"


def _nvls_terms(node: str = "dgx-h100", nodes: int = 1):
    """Simple-protocol terms of NVLS (one server) or NVLS-Tree (more) on every GPU."""
    cluster = make_cluster(nodes=nodes, node=node)
    model = CollectiveModel(cluster)
    group = Group(cluster, tuple(range(cluster.hw.gpus_per_node * nodes)))
    algorithm = Algorithm.NVLS if nodes == 1 else Algorithm.NVLS_TREE
    schedule = build_schedule(Op.ALL_REDUCE, algorithm, group)
    return next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)


@pytest.mark.parametrize(("size", "chunk"), [
    (2**30, 128 * KIB),          # not below 64 loops of K x 128 KiB = 1 GiB
    (2**30 - 1, 64 * KIB),
    (64 * MIB, 64 * KIB),        # not below 8 loops of K x 64 KiB = 64 MiB
    (64 * MIB - 1, 32 * KIB),
    (8 * MIB, 32 * KIB),         # not below 2 loops of K x 32 KiB = 8 MiB
    (8 * MIB - 1, 16 * KIB),
])
def test_one_server_nvls_chunk_follows_nccls_rule(size, chunk):
    """Eight H100: 16 channels x 8 heads, K = 128 chunks per loop."""
    terms = _nvls_terms()
    assert terms.chunks.concurrent_ops == 128
    assert float(terms.chunks.chunk_bytes(size)) == chunk


def test_nvls_time_is_the_closed_form():
    terms = _nvls_terms()
    sizes = np.array([8 * MIB, 64 * MIB, 512 * MIB, 4 * 2**30], dtype=float)
    chunk = np.array([32, 64, 64, 128], dtype=float) * KIB
    b, k, tau = terms.seconds_per_byte, 128, 3.4 * US
    loops = tau * sizes / k * (1 / chunk - 1 / (128 * KIB))
    expected = terms.latency_s + b * sizes + 2 * np.minimum(k * chunk, sizes) * b + loops
    assert terms.time(sizes) == pytest.approx(expected, rel=1e-12)
    assert [terms.seconds(s) for s in sizes] == pytest.approx(list(expected), rel=1e-12)


def test_a_message_below_one_loop_fills_with_itself_and_an_empty_one_adds_nothing():
    """Below ``K c`` bytes a channel's loop is the message's share: the fill is ``(D - 1) n b``."""
    terms = _nvls_terms()
    n = 1 * MIB                       # below K x 16 KiB = 2 MiB
    steps = 3.4 * US * n / 128 * (1 / (16 * KIB) - 1 / (128 * KIB))
    assert float(terms.extra_seconds(n)) == pytest.approx(
        2 * n * terms.seconds_per_byte + steps, rel=1e-12, abs=0)
    assert float(terms.extra_seconds(0.0)) == 0.0


def test_blackwell_takes_24_channels_in_a_node_and_32_across():
    """NVLS_NCHANNELS_SM100_NVL and NVLS_NCHANNELS_SM100 (src/transport/nvls.cc)."""
    assert _nvls_terms(node="dgx-b200").chunks.concurrent_ops == 24 * 8
    assert _nvls_terms(node="dgx-b200", nodes=2).chunks.concurrent_ops == 32 * 8


def test_nvls_tree_on_two_servers_fills_five_stages():
    """A chunk passes scatter, the leaf's switch reduce, the root's, the leaf's broadcast and
    the gather (D = 2 d + 3, d = 1): four loops of fill at 128 KiB from 4 x K x 64 KiB up."""
    terms = _nvls_terms(nodes=2)
    k = 16 * 8
    assert terms.chunks.fill_loops == 4
    assert float(terms.chunks.chunk_bytes(4 * k * 128 * KIB)) == 128 * KIB
    assert float(terms.chunks.chunk_bytes(4 * k * 128 * KIB - 1)) == 64 * KIB
    assert float(terms.chunks.chunk_bytes(k * 64 * KIB - 1)) == 32 * KIB


def test_nvls_tree_caps_its_chunk_at_64_kib_from_four_servers():
    terms = _nvls_terms(nodes=4)
    assert float(terms.chunks.chunk_bytes(2**34)) == 64 * KIB


def test_a_replay_waits_the_chunk_loop():
    """Uncontended, the discrete-event replay of an NVLS all-reduce takes the priced time: its
    latency carries the loop's extra seconds at that size."""
    cluster = make_cluster()
    model = CollectiveModel(cluster)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS, Group(cluster, tuple(range(8))))
    terms = next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)
    size = 64 * MIB
    replayed = replay_of(terms, size, model.network.router, network_efficiency=1.0)
    assert float(terms.extra_seconds(size)) > 0.0
    assert replayed.latency_s == pytest.approx(terms.latency_s + float(terms.extra_seconds(size)), rel=1e-12)


def test_dgx_h100_curve_from_16_mib_is_within_six_percent():
    """The DGX Cloud benchmarking sample (one DGX H100, NCCL's default NVLS): measured busbw
    237 GB/s at 16 MiB rising to 480 at 8 GiB; with the chunk loop every row from 16 MiB is
    within 6% (the 64 MiB row, at the 64 KiB chunk's first size, -5.3%), where a + b n alone
    read +10.6% at 64 MiB and +16% at 32 MiB."""
    table = replay(FOLDER)
    log = table[table["log"] == "h100x8_1node_allreduce_dgxc-benchmarking"]
    rows = log[log["size_bytes"] >= 16 * MIB]
    assert len(rows) == 11
    assert (rows["algorithm"] == "nvls").all()
    assert rows["busbw_error"].abs().max() <= 0.06


def test_a_rack_of_64_gpus_has_32_nvls_heads():
    """NCCL_MAX_NVLS_ARITY (src/include/device.h) caps a node's NVLS heads at 32: on 64 GPUs of
    an NVL72 rack the busiest port (a head's) carries n (1 + 1/32) each way, not n (1 + 1/64),
    and the loop runs 24 channels x 32 heads."""
    cluster = make_cluster(node="gb200-nvl72", gpus_per_node=64)
    model = CollectiveModel(cluster)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS, Group(cluster, tuple(range(64))))
    terms = next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)
    port = cluster.hw.intra_link.effective_Bps * cluster.hw.node.fabric.links_per_gpu
    eff = cluster.hw.gpu.nvls_efficiency
    assert terms.seconds_per_byte == pytest.approx((1 + 1 / 32) / port / eff, rel=1e-9, abs=0)
    assert terms.chunks.concurrent_ops == 24 * 32


def test_nvls_tree_across_racks_uses_32_heads_per_rack():
    cluster = make_cluster(node="gb200-nvl72", nodes=2, gpus_per_node=64)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS_TREE, Group(cluster, tuple(range(128))))
    assert schedule.channels == 32
    assert schedule.nvls_loop.concurrent_ops == 32 * 32


def test_nvls_tree_on_two_h100_servers_is_held_to_nccls_ceiling_per_head():
    """perChMaxNVLSTreeBws (src/graph/tuning.cc, Hopper, two nodes: 57.7 GB/s per head): with 8
    heads busbw <= 461.6 GB/s, i.e. s/B >= 2 (p-1)/p / (8 x 57.7e9) over p = 16 ranks, where
    the links of two DGX H100 with 16 x 200 GbE would allow more. The replay reads the
    lowered efficiency, so it moves its flows at that rate."""
    cluster = make_cluster(nodes=2, link="roce-200g", nics_per_node=16)
    model = CollectiveModel(cluster)
    schedule = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS_TREE, Group(cluster, tuple(range(16))))
    terms = next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)
    ceiling = 2 * 15 / 16 / (8 * 57.7e9)
    assert terms.seconds_per_byte == pytest.approx(ceiling, rel=1e-12, abs=0)
    table = cluster.hw.protocols.bandwidth_efficiency["nvls-tree"][Protocol.SIMPLE]
    assert terms.efficiency < table
    assert protocol_efficiency(cluster, terms) == terms.efficiency


def test_a_blackwell_nvls_replay_takes_the_gpus_own_efficiency():
    """NCCL's nvlsEfficiency for Blackwell (0.74, the GPU file) prices the terms; the replay
    scales its flows by the same figure, not the protocol table's Hopper 0.84."""
    terms = _nvls_terms(node="dgx-b200")
    cluster = make_cluster(node="dgx-b200")
    assert protocol_efficiency(cluster, terms) == pytest.approx(0.74)


def test_bucketed_calls_each_pay_their_own_chunk_loop():
    """A collective sent in k equal calls pays k latencies and k chunk loops at n/k:
    ``k (a + extra(n/k)) + b n``, and its replay waits the same before its flows."""
    terms = _nvls_terms()
    n, k = 512 * MIB, 8
    priced = PricedCollective(Op.ALL_REDUCE, n, terms, launches=k)
    expected = k * (terms.latency_s + float(terms.extra_seconds(n / k))) + terms.seconds_per_byte * n
    assert priced.time_s == pytest.approx(expected, rel=1e-12)
    launched = priced.launched_terms
    assert launched.chunks is None
    assert launched.seconds(n) == pytest.approx(expected, rel=1e-12)
