"""Evaluate many parallel layouts of one model on one cluster (the fast path for sweeps).

The cluster graph, routes and collective cost terms are built once and shared; each
layout only re-prices its kernels and reuses cached collective terms for groups it
shares with earlier layouts. Infeasible layouts are rows with the reason, not errors.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product

import pandas as pd

from simulator.config.checks import check_scenario
from simulator.config.resolved import ResolvedCluster
from simulator.config.scenario import Scenario
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.errors import ClusterSimError

PARALLELISM_KEYS = {"tp", "pp", "dp", "cp", "ep", "sequence_parallel", "schedule",
                    "virtual_stages", "zero_stage", "recompute", "overlap_grad_reduce"}
TRAINING_KEYS = {"micro_batch", "global_batch"}


def layout_grid(**choices) -> list[dict]:
    """Cartesian product of keyword choices: ``layout_grid(tp=[1, 2], pp=[1, 4])``."""
    keys = list(choices)
    return [dict(zip(keys, values, strict=True)) for values in product(*choices.values())]


def evaluate_layouts(scenario: Scenario, hardware: ResolvedCluster, collectives: CollectiveModel,
                     layouts: Iterable[dict]) -> pd.DataFrame:
    """One row per layout: its settings, the headline results, or why it is infeasible."""
    rows = []
    for layout in layouts:
        row = dict(layout)
        try:
            variant = apply_layout(scenario, layout)
            check_scenario(variant, hardware)
            result = simulate_step(variant, collectives)
        except ClusterSimError as exc:
            row.update(status=str(exc))
        else:
            row.update(status="ok", step_time_s=result.step_time_s, mfu=result.mfu,
                       tokens_per_s=result.tokens_per_s, bubble_fraction=result.bubble_fraction,
                       memory_per_gpu_bytes=result.memory_per_gpu_bytes,
                       fits_in_memory=result.fits_in_memory)
        rows.append(row)
    return pd.DataFrame(rows)


def apply_layout(scenario: Scenario, layout: dict) -> Scenario:
    """``scenario`` with parallelism/training keys replaced (types validated by pydantic).

    ``dp`` defaults to the GPU count over tp*pp*cp when a layout does not give it.
    """
    unknown = set(layout) - PARALLELISM_KEYS - TRAINING_KEYS
    if unknown:
        raise ValueError(f"unknown layout keys: {sorted(unknown)}")
    par = {k: v for k, v in layout.items() if k in PARALLELISM_KEYS}
    par.setdefault("dp", None)
    training = {k: v for k, v in layout.items() if k in TRAINING_KEYS}
    parallelism = type(scenario.parallelism).model_validate(
        {**scenario.parallelism.model_dump(), **par})
    training_cfg = type(scenario.training).model_validate(
        {**scenario.training.model_dump(), **training})
    return scenario.model_copy(update={"parallelism": parallelism, "training": training_cfg})
