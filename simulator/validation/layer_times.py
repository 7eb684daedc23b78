"""One layer's predicted forward and backward time, for sets that time a layer alone.

Megatron-LM's MoE layer benchmark (``tests/functional_tests/test_cases/common/moe_perf``) times
one ``MoELayer`` per pass with CUDA events: ``forward_ms`` from before ``layer(input)`` to after
it, ``backward_ms`` around ``output.backward(grad)``, the mean of 20 iterations after 5 warm-up
ones. The comparable prediction is the layer's own cost as a pipeline stage prices it
(:func:`~simulator.engine.layer_kinds.layer_pass_seconds` of
:func:`~simulator.engine.layer_kinds.model_layer_cost`), without the embedding, the output layer,
the loss, the optimizer or the data-parallel traffic a step adds.
"""

from __future__ import annotations

from pathlib import Path

from simulator.config import HardwareLibrary
from simulator.config.loader import scenario_stack
from simulator.engine.context import make_context
from simulator.engine.layer_kinds import layer_pass_seconds, model_layer_cost
from simulator.pipeline import open_scenario

__all__ = ["layer_seconds"]


def layer_seconds(path: Path | str, library: HardwareLibrary | None = None) -> tuple[float, float]:
    """(forward, backward) seconds of one of the scenario's layers and one microbatch on its
    busiest GPU (module docstring)."""
    session = open_scenario(path, library)
    context = make_context(session.scenario, session.collectives)
    layer = model_layer_cost(context, scenario_stack(session.scenario, library))
    return layer_pass_seconds(layer)
