"""Expert tensor parallelism (``parallelism.etp``; Megatron-Core ``expert_tensor_parallel_size``):
the experts' linears split over ``etp`` ranks instead of ``tp``, the expert rank generator's
groups (order tp-ep-dp), the dispatcher's gather over the expert tensor-parallel group, and the
experts' parameters and gradient groups. Closed forms and invariants against ``etp = tp``."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.cost.in_layer import ep_collective, ep_tp_collectives, tp_site_count
from simulator.cost.sharding import unit_comm
from simulator.engine.analytical import simulate_step, stage_step
from simulator.errors import ConfigError
from simulator.topology import build_cluster
from simulator.workload.layout import Layout
from simulator.workload.memory import stage_parameters
from simulator.workload.params import dense_layer_parameters, layer_parameters
from simulator.workload.transformer import layer_forward
from simulator.workload.unsharded import unit_parameters


def _scenario(etp=None, tp=2, ep=8, zero_stage=1, preset="mixtral-8x7b"):
    parallelism = {"tp": tp, "pp": 1, "dp": 16 // tp, "ep": ep, "sequence_parallel": tp > 1,
                   "zero_stage": zero_stage}
    if etp is not None:
        parallelism["etp"] = etp
    data = {"name": "etp", "cluster": {"node": "dgx-h100", "nodes": 2},
            "model": {"preset": preset, "layers": 4},
            "training": {"global_batch": 32, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": parallelism}
    return scenario_from_mapping(data, "<test>")


def _context(**kwargs):
    scenario = _scenario(**kwargs)
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    return stage_step(scenario, collectives).ctx


def test_expert_ranks_follow_the_generator_order():
    """tp 4, etp 1, ep 8 on 16 GPUs of a stage: expert-parallel groups are 8 consecutive ranks,
    expert-data-parallel groups 8 apart, expert tensor-parallel groups single ranks; with
    etp = tp (the default) the groups are the old ones (ep ranks tp apart)."""
    layout = Layout(tp=4, pp=1, dp=4, ep=8, etp=1)
    assert layout.stage_expert_groups(0) == [tuple(range(8)), tuple(range(8, 16))]
    assert layout.expert_dp == 2
    assert layout.stage_expert_dp_groups(0) == [(e, e + 8) for e in range(8)]
    assert layout.expert_tp_group(0) == (0,)
    assert layout.expert_replicas == 2
    default = Layout(tp=2, pp=1, dp=16, ep=8)
    assert default.expert_group(0, 0, 1) == tuple(1 + 2 * j for j in range(8))
    assert default.stage_expert_tp_groups(0)[:2] == [(0, 1), (2, 3)]


@pytest.mark.parametrize("tp, dp, cp, ep, etp", [(4, 4, 1, 8, 1), (4, 2, 2, 4, 2), (2, 8, 1, 4, 1)])
def test_expert_groups_partition_the_stage(tp, dp, cp, ep, etp):
    layout = Layout(tp=tp, pp=2, dp=dp, cp=cp, ep=ep, etp=etp)
    stage = {g for group in layout.stage_dp_groups(1) for g in group}
    for groups in (layout.stage_expert_groups(1), layout.stage_expert_dp_groups(1),
                   layout.stage_expert_tp_groups(1)):
        members = [g for group in groups for g in group]
        assert sorted(members) == sorted(stage)


@pytest.mark.parametrize("tp, cp, ep, etp, dp", [(2, 1, 2, 1, 4), (4, 2, 8, 1, 2), (2, 2, 2, 2, 4)])
def test_pp_inner_expert_ranks_are_the_generators_tp_ep_pp_dp(tp, cp, ep, etp, dp):
    """Under rank_order tp-cp-pp-dp Megatron-Core's expert generator runs order tp-ep-pp-dp,
    gpu = etp_rank + etp (ep_rank + ep (pp_rank + pp edp_rank)); with etp ep = tp cp (what it
    accepts with pipeline stages) the layout's expert ranks are exactly those."""
    layout = Layout(tp=tp, pp=3, dp=dp, cp=cp, ep=ep, etp=etp, pp_inner=True)
    assert etp * ep == tp * cp
    for stage in range(3):
        for t in range(etp):
            for e in range(ep):
                for b in range(layout.expert_dp):
                    generator = t + etp * (e + ep * (stage + 3 * b))
                    assert layout.expert_rank(t, e, b, stage) == generator


