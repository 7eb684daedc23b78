"""Context-parallel ranks reduce their gradients with the data-parallel ranks, in one group of
``dp cp`` ranks per tensor-parallel rank (simulator/workload/layout.py ``stage_gradient_groups``;
Megatron-Core's ``DistributedDataParallel`` and distributed optimizer reduce over
``get_data_parallel_group(with_context_parallel=True)``, core_v0.12.0)."""

from __future__ import annotations

import pytest
from des_checks import assert_des_brackets_analytical

from simulator.collectives import Op
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step, stage_step
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.topology import build_cluster
from simulator.workload.layout import Layout
from simulator.workload.memory import stage_parameters


@pytest.mark.parametrize("tp,pp,dp,cp", [(2, 2, 4, 2), (1, 1, 8, 4), (4, 3, 1, 2), (2, 1, 2, 1)])
def test_gradient_groups_partition_each_stage_by_tensor_rank(tp, pp, dp, cp):
    """Per stage, ``tp`` groups of ``dp cp`` GPUs that together hold every GPU of the stage once;
    each group is one tensor-parallel rank's and is the union of its context-parallel ranks'
    data-parallel groups."""
    layout = Layout(tp=tp, pp=pp, dp=dp, cp=cp)
    assert layout.gradient_ranks == dp * cp
    for stage in range(pp):
        groups = layout.stage_gradient_groups(stage)
        assert len(groups) == tp and all(len(g) == dp * cp for g in groups)
        members = sorted(g for group in groups for g in group)
        assert members == sorted(g for group in layout.stage_dp_groups(stage) for g in group)
        for t, group in enumerate(groups):
            expected = {layout.gpu(t, c, d, stage) for c in range(cp) for d in range(dp)}
            assert set(group) == expected


def _scenario(dp: int, cp: int, nodes: int = 2):
    data = {"name": "cp-grads", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                            "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b", "layers": 4, "seq_len": 8192},
            "training": {"global_batch": 2 * dp, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 8 * nodes // (dp * cp), "pp": 1, "dp": dp, "cp": cp,
                            "zero_stage": 1, "overlap_grad_reduce": True}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


@pytest.mark.parametrize("dp,cp", [(4, 2), (2, 4), (1, 2), (1, 8)])
def test_the_reduction_runs_over_dp_times_cp_ranks(dp, cp):
    """The stage's gradient reduce-scatter carries the whole gradient of its tensor-parallel
    shard (fp32 under bf16: Megatron's default) over ``dp cp`` ranks, also with one data-parallel
    rank, where the context-parallel ranks still sum what their tokens contributed."""
    scenario, collectives = _scenario(dp, cp)
    ctx = stage_step(scenario, collectives).ctx
    (reduce,) = [c for c in all_gradient_collectives(ctx)[0] if c.op == Op.REDUCE_SCATTER]
    params = sum(stage_parameters(scenario.model, scenario.parallelism, 4, True, True))
    assert reduce.size_bytes == pytest.approx(4 * params)
    assert reduce.terms.schedule.ranks == dp * cp
    result = simulate_step(scenario, collectives)
    assert result.dp_comm_s > 0


@pytest.mark.parametrize("dp,cp", [(2, 4), (1, 2)])
def test_the_discrete_event_engine_replays_the_same_reduction(dp, cp):
    """The DES replays the dp x cp groups' reduction as flows: equal to the analytical step with
    contention off, never faster with it on."""
    assert_des_brackets_analytical(*_scenario(dp, cp))


def test_one_data_parallel_rank_without_context_parallelism_reduces_nothing():
    """tp 8, dp 1, cp 1: each weight lives on one GPU, nothing to reduce."""
    scenario, collectives = _scenario(1, 1, nodes=1)
    ctx = stage_step(scenario, collectives).ctx
    assert all_gradient_collectives(ctx) == [[]]
    assert simulate_step(scenario, collectives).dp_comm_s == 0
