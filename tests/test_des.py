"""The discrete-event engine: the analytical engine as its oracle, contention, stragglers,
determinism (issue #4, first part)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.config.scenario import NoiseConfig
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.engine.flows import max_min_rates
from simulator.pipeline import open_scenario
from simulator.topology import build_cluster

ROOT = Path(__file__).resolve().parent.parent
TRAINING_SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")
                            if "model:" in p.read_text())


@pytest.mark.parametrize("name", TRAINING_SCENARIOS)
def test_without_contention_des_equals_analytical(name):
    """Every training scenario in scenarios/ (each replays in under 15 s), its noise and
    per-microbatch work (documents) left out: the DES's oracle is the noise-free step; over one
    period of ``training.sync_every`` (1 step unless set), whose mean the analytical step is."""
    session = open_scenario(ROOT / "scenarios" / f"{name}.yaml")
    training = session.scenario.training.model_copy(update={"documents": None})
    scenario = session.scenario.model_copy(update={"noise": NoiseConfig(), "training": training})
    analytical = simulate_step(scenario, session.collectives).step_time_s
    des = simulate_steps_des(scenario, session.collectives, steps=scenario.training.sync_every,
                             contention=False).step_time_s
    assert des == pytest.approx(analytical, rel=1e-9)


def _scenario(gpus_per_node=8, nodes=4, tp=8, pp=2, oversubscription=1.0, sigma=0.0,
              steps=1, seed=0, fidelity="tp-collapsed", gb=64, throttle=(0.0, 1.0)):
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": nodes,
                                     "gpus_per_node": gpus_per_node,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr",
                                                "oversubscription": oversubscription,
                                                "switch_radix": 16}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1},
            "parallelism": {"tp": tp, "pp": pp},
            "simulate": {"engine": "des", "steps": steps, "seed": seed, "fidelity": fidelity},
            "noise": {"straggler": {"distribution": "lognormal" if sigma else "none",
                                    "sigma": sigma},
                      "throttle": {"probability": throttle[0], "factor": throttle[1]}}}
    scenario = scenario_from_mapping(data, "<test>")
    library = HardwareLibrary()
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, library)))


@pytest.mark.parametrize("ratio", [1.0, 4.0])
def test_contention_never_makes_des_faster(ratio):
    scenario, collectives = _scenario(nodes=8, tp=2, pp=4, oversubscription=ratio,
                                      fidelity="per-rank")
    off = simulate_steps_des(scenario, collectives, contention=False).step_time_s
    on = simulate_steps_des(scenario, collectives, contention=True).step_time_s
    assert on >= off * (1 - 1e-12)


def test_oversubscription_slows_pipeline_sends_that_share_uplinks():
    """4:1 leaf uplinks: per-rank sends of many replicas collide; 1:1 they do not."""
    times = {}
    for ratio in (1.0, 4.0):
        scenario, collectives = _scenario(nodes=8, tp=2, pp=4, oversubscription=ratio,
                                          fidelity="per-rank", gb=128)
        times[ratio] = simulate_steps_des(scenario, collectives, contention=True).step_time_s
    assert times[4.0] > times[1.0]


def test_max_min_fair_rates_follow_the_textbook_example():
    """Three flows: A and B share link 0 (cap 10); B and C share link 1 (cap 4)."""
    rates = max_min_rates([np.array([0]), np.array([0, 1]), np.array([1])],
                          np.array([10.0, 4.0]))
    assert rates == pytest.approx([8.0, 2.0, 2.0])


def test_without_noise_p99_equals_p50():
    scenario, collectives = _scenario(steps=5)
    result = simulate_steps_des(scenario, collectives)
    assert result.step_time_p99_s == result.step_time_p50_s


def test_straggler_amplification_grows_with_gpu_count():
    """Same per-GPU jitter and rare 1.5x throttling (p = 2e-4 per GPU-step): with more GPUs
    some GPU throttles in more steps, so p99/p50 of the step grows (8 -> 32 -> 128 GPUs)."""
    ratios = []
    for nodes in (1, 4, 16):
        scenario, collectives = _scenario(nodes=nodes, tp=8, pp=1, sigma=0.02, steps=600,
                                          gb=16 * nodes, throttle=(2e-4, 1.5))
        result = simulate_steps_des(scenario, collectives)
        ratios.append(result.step_time_p99_s / result.step_time_p50_s)
    assert 1.0 < ratios[0] < ratios[1] < ratios[2]


def test_same_seed_same_result_different_seed_different_noise():
    scenario, collectives = _scenario(sigma=0.05, steps=20, seed=3)
    first = simulate_steps_des(scenario, collectives).to_json_dict()
    again = simulate_steps_des(scenario, collectives).to_json_dict()
    other = simulate_steps_des(scenario, collectives, seed=4).to_json_dict()
    assert first == again and first["step_times_s"] != other["step_times_s"]


@pytest.mark.parametrize("noise,key", [
    ({"straggler": {"distribution": "lognormal", "sigma": -0.1}}, "noise.straggler.sigma"),
    ({"throttle": {"probability": 1.5, "factor": 2.0}}, "noise.throttle.probability"),
    ({"throttle": {"probability": 0.1, "factor": 0.5}}, "noise.throttle.factor"),
])
def test_noise_out_of_range_is_a_clear_error(noise, key):
    from simulator.errors import ConfigError
    data = {"cluster": {"node": "dgx-a100-80gb"}, "noise": noise}
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        scenario_from_mapping(data, "noisy.yaml")


def test_timeline_has_every_task_and_the_trace_its_structure(tmp_path):
    from simulator.engine.des import TIMELINE_COLUMNS, timeline
    from simulator.export.chrome_trace import trace_events

    scenario, collectives = _scenario(nodes=2, tp=8, pp=2, gb=16)
    frame = timeline(scenario, collectives)
    assert tuple(frame.columns) == TIMELINE_COLUMNS
    m = 16 // 1                                   # dp = 1: 16 microbatches
    assert (frame.kind == "forward").sum() == 2 * m and (frame.kind == "backward").sum() == 2 * m
    assert (frame.end_s >= frame.start_s).all()
    events = trace_events(frame, gpus_per_node=8)
    complete = [e for e in events if e["ph"] == "X"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert len(complete) == len(frame) and names == {"node 0", "node 1"}
    assert all(e["dur"] >= 0 and {"pid", "tid", "ts"} <= set(e) for e in complete)


def test_run_writes_trace_and_gantt(tmp_path, capsys):
    from simulator.cli import main

    trace, png = tmp_path / "t.json", tmp_path / "g.png"
    code = main(["run", str(ROOT / "scenarios" / "sc21-39b.yaml"), "--trace", str(trace),
                 "--timeline-png", str(png), "--json"])
    capsys.readouterr()
    assert code == 0 and trace.read_text().startswith('{"traceEvents"')
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_slow_gpu_slows_every_step_and_must_exist():
    from simulator.errors import ConfigError

    scenario, collectives = _scenario(steps=3)
    slow = scenario.model_copy(update={"noise": type(scenario.noise).model_validate(
        {"slow_gpus": [{"gpu": 9, "factor": 1.2}]})})
    assert simulate_steps_des(slow, collectives).step_time_s > \
        simulate_steps_des(scenario, collectives).step_time_s
    data = {"cluster": {"node": "dgx-a100-80gb", "nodes": 1},
            "noise": {"slow_gpus": [{"gpu": 8, "factor": 1.5}]}}
    with pytest.raises(ConfigError, match=r"noise\.slow_gpus\.0\.gpu: GPU 8 is beyond"):
        scenario_from_mapping(data, "slow.yaml")


def test_histogram_png(tmp_path, capsys):
    from simulator.cli import main

    text = (ROOT / "scenarios" / "sc21-39b.yaml").read_text() + (
        "\nnoise:\n  straggler: {distribution: lognormal, sigma: 0.05}\n")
    path = tmp_path / "noisy.yaml"
    path.write_text(text.replace("engine: analytical", "engine: des"))
    png = tmp_path / "h.png"
    code = main(["run", str(path), "--engine", "des", "--steps", "20", "--png", str(png)])
    out = capsys.readouterr().out
    assert code == 0 and "p50 / p95 / p99" in out and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_json_is_byte_identical_for_the_same_seed(capsys, tmp_path):
    from simulator.cli import main

    text = (ROOT / "scenarios" / "sc21-39b.yaml").read_text() + (
        "\nnoise:\n  straggler: {distribution: lognormal, sigma: 0.03}\n")
    path = tmp_path / "noisy.yaml"
    path.write_text(text)
    outputs = []
    for seed in (7, 7, 8):
        main(["run", str(path), "--engine", "des", "--steps", "5", "--seed", str(seed), "--json"])
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]


def test_a_slow_node_slows_the_step_like_its_gpus_and_must_exist():
    """noise.slow_nodes is shorthand for every GPU of that server in noise.slow_gpus."""
    from simulator.errors import ConfigError

    scenario, collectives = _scenario(steps=2)
    noise = type(scenario.noise)

    def step(spec):
        slowed = scenario.model_copy(update={"noise": noise.model_validate(spec)})
        return simulate_steps_des(slowed, collectives).step_time_s

    node = step({"slow_nodes": [{"node": 1, "factor": 1.2}]})
    gpus = step({"slow_gpus": [{"gpu": g, "factor": 1.2} for g in range(8, 16)]})
    assert node == gpus > simulate_steps_des(scenario, collectives).step_time_s
    data = {"cluster": {"node": "dgx-a100-80gb", "nodes": 2},
            "noise": {"slow_nodes": [{"node": 2, "factor": 1.5}]}}
    with pytest.raises(ConfigError, match=r"noise\.slow_nodes\.0\.node: node 2 is beyond"):
        scenario_from_mapping(data, "slow.yaml")


def test_fidelity_set_by_model_copy_runs_and_is_reported():
    """Notebooks and scripts switch fidelity with ``model_copy`` (a plain string)."""
    scenario, collectives = _scenario()
    simulate = scenario.simulate.model_copy(update={"fidelity": "per-transfer"})
    result = simulate_steps_des(scenario.model_copy(update={"simulate": simulate}), collectives,
                                contention=True)
    assert result.engine == "des (per-transfer, contention)"


def test_the_des_refuses_a_run_past_its_event_budget_with_the_estimate():
    """10^12 sequences: the analytical engine answers from the steady state; the DES, which
    must replay every task, refuses with the estimate and its factors."""
    from simulator.config import scenario_from_mapping
    from simulator.engine.analytical import simulate_step
    from simulator.errors import ConfigError
    from simulator.pipeline import session_from_scenario

    data = {"name": "big", "cluster": {"node": "dgx-a100-80gb", "nodes": 2},
            "model": {"preset": "megatron-1.7b"}, "training": {"global_batch": 10**12},
            "parallelism": {"tp": 1, "pp": 4}}
    session = session_from_scenario(scenario_from_mapping(data, "big.yaml"))
    result = simulate_step(session.scenario, session.collectives)
    assert 0 < result.mfu <= 1 and result.microbatches == 250_000_000_000
    with pytest.raises(ConfigError, match=r"about 8,000,000,000,000 tasks \(dp 4 x pp 4") as info:
        simulate_steps_des(session.scenario, session.collectives, steps=1)
    assert info.value.key == "simulate.steps"


def test_interleaving_on_one_stage_sends_nothing():
    """pp 1 with interleaved chunks: each chunk's output stays on the GPU, so the DES with
    contention has no send to route and equals the analytical step."""
    from simulator.config import scenario_from_mapping
    from simulator.engine.analytical import simulate_step
    from simulator.pipeline import session_from_scenario

    data = {"name": "v2", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "megatron-1.7b"}, "training": {"global_batch": 16},
            "parallelism": {"tp": 8, "schedule": "interleaved-1f1b", "virtual_stages": 2}}
    session = session_from_scenario(scenario_from_mapping(data, "v2.yaml"))
    analytical = simulate_step(session.scenario, session.collectives).step_time_s
    des = simulate_steps_des(session.scenario, session.collectives, steps=1, contention=True)
    assert des.step_time_s == pytest.approx(analytical, rel=1e-9)


@pytest.mark.parametrize("contention", [False, True])
def test_progress_is_told_every_step_once(contention):
    """The engine reports its progress itself (no wrapping): the counts sum to the steps."""
    scenario, collectives = _scenario(nodes=2, tp=8, pp=2, sigma=0.02, steps=5, gb=16)
    told: list[int] = []
    simulate_steps_des(scenario, collectives, steps=5, contention=contention, progress=told.append)
    assert sum(told) == 5 and all(n > 0 for n in told)
