"""Seconds of Muon's Newton-Schulz iterations on a GPU (:mod:`simulator.workload.muon` says which
matrices; NVIDIA-NeMo/Emerging-Optimizers ``muon_utils.newton_schulz_step``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simulator.config.hardware import Dtype
from simulator.cost.compute import ComputeModel

__all__ = ["newton_schulz_seconds"]


def newton_schulz_seconds(compute: ComputeModel, matrices: list[tuple[float, float, float]],
                          steps: int) -> float:
    """Seconds of ``steps`` Newton-Schulz iterations on each of ``matrices`` ((rows, columns,
    count)), one after another: per iteration ``X X^T`` (``m x m``, inner ``n``), ``A A``
    (``m x m x m``) and ``B X`` (``m x n``, inner ``m``), ``m`` the smaller side, in bf16
    (:mod:`simulator.workload.muon`)."""
    if not matrices:
        return 0.0
    shapes = np.array(matrices, dtype=np.float64)
    m, n = shapes[:, :2].min(axis=1), shapes[:, :2].max(axis=1)
    bf16 = replace(compute, dtype=Dtype.BF16, fp4=False)
    per_step = bf16.gemm_time(m, m, n) + bf16.gemm_time(m, m, m) + bf16.gemm_time(m, n, m)
    return float(steps * np.dot(per_step, shapes[:, 2]))
