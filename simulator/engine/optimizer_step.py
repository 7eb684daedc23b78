"""Seconds of the optimizer step on one GPU of a pipeline stage: Adam's fused memory-bound update,
or Muon's elementwise passes and Newton-Schulz GEMMs (:mod:`simulator.workload.muon`).

Both engines add it once per step, after the gradients are in (the analytical engine's fixed
part, the event replay's optimizer row).
"""

from __future__ import annotations

from simulator.config.optimizer import OptimizerConfig
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.cost.compute import ComputeModel
from simulator.cost.newton_schulz import newton_schulz_seconds
from simulator.workload.matrices import matrix_elements
from simulator.workload.memory import stage_parameters
from simulator.workload.muon import elementwise_bytes, stage_matrices

__all__ = ["ADAM_BYTES_PER_PARAM", "adam_bytes_per_param", "update_seconds"]

ADAM_BYTES_PER_PARAM = 34.0
"""Adam update traffic per parameter: read and write the fp32 master weight, m and v (24 B), read
the gradient (4 B), write the bf16 weight (2 B), plus the fp32 gradient's unscale pass (4 B)."""
ADAM_STATE_BYTES = 12.0
"""The state of :data:`ADAM_BYTES_PER_PARAM`: fp32 master weight, m and v."""


def adam_bytes_per_param(state_bytes: float | None) -> float:
    """Adam's update traffic per parameter with ``state_bytes`` of optimizer state (None: 12):
    the state read and written, plus the gradient, weight and unscale traffic,
    ``2 S + (34 - 24)`` bytes."""
    state = ADAM_STATE_BYTES if state_bytes is None else state_bytes
    return ADAM_BYTES_PER_PARAM + 2.0 * (state - ADAM_STATE_BYTES)


def update_seconds(compute: ComputeModel, model: ModelConfig, par: ParallelismConfig,
                   optimizer: OptimizerConfig, kind: tuple, shards: tuple[int, int],
                   state_bytes: float | None = None) -> float:
    """Seconds of one GPU's update of stage ``kind`` (:func:`~simulator.workload.stage_layers.stage_kinds`)
    with its state sharded over ``shards`` (dense, expert) ranks: Adam's ``34 P / s`` bytes
    (:func:`adam_bytes_per_param` of the precision-aware optimizer's ``state_bytes``); under
    Muon the matrices' elementwise bytes and Newton-Schulz GEMMs over their shard and Adam's
    bytes for the rest (embeddings, norms)."""
    dense, expert = stage_parameters(model, par, *kind)
    if not optimizer.muon:
        per_param = adam_bytes_per_param(state_bytes)
        return float(compute.memory_time(per_param * (dense / shards[0] + expert / shards[1])))
    layers, _, _, dense_layers, mtp_layers, _ = kind
    matrices = stage_matrices(model, par, optimizer.split_qkv, layers, dense_layers, mtp_layers)
    muon = tuple(matrix_elements(group) for group in matrices)
    # norms, biases and embeddings; 0 where the tensor-parallel split of the parameter count
    # (replicated routers and norms counted once per rank, an O(1/h) difference) says less
    adam = (max(0.0, dense - muon[0]), max(0.0, expert - muon[1]))
    nbytes = sum((ADAM_BYTES_PER_PARAM * a + elementwise_bytes(optimizer) * m) / s
                 for a, m, s in zip(adam, muon, shards, strict=True))
    gemms = sum(newton_schulz_seconds(compute, group, optimizer.ns_steps) / s
                for group, s in zip(matrices, shards, strict=True))
    return float(compute.memory_time(nbytes)) + gemms

