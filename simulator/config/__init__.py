"""Scenario and hardware-spec configuration: the only place YAML is read."""

from simulator.config.hardware import Dtype, GpuSpec, LinkSpec, NodeSpec, Protocol
from simulator.config.library import HardwareLibrary
from simulator.config.loader import (
    load_cluster,
    load_scenario,
    scenario_from_mapping,
    scenario_from_text,
)
from simulator.config.resolved import ResolvedCluster, resolve_cluster
from simulator.config.scenario import Scenario

__all__ = [
    "Dtype", "GpuSpec", "HardwareLibrary", "LinkSpec", "NodeSpec", "Protocol", "ResolvedCluster",
    "Scenario", "load_cluster", "load_scenario", "resolve_cluster", "scenario_from_mapping",
    "scenario_from_text",
]
