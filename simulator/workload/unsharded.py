"""Unsharded weights and gradients a ZeRO-3 / FSDP stack holds at the memory peak.

The sharded model state (16 B per parameter over the shard group, ZeRO [R20]) is
:func:`simulator.workload.memory.model_state_bytes`. On top of it each GPU materialises,
following the stack's ``sharding`` profile (PyTorch FSDP2 ``_fsdp_param.py`` /
``_fsdp_param_group.py``; DeepSpeed ZeRO-3 partitioned parameters):

- weights: ``prefetch + 1`` units gathered at once; with ``reshard_after_forward: false``
  every unit of the stage stays gathered from its forward to its backward (torchtitan
  under pipeline parallelism), so the whole stage is unsharded at the peak. The root unit
  (embedding, final norm, output layer) is not resharded after forward (FSDP2 keeps the
  root gathered since backward needs it at once). Bytes per element: the layers' all-gather
  dtype (``param_gather_dtype``; fp8 all-gathered Float8Linear weights are 1 byte), the
  training dtype for the root.
- gradients: one unit's unsharded gradient before its reduce-scatter; with gradient
  accumulation and ``reduce_every_microbatch: false`` the unsharded gradients of every unit
  accumulate until the last microbatch, upcast to the reduce dtype
  (``FSDPParam.to_accumulated_grad_if_needed``: fp32 under ``reduce_dtype=float32``).

A unit is one transformer layer (``sharding.unit: layer``); for per-parameter gathering
(DeepSpeed 2021) one layer bounds the live parameters.
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.config.stack import ReduceDtype, StackProfile
from simulator.workload.params import layer_parameters


def unsharded_bytes(stack: StackProfile, model: ModelConfig, par: ParallelismConfig, dtype: Dtype,
                    stage_dense: float, layers_on_stage: int, microbatches: int) -> tuple[float, float]:
    """(weight bytes, gradient bytes) held unsharded on one GPU at the peak (module
    docstring); ``stage_dense`` is the stage's dense parameters per GPU before sharding."""
    sharding = stack.sharding
    unit = layer_parameters(model) / par.tp
    root = max(stage_dense - layers_on_stage * unit, 0.0)
    layer_bytes = sharding.param_gather_dtype.nbytes(dtype)
    grad_bytes = sharding.grad_reduce_dtype.nbytes(dtype)
    units = layers_on_stage
    if sharding.reshard_after_forward:
        units = min(sharding.prefetch + 1, layers_on_stage)
    weights = units * unit * layer_bytes + root * ReduceDtype.PARAM.nbytes(dtype)
    accumulating = not sharding.reduce_every_microbatch and microbatches > 1
    reduced = stage_dense if accumulating else unit
    return weights, reduced * grad_bytes
