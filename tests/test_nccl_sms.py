"""NCCL's SMs beside compute (simulator.cost.nccl_sms) and what they cost an FSDP pass
(simulator.cost.sharding._pass_exposed)."""

from __future__ import annotations

import pytest

from simulator.collectives.group import Group
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost.nccl_sms import nccl_ctas, nccl_sm_share
from simulator.cost.sharding import _pass_exposed
from simulator.topology import build_cluster


def _cluster(node="dgx-h100", nodes=4):
    data = {"name": "t", "cluster": {"node": node, "nodes": nodes,
                                     "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}}}
    scenario = scenario_from_mapping(data, "<test>")
    return build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary()))


@pytest.mark.parametrize("gpus, ctas", [
    (tuple(range(32)), 16),                 # 8 GPUs on each of 4 servers, 8 NICs: NCCL's 16 (nccl#1453)
    (tuple(range(0, 32, 4)), 4),            # 2 GPUs per server: 2 NIC rings, doubled
    (tuple(range(0, 32, 8)), 2),            # one GPU per server
    (tuple(range(8)), 16),                  # one NVSwitch server (nccl#892's 16)
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
