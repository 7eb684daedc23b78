"""Rules of ``parallelism.pipeline_flushes``: several pipeline schedules a step
(:mod:`simulator.engine.flushes`)."""

from __future__ import annotations

from simulator.config.parameter_server import SyncMode
from simulator.config.scenario import Scenario
from simulator.errors import ConfigError


def check_flushes(scenario: Scenario, microbatches: int) -> None:
    """With a pipeline (pp > 1), ``pipeline_flushes`` divides the step's microbatches, and no
    training what-if or parameter server (which price one schedule a step) comes with more
    than one."""
    flushes, training = scenario.parallelism.pipeline_flushes, scenario.training
    if scenario.parallelism.pp == 1:
        return                  # no pipeline: the key has no effect (a warning says so)
    key = "parallelism.pipeline_flushes"
    if microbatches % flushes:
        divisor = max(d for d in range(1, min(flushes, microbatches) + 1) if microbatches % d == 0)
        raise ConfigError(f"{flushes} does not divide the step's {microbatches} microbatches "
                          f"(global_batch / (micro_batch*dp)); use a divisor such as {divisor}", key=key)
    if flushes == 1:
        return
    what_if = "training.sync: async" if training.sync != SyncMode.SYNC else scenario.training_what_if
    if what_if is not None:
        raise ConfigError(f"{flushes}: several pipeline schedules a step are not priced together with "
                          f"{what_if}; set pipeline_flushes 1 or remove {what_if}", key=key)
