"""NVLS-Tree (NCCL's all-reduce across NVSwitch servers, ``NCCL_ALGO=NVLSTree``).

Closed forms (simulator/collectives/nvls_tree.py): every GPU's NVLink port carries
``n (1 + 1/h)`` each way, as single-server NVLS, and each of the ``h`` heads' NICs ``n/h``
each way on two servers and 2 to 3 ``n/h`` on more. NVLink SHARP's efficiency derates the NVLink
side only, the NICs run at their own rate, and NCCL's per-head ceiling caps the whole: on two DGX
H100 with 16 x 200 GbE (two NICs per GPU) the ceiling binds, with one 200 GbE NIC per GPU the NICs.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_cluster

from simulator.collectives import Algorithm, Group, Op, build_schedule
from simulator.config import Protocol
from simulator.cost import CollectiveModel
from simulator.errors import InfeasibleError


def _per_byte(model: CollectiveModel, schedule) -> float:
    terms = next(t for t in model.network.terms(schedule) if t.protocol == Protocol.SIMPLE)
    return terms.seconds_per_byte


def _nvls_tree(nodes: int, nics: int):
    cluster = make_cluster(nodes=nodes, link="roce-200g", topology="fat-tree", nics_per_node=nics)
    model = CollectiveModel(cluster)
    group = Group(cluster, tuple(range(8 * nodes)))
    return model, build_schedule(Op.ALL_REDUCE, Algorithm.NVLS_TREE, group)


def _nvlink_Bps(model: CollectiveModel) -> float:
    return float(model.cluster.hw.intra_link.effective_Bps * model.cluster.hw.node.fabric.links_per_gpu)


def _bounds(model: CollectiveModel, nics: int, shares: float) -> tuple[float, float]:
    """(NVLink, NIC) seconds per byte with ``shares`` shards of n/8 through each NIC port."""
    per_nic = model.cluster.hw.nic_link.effective_Bps * nics / 8
    return (1 + 1 / 8) / _nvlink_Bps(model), shares / 8 / per_nic


def _head_ceiling(model: CollectiveModel, nodes: int) -> float:
    """Seconds per byte at NCCL's NVLS-Tree ceiling: busbw <= heads x perChMaxNVLSTreeBw."""
    spec = model.cluster.hw.protocols.nvls_chunking
    p = 8 * nodes
    busbw = 8 * spec.tree_head_GBps[0 if nodes <= 2 else 1] * 1e9
    return 2 * (p - 1) / p / busbw


@pytest.mark.parametrize(("nics", "bound"), [(16, "ceiling"), (8, "nic")])
def test_two_servers_take_the_busiest_of_nvlink_one_shard_per_nic_and_the_ceiling(nics, bound):
    """NVLink SHARP's efficiency derates the NVLink side only; the NICs run at their own rate
    (NCCL's tuner: min(bwIntra x nvlsEfficiency, 2 bwInter, heads x perChMaxNVLSTreeBw)). With
    two 200 GbE NICs per GPU the per-head ceiling binds, with one the NICs do."""
    model, schedule = _nvls_tree(2, nics)
    eff = model.cluster.hw.protocols.bandwidth_efficiency["nvls-tree"][Protocol.SIMPLE]
    nvlink, nic = _bounds(model, nics, 1.0)
    limits = {"nvlink": nvlink / eff, "nic": nic, "ceiling": _head_ceiling(model, 2)}
    assert _per_byte(model, schedule) == pytest.approx(max(limits.values()), rel=1e-9, abs=0)
    assert max(limits, key=limits.get) == bound


def test_eight_servers_send_two_to_three_shards_per_nic():
    """An inner vertex sends to its parent and two children; with the tree and its mirror
    (simulator/collectives/tree.py) some heads are inner in both, up to 3 shards."""
    model, schedule = _nvls_tree(8, 8)
    _, two = _bounds(model, 8, 2.0)
    _, three = _bounds(model, 8, 3.0)
    assert two <= _per_byte(model, schedule) <= three


