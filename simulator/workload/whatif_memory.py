"""Memory the training what-ifs add to one GPU of a stage (docs/what_ifs.md).

- gradient compression: its error-feedback, send/receive and low-rank buffers
  (:attr:`simulator.workload.compression.Compression.buffer_bytes`);
- DiLoCo (``sync_every > 1``; Douillard et al. 2023, arXiv:2311.08105, Algorithm 1): the
  outer optimizer keeps the weights of the last synchronisation and a Nesterov momentum,
  both fp32: :data:`OUTER_BYTES_PER_PARAM` per parameter.

Nothing is added with data parallelism 1 (nothing is exchanged).
"""

from __future__ import annotations

import math

from simulator.config.scenario import ModelConfig, ParallelismConfig, TrainingConfig
from simulator.workload.compression import compression
from simulator.workload.matrices import stage_matrices

OUTER_BYTES_PER_PARAM = 8.0
"""fp32 anchor weights (4 B) and fp32 outer momentum (4 B) per parameter."""


def what_if_buffers(model: ModelConfig, training: TrainingConfig, par: ParallelismConfig,
                    layers: int, first: bool, last: bool, dp: int, params: float,
                    grad_bytes: float, bucket_bytes: float) -> tuple[tuple[str, float], ...]:
    """(part name, bytes) the what-ifs add; ``params`` are the stage's parameters on one GPU,
    ``grad_bytes`` bytes per gradient element of the reduction."""
    out = []
    if training.gradient_compression is not None and dp > 1:
        matrices = stage_matrices(model, par, layers, first, last)
        buckets = max(math.ceil(params * grad_bytes / bucket_bytes), 1)
        plan = compression(training.gradient_compression, params, matrices, grad_bytes, dp, buckets)
        out.append(("compression buffers", plan.buffer_bytes))
    if training.sync_every > 1 and dp > 1:
        out.append(("outer optimizer (DiLoCo)", OUTER_BYTES_PER_PARAM * params))
    return tuple(out)
