"""Rules of activation offloading (``parallelism.cpu_offload_layers``), as Megatron-Core states
them (NVIDIA/Megatron-LM d98e8a64dd ``megatron/core/transformer/transformer_config.py``,
``__post_init__``): fewer layers than the model has, no pipeline parallelism, no activation
recompute of any granularity. The model's own limit: one micro-batch's layers in flight, which
the unpipelined schedule gives."""

from __future__ import annotations

from simulator.config.scenario import Recompute, Scenario
from simulator.errors import ConfigError

KEY = "parallelism.cpu_offload_layers"


def check_cpu_offload(scenario: Scenario) -> None:
    """Raise :class:`ConfigError` where ``cpu_offload_layers`` breaks one of Megatron-Core's
    rules ("CPU offloading can be done only for layers less than num_layers", "no support for
    Pipeline parallelism with CPU offloading", "CPU offloading does not work when activation
    recomputation is enabled")."""
    par = scenario.parallelism
    n = par.cpu_offload_layers
    if n == 0:
        return
    layers = scenario.model.layers
    if n >= layers:
        raise ConfigError(f"{n} must be less than model.layers ({layers}): Megatron-Core keeps at "
                          "least the last layer's activations on the GPU", key=KEY)
    if par.pp > 1:
        raise ConfigError(f"activation offloading needs pp 1 (got {par.pp}): Megatron-Core has no "
                          "activation offloading with pipeline parallelism", key=KEY)
    if par.recompute != Recompute.NONE:
        raise ConfigError(f"activation offloading needs parallelism.recompute none (got "
                          f"{par.recompute.value}): Megatron-Core does not offload activations that are "
                          "recomputed", key=KEY)
