"""The HBM bandwidth NCCL draws beside compute (simulator/cost/hbm_contention.py): the closed
forms, and how a ZeRO-3 unit's collectives slow its pass inside a server and across servers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.collectives import Group, Op
from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.hbm_contention import (
    HBM_ACCESSES_PER_SENT_BYTE,
    beside_share,
    hbm_draw_share,
    ring_sent_bytes,
)
from simulator.cost.sharding import sharding_cost, unit_comm
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.params import layer_parameters


def test_the_effective_share_is_the_sm_share_for_gemms_and_the_larger_share_for_memory_kernels():
    """1 / (1 - f') = (1 - m) / (1 - f) + m / (1 - max(f, h)): f at m = 0, h at m = 1, and at
    f = 0.2, h = 0.4, m = 0.25: 1 - 1 / (0.75 / 0.8 + 0.25 / 0.6) = 0.2615; f wherever h <= f."""
    assert beside_share(0.2, 0.4, 0.0) == 0.2
    assert beside_share(0.2, 0.4, 1.0) == pytest.approx(0.4, rel=1e-12)
    assert beside_share(0.2, 0.4, 0.25) == pytest.approx(1 - 1 / (0.75 / 0.8 + 0.25 / 0.6), rel=1e-12)
    assert beside_share(0.2, 0.05, 0.25) == 0.2 < beside_share(0.2, 0.4, 0.25)


def test_a_ring_sends_p_minus_1_over_p_of_its_bytes_per_pass():
    assert ring_sent_bytes(Op.ALL_GATHER, 8e9, 8) == pytest.approx(7e9)
    assert ring_sent_bytes(Op.REDUCE_SCATTER, 8e9, 8) == pytest.approx(7e9)
    assert ring_sent_bytes(Op.ALL_REDUCE, 8e9, 8) == pytest.approx(14e9)
    assert ring_sent_bytes(Op.ALL_GATHER, 8e9, 1) == 0.0


def _fsdp(nodes: int, tp: int = 1):
    data = {"name": "hbm", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                       "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 8 * nodes // tp, "stack": "fsdp2"},
            "parallelism": {"tp": tp}}
    session = session_from_scenario(scenario_from_mapping(data, "hbm.yaml"))
    scenario, collectives = session.scenario, session.collectives
    layout = make_context(scenario, collectives).layout
    return scenario, collectives, layout, unit_comm(scenario, stack_of(scenario), collectives, layout, 0)


def stack_of(scenario):
    return scenario_stack(scenario)


def test_a_units_gather_draws_three_accesses_per_sent_byte_of_the_sustained_hbm_rate():
    """An H100 server's all-gather of a Llama 3 8B block: h = 3 (7/8) n / (t B f_mem)."""
    scenario, collectives, _, comm = _fsdp(nodes=1)
    gpu = collectives.cluster.hw.gpu
    nbytes = 2 * layer_parameters(scenario.model)
    seconds = collectives.sweep(Op.ALL_GATHER, None, Group(collectives.cluster, tuple(range(8))),
                                [nbytes]).time_s[0]
    sustained = gpu.hbm_bandwidth_Bps * gpu.compute.memory_bandwidth_fraction
    expected = HBM_ACCESSES_PER_SENT_BYTE * 7 / 8 * nbytes / seconds / sustained
    assert comm.gather_hbm == pytest.approx(expected, rel=1e-9)
    assert hbm_draw_share(gpu, 7 / 8 * nbytes, seconds) == pytest.approx(expected, rel=1e-12)


def test_rings_on_nvlink_or_on_a_nic_per_gpu_draw_more_hbm_than_their_sm_share():
    """Inside one server the ring runs near NVLink's rate, h above NCCL's 24/132 of the SMs;
    over four servers with a 400G NIC per GPU the rings leave each server on 8 NICs (eight
    rings, 400 GB/s a server), so each GPU still sends near NVLink's rate: h within 10% of the
    server's, above NCCL's 16/132. Where a GPU's ring runs on one NIC alone (tp 8: one GPU of
    each server in the group) it sends at that NIC's rate, h ~ 0.05."""
    *_, inside = _fsdp(nodes=1)
    *_, across = _fsdp(nodes=4)
    *_, one_gpu_per_server = _fsdp(nodes=4, tp=8)
    assert inside.gather_hbm > inside.sm_share > 0
    assert across.gather_hbm > across.sm_share > 0
    assert across.gather_hbm == pytest.approx(inside.gather_hbm, rel=0.1)
    assert one_gpu_per_server.gather_hbm < 0.1


def test_memory_bound_compute_beside_a_ring_exposes_more_where_its_hbm_share_exceeds_its_sm_share():
    """The same unit prices and compute: with a memory-bound share the exposure grows where
    h > f (inside a server, across servers on 8 NICs) and stays where h <= f (h set to f / 2);
    with no memory-bound share nothing changes."""
    for nodes in (1, 4):
        scenario, _, _, comm = _fsdp(nodes=nodes)
        stack = stack_of(scenario)
        compute = 4 * (comm.gather + comm.reduce)         # every collective overlaps compute
        args = (scenario, stack, comm, 32, compute, 2 * compute, 4)
        total = lambda c: c.forward_exposed + c.backward_exposed  # noqa: E731
        plain = sharding_cost(*args)
        assert sharding_cost(*args, memory_shares=(0.0, 0.0)) == plain
        assert total(sharding_cost(*args, memory_shares=(0.3, 0.3))) > total(plain)
        low = replace(comm, gather_hbm=comm.sm_share / 2, reduce_hbm=comm.sm_share / 2)
        low_args = (scenario, stack, low, 32, compute, 2 * compute, 4)
        assert sharding_cost(*low_args, memory_shares=(0.3, 0.3)) == plain