def test_nvlink_ports_carry_what_single_server_nvls_carries():
    model, schedule = _nvls_tree(2, 16)
    single = make_cluster(nodes=1)
    nvls = build_schedule(Op.ALL_REDUCE, Algorithm.NVLS, Group(single, tuple(range(8))))
    loads = model.network.edge_loads(schedule)
    single_loads = CollectiveModel(single).network.edge_loads(nvls)
    gpu_ports = [e for u, v, e in model.cluster.graph.edges(data="eid")
                 if {model.cluster.graph.nodes[u]["kind"], model.cluster.graph.nodes[v]["kind"]}
                 == {"gpu", "nvswitch"}]
    assert np.max(loads[gpu_ports]) == pytest.approx(np.max(single_loads), rel=1e-12)


def test_refused_inside_one_server_and_without_in_switch_reduction():
    one = make_cluster(nodes=1)
    with pytest.raises(InfeasibleError, match="joins servers"):
        build_schedule(Op.ALL_REDUCE, Algorithm.NVLS_TREE, Group(one, tuple(range(8))))
    a100 = make_cluster(node="dgx-a100-80gb", nodes=2, link="ib-hdr")
    with pytest.raises(InfeasibleError, match="in-switch reduction"):
        build_schedule(Op.ALL_REDUCE, Algorithm.NVLS_TREE, Group(a100, tuple(range(16))))


def test_auto_runs_it_on_two_servers_with_one_or_two_nics_per_gpu():
    """Two DGX H100 with two 200 GbE NICs per GPU: NVLS-Tree at NCCL's per-head ceiling (measured
    465 GB/s of bus bandwidth on OCI's BM.GPU.H100.8, more than ring or tree can reach there);
    with one NIC per GPU still NVLS-Tree, at the NICs' own rate, where the classic tree pays its
    protocol's efficiency on the same NICs (tree/LL128 about 8% below)."""
    for nics in (16, 8):
        cluster = make_cluster(nodes=2, link="roce-200g", topology="single-switch", nics_per_node=nics)
        model = CollectiveModel(cluster)
        group = Group(cluster, tuple(range(16)))
        size = np.array([2.0**33])
        sweep = model.sweep(Op.ALL_REDUCE, None, group, size)
        tree = model.sweep(Op.ALL_REDUCE, Algorithm.TREE, group, size)
        assert sweep.algorithm[0] == "nvls-tree"
        assert 1.05 < sweep.busbw_Bps[0] / tree.busbw_Bps[0] < 1.35


@pytest.mark.parametrize("nodes", [1, 2])
def test_nccl_nvls_enable_0_leaves_ring_and_tree(nodes):
    """``cluster.fabric.nvls: false`` (``NCCL_NVLS_ENABLE=0``, set by NVIDIA's DGX Cloud
    recipes): NCCL's tuner skips NVLS and NVLS-Tree (src/enqueue.cc), so auto picks ring or
    tree, and a forced NVLS algorithm is refused with the reason."""
    sizes = np.array([1 << 30])
    on = make_cluster(nodes=nodes)
    off = make_cluster(nodes=nodes, nvls=False)
    group_on, group_off = Group(on, tuple(range(8 * nodes))), Group(off, tuple(range(8 * nodes)))
    chosen = CollectiveModel(on).sweep(Op.ALL_REDUCE, None, group_on, sizes).algorithm[0]
    assert str(chosen) in ("nvls", "nvls-tree")
    sweep = CollectiveModel(off).sweep(Op.ALL_REDUCE, None, group_off, sizes)
    assert str(sweep.algorithm[0]) in ("ring", "tree")
    nvls = Algorithm.NVLS if nodes == 1 else Algorithm.NVLS_TREE
    with pytest.raises(InfeasibleError, match="NCCL_NVLS_ENABLE=0"):
        build_schedule(Op.ALL_REDUCE, nvls, group_off)
