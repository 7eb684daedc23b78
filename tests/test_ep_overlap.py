"""Megatron-Core's expert all-to-all overlap (the combined 1F1B schedule,
simulator/cost/ep_overlap.py): the two-stream timeline of a layer pair in closed form, the
lone passes' share, the rules Megatron-Core enforces, and both engines agreeing."""

from __future__ import annotations

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.cost import ep_overlap
from simulator.cost.ep_overlap import LayerNodes, exposed_seconds, lone_pass_share, paired_chunk_seconds
from simulator.pipeline import run_scenario

FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
MOE = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": FABRIC},
       "model": {"layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn_hidden": 1024,
                 "mlp": "swiglu", "seq_len": 4096, "vocab": 32000, "experts": 64, "top_k": 8},
       "training": {"global_batch": 64, "micro_batch": 1},
       "parallelism": {"tp": 1, "pp": 2, "ep": 16, "schedule": "interleaved-1f1b", "virtual_stages": 2}}


def _nodes(compute: float, comm: float, tail: float = 0.0) -> LayerNodes:
    """Every compute node ``compute`` s, every all-to-all ``comm`` s."""
    return LayerNodes(compute, compute, compute, compute, compute, compute, comm, comm, tail, tail)


@pytest.mark.parametrize("delay", [True, False])
def test_communication_bound_pair_runs_at_the_four_all_to_alls(delay):
    """All-to-alls y = 3 s, compute nodes x = 1 s (y > 2x): by hand (module table), combine_bwd
    and the attention forward start together, then each all-to-all starts as the previous one
    ends, every compute node fitting under one: the pair takes 4 y = 12 s."""
    assert paired_chunk_seconds(_nodes(1.0, 3.0), 1, delay, 0.0) == pytest.approx(12.0, rel=1e-12)


def test_compute_bound_pair_hides_every_all_to_all():
    """y = 0.5 s < x = 1 s with the weight gradients delayed: each all-to-all runs under a
    compute node and the pair takes the six compute nodes, 6 x = 6 s: nothing is exposed."""
    nodes = _nodes(1.0, 0.5)
    assert paired_chunk_seconds(nodes, 1, True, 0.0) == pytest.approx(6.0, rel=1e-12)
    assert exposed_seconds(nodes, 1, True, 0.0, 0.0) == pytest.approx(0.0, abs=1e-12)


def test_without_all_to_alls_a_chunk_is_its_compute():
    nodes = _nodes(0.7, 0.0)
    assert paired_chunk_seconds(nodes, 5, True, 0.2) == pytest.approx(5 * nodes.compute, rel=1e-12)


def test_the_steady_period_extrapolates_the_full_simulation(monkeypatch):
    """A chunk of 12 identical layers: the first four pairs simulated and the rest at the last
    pair's period give what simulating all twelve gives."""
    nodes = LayerNodes(0.9, 1.3, 1.1, 0.6, 1.7, 0.3, 1.4, 1.2, 0.05, 0.1)
    short = paired_chunk_seconds(nodes, 12, True, 0.12)
    monkeypatch.setattr(ep_overlap, "SIMULATED_PAIRS", 12)
    assert short == pytest.approx(paired_chunk_seconds(nodes, 12, True, 0.12), rel=1e-12)


def test_sms_held_by_the_all_to_all_slow_the_overlapped_compute():
    """Compute-bound pair (x = 1 s, y = 0.5 s): with the all-to-all's kernels holding 20% of the
    SMs the compute under each all-to-all runs at 0.8 of its pace, so the pair is longer than
    6 s and shorter than the serial 6 + 4 y = 8 s."""
    slowed = paired_chunk_seconds(_nodes(1.0, 0.5), 1, True, 0.2)
    assert 6.0 < slowed < 8.0
    assert slowed > paired_chunk_seconds(_nodes(1.0, 0.5), 1, True, 0.1)


def test_lone_passes_are_the_warm_up_and_cool_down():
    """No pipeline: the first forward and last backward run alone, 1 of m; interleaved on
    rank 0: (pp - 1) 2 + (v - 1) pp + 1 of m v (schedules.py get_pp_rank_microbatches)."""
    flat = scenario_from_mapping({**MOE, "parallelism": {"tp": 1, "ep": 16}}, "<test>", HardwareLibrary())
    assert lone_pass_share(flat, 64) == pytest.approx(1 / 64)
    piped = scenario_from_mapping(MOE, "<test>", HardwareLibrary())
    assert lone_pass_share(piped, 16) == pytest.approx((2 + 2 + 1) / 32)
    assert exposed_seconds(_nodes(1.0, 0.5), 1, True, 0.0, 1.0) == pytest.approx(4 * 0.5)


def _run(tmp_path, overlap: bool, engine: str = "analytical", **parallelism):
    data = yaml.safe_load(yaml.safe_dump(MOE))
    data["training"]["stack"] = {"base": "megatron-core",
                                 "expert_parallel": {"a2a_overlap": overlap, "delay_wgrad": overlap}}
    data["parallelism"].update(parallelism)
    path = tmp_path / f"moe-{overlap}-{engine}.yaml"
    path.write_text(yaml.safe_dump(data))
    return run_scenario(path, engine=engine)


def test_overlap_shortens_the_step_and_both_engines_agree(tmp_path):
    """The all-to-alls under the other microbatch's compute: less exposed expert-parallel time
    and a shorter step; the discrete-event replay (contention off) gives the analytical step."""
    serial, overlapped = _run(tmp_path, False), _run(tmp_path, True)
    assert overlapped.step_time_s < serial.step_time_s
    assert overlapped.comm_exposed_s < serial.comm_exposed_s
    des = _run(tmp_path, True, engine="des")
    assert des.step_time_s == pytest.approx(overlapped.step_time_s, rel=1e-9)


@pytest.mark.parametrize(("parallelism", "words"), [
    ({"recompute": "full"}, "full recompute"),
    ({"schedule": "1f1b", "virtual_stages": 1}, "interleaved schedule"),
    ({"ep": 1}, "parallelism.ep > 1")])
def test_megatron_cores_rules_are_user_errors(tmp_path, capsys, parallelism, words):
    data = yaml.safe_load(yaml.safe_dump(MOE))
    data["training"]["stack"] = {"base": "megatron-core", "expert_parallel": {"a2a_overlap": True}}
    data["parallelism"].update(parallelism)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "training.stack.expert_parallel.a2a_overlap" in err and words in err
    assert "Traceback" not in err


def test_delaying_the_weight_gradients_lets_the_dispatch_backward_start_earlier():
    """``delay_wgrad_compute``: the dispatch backward waits for the expert data gradient only,
    and the next layer's combine backward for the attention data gradient; without it both
    wait for the weight gradients too, so a chunk with long weight gradients takes longer."""
    nodes = LayerNodes(1.0, 1.0, 1.0, 3.0, 1.0, 3.0, 2.0, 2.0, 0.0, 0.0)
    assert paired_chunk_seconds(nodes, 3, False, 0.0) > paired_chunk_seconds(nodes, 3, True, 0.0)
