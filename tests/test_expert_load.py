"""``model.expert_load``: the busiest expert-parallel rank's routed tokens over the mean. That
rank sets a mixture-of-experts layer's pace; the mean work is what FLOP counts use."""

from __future__ import annotations

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost.in_layer import ep_collective
from simulator.engine.context import make_context
from simulator.engine.flops import step_flops
from simulator.pipeline import run_scenario, session_from_scenario
from simulator.workload.transformer import layer_forward

MOE = {"cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
       "model": {"layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn_hidden": 2048,
                 "mlp": "swiglu", "seq_len": 2048, "vocab": 32000, "experts": 8, "top_k": 2},
       "training": {"global_batch": 32, "micro_batch": 2},
       "parallelism": {"tp": 2, "pp": 2, "ep": 4, "sequence_parallel": True}}


def _with_load(load: float | None) -> dict:
    data = yaml.safe_load(yaml.safe_dump(MOE))
    if load is not None:
        data["model"]["expert_load"] = load
    return data


def _ctx(load: float | None):
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(_with_load(load), "<test>", library), library)
    return make_context(session.scenario, session.collectives), session


def _run(tmp_path, load: float | None, engine: str = "analytical"):
    path = tmp_path / f"moe-{load}.yaml"
    path.write_text(yaml.safe_dump(_with_load(load)))
    return run_scenario(path, engine=engine)


def test_the_default_is_balanced_routing_exactly(tmp_path):
    def figures(load):
        return {k: v for k, v in _run(tmp_path, load).to_json_dict().items() if k != "name"}
    assert figures(None) == figures(1.0)


def test_the_busiest_rank_computes_load_times_the_mean_expert_rows():
    """Expert GEMMs (the last two of the layer) get ``load`` x the balanced rows, attention's
    and the projections' rows stay; the FLOP count keeps the mean work."""
    ctx, _ = _ctx(1.5)
    balanced, busiest = layer_forward(ctx.shape), layer_forward(ctx.shape, 1.5)
    assert busiest.gemms[-2:, 0] == pytest.approx(1.5 * balanced.gemms[-2:, 0], rel=1e-15)
    assert (busiest.gemms[:-2] == balanced.gemms[:-2]).all()
    plain, _ = _ctx(None)
    assert step_flops(ctx.scenario, (1.0, 1.0)) == step_flops(plain.scenario, (1.0, 1.0))


def test_the_all_to_all_carries_the_busiest_ranks_tokens():
    loaded, session = _ctx(1.25)
    plain, plain_session = _ctx(None)
    a2a = ep_collective(loaded.shape, session.collectives, loaded.layout)
    base = ep_collective(plain.shape, plain_session.collectives, plain.layout)
    assert a2a.size_bytes == pytest.approx(1.25 * base.size_bytes, rel=1e-15)


def test_the_step_slows_and_both_engines_agree(tmp_path):
    """More load, a longer step and more memory; the discrete-event replay gives the
    analytical step (contention off) at a load of 1.3."""
    steps = [_run(tmp_path, load) for load in (1.0, 1.3, 1.6)]
    assert steps[0].step_time_s < steps[1].step_time_s < steps[2].step_time_s
    assert steps[0].memory_per_gpu_bytes < steps[1].memory_per_gpu_bytes
    assert steps[1].mfu < steps[0].mfu
    des = _run(tmp_path, 1.3, engine="des")
    assert des.step_time_s == pytest.approx(steps[1].step_time_s, rel=1e-9)


def test_a_dense_model_with_a_load_is_a_user_error(tmp_path, capsys):
    data = _with_load(1.2)
    data["model"]["experts"], data["model"]["top_k"], data["parallelism"]["ep"] = 1, 1, 1
    path = tmp_path / "dense.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "model.expert_load" in err and len(err.strip().splitlines()) == 1
