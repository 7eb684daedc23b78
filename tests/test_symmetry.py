"""Translation symmetry of clusters (simulator/topology/symmetry.py): a shift by the period
maps routes onto routes, so collectives on shifted groups cost exactly the same."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.pipeline import session_from_scenario
from simulator.topology.symmetry import canonical_stage, translation_period
from simulator.workload.layout import Layout


def _collectives(fabric: dict, nodes: int = 16, node: str = "dgx-h100", links: list | None = None):
    data = {"cluster": {"node": node, "nodes": nodes, "fabric": fabric}}
    if links:
        data["noise"] = {"links": links}
    library = HardwareLibrary()
    return session_from_scenario(scenario_from_mapping(data, "<test>", library), library).collectives


FABRICS = {   # fabric, servers, period (servers), layout (tp, pp, dp, cp, ep)
    "fat-tree, 4 servers a leaf": ({"topology": "fat-tree", "link": "ib-ndr", "switch_radix": 64}, 16, 4,
                                   Layout(2, 4, 4, 2, 1)),
    "fat-tree, 2 servers a leaf": ({"topology": "fat-tree", "link": "ib-ndr", "switch_radix": 32}, 16, 2,
                                   Layout(2, 8, 4, 1, 1)),
    "rail-optimized, 16 servers a leaf": (
        {"topology": "rail-optimized", "link": "ib-ndr", "switch_radix": 32}, 32, 16, Layout(8, 8, 4, 1, 1)),
    "fat-tree, 4 servers a leaf, pipeline before data": (
        {"topology": "fat-tree", "link": "ib-ndr", "switch_radix": 64}, 16, 4, Layout(8, 8, 2, 1, 1, True)),
}


@pytest.mark.parametrize("name", list(FABRICS))
def test_period_and_equal_prices_of_shifted_stages(name):
    """Every pipeline stage costs what its canonical stage costs, for the stages'
    data-parallel all-gathers, reduce-scatters and all-reduces priced on their own GPUs; the
    period is lcm(NICs a leaf, spines) over NICs a server (fat-tree) or lcm(servers a leaf,
    spines) (rail-optimized). Under either rank order a stage is stage 0 shifted by
    ``stage_stride`` GPUs (a server under tp-cp-pp-dp with tp 8)."""
    fabric, nodes, period, layout = FABRICS[name]
    collectives = _collectives(fabric, nodes)
    assert translation_period(collectives.cluster) == period
    servers = layout.stage_stride // 8
    shared = 0
    for stage in range(layout.pp):
        alike = collectives.canonical_stage(layout, stage)
        assert alike <= stage and (stage - alike) * servers % period == 0
        shared += alike < stage
        for op in (Op.ALL_GATHER, Op.REDUCE_SCATTER, Op.ALL_REDUCE):
            own = collectives.concurrent_time(op, layout.stage_dp_groups(stage), 64e6)[0]
            canon = collectives.concurrent_time(op, layout.stage_dp_groups(alike), 64e6)[0]
            assert own == canon
    assert shared >= 2                      # the test shares prices, not only stage 0's


def test_no_period_with_a_degraded_link_or_three_tiers():
    degraded = _collectives({"topology": "fat-tree", "link": "ib-ndr", "switch_radix": 64},
                            links=[{"between": ["fabric/leaf0", "fabric/spine0"], "fraction": 0.5}])
    assert translation_period(degraded.cluster) is None
    three = _collectives({"topology": "fat-tree", "link": "ib-ndr", "switch_radix": 8, "tiers": 3})
    assert translation_period(three.cluster) is None


def test_canonical_stage_closed_form():
    """Stages of 2 servers with a period of 4 servers repeat every 2 stages; with no period, or
    stages that are not whole servers, every stage is its own."""
    assert [canonical_stage(4, 16, 8, s) for s in range(6)] == [0, 1, 0, 1, 0, 1]
    assert [canonical_stage(None, 16, 8, s) for s in range(3)] == [0, 1, 2]
    assert [canonical_stage(4, 4, 8, s) for s in range(3)] == [0, 1, 2]
