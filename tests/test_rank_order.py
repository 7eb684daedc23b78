"""``parallelism.rank_order``: Megatron's default GPU order (tp, cp, dp, pp: each pipeline stage
a block of GPUs) or NeMo's ``use_tp_pp_dp_mapping`` (tp, cp, pp, dp: each pipeline replica a
block, as MLPerf's GB200 runs place one replica per NVL72 rack)."""

from __future__ import annotations

from itertools import product

import pytest
from des_checks import assert_des_brackets_analytical

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.layout import Layout

SHAPES = [(2, 3, 4, 2, 1), (4, 2, 2, 1, 2), (1, 4, 3, 2, 2)]


def _ranks(lay: Layout):
    return product(range(lay.tp), range(lay.cp), range(lay.dp), range(lay.pp))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("inner", [False, True])
def test_every_order_is_a_bijection_and_stage_of_inverts_it(shape, inner):
    lay = Layout(*shape, pp_inner=inner)
    gpus = [lay.gpu(t, c, d, s) for t, c, d, s in _ranks(lay)]
    assert sorted(gpus) == list(range(lay.gpus))
    assert all(lay.stage_of(lay.gpu(t, c, d, s)) == s for t, c, d, s in _ranks(lay))


@pytest.mark.parametrize("shape", SHAPES)
def test_the_default_order_keeps_megatrons_formulas(shape):
    """gpu = t + tp (c + cp (d + dp s)); expert groups ``base + t + tp j``; every stage's
    data-parallel groups from the (pp, dp, cp tp) grid; embedding pairs a stage apart."""
    tp, pp, dp, cp, ep = shape
    lay = Layout(*shape)
    assert all(lay.gpu(t, c, d, s) == t + tp * (c + cp * (d + dp * s)) for t, c, d, s in _ranks(lay))
    for block, stage, t in product(range(dp * cp // ep), range(pp), range(tp)):
        base = tp * cp * dp * stage
        assert lay.expert_group(block, stage, t) == tuple(base + t + tp * j
                                                          for j in range(block * ep, (block + 1) * ep))
    grid = [[[s * dp * cp * tp + d * cp * tp + j for j in range(cp * tp)] for d in range(dp)]
            for s in range(pp)]
    assert lay.all_dp_groups() == [tuple(grid[s][d][j] for d in range(dp)) for s in range(pp)
                                   for j in range(cp * tp)]
    stride = lay.gpus // pp
    assert lay.embedding_groups() == [(g, g + (pp - 1) * stride) for g in range(stride)]


@pytest.mark.parametrize("shape", SHAPES)
def test_pipeline_inside_data_makes_each_replica_a_block(shape):
    """Replica d holds GPUs [d tp cp pp, (d + 1) tp cp pp); data-parallel peers are tp cp pp
    apart; neighbouring stages tp cp apart."""
    tp, pp, dp, cp, _ = shape
    lay = Layout(*shape, pp_inner=True)
    block = tp * cp * pp
    for d in range(dp):
        replica = {lay.gpu(t, c, d, s) for t in range(tp) for c in range(cp) for s in range(pp)}
        assert replica == set(range(d * block, (d + 1) * block))
    for group in lay.all_dp_groups():
        assert all(b - a == block for a, b in zip(group, group[1:], strict=False))
    if pp > 1:
        src, dst = lay.pp_pair(0)
        assert dst - src == tp * cp


def _gb200(order: str):
    """Two GB200 NVL72 racks of 64 GPUs each, one 64-GPU pipeline replica per rack when the
    pipeline comes before data."""
    data = {"cluster": {"node": "gb200-nvl72", "nodes": 2, "gpus_per_node": 64,
                        "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"layers": 16, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn_hidden": 8192,
                      "mlp": "swiglu", "seq_len": 4096, "vocab": 32000},
            "training": {"global_batch": 32, "micro_batch": 1, "dtype": "bf16"},
            "parallelism": {"tp": 4, "pp": 8, "dp": 2, "cp": 2, "sequence_parallel": True,
                            "rank_order": order}}
    library = HardwareLibrary()
    return session_from_scenario(scenario_from_mapping(data, "<test>", library), library)


def test_a_replica_per_rack_keeps_the_pipeline_on_nvlink():
    """Under tp-cp-pp-dp every stage-to-stage pair is inside one rack; under the default order
    the 16-GPU stages of two replicas fill a rack four stages at a time, so the pipeline crosses
    racks between stages 3 and 4."""
    def crossings(order):
        session = _gb200(order)
        ctx = make_context(session.scenario, session.collectives)
        per_node = session.collectives.cluster.hw.gpus_per_node
        pairs = [ctx.layout.pp_pair(s) for s in range(ctx.layout.pp - 1)]
        return sum(a // per_node != b // per_node for a, b in pairs)
    assert crossings("tp-cp-pp-dp") == 0
    assert crossings("tp-cp-dp-pp") == 1


@pytest.mark.parametrize("order", ["tp-cp-pp-dp", "tp-cp-dp-pp"])
def test_both_engines_agree_under_either_order(order):
    session = _gb200(order)
    assert_des_brackets_analytical(session.scenario, session.collectives)


def test_the_search_covers_both_orders_and_rows_equal_the_single_path(tmp_path):
    """``--rank-order`` is a search axis; a second order is offered only where it places ranks
    differently (pp > 1 and dp > 1), and each row is what a scenario file with it gives."""
    import yaml

    from simulator.pipeline import run_scenario
    from simulator.sweep.search import search

    session = _gb200("tp-cp-dp-pp")
    result = search(session.scenario, flags={"tp": "4", "pp": "1,8", "cp": "2", "micro_batch": "1",
                                             "schedule": "1f1b", "virtual_stages": "1", "recompute": "none",
                                             "zero_stage": "1", "sequence_parallel": "true",
                                             "rank_order": "tp-cp-dp-pp,tp-cp-pp-dp"})
    frame = result.frame
    assert sorted(map(str, frame.loc[frame["pp"] == 8, "rank_order"])) == ["tp-cp-dp-pp", "tp-cp-pp-dp"]
    assert len(frame[frame["pp"] == 1]) == 1
    row = frame[(frame["pp"] == 8) & (frame["rank_order"].astype(str) == "tp-cp-pp-dp")].iloc[0]
    data = yaml.safe_load(yaml.safe_dump(session.scenario.model_dump(mode="json", exclude_none=True)))
    data["parallelism"]["rank_order"] = "tp-cp-pp-dp"
    path = tmp_path / "pp-inner.yaml"
    path.write_text(yaml.safe_dump(data))
    assert run_scenario(path).tokens_per_s == pytest.approx(row["tokens_per_s"], rel=1e-12)


@pytest.mark.parametrize("shape", [*SHAPES, (2, 4, 8, 1, 1), (8, 2, 3, 2, 1)])
@pytest.mark.parametrize("inner", [False, True])
def test_groups_from_the_grid_are_gpu_by_gpu(shape, inner):
    """The data-parallel, shard and embedding groups taken from the rank grid at once are
    those of :meth:`Layout.gpu` rank by rank, in the same order, as Python integers."""
    lay = Layout(*shape, pp_inner=inner)
    for s in range(lay.pp):
        dp_groups = lay.stage_dp_groups(s)
        assert dp_groups == [lay.dp_group(s, t, c) for c in range(lay.cp) for t in range(lay.tp)]
        assert all(type(g) is tuple and all(type(gpu) is int for gpu in g) for g in dp_groups)
        assert lay.stage_shard_groups(s) == [tuple(lay.gpu(t, c, d, s) for d in range(lay.dp)
                                                   for c in range(lay.cp)) for t in range(lay.tp)]
    pairs = [(lay.gpu(t, c, d, 0), lay.gpu(t, c, d, lay.pp - 1))
             for d in range(lay.dp) for c in range(lay.cp) for t in range(lay.tp)]
    assert lay.embedding_groups() == pairs
    assert all(type(a) is int and type(b) is int for a, b in lay.embedding_groups())
