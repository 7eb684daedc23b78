"""The search's batched engine (layouts sharing a task graph clocked together, prices shared
through a memo) gives exactly the numbers of the single-scenario engine, layout by layout."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config import scenario_from_text
from simulator.config.checks import check_scenario
from simulator.engine.analytical import simulate_step
from simulator.errors import ClusterSimError
from simulator.pipeline import session_from_scenario
from simulator.sweep.layouts import SEARCH_METRICS, evaluate_rows, layouts, search_axes, with_layout

DENSE = """\
name: batch-dense
cluster: {node: dgx-a100-80gb, nodes: 2, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
"""
DENSE_AXES = {"tp": "1,2,4", "pp": "2,4", "micro_batch": "1,2",
              "schedule": "1f1b,gpipe,interleaved-1f1b", "virtual_stages": "1,2",
              "recompute": "none,selective,full", "zero_stage": "0,1,3", "shard_size": "auto,4",
              "sequence_parallel": "false,true"}
MOE = """\
name: batch-moe
cluster: {node: dgx-h100, nodes: 2, fabric: {topology: rail-optimized, link: ib-ndr}}
model: {mlp: swiglu, seq_len: 4096, vocab: 32000, layers: 8, hidden: 1024, heads: 16,
        kv_heads: 4, ffn_hidden: 3584, experts: 8, top_k: 2}
training: {global_batch: 32, micro_batch: 1, stack: torchtitan}
parallelism: {tp: 2, pp: 2}
"""
MOE_AXES = {"tp": "1,2", "pp": "1,2", "cp": "1,2", "ep": "1,2,4", "micro_batch": "1",
            "schedule": "1f1b,interleaved-1f1b", "virtual_stages": "1,2", "recompute": "none,full",
            "zero_stage": "1,3", "sequence_parallel": "false,true"}
FP8 = """\
name: batch-fp8-delayed
cluster: {node: dgx-h100, nodes: 4, fabric: {topology: rail-optimized, link: ib-ndr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1, dtype: fp8, stack: megatron-core}
parallelism: {tp: 2, pp: 2}
"""
FP8_AXES = {"tp": "1,2,4", "pp": "1,2,4", "cp": "1,2", "micro_batch": "1,2",
            "schedule": "1f1b,interleaved-1f1b", "virtual_stages": "1,2", "zero_stage": "1,3"}
"""fp8 with delayed scaling: the amax all-reduces of every model chunk (their group spans the
stage, so it changes with tp, cp, dp and pp)."""


def _grid(text: str, flags: dict[str, str]):
    scenario = scenario_from_text(text)
    session = session_from_scenario(scenario)
    axes = search_axes(scenario, session.hardware.gpus_per_node, None, flags)
    return scenario, session, list(layouts(axes, session.hardware.gpus))


def _single(scenario, session, layout) -> dict:
    """The row of one layout from the single-scenario engine."""
    variant = with_layout(scenario, layout)
    try:
        check_scenario(variant, session.hardware)
        result = simulate_step(variant, session.collectives)
    except ClusterSimError:
        return {"status": "refused"}
    return {"status": "ok", **{name: getattr(result, name) for name in SEARCH_METRICS},
            **{f"exposed_{d}_s": s for d, s in result.exposed_by_dimension.items()}}


@pytest.mark.parametrize(("text", "flags"), [(DENSE, DENSE_AXES), (MOE, MOE_AXES), (FP8, FP8_AXES)],
                         ids=["dense-interleaved-recompute-zero", "moe-cp-ep", "fp8-delayed-amax"])
def test_every_field_of_every_layout_equals_the_single_scenario_engine(text, flags):
    scenario, session, grid = _grid(text, flags)
    rows = evaluate_rows(scenario, session.hardware, session.collectives, grid)
    evaluated = [r for r in rows if r["status"] == "ok"]
    assert len(evaluated) >= 100
    for row in rows:
        single = _single(scenario, session, {k: row[k] for k in grid[0]})
        assert (row["status"] == "ok") == (single["status"] == "ok"), row
        for name, value in single.items():
            if name != "status":
                np.testing.assert_allclose(row[name], value, rtol=1e-12, atol=0, err_msg=name)
    kinds = {(r["schedule"], r["recompute"], r["zero_stage"], r["sequence_parallel"]) for r in evaluated}
    assert len(kinds) >= 12                         # the grid is varied where it is valid


def test_a_memo_kept_across_chunks_gives_the_rows_of_one_batch():
    """The search keeps one memo per scenario point over its chunks; small chunks, one batch
    and chunks in another order give the same rows."""
    scenario, session, grid = _grid(DENSE, DENSE_AXES)
    grid = grid[::5]
    whole = evaluate_rows(scenario, session.hardware, session.collectives, grid)
    memo: dict = {}
    chunks = [grid[i:i + 7] for i in range(0, len(grid), 7)][::-1]
    pieces = [evaluate_rows(scenario, session.hardware, session.collectives, c, memo) for c in chunks]
    assert memo
    assert [row for piece in pieces[::-1] for row in piece] == whole


def test_evaluate_layouts_gives_the_single_scenario_numbers():
    """The Python sweep API (layouts may also set the global batch and dp) evaluates valid
    layouts together, with each one's own numbers."""
    from simulator.sweep.layouts import apply_layout, evaluate_layouts, layout_grid

    scenario, session, _ = _grid(DENSE, {})
    grid = layout_grid(tp=[1, 2], pp=[2, 4], micro_batch=[1, 2], global_batch=[32, 64],
                       recompute=["none", "full"], schedule=["1f1b", "gpipe"]) + [
        {"tp": 2, "pp": 2, "dp": 2, "global_batch": 64}, {"tp": 2, "pp": 2, "dp": 3}]
    frame = evaluate_layouts(scenario, session.hardware, session.collectives, grid)
    assert (frame["status"] == "ok").sum() >= 40 and (frame["status"] != "ok").any()
    for layout, row in zip(grid, frame.to_dict(orient="records"), strict=True):
        if row["status"] != "ok":
            continue
        single = simulate_step(apply_layout(scenario, layout), session.collectives)
        for name in ("step_time_s", "mfu", "tokens_per_s", "bubble_fraction", "memory_per_gpu_bytes"):
            np.testing.assert_allclose(row[name], getattr(single, name), rtol=1e-12, atol=0)


@pytest.mark.parametrize(("text", "flags"), [(DENSE, DENSE_AXES), (MOE, MOE_AXES)],
                         ids=["dense-interleaved-recompute-zero", "moe-cp-ep"])
def test_headlines_are_the_fields_of_the_results_bit_for_bit(text, flags):
    """The columns (:func:`simulate_headlines`) give each result's fields exactly, types too."""
    from simulator.engine.batch import simulate_headlines, simulate_steps
    from simulator.engine.columns import HEADLINE

    scenario, session, grid = _grid(text, flags)
    variants = []
    for layout in grid:
        variant = with_layout(scenario, layout)
        try:
            check_scenario(variant, session.hardware)
        except ClusterSimError:
            continue
        variants.append(variant)
    heads = simulate_headlines(variants, session.collectives)
    results = simulate_steps(variants, session.collectives, breakdowns=False)
    assert sum(isinstance(h, dict) for h in heads) >= 100
    for head, result in zip(heads, results, strict=True):
        if isinstance(result, ClusterSimError):
            assert str(head) == str(result)
            continue
        for name in HEADLINE:
            value = getattr(result, name)
            assert head[name] == value and type(head[name]) is type(value), name
        assert list(head["exposed_by_dimension"].items()) == list(result.exposed_by_dimension.items())
        assert all(type(a) is type(b) for a, b in zip(head["exposed_by_dimension"].values(),
                                                       result.exposed_by_dimension.values(), strict=True))


def test_the_shard_size_axis_reaches_the_scenario():
    """A search row with ``shard_size`` (hybrid sharding) is the scenario with that shard
    size, not plain ZeRO-3 (the axis once fell out of the layout's parallelism keys)."""
    scenario, session, grid = _grid(DENSE, DENSE_AXES)
    pick = {"tp": 1, "pp": 2, "micro_batch": 1, "schedule": "1f1b", "virtual_stages": 1,
            "recompute": "none", "zero_stage": 3, "sequence_parallel": False}
    rows = {r["shard_size"]: r for r in evaluate_rows(scenario, session.hardware, session.collectives,
                                                      [g for g in grid if pick.items() <= g.items()])}
    assert set(rows) == {None, 4} and rows[4]["status"] == rows[None]["status"] == "ok"
    text = DENSE.replace("parallelism: {tp: 2, pp: 2}",
                         "parallelism: {tp: 1, pp: 2, zero_stage: 3, shard_size: 4}")
    hybrid = simulate_step(scenario_from_text(text), session.collectives)
    assert rows[4]["step_time_s"] == pytest.approx(hybrid.step_time_s, rel=1e-12)
    assert rows[4]["step_time_s"] != pytest.approx(rows[None]["step_time_s"], rel=1e-6)
