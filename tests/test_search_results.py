"""The batched engine's whole results: with breakdowns, every field (stages included) is the
single-scenario engine's; without (what a search asks for), every field but ``stages``."""

from __future__ import annotations

from dataclasses import replace

from simulator.config import scenario_from_text
from simulator.config.checks import check_scenario
from simulator.engine.analytical import simulate_step
from simulator.engine.batch import simulate_steps
from simulator.errors import ClusterSimError
from simulator.pipeline import session_from_scenario
from simulator.sweep.layouts import apply_layout, layout_grid

SCENARIO = """\
name: batch-results
cluster: {node: dgx-a100-80gb, nodes: 2, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
"""


def _variants():
    scenario = scenario_from_text(SCENARIO)
    session = session_from_scenario(scenario)
    grid = layout_grid(tp=[1, 2], pp=[2, 4], micro_batch=[1, 2], zero_stage=[1, 3],
                       schedule=["1f1b", "interleaved-1f1b"], virtual_stages=[1, 2],
                       recompute=["none", "full"])
    variants = []
    for layout in grid:
        variant = apply_layout(scenario, layout)
        try:
            check_scenario(variant, session.hardware)
        except ClusterSimError:
            continue
        variants.append(variant)
    return session, variants


def test_results_with_and_without_breakdowns_equal_the_single_scenario_engine():
    session, variants = _variants()
    assert len(variants) >= 20
    full = simulate_steps(variants, session.collectives, {})
    bare = simulate_steps(variants, session.collectives, {}, breakdowns=False)
    for variant, one, other in zip(variants, full, bare, strict=True):
        single = simulate_step(variant, session.collectives)
        assert one == single
        assert one.to_json_dict() == single.to_json_dict()
        assert other.stages == [] and replace(other, stages=single.stages) == single


def test_stages_of_one_kind_do_not_share_their_memory():
    """Middle stages share their kind's times but each holds its own microbatches in flight
    (1F1B: p - i), so each has its own memory, less further down the pipeline, in a dict of
    its own; the headline is the most loaded stage's."""
    session, variants = _variants()
    deep = [v for v in variants if v.parallelism.pp == 4 and v.parallelism.schedule.value == "1f1b"]
    result = simulate_steps(deep[:1], session.collectives)[0]
    second, third = result.stages[1], result.stages[2]      # middle stages: the same kind
    assert second.forward_s == third.forward_s
    assert second.memory["activations"] > third.memory["activations"]
    assert second.memory["weights"] == third.memory["weights"]
    assert result.memory_per_gpu_bytes == max(s.memory_bytes for s in result.stages)
    second.memory["probe"] = 1.0
    assert "probe" not in third.memory


def test_a_stage_kinds_fields_are_the_breakdowns_in_order():
    """The engine's per-kind dict (written out for speed) holds every
    :class:`StageBreakdown` field but the index, in the dataclass's order."""
    from dataclasses import fields

    from simulator.engine.analytical import _fields
    from simulator.results import StageBreakdown

    made = _fields(3, tuple(float(i) for i in range(8)), {}, 0.5, (0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8))
    assert list(made) == [f.name for f in fields(StageBreakdown)][1:]
    stage = StageBreakdown(0, **made)
    assert (stage.amax_comm_s, stage.offload_wait_s, stage.offload_host_bytes) == (0.6, 0.7, 0.8)
