"""The expert-parallel dispatch (simulator/cost/in_layer.py): Megatron-Core's all-to-all
dispatcher sends each rank's sequence shard, then gathers the dispatched tokens over the
tensor-parallel group (core_v0.10.0 MoEAlltoAllTokenDispatcher)."""

from __future__ import annotations

import pytest

from simulator.collectives import Op
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.in_layer import ep_collective, ep_tp_collectives
from simulator.cost.layer import layer_cost
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario


def _ctx(tp: int, sp: bool):
    data = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn_hidden": 2048,
                      "mlp": "swiglu", "seq_len": 2048, "vocab": 32000, "experts": 8, "top_k": 2},
            "training": {"global_batch": 64, "micro_batch": 2},
            "parallelism": {"tp": tp, "ep": 8, "sequence_parallel": sp}}
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    return make_context(session.scenario, session.collectives), session


@pytest.mark.parametrize(("tp", "sp", "shards"), [(1, False, 1), (4, True, 4), (4, False, 1)])
def test_the_all_to_all_carries_top_k_copies_of_the_ranks_own_tokens(tp, sp, shards):
    """b s top_k h x 2 B = 2 x 2048 x 2 x 1024 x 2 B per tensor-parallel group, over t under
    sequence parallelism (each rank dispatches its own shard)."""
    ctx, session = _ctx(tp, sp)
    found = ep_collective(ctx.shape, session.collectives, ctx.layout)
    assert found.op == Op.ALL_TO_ALL
    assert found.size_bytes == pytest.approx(2 * 2048 * 2 * 1024 * 2 / shards)


def test_sequence_shards_are_gathered_over_tp_and_priced_in_the_layer():
    """With t = 4 and sequence parallelism the dispatched tokens (b s top_k h, 16 MiB) are
    all-gathered over the tensor-parallel group after the all-to-all and reduce-scattered before
    the combining one: per layer 4 all-to-alls + 2 x (gather + reduce-scatter)."""
    ctx, session = _ctx(4, True)
    a2a = ep_collective(ctx.shape, session.collectives, ctx.layout)
    around = ep_tp_collectives(ctx.shape, session.collectives, ctx.layout)
    assert [c.op for c in around] == [Op.ALL_GATHER, Op.REDUCE_SCATTER]
    assert all(c.size_bytes == pytest.approx(2 * 2048 * 2 * 1024 * 2) for c in around)
    layer = layer_cost(session.scenario, scenario_stack(session.scenario), ctx.shape, ctx.compute,
                       session.collectives, ctx.layout)
    assert layer.ep == pytest.approx(4 * a2a.time_s + 2 * sum(c.time_s for c in around), rel=1e-12)
    plain, plain_session = _ctx(4, False)
    assert ep_tp_collectives(plain.shape, plain_session.collectives, plain.layout) == []
