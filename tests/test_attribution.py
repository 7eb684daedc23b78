"""Attribution of a noisy job's slowdown and the mitigation what-ifs (issue 15, item 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config import scenario_from_mapping
from simulator.engine.analytical import simulate_step
from simulator.engine.attribution import attribute, shapley
from simulator.engine.des import simulate_steps_des
from simulator.pipeline import session_from_scenario

STEPS = 40
JITTER = {"distribution": "lognormal", "sigma": 0.03}
PAUSES = {"probability": 0.1, "duration_s": 0.2}


def _data(noise: dict, pp: int = 4, documents: dict | None = None) -> dict:
    training = {"global_batch": 32, "micro_batch": 1}
    if documents:
        training["documents"] = documents
    return {"name": "attr", "cluster": {"node": "dgx-h100", "nodes": 2}, "model": {"preset": "llama3-8b"},
            "training": training, "parallelism": {"tp": 2, "pp": pp},
            "simulate": {"engine": "des", "contention": False, "steps": STEPS}, "noise": noise}


def _session(noise: dict, **kw):
    return session_from_scenario(scenario_from_mapping(_data(noise, **kw), "attr.yaml"))


def _attribute(noise: dict, **kw) -> dict:
    s = _session(noise, **kw)
    return attribute(s.scenario, s.collectives, STEPS, 0)


def _mean(noise: dict, **kw) -> float:
    s = _session(noise, **kw)
    return float(np.mean(simulate_steps_des(s.scenario, s.collectives, STEPS, 0).step_times_s))


def test_shapley_of_known_games():
    """Additive game: each its own value; v = max of two equal players: half each."""
    add = {(): 0.0, ("a",): 1.0, ("b",): 2.0, ("a", "b"): 3.0}
    assert shapley(("a", "b"), add) == {"a": 1.0, "b": 2.0}
    peak = {(): 0.0, ("a",): 1.0, ("b",): 1.0, ("a", "b"): 1.0}
    assert shapley(("a", "b"), peak) == {"a": 0.5, "b": 0.5}


def test_shares_sum_to_the_total_and_the_figures_are_the_engines():
    """Five causes: the Shapley shares sum to v(all) - v(none) to 1e-9 relative; v(all) is
    the DES's own mean step and the noise-off step the analytical step (stage imbalance
    kept, every micro-batch the mean one)."""
    noise = {"straggler": JITTER, "slow_gpus": [{"gpu": 3, "factor": 1.4}], "host_pause": PAUSES}
    docs = {"distribution": "lognormal", "mean_tokens": 2000.0, "sigma": 1.2}
    found = _attribute(noise, documents=docs)
    assert set(found["causes"]) == {"stage_imbalance", "sequences", "slow_workers", "jitter", "host_pauses"}
    shares = sum(c["share_s"] for c in found["causes"].values())
    assert shares == pytest.approx(found["total_s"], rel=1e-9)
    assert found["mean_step_s"] == pytest.approx(_mean(noise, documents=docs), rel=1e-12)
    s = _session({}, documents=docs)
    assert found["noise_off_step_s"] == pytest.approx(simulate_step(s.scenario, s.collectives).step_time_s,
                                                      rel=1e-12)
    assert found["p50_s"] <= found["p95_s"] <= found["p99_s"]
    assert sum(c["share"] for c in found["causes"].values()) == pytest.approx(1.0, rel=1e-9)


def test_a_single_cause_is_attributed_its_isolated_slowdown():
    """One stage (no stage imbalance) and one slow GPU: its share is the whole slowdown, the
    mean step with it minus the mean step without, measured by the engine apart."""
    found = _attribute({"slow_gpus": [{"gpu": 5, "factor": 1.5}]}, pp=1)
    (cause, share), = found["causes"].items()
    isolated = _mean({"slow_gpus": [{"gpu": 5, "factor": 1.5}]}, pp=1) - _mean({}, pp=1)
    assert cause == "slow_workers"
    assert share["share_s"] == pytest.approx(isolated, rel=1e-12)
    assert share["alone_s"] == share["leave_one_out_s"] == share["share_s"]


def test_removing_a_cause_keeps_the_others_random_streams():
    """With jitter and host pauses, the run with pauses removed is the scenario without the
    pauses section, step for step (same mean)."""
    found = _attribute({"straggler": JITTER, "host_pause": PAUSES})
    with_jitter = found["ideal_step_s"] + found["causes"]["stage_imbalance"]["alone_s"]
    assert with_jitter == pytest.approx(_mean({}), rel=1e-12)
    loo = found["causes"]["host_pauses"]["leave_one_out_s"]
    assert found["mean_step_s"] - loo == pytest.approx(_mean({"straggler": JITTER}), rel=1e-12)


def test_what_ifs_equal_the_changed_scenarios():
    """Spares for the one slow server give the job without it; synchronised GC gives the
    scenario with ``synchronized: true``."""
    noise = {"slow_nodes": [{"node": 1, "factor": 1.3}], "host_pause": PAUSES}
    found = _attribute(noise)
    spares = found["what_ifs"]["spares"]
    assert "servers 1 " in spares["detail"]
    assert spares["mean_step_s"] == pytest.approx(_mean({"host_pause": PAUSES}), rel=1e-12)
    synced = found["what_ifs"]["synchronized_gc"]["mean_step_s"]
    together = {**noise, "host_pause": {**PAUSES, "synchronized": True}}
    assert synced == pytest.approx(_mean(together), rel=1e-12)
    assert "first_stage_layers" in found["what_ifs"]["rebalance_stages"]["detail"]


def test_run_attribute_cli(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_data({"straggler": JITTER})))
    assert main(["run", str(path), "--attribute", "--json", "--steps", "20"]) == 0
    found = json.loads(capsys.readouterr().out)["stragglers"]
    assert found["steps"] == 20 and "jitter" in found["causes"] and found["method"].startswith("Shapley")
    assert main(["run", str(path), "--engine", "analytical", "--attribute"]) == 2
    assert "--attribute applies to the discrete-event engine" in capsys.readouterr().err
    assert main(["run", str(path), "--spares", "2"]) == 2
    assert "--spares applies to --attribute" in capsys.readouterr().err


def test_network_faults_are_a_cause_of_their_own():
    """A pipeline link 5 ms slower per message: the network cause alone is the mean step with
    the fault minus the mean step without it, by the engine apart (stage imbalance on in both)."""
    fault = {"nic_faults": [{"gpu": 0, "peer": 4, "latency_s": 0.005}]}
    found = _attribute(fault)
    assert set(found["causes"]) == {"stage_imbalance", "network"}
    loo = found["causes"]["network"]["leave_one_out_s"]
    assert loo == pytest.approx(_mean(fault) - _mean({}), rel=1e-9) and loo > 0
    assert sum(c["share_s"] for c in found["causes"].values()) == pytest.approx(found["total_s"], rel=1e-9)
