"""``updated`` gives the state of pydantic's ``model_copy(update=...)``."""

from __future__ import annotations

from pathlib import Path

from simulator.config.copies import updated
from simulator.pipeline import open_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "gpt3-175b-1024xA100.yaml"


def _state(model) -> tuple:
    return (type(model), list(model.__dict__.items()), model.__pydantic_fields_set__,
            model.__pydantic_extra__, model.__pydantic_private__)


def test_updated_is_model_copy():
    scenario = open_scenario(SCENARIO).scenario
    par = {"tp": 4, "pp": 8, "dp": None, "zero_stage": 3}
    parallelism = updated(scenario.parallelism, par)
    assert _state(parallelism) == _state(scenario.parallelism.model_copy(update=par))
    training = updated(scenario.training, {"micro_batch": 2})
    assert _state(training) == _state(scenario.training.model_copy(update={"micro_batch": 2}))
    update = {"parallelism": parallelism, "training": training}
    copied = updated(scenario, update)
    assert _state(copied) == _state(scenario.model_copy(update=update))
    assert copied == scenario.model_copy(update=update)
    assert hash(copied.parallelism) == hash(parallelism) and copied is not scenario


def test_updated_leaves_the_original():
    scenario = open_scenario(SCENARIO).scenario
    before = _state(scenario)
    updated(scenario, {"training": updated(scenario.training, {"micro_batch": 8})})
    assert _state(scenario) == before
