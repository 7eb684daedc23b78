"""``collectives.algorithm`` is validated and honoured: the forced algorithm prices the tensor-,
context- and expert-parallel collectives, pipeline sends, gradient synchronisation and ZeRO-3
gathers, in both engines; an algorithm the cluster cannot run is one line naming the key."""

from __future__ import annotations

import json

import pytest
import yaml

from simulator.cli import main
from simulator.collectives import Algorithm, Op
from simulator.config import scenario_from_mapping
from simulator.config.loader import scenario_stack
from simulator.cost.forced import NCCL_ALGO_OPS, bound_algorithm, forced_algorithm, forces_any
from simulator.cost.sharding import unit_comm
from simulator.engine.analytical import make_context, simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.engine.gradient_sync import all_gradient_collectives
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario

BASE = {
    "name": "forced",
    "cluster": {"node": "dgx-h100", "nodes": 4, "fabric": {"link": "ib-ndr"}},
    "model": {"preset": "megatron-1.7b"},
    "training": {"global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 2, "dp": 8, "zero_stage": 0},
}
"""32 GPUs on four servers: dp groups of 8 span all four servers."""


def _scenario(algorithm, **parallelism):
    data = json.loads(json.dumps(BASE))
    data["collectives"] = {"algorithm": algorithm}
    data["parallelism"].update(parallelism)
    return scenario_from_mapping(data, "<forced>")


def _dp_algorithms(scenario) -> set[str]:
    session = session_from_scenario(scenario)
    ctx = make_context(scenario, session.collectives)
    return {c.terms.schedule.algorithm.value for stage in all_gradient_collectives(ctx) for c in stage}


def test_a_name_forces_the_collectives_nccl_algo_governs_and_not_peer_to_peer():
    scenario = _scenario("ring")
    for op in Op:
        expected = Algorithm.RING if op in NCCL_ALGO_OPS else None
        assert forced_algorithm(scenario, op) == expected
    assert forces_any(scenario) and not forces_any(_scenario("auto"))


def test_a_mapping_forces_per_collective():
    scenario = _scenario({"all_reduce": "tree", "all_to_all": "direct", "all_gather": "auto"})
    assert forced_algorithm(scenario, Op.ALL_REDUCE) == Algorithm.TREE
    assert forced_algorithm(scenario, Op.ALL_TO_ALL) == Algorithm.DIRECT
    assert forced_algorithm(scenario, Op.ALL_GATHER) is None
    assert forced_algorithm(scenario, Op.REDUCE_SCATTER) is None


@pytest.mark.parametrize(("value", "fragment"), [
    ("bogus", "not an algorithm"),
    ("rng", "did you mean 'ring'"),
    ({"all_gather": "tree"}, "tree does not implement all_gather"),
    ({"allgather": "ring"}, "did you mean 'all_gather'"),
    ({"all_to_all": "ring"}, "ring does not implement all_to_all"),
    ({"sendrecv": "nvls"}, "nvls does not implement sendrecv"),
])
def test_the_loader_refuses_unknown_or_unsuitable_algorithms(value, fragment):
    with pytest.raises(ConfigError) as info:
        _scenario(value)
    assert info.value.key == "collectives.algorithm" and fragment in str(info.value)


@pytest.mark.parametrize("algorithm", ["tree", "halving-doubling", "direct"])
def test_gradient_sync_uses_the_forced_algorithm(algorithm):
    assert _dp_algorithms(_scenario({"all_reduce": algorithm})) == {algorithm}


def test_auto_picks_from_nccls_algorithms_only():
    assert _dp_algorithms(_scenario("auto")) <= {"ring", "tree", "nvls"}


def test_forcing_changes_the_step_in_both_engines_alike():
    auto, forced = _scenario("auto"), _scenario({"all_reduce": "direct"})
    steps = {}
    for name, scenario in (("auto", auto), ("forced", forced)):
        collectives = session_from_scenario(scenario).collectives
        analytical = simulate_step(scenario, collectives)
        des = simulate_steps_des(scenario, collectives, steps=1, contention=False)
        assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
        steps[name] = analytical
    assert steps["forced"].dp_comm_s != pytest.approx(steps["auto"].dp_comm_s, rel=1e-3)
    assert steps["forced"].dp_comm_s > steps["auto"].dp_comm_s   # direct all-reduce: p-1 sends each


def test_tensor_parallel_collectives_use_the_forced_algorithm():
    from simulator.cost.in_layer import tp_collectives

    for algorithm in ("ring", "halving-doubling"):
        scenario = _scenario({"all_reduce": algorithm}, tp=4, dp=4)
        session = session_from_scenario(scenario)
        ctx = make_context(scenario, session.collectives)
        found = tp_collectives(scenario, ctx.shape, session.collectives, ctx.layout)
        assert [c.terms.schedule.algorithm.value for c in found] == [algorithm]


def test_pipeline_sends_and_expert_all_to_all_read_the_bound_choice():
    scenario = _scenario({"sendrecv": "direct", "all_to_all": "direct"})
    session = session_from_scenario(scenario)
    assert bound_algorithm(session.collectives, Op.SENDRECV) == Algorithm.DIRECT
    assert bound_algorithm(session.collectives, Op.ALL_TO_ALL) == Algorithm.DIRECT
    assert bound_algorithm(session.collectives, Op.ALL_REDUCE) is None


def test_zero3_gathers_use_the_forced_algorithm():
    ring, hd = (_scenario({"all_gather": a, "reduce_scatter": a}, zero_stage=3)
                for a in ("ring", "halving-doubling"))
    prices = []
    for scenario in (ring, hd):
        session = session_from_scenario(scenario)
        ctx = make_context(scenario, session.collectives)
        prices.append(unit_comm(scenario, scenario_stack(scenario), session.collectives, ctx.layout, 0))
    assert prices[0].gather != pytest.approx(prices[1].gather, rel=1e-6)


@pytest.mark.parametrize(("cluster", "algorithm"), [
    ({"node": "dgx-a100-80gb", "nodes": 4}, {"all_reduce": "nvls"}),   # no NVSwitch reduction
    ({"node": "dgx-h100", "nodes": 4}, "tree"),                          # tree cannot reduce-scatter
])
def test_an_algorithm_the_cluster_cannot_run_is_one_line_naming_the_key(tmp_path, capsys, cluster,
                                                                        algorithm):
    data = json.loads(json.dumps(BASE))
    data["cluster"] = cluster
    data["parallelism"]["zero_stage"] = 1
    data["collectives"] = {"algorithm": algorithm}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["run", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {path}: collectives.algorithm: ")


def test_collectives_command_defaults_to_the_scenarios_choice(tmp_path, capsys):
    data = json.loads(json.dumps(BASE))
    data["collectives"] = {"algorithm": {"all_reduce": "halving-doubling"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["collectives", str(path), "-b", "1M", "-e", "4M", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["algorithm"] for r in rows} == {"halving-doubling"}
    assert main(["collectives", str(path), "-b", "1M", "-e", "4M", "--json", "--algo", "auto"]) == 0
    assert {r["algorithm"] for r in json.loads(capsys.readouterr().out)} <= {"ring", "tree", "nvls"}


@pytest.mark.parametrize("command", ["collectives", "compare-nccl"])
def test_an_algo_option_the_cluster_cannot_run_names_the_option(tmp_path, capsys, command):
    """``--algo nvls-tree`` on one server is the user's option, not the scenario: one line naming
    ``--algo``, exit 2 (was the collective's own message, which names no option)."""
    data = json.loads(json.dumps(BASE))
    data["cluster"]["nodes"] = 1
    data["parallelism"].update(tp=1, pp=1, dp=8)
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(data))
    log = tmp_path / "nccl.log"
    log.write_text("#  size  count  type  redop  root  time  algbw  busbw  #wrong"
                   "  time  algbw  busbw  #wrong\n"
                   "  1048576  262144  float  sum  -1  50.0  20.97  36.70  0  50.0  20.97  36.70  0\n")
    args = ([command, str(path)] if command == "collectives"
            else [command, str(log), str(path), "--op", "all_reduce"])
    assert main([*args, "--algo", "nvls-tree"]) == 2
    err = capsys.readouterr().err
    assert "--algo nvls-tree: nvls-tree joins servers" in err
    assert len(err.strip().splitlines()) == 1
