"""A mixture of experts' MLP block runs no dense tensor-parallel collective when its
dispatcher gathers the dispatched tokens over the tensor-parallel group (Megatron-Core
``MoELayer.forward``; simulator/cost/in_layer.py ``tp_site_count``): only the attention
block's all-gather and reduce-scatter are left, beside the dispatcher's own."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost import CollectiveModel
from simulator.cost.in_layer import ep_tp_collectives, tp_collectives, tp_site_count
from simulator.cost.layer import layer_cost
from simulator.engine.analytical import stage_step
from simulator.topology import build_cluster


def _context(preset="mixtral-8x7b", ep=8, tp=2, sequence_parallel=True):
    in_line = {"comm_overlap": False, "overlap_dgrad_comm": False}
    data = {"name": "moe-tp", "cluster": {"node": "dgx-h100", "nodes": 2},
            "model": {"preset": preset, "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 1,
                         "stack": {"base": "megatron-core", "tensor_parallel": in_line}},
            "parallelism": {"tp": tp, "pp": 1, "dp": 16 // tp, "ep": ep,
                            "sequence_parallel": sequence_parallel}}
    scenario = scenario_from_mapping(data, "<test>")
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    return stage_step(scenario, collectives).ctx


@pytest.mark.parametrize("preset, ep, tp, sp, sites", [
    ("mixtral-8x7b", 8, 2, True, 1),     # the dispatcher gathers over tp: attention's site only
    ("mixtral-8x7b", 1, 2, True, 2),     # no expert parallelism: the dense MLP site's collectives
    ("mixtral-8x7b", 8, 1, False, 2),    # no tensor parallelism: nothing to count either way
    ("llama3-8b", 1, 2, True, 2),        # dense
])
def test_site_count(preset, ep, tp, sp, sites):
    ctx = _context(preset, ep, tp, sp)
    assert tp_site_count(ctx.shape, ctx.layout) == sites


def test_in_line_exposure_is_one_site_plus_the_dispatcher():
    """With the collectives in line, a layer's tensor-parallel seconds per pass are one
    site's all-gather and reduce-scatter (the attention block's), not two; the dispatcher's
    gather and reduce-scatter of top_k token copies are the expert-parallel part."""
    ctx = _context()
    stack = scenario_stack(ctx.scenario)
    layer = layer_cost(ctx.scenario, stack, ctx.shape, ctx.compute, ctx.collectives, ctx.layout)
    site = sum(c.time_s for c in tp_collectives(ctx.scenario, ctx.shape, ctx.collectives, ctx.layout))
    assert layer.tp_forward == pytest.approx(site, rel=1e-12)
    assert layer.tp_backward == pytest.approx(site, rel=1e-12)
    assert len(ep_tp_collectives(ctx.shape, ctx.collectives, ctx.layout)) == 2
