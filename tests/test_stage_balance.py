"""Stage balance from the model (issue 15, item 3): the embedding on the first stage, the LM
head and loss on the last, Megatron-Core's uneven first/last stage layer counts, memory per
stage following them, and the bottleneck stage with its excess over the mean stage."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.cli import main
from simulator.config import scenario_from_mapping
from simulator.config.stage_split import uneven_split
from simulator.engine.analytical import simulate_step
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.memory import layer_split


def _data(**par) -> dict:
    return {"name": "balance", "cluster": {"node": "dgx-h100", "nodes": 2,
                                           "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
            "model": {"preset": "llama3-8b"}, "training": {"global_batch": 32, "micro_batch": 1},
            "parallelism": {"tp": 2, "pp": 4, **par}}


def _run(**par):
    session = session_from_scenario(scenario_from_mapping(_data(**par), "balance.yaml"))
    return simulate_step(session.scenario, session.collectives)


def test_megatron_core_uneven_split():
    """First/last counts as given, the rest divided evenly over the middle stages; either
    alone leaves the other end a middle stage; with v chunks every count a multiple of v."""
    assert uneven_split(32, 4, 1, 6, 10) == [6, 8, 8, 10]
    assert uneven_split(32, 4, 1, 5, None) == [5, 9, 9, 9]
    assert uneven_split(32, 4, 1, None, 2) == [10, 10, 10, 2]
    assert uneven_split(32, 2, 1, 12, 20) == [12, 20]
    assert uneven_split(32, 4, 2, 6, 10) == [6, 8, 8, 10]
    for bad in [(32, 4, 1, 5, 10), (32, 4, 2, 5, 9), (32, 2, 1, 12, 12), (32, 4, 1, 31, None)]:
        with pytest.raises(ValueError):
            uneven_split(*bad)


def test_counts_equal_to_the_default_split_reproduce_the_baseline_exactly():
    """126 layers on 16 stages default to 7, 8, ..., 8, 7; stating 7 and 7 changes nothing, and
    llama3-8b's 8 x 4 with first = last = 8 gives the same result, field for field."""
    assert uneven_split(126, 16, 1, 7, 7) == layer_split(126, 16)
    assert _run(first_stage_layers=8, last_stage_layers=8).to_json_dict() == _run().to_json_dict()


def test_memory_and_time_follow_the_layer_counts():
    """Fewer layers on the last stage: less of its memory and work; the head stays there."""
    even, uneven = _run(), _run(first_stage_layers=9, last_stage_layers=5)
    assert uneven.layer_split == [9, 9, 9, 5]
    assert uneven.stages[3].memory_bytes < even.stages[3].memory_bytes
    assert uneven.stages[0].memory_bytes > even.stages[0].memory_bytes
    layer_f = even.stages[1].forward_s / 8
    assert uneven.stages[3].forward_s == pytest.approx(even.stages[3].forward_s - 3 * layer_f, rel=1e-12)


def test_the_last_stage_is_the_bottleneck_by_its_head_and_the_excess_is_its_share():
    """Even layers: the LM head and loss make the last stage the busiest; the excess is its
    busy seconds, m (f + b) + its sends' seconds, over the mean stage's."""
    r = _run()
    assert r.bottleneck_stage == 3
    f = np.array([s.forward_s for s in r.stages])
    b = np.array([s.backward_s for s in r.stages])
    sends = np.array([2 * r.microbatches - (s == 0 or s == 3) * r.microbatches for s in range(4)])
    busy = r.microbatches * (f + b) + sends * r.stages[0].p2p_s
    assert r.bottleneck_excess == pytest.approx(busy[3] / busy.mean() - 1, rel=1e-12)
    assert r.bottleneck_excess > 0.01
    moved = _run(first_stage_layers=9, last_stage_layers=5)
    assert moved.bottleneck_stage != 3 or moved.bottleneck_excess < r.bottleneck_excess


def test_bad_counts_exit_2_naming_the_key(tmp_path, capsys):
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_data(first_stage_layers=5, last_stage_layers=10)))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "parallelism.first_stage_layers" in err[0] and "middle stages" in err[0]
    with pytest.raises(ConfigError):
        session_from_scenario(scenario_from_mapping(_data(last_stage_layers=0), "x.yaml"))


@pytest.mark.parametrize("key", ["first_stage_layers", "last_stage_layers"])
def test_stage_layer_counts_without_a_pipeline_say_so(tmp_path, capsys, key):
    """With pp 1 there is no first or last stage to size: one message naming the key, that it
    needs pp > 1, and the scenario's pp."""
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**_data(), "parallelism": {"tp": 8, "pp": 1, key: 4}}))
    assert main(["check", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"error: {path}: parallelism.{key}: 4: applies only with pipeline parallelism "
                    "(pp > 1), and parallelism.pp is 1; remove it or set pp above 1")

def test_embedding_on_the_first_stage_and_head_and_loss_on_the_last():
    """Equal layer counts: the first stage's forward exceeds a middle stage's by the embedding,
    the last stage's by the logits and loss, forward and backward (head_costs; the embedding's
    backward, a scatter-add of its gradient, is not priced)."""
    from simulator.cost.layer import head_costs
    from simulator.engine.context import make_context

    session = session_from_scenario(scenario_from_mapping(_data(), "balance.yaml"))
    r = simulate_step(session.scenario, session.collectives)
    ctx = make_context(session.scenario, session.collectives)
    embed, logits_f, logits_b = head_costs(ctx.shape, ctx.compute)
    first, middle, last = r.stages[0], r.stages[1], r.stages[3]
    assert first.forward_s - middle.forward_s == pytest.approx(embed, rel=1e-9)
    assert first.backward_s == pytest.approx(middle.backward_s, rel=1e-12)
    assert last.forward_s - middle.forward_s == pytest.approx(logits_f, rel=1e-9)
    assert last.backward_s - middle.backward_s == pytest.approx(logits_b, rel=1e-9)


def test_interleaved_uneven_split_runs_in_both_engines():
    """v = 2 chunks per stage with 6 and 10 layers at the ends: every stage's count splits in
    two; the DES without noise equals the analytical step."""
    from simulator.engine.des import simulate_steps_des

    data = _data(first_stage_layers=6, last_stage_layers=10, schedule="interleaved-1f1b", virtual_stages=2)
    session = session_from_scenario(scenario_from_mapping(data, "balance.yaml"))
    r = simulate_step(session.scenario, session.collectives)
    assert r.layer_split == [6, 8, 8, 10]
    des = simulate_steps_des(session.scenario, session.collectives, 1, contention=False)
    assert des.step_time_s == pytest.approx(r.step_time_s, rel=1e-9)