def test_pp_inner_experts_with_other_data_parallel_sizes_are_refused():
    """Megatron-Core asserts equal dense and expert data-parallel sizes when pipeline ranks
    come before data ranks; the loader says so, naming the key."""
    data = {"name": "pp-inner", "cluster": {"node": "dgx-h100", "nodes": 4},
            "model": {"preset": "mixtral-8x7b", "layers": 4},
            "training": {"global_batch": 32, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 2, "pp": 2, "dp": 8, "ep": 8, "etp": 1, "rank_order": "tp-cp-pp-dp"}}
    with pytest.raises(ConfigError, match="parallelism.ep: .*etp\\*ep = tp\\*cp"):
        scenario_from_mapping(data, "<test>")
    data["parallelism"]["rank_order"] = "tp-cp-dp-pp"
    assert scenario_from_mapping(data, "<test>").parallelism.ep == 8


def _expert_gemm_flops(ctx) -> float:
    g = layer_forward(ctx.shape).gemms
    return float((2 * g[:, 0] * g[:, 1] * g[:, 2] * g[:, 3]).sum())


def test_same_work_other_shapes():
    """etp 1 at tp 2: each GPU computes the same expert FLOPs on half the rows at twice the
    width, holds its experts whole (twice the expert parameters), gathers nothing after the
    all-to-all (which moves the same bytes) and still runs one dense tensor-parallel site."""
    split, whole = _context(), _context(etp=1)
    assert _expert_gemm_flops(whole) == pytest.approx(_expert_gemm_flops(split), rel=1e-12)
    rows = [layer_forward(c.shape).gemms[-1] for c in (split, whole)]
    assert rows[1][0] == pytest.approx(rows[0][0] / 2) and rows[1][2] == pytest.approx(2 * rows[0][2])
    for ctx in (split, whole):
        assert tp_site_count(ctx.shape, ctx.layout) == 1
    assert len(ep_tp_collectives(split.shape, split.collectives, split.layout)) == 2
    assert ep_tp_collectives(whole.shape, whole.collectives, whole.layout) == []
    a2a = [ep_collective(c.shape, c.collectives, c.layout).size_bytes for c in (split, whole)]
    assert a2a[0] == pytest.approx(a2a[1])
    model, par = whole.scenario.model, whole.scenario.parallelism
    per_layer = (layer_parameters(model) - dense_layer_parameters(model))
    assert stage_parameters(model, par, 4, True, True)[1] == pytest.approx(4 * per_layer / 8)
    assert stage_parameters(model, split.scenario.parallelism, 4, True, True)[1] == pytest.approx(
        4 * per_layer / 16)


def test_expert_gradients_reduce_over_the_generators_groups():
    """etp 1, tp 2, ep 8 on 16 GPUs: 2 ranks hold each expert (16 / 8), against 1 with etp 2."""
    whole, split = _context(etp=1), _context()
    assert (whole.layout.expert_dp, split.layout.expert_dp) == (2, 1)
    result = simulate_step(whole.scenario, whole.collectives)
    assert np.isfinite(result.step_time_s) and 0 < result.mfu <= 1


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(etp=3, tp=2), "does not divide tp"),
])
def test_unsupported_values_are_one_config_error(kwargs, fragment):
    """The loader refuses them, naming the key."""
    with pytest.raises(ConfigError, match=f"parallelism.etp: .*{fragment}"):
        _scenario(**kwargs)


def test_zero3_gathers_whole_experts_with_etp_1():
    """ZeRO 3 at etp 1, tp 2: a unit gathers the rank's whole experts (twice etp 2's shard)
    over their expert-data-parallel groups; the step is physical."""
    whole, split = _context(etp=1, zero_stage=3, ep=4), _context(zero_stage=3, ep=4)
    units = [unit_parameters(c.scenario.model, c.scenario.parallelism, 8) for c in (whole, split)]    # dp 8
    assert units[0][0] == units[1][0]
    assert units[0][1] - units[0][0] == pytest.approx(2 * (units[1][1] - units[1][0]))
    comm = unit_comm(whole.scenario, scenario_stack(whole.scenario), whole.collectives, whole.layout, 0)
    assert comm.gather > 0 and comm.reduce > 0
    result = simulate_step(whole.scenario, whole.collectives)
    assert np.isfinite(result.step_time_s) and 0 < result.mfu <= 1
