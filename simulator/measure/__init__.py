"""Importers of measured runs: PyTorch profiler (Kineto) traces, Megatron-LM logs and MLPerf
result logs (:mod:`simulator.measure.mllog`: the training step time of ``:::MLLOG`` blocks).

- :func:`read_kineto_trace`: GPU kernels by class and the per-step partition of wall time
  into compute, exposed and overlapped communication, and idle (pandas DataFrames).
- :func:`read_megatron_log` and :func:`draft_from_log`: the arguments block as a draft
  scenario, the iteration lines as the measured steady-state step time.

docs/measurements.md describes the kernel classes, the step windows and the warm-up rule.
The names below load their module on first use, so that ``clustersim`` (which registers
the import commands) does not pay for pandas and ijson at every start.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Draft": "draft", "draft_from_log": "draft",
    "KinetoTrace": "kineto", "nccl_table": "kineto", "read_kineto_trace": "kineto",
    "MegatronLog": "megatron_log", "read_megatron_log": "megatron_log",
    "render_draft": "scenario_text",
    "Measured": "steady", "SteadyState": "steady", "steady_state": "steady",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simulator.measure' has no attribute '{name}'")
    return getattr(importlib.import_module(f"simulator.measure.{_EXPORTS[name]}"), name)
