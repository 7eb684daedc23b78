"""Invariants on every result (simulator/results/invariants.py) and noise entries as sets:
an accepted input never yields an impossible number with exit status 0."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from simulator.config import scenario_from_mapping
from simulator.errors import ConfigError, ModelError
from simulator.pipeline import run_scenario
from simulator.results.invariants import check_result

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def good():
    return run_scenario(ROOT / "scenarios" / "sc21-1.7b.yaml")


def test_a_real_result_passes_and_is_returned_unchanged(good):
    assert check_result(good, analytical=True) is good
    assert 0 < good.mfu <= 1 and math.isfinite(good.step_time_s)


@pytest.mark.parametrize(("field", "value"), [
    ("mfu", 79.99), ("mfu", 0.0), ("step_time_s", math.nan), ("tokens_per_s", math.inf),
    ("bubble_fraction", 1.0), ("memory_per_gpu_bytes", -1.0), ("comm_exposed_s", math.nan),
])
def test_an_impossible_number_is_a_model_error(good, field, value):
    with pytest.raises(ModelError, match=field):
        check_result(replace(good, **{field: value}), analytical=True)


def test_a_negative_memory_part_is_a_model_error(good):
    stage = good.stages[0]
    broken = replace(stage, memory={**stage.memory, "weights": -1.0})
    with pytest.raises(ModelError, match="memory part weights"):
        check_result(replace(good, stages=[broken, *good.stages[1:]]), analytical=True)


def test_a_pipeline_shorter_than_the_busiest_stage_is_a_model_error(good):
    with pytest.raises(ModelError, match="busiest stage"):
        check_result(replace(good, pipeline_s=good.pipeline_s / 2), analytical=True)


def test_a_model_error_exits_3_with_one_line(monkeypatch, capsys):
    """The CLI reports a model bug on one line, exit 3 (2 is for user mistakes)."""
    import simulator.engine.analytical as analytical
    from simulator.cli import main

    real = analytical.StepResult
    monkeypatch.setattr(analytical, "StepResult", lambda **kw: real(**{**kw, "mfu": 7.99}))
    code = main(["run", str(ROOT / "scenarios" / "sc21-1.7b.yaml")])
    err = capsys.readouterr().err.strip()
    assert code == 3 and "bug in clustersim" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("noise", "key"), [
    ({"slow_gpus": [{"gpu": 1, "factor": 1.5}, {"gpu": 1, "factor": 2.0}]}, "noise.slow_gpus.1.gpu"),
    ({"slow_nodes": [{"node": 0, "factor": 1.5}, {"node": 0, "factor": 1.5}]}, "noise.slow_nodes.1.node"),
    ({"links": [{"between": ["fabric/leaf0", "fabric/spine1"]},
                {"between": ["fabric/spine1", "fabric/leaf0"], "fraction": 0.5}]}, "noise.links.1.between"),
])
def test_noise_entries_are_sets(noise, key):
    """The same GPU, node or link listed twice is refused (factors would compound)."""
    data = {"name": "x", "cluster": {"node": "dgx-h100", "nodes": 2}, "noise": noise}
    with pytest.raises(ConfigError, match="already listed") as info:
        scenario_from_mapping(data, "noisy.yaml")
    assert info.value.key == key
