"""NCCL's SMs beside compute (simulator.cost.nccl_sms) and what they cost an FSDP pass
(simulator.cost.sharding._pass_exposed)."""

from __future__ import annotations

import pytest

from simulator.collectives.group import Group
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost.nccl_sms import nccl_ctas, nccl_sm_share, ring_search_channels
from simulator.cost.sharding import _pass_exposed
from simulator.topology import build_cluster


def _cluster(node="dgx-h100", nodes=4):
    data = {"name": "t", "cluster": {"node": node, "nodes": nodes,
                                     "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}}}
    scenario = scenario_from_mapping(data, "<test>")
    return build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary()))


@pytest.mark.parametrize("gpus, ctas", [
    (tuple(range(32)), 16),                 # 8 GPUs on each of 4 servers, 8 NICs: NCCL's 16 (nccl#1453)
    (tuple(range(0, 32, 4)), 8),            # 2 GPUs per server: 2 NIC rings at 48 GB/s, doubled twice
    (tuple(range(0, 32, 8)), 4),            # one GPU per server: 1 ring, doubled twice
    (tuple(range(8)), 24),                  # one NVSwitch server: 12 search channels on 18 NVLink4
])
def test_ctas_are_twice_the_search_channels(gpus, ctas):
    cluster = _cluster()
    assert nccl_ctas(Group(cluster, gpus)) == ctas
    assert nccl_sm_share(Group(cluster, gpus)) == pytest.approx(ctas / 132)


def test_the_compute_beside_a_collective_runs_on_the_other_sms():
    """Per overlapped unit t = max(c, C + f min(c, C/(1-f))): a short collective costs f c, one
    longer than the slowed compute costs itself; f = 0 gives max(c, C)."""
    f = 0.25
    assert _pass_exposed(10, 2.0, 1.0, 0.0, 1, f) == pytest.approx(1.0 + 9 * f * 1.0)
    assert _pass_exposed(10, 2.0, 3.0, 0.0, 1, f) == pytest.approx(3.0 + 9 * (3.0 - 2.0))
    between = 2.5               # C < c < C / (1 - f) = 2.67: the slowed compute still outlasts c
    assert _pass_exposed(10, 2.0, between, 0.0, 1, f) == pytest.approx(between + 9 * f * between)
    assert _pass_exposed(10, 2.0, 1.0, 0.5, 1, 0.0) == _pass_exposed(10, 2.0, 1.0, 0.5, 1)
    assert _pass_exposed(10, 2.0, 1.0, 0.5, 0, f) == pytest.approx(15.0)   # no overlap, no share


def test_ctas_stop_at_nccls_channel_ceiling():
    """Two GB200 NVL72 racks taken as servers, 64 GPUs used in each with one NIC per GPU: a
    group of all 128 uses 64 NICs a rack, one search channel each would be 128 CTAs, but NCCL
    runs at most MAXCHANNELS = 64 channels (2.25 on; src/include/device.h)."""
    data = {"name": "t", "cluster": {"node": "gb200-nvl72", "nodes": 2, "gpus_per_node": 64,
                                     "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}}}
    scenario = scenario_from_mapping(data, "<test>")
    cluster = build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary()))
    assert nccl_ctas(Group(cluster, tuple(range(128)))) == 64
    assert nccl_ctas(Group(cluster, tuple(range(0, 128, 4)))) == 32      # 16 GPUs a rack: 2 x 16


@pytest.mark.parametrize("node, ctas", [
    ("dgx-a100-80gb", 24),      # 12 NVLink3: 'Channel 23/24' on an HGX A100 (nccl-tests#100)
    ("dgx-a800", 16),           # 8 NVLink3
    ("dgx-h100", 24),           # 18 NVLink4: an H100's all-gather runs 24 blocks (NVIDIA forum)
    ("hgx-h800", 16),           # 8 NVLink4: 16 collective channels (nccl#892)
    ("dgx-b200", 32),           # 18 NVLink5: the derivation's (no log found)
])
def test_one_nvswitch_server_runs_the_channels_ncclsearch_finds(node, ctas):
    """Inside one NVSwitch server NCCL runs twice the ring channels its topology search finds
    for the GPU's NVLink bandwidth (src/graph/search.cc; simulator.cost.nccl_sms)."""
    cluster = _cluster(node, nodes=1)
    assert nccl_ctas(Group(cluster, tuple(range(8)))) == ctas


@pytest.mark.parametrize("bandwidth, speeds, below, expected", [
    (369.0, (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3), 50, 12),   # 6 x 60 (360 of 369), doubled
    (164.0, (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3), 50, 8),    # 2 x 60, 3 x 50, 4 x 40 kept, doubled
    (720.0, (90, 80, 70, 60), 50, 16),                               # 8 x 90 fills the links: stop, doubled
    (100.0, (60, 50, 40, 30, 24, 20), 50, 4),                        # 1 x 60, then 2 x 50 fills: doubled
])
def test_ring_search_closed_forms(bandwidth, speeds, below, expected):
    assert ring_search_channels(bandwidth, speeds, below, 32) == expected


def test_ring_search_leaves_slow_or_many_channels_undoubled():
    """Under 25 GB/s a graph is not doubled; from Hopper on, under 50 GB/s with more than 4
    channels neither (ncclTopoDupChannels)."""
    assert ring_search_channels(120.0, (20, 15), 0, 32) == 6            # 6 x 20, 20 < 25
    assert ring_search_channels(200.0, (40, 30), 50, 32) == 5           # 5 x 40 > 4 channels, 40 < 50
    assert ring_search_channels(200.0, (40, 30), 0, 32) == 10           # Ampere's rule doubles it
    assert ring_search_channels(10_000.0, (60,), 50, 32) == 32          # the MAXCHANNELS/2 ceiling


@pytest.mark.parametrize("node, link, per_server, ctas", [
    ("dgx-a100-80gb", "ib-hdr", 1, 2),      # HDR on PCIe Gen4: 24 GB/s channels, under 25: not doubled
    ("dgx-a100-80gb", "ib-hdr", 8, 16),
    ("dgx-h100", "ib-ndr", 4, 16),          # NDR on Gen5: 48 GB/s, 4 channels: doubled
    ("dgx-h100", "ib-ndr", 8, 16),          # 8 channels at 48 < 50: not doubled (nccl#1453)
    ("dgx-b300", "ib-xdr", 8, 32),          # ConnectX-8 on Gen6: 96 GB/s, doubled
])
def test_channels_across_servers_double_as_nccls_search_doubles_them(node, link, per_server, ctas):
    """Across servers NCCL's ring has one channel per NIC the group uses, at the fastest
    search speed within the GPU's path to its NIC, which ncclTopoDupChannels doubles unless
    under 25 GB/s, or (Hopper on) under 50 GB/s with more than 4 channels."""
    data = {"name": "t", "cluster": {"node": node, "nodes": 2,
                                     "fabric": {"topology": "fat-tree", "link": link}}}
    scenario = scenario_from_mapping(data, "<test>")
    cluster = build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary()))
    gpus = tuple(g for server in (0, 8) for g in range(server, server + per_server))
    assert nccl_ctas(Group(cluster, gpus)) == ctas
