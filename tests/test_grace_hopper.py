"""Grace Hopper: the GH200 GPU variants, NVLink-C2C between Grace and Hopper, and the two
ways superchips are joined (one NVLink domain in DGX GH200, InfiniBand between servers)."""

from __future__ import annotations

import pytest
from conftest import make_cluster

from simulator.collectives import Op, whole_cluster
from simulator.config import HardwareLibrary
from simulator.cost import CollectiveModel
from simulator.topology.graph import VertexKind

LIB = HardwareLibrary()


def test_hbm3_and_hbm3e_variants():
    """Datasheet: 96 GB HBM3 at 4 TB/s, 144 GB HBM3e at 4.9 TB/s; the same Hopper compute."""
    hbm3, hbm3e = LIB.gpu("gh200"), LIB.gpu("gh200-144gb")
    assert (hbm3.hbm_capacity_GiB, hbm3.hbm_bandwidth_GBps) == (96, 4000)
    assert (hbm3e.hbm_capacity_GiB, hbm3e.hbm_bandwidth_GBps) == (144, 4900)
    assert hbm3e.derived_from == hbm3.derived_from == "h100-sxm"
    assert hbm3e.peak_dense_tflops == hbm3.peak_dense_tflops == LIB.gpu("h100-sxm").peak_dense_tflops


def test_c2c_joins_each_gpu_to_its_grace():
    """The GPU's only non-NVLink edge is NVLink-C2C: 900 GB/s both ways, 450 each way."""
    c2c = LIB.link("nvlink-c2c")
    assert 2 * c2c.bandwidth_GBps == 900
    cluster = make_cluster(node="gh200-144gb-ib", nodes=2, link="ib-ndr")
    graph, gpu = cluster.graph, cluster.gpu_vertex(0)
    hosts = [u for u in graph.successors(gpu) if graph.nodes[u]["kind"] == VertexKind.PCIE_SWITCH]
    assert len(hosts) == 1
    assert cluster.bandwidth_Bps[graph[gpu][hosts[0]]["eid"]] == pytest.approx(c2c.effective_Bps)
    nic = cluster.layout.nics[0]
    assert cluster.bandwidth_Bps[graph[nic][hosts[0]]["eid"]] == pytest.approx(
        LIB.link("pcie5-x16").effective_Bps)


def test_superchips_over_infiniband_reduce_at_the_nic_rate():
    """One GPU per server: an all-reduce over 8 servers is a ring over the NICs, busbw at
    large sizes approaching the NDR NIC's effective 48 GB/s (and not above it)."""
    cluster = make_cluster(node="gh200-144gb-ib", nodes=8, link="ib-ndr")
    sweep = CollectiveModel(cluster).sweep(Op.ALL_REDUCE, None, whole_cluster(cluster), [2**34])
    nic = LIB.link("ib-ndr").effective_Bps
    assert 0.9 * nic < float(sweep.busbw_Bps[0]) <= nic * 1.0001


def test_dgx_gh200_is_one_nvlink_domain():
    """256 superchips on one NVLink switch system: an all-reduce over all of them stays on
    NVLink, busbw near the 18 x NVLink4 per-GPU rate (many times the NIC's)."""
    cluster = make_cluster(node="dgx-gh200", nodes=1)
    assert cluster.gpus == 256
    sweep = CollectiveModel(cluster).sweep(Op.ALL_REDUCE, None, whole_cluster(cluster), [2**34])
    nvlink = 18 * LIB.link("nvlink4").effective_Bps
    assert 0.9 * nvlink < float(sweep.busbw_Bps[0]) <= nvlink * 1.0001
