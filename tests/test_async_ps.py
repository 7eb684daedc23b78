"""Asynchronous SGD with parameter servers and bounded staleness
(simulator/engine/async_ps.py): closed forms of both periods, the replay against them, the
staleness bound, stragglers under sync and async, and the scenario checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, load_scenario, scenario_from_mapping
from simulator.engine.analytical import simulate_step
from simulator.engine.async_ps import AsyncCost, replay, simulate_async_des, simulate_async_step
from simulator.errors import ConfigError
from simulator.pipeline import run_scenario, session_from_scenario
from simulator.workload.params import parameter_count

ROOT = Path(__file__).resolve().parents[1]
ASYNC = ROOT / "scenarios" / "llama3-8b-async-ps-64xH100.yaml"
RAW = yaml.safe_load(ASYNC.read_text())
NIC = 50e9 * 0.96          # ib-ndr effective, one per H100 of a DGX H100


def _scenario(**ps):
    data = copy.deepcopy(RAW)
    data["parameter_server"].update(ps)
    library = HardwareLibrary()
    scenario = scenario_from_mapping(data, "<test>", library)
    return scenario, session_from_scenario(scenario, library).collectives


@pytest.fixture(scope="module")
def quiet():
    """The scenario without noise."""
    data = copy.deepcopy(RAW)
    data.pop("noise")
    library = HardwareLibrary()
    scenario = scenario_from_mapping(data, "<test>", library)
    return scenario, session_from_scenario(scenario, library).collectives


def test_worker_bound_period_is_compute_plus_pull_plus_push():
    """P bf16 parameters, tp 2 x pp 4: each GPU pushes and pulls 2P/8 bytes over its 48 GB/s
    NIC; 16 servers at 48 GB/s take 2P/16 per worker: T_w = T_c + 2 max(2P/(8 B), 2P/(16 B))."""
    scenario, collectives = _scenario()
    result = simulate_async_step(scenario, collectives)
    ps = result.parameter_server
    size = 2 * parameter_count(scenario.model)
    assert ps["push_s"] == pytest.approx(max(size / 8 / NIC, size / 16 / NIC), rel=1e-12)
    assert ps["compute_s"] == pytest.approx(simulate_step(scenario, collectives).pipeline_s)
    assert ps["worker_period_s"] == pytest.approx(ps["compute_s"] + 2 * ps["push_s"], rel=1e-12)
    assert ps["server_period_s"] == pytest.approx(8 * size / 16 / NIC, rel=1e-12)
    assert ps["bound"] == "workers"
    assert result.step_time_s == pytest.approx(ps["worker_period_s"], rel=1e-12)
    assert result.tokens_per_s == pytest.approx(256 * 4096 / result.step_time_s, rel=1e-9)
    assert result.optimizer_s == 0.0


def test_server_bound_period_is_every_workers_share_through_one_server():
    """One server at 1 GB/s: T_s = dp P b / B_s = 8 x 2P / 1e9 s, far above T_w."""
    scenario, collectives = _scenario(servers=1, bandwidth_GBps=1.0)
    result = simulate_async_step(scenario, collectives)
    size = 2 * parameter_count(scenario.model)
    assert result.parameter_server["bound"] == "servers"
    assert result.step_time_s == pytest.approx(8 * size / 1e9, rel=1e-12)


@pytest.mark.parametrize("ps", [{}, {"servers": 1, "bandwidth_GBps": 20.0}])
def test_replay_without_noise_runs_at_the_analytical_period(quiet, ps):
    scenario, collectives = quiet
    data = scenario.model_dump(mode="json")
    data["parameter_server"].update(ps)
    library = HardwareLibrary()
    changed = scenario_from_mapping(data, "<test>", library)
    collectives = session_from_scenario(changed, library).collectives
    des = simulate_async_des(changed, collectives, steps=60)
    analytical = simulate_async_step(changed, collectives)
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=0.01)


def test_equal_workers_see_staleness_dp_minus_1_and_zero_bound_halves_it():
    """Equal workers, servers never a queue: between a worker's pull and its push each of
    the other dp - 1 workers applies exactly once (steady state); with s = 0 (bulk
    synchronous) the pushes of one round see 0 .. dp - 1 earlier ones."""
    cost = AsyncCost(8, 16, 4, 1.0, 0.01, 0.01, 0.001, 0.001)
    compute = np.full((50, 8), 1.0)
    free = replay(cost, compute, 4)
    assert np.median(free.staleness) == 7
    assert free.round_s == pytest.approx(cost.worker_period_s, rel=1e-3)
    bsp = replay(cost, compute, 0)
    assert bsp.staleness.max() == 7 and bsp.staleness.mean() == pytest.approx(3.5)


def test_a_persistent_straggler_is_hidden_only_without_a_bound():
    """Worker 0 twice as slow. s = 0 and s = 2: every worker ends up at the straggler's pace
    (the bound holds the others back), round = 2 T + comm; unbounded: the others run free,
    dp T / ((dp - 1) + 1/2) per round while all run."""
    cost = AsyncCost(8, 16, 2, 1.0, 0.01, 0.01, 0.001, 0.001)
    compute = np.full((200, 8), 1.0)
    compute[:, 0] = 2.0
    comm = 0.02
    for s in (0, 2):
        bounded = replay(cost, compute, s)
        assert bounded.round_s == pytest.approx(2.0 + comm, rel=0.02)
    assert replay(cost, compute, 2).gated_s > 0
    free = replay(cost, compute, 10**6)
    assert free.round_s == pytest.approx(8 / (7 / (1 + comm) + 1 / (2 + comm)), rel=0.02)
    assert free.gated_s == 0.0


def test_transient_stragglers_cost_async_less_than_a_barrier():
    """Each iteration one worker (at random) takes 3x: a barrier pays it every round, a
    bounded-staleness worker only its own share."""
    rng = np.random.default_rng(0)
    compute = np.ones((300, 8))
    compute[np.arange(300), rng.integers(0, 8, 300)] = 3.0
    cost = AsyncCost(8, 16, 4, 1.0, 0.01, 0.01, 0.001, 0.001)
    bsp, bounded = replay(cost, compute, 0), replay(cost, compute, 4)
    assert bsp.round_s > 2.9
    assert bounded.round_s < 1.5


def test_scenario_noise_hurts_async_less_than_the_all_reduce():
    result = run_scenario(ASYNC, engine="des", steps=100)
    ps = result.parameter_server
    async_slowdown = result.step_time_s / ps["worker_period_s"]
    sync_slowdown = ps["sync_allreduce_step_s"] / ps["sync_step_s"]
    assert 1.0 < async_slowdown < sync_slowdown
    assert ps["bulk_synchronous_round_s"] > result.step_time_s
    counts = ps["staleness_counts"]
    assert sum(counts.values()) == 8 * 100
    assert ps["staleness_p50"] == 7


def test_same_seed_same_result():
    first = run_scenario(ASYNC, engine="des", steps=30).to_json_dict()
    assert run_scenario(ASYNC, engine="des", steps=30).to_json_dict() == first
    assert run_scenario(ASYNC, engine="des", steps=30, seed=3).to_json_dict() != first


def test_synchronous_results_carry_no_parameter_server_key():
    data = run_scenario(ROOT / "scenarios" / "llama3-8b-64xH100.yaml").to_json_dict()
    assert "parameter_server" not in data


def test_run_prints_the_parameter_server_table(capsys):
    assert main(["run", str(ASYNC), "--engine", "des", "--steps", "20"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "asynchronous parameter servers" in text and "staleness seen" in text
    assert main(["run", str(ASYNC), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameter_server"]["bound"] == "workers"


def _edit(**changes):
    data = copy.deepcopy(RAW)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = data
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return data


@pytest.mark.parametrize("data, fragment", [
    (_edit(parameter_server=None), "parameter_server: training.sync: async needs a parameter_server"),
    (_edit(training__sync="sync"), "parameter_server: parameter servers serve only training.sync: async"),
    (_edit(parameter_server__placement="colocated", parameter_server__servers=9),
     "parameter_server.servers: 9 colocated servers need as many nodes; the cluster has 8"),
    (_edit(parameter_server__servers=0), "parameter_server.servers"),
    (_edit(parameter_server__staleness=-1), "parameter_server.staleness"),
    (_edit(parameter_server__bandwidth_GBps=0.0), "parameter_server.bandwidth_GBps"),
    (_edit(parameter_server__placement="rack"), "parameter_server.placement"),
    (_edit(training__sync="hogwild"), "training.sync"),
])
def test_bad_values_are_one_line_and_exit_2(tmp_path, capsys, data, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ")
    assert fragment in err
    with pytest.raises(ConfigError):
        load_scenario(path)
