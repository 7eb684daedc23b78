"""A mixture of experts synchronises its experts' gradients over the expert-data-parallel
groups, not the data-parallel ones (simulator/engine/gradient_sync.py; Megatron-Core
``DistributedDataParallel.expert_parallel_buffers`` over ``expert_data_parallel_group``),
and its optimizer updates the experts' shard of ``dp cp / ep`` ranks."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import ADAM_BYTES_PER_PARAM, simulate_step, stage_step
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.topology import build_cluster
from simulator.units import GB
from simulator.workload.layout import Layout
from simulator.workload.memory import stage_parameters


def _scenario(ep=8, dp=64, zero_stage=1, nodes=8):
    data = {"name": "moe", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                       "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "mixtral-8x7b", "layers": 4},
            "training": {"global_batch": 2 * dp, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 8 * nodes // dp, "pp": 1, "dp": dp, "ep": ep,
                            "zero_stage": zero_stage, "overlap_grad_reduce": True}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


@pytest.mark.parametrize("tp,dp,cp,ep", [(1, 64, 1, 8), (2, 8, 2, 4), (4, 8, 2, 8), (1, 16, 1, 16)])
def test_expert_dp_groups_hold_the_same_experts(tp, dp, cp, ep):
    """Each stage's expert-data-parallel groups partition its GPUs into groups of
    ``dp cp / ep``, one member from each expert-parallel group, all at the same position in it
    and on the same tensor-parallel rank."""
    layout = Layout(tp=tp, pp=2, dp=dp, cp=cp, ep=ep)
    for stage in range(2):
        groups = layout.stage_expert_dp_groups(stage)
        members = [gpu for group in groups for gpu in group]
        stage_gpus = {gpu for g in layout.stage_dp_groups(stage) for gpu in g}
        assert sorted(members) == sorted(stage_gpus)
        assert all(len(group) == layout.expert_dp == dp * cp // ep for group in groups)
        ep_groups = layout.stage_expert_groups(stage)
        position = {gpu: (ep_groups.index(g) % tp, g.index(gpu)) for g in ep_groups for gpu in g}
        for group in groups:
            assert len({position[gpu] for gpu in group}) == 1
            assert len({next(i for i, g in enumerate(ep_groups) if gpu in g) for gpu in group}) == len(group)


def _syncs(**kwargs):
    return all_gradient_collectives(stage_step(*_scenario(**kwargs)).ctx)[0]


def test_experts_reduce_on_their_own_groups_with_their_own_bytes():
    """ep 8 on 64 GPUs at tp 1: the dense part's reduce-scatter over 64 ranks, the experts'
    over the 8 ranks holding each expert (one per server), each with its own bytes (fp32
    gradients, Megatron's default)."""
    scenario, _ = _scenario()
    dense, expert = stage_parameters(scenario.model, scenario.parallelism, 4, True, True)
    syncs = _syncs()
    assert [(c.op, c.expert) for c in syncs] == [(Op.REDUCE_SCATTER, False), (Op.REDUCE_SCATTER, True)]
    assert syncs[0].size_bytes == pytest.approx(4 * dense)
    assert syncs[1].size_bytes == pytest.approx(4 * expert)


def test_expert_groups_across_servers_take_one_nic_each():
    """The 8-rank expert groups have one GPU per server, so each reduces over its rail's one
    NIC (50 GB/s), while the 64-rank dense groups share all eight of a server's: per byte the
    experts' reduce-scatter is several times slower than the dense one's."""
    dense, expert = _syncs()
    per_byte = [c.terms.seconds_per_byte for c in (dense, expert)]
    assert per_byte[1] > 4 * per_byte[0]
    assert expert.terms.seconds_per_byte * expert.size_bytes > 7 / 8 * expert.size_bytes / (50 * GB)


def test_no_expert_reduction_when_each_expert_has_one_rank():
    """ep = dp cp: every rank holds its own experts, nothing to reduce for them."""
    syncs = _syncs(ep=8, dp=8, nodes=1)
    assert [c.expert for c in syncs] == [False]


def test_optimizer_updates_the_experts_shard():
    """ZeRO 1: Adam updates dense / (dp cp) plus experts / (dp cp / ep) parameters; besides it
    Megatron-Core zeroes its whole fp32 gradient buffer, every parameter the GPU holds
    (data_parallel.zero_grad_buffer)."""
    scenario, collectives = _scenario()
    result = simulate_step(scenario, collectives)
    ctx = stage_step(scenario, collectives).ctx
    dense, expert = stage_parameters(scenario.model, scenario.parallelism, 4, True, True)
    expected = (ctx.compute.memory_time(ADAM_BYTES_PER_PARAM * (dense / 64 + expert / 8))
                + ctx.compute.memory_time(4 * (dense + expert)))
    assert result.optimizer_s == pytest.approx(float(expected), rel=1e-9)
