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
  (``FSDPParam.to_accumulated_grad_if_needed``: fp32 under ``reduce_dtype=float32``); experts
  outside the units (``experts_outside_units``) accumulate in their own gradients instead.

A unit is one transformer layer (``sharding.unit: layer``): its non-expert weights and, for a
mixture of experts, only this GPU's ``E / ep`` experts (:func:`unit_parameters`); for
per-parameter gathering (DeepSpeed 2021) one layer bounds the live parameters.
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.config.stack import ReduceDtype, StackProfile
from simulator.workload.params import dense_layer_parameters, layer_parameters
from simulator.workload.runtime_memory import expert_shard_size


def unsharded_bytes(stack: StackProfile, model: ModelConfig, par: ParallelismConfig, dtype: Dtype,
                    stage: tuple[float, float], layers_on_stage: int, microbatches: int,
                    shard: int, pattern: str = "") -> tuple[float, float]:
    """(weight bytes, gradient bytes) held unsharded on one GPU at the peak (module
    docstring); ``stage`` is the stage's (dense, expert) parameters per GPU before sharding
    (:func:`simulator.workload.memory.stage_parameters`), ``shard`` the dense weights' shard
    group size. A hybrid stage (its ``pattern``) holds one unit per layer of its kind
    (:func:`stage_units`): the gathered units at the peak are its largest."""
    sharding = stack.sharding
    dense_units, units = stage_units(model, par, shard, layers_on_stage, pattern)
    root = max(stage[0] - dense_units, 0.0)
    layer_bytes = sharding.param_gather_dtype.nbytes(dtype)
    grad_bytes = sharding.grad_reduce_dtype.nbytes(dtype)
    held = len(units)
    if sharding.reshard_after_forward:
        held = min(sharding.prefetch + 1, len(units))
    gathered = sum(units[:held]) if pattern else held * (units[0] if units else 0.0)
    weights = gathered * layer_bytes + root * ReduceDtype.PARAM.nbytes(dtype)
    accumulating = not sharding.reduce_every_microbatch and microbatches > 1
    reduced = _accumulated(sharding, par, stage, shard) if accumulating else (units[0] if units else 0.0)
    return weights, reduced * grad_bytes


def _accumulated(sharding, par: ParallelismConfig, stage: tuple[float, float], shard: int) -> float:
    """Parameters whose unsharded gradients accumulate over the microbatches: all the stage's,
    but its experts' where they sit outside the FSDP units (``sharding.experts_outside_units``)
    because their shard group has one rank."""
    outside = sharding.experts_outside_units and expert_shard_size(par, shard) <= 1
    return stage[0] if outside else stage[0] + stage[1]


def stage_units(model: ModelConfig, par: ParallelismConfig, shard: int, layers_on_stage: int,
                pattern: str = "") -> tuple[float, list[float]]:
    """(dense parameters of all a stage's gathered units, each unit's parameters, largest first)
    on one GPU (:func:`unit_parameters`): ``layers_on_stage`` of the model's layer, or one per
    character of a hybrid stage's ``pattern``, each of its kind
    (:meth:`~simulator.config.scenario.ModelConfig.sublayer_model`)."""
    if not pattern:
        dense, unit = unit_parameters(model, par, shard)
        return layers_on_stage * dense, [unit] * layers_on_stage
    kinds = {kind: unit_parameters(model.sublayer_model(kind), par, shard) for kind in set(pattern)}
    return (sum(kinds[kind][0] for kind in pattern),
            sorted((kinds[kind][1] for kind in pattern), reverse=True))


def unit_parameters(model: ModelConfig, par: ParallelismConfig, shard: int) -> tuple[float, float]:
    """(dense, all) parameters of one gathered unit (a transformer layer) on one GPU: the
    layer's non-expert part over ``t``, plus, for a mixture of experts, the GPU's own experts,
    ``E / ep`` of them over ``etp``, when they are sharded at all: the expert-parallel ranks
    hold different experts, so a gather over the expert-data-parallel group
    (:func:`~simulator.workload.runtime_memory.expert_shard_size` ranks) materialises only those, and
    with one rank there is nothing to gather (the experts stay resident, counted in the
    sharded state)."""
    dense = dense_layer_parameters(model)
    gathered_experts = local_experts_gathered(model, par, shard)
    per_expert = (layer_parameters(model) - dense) / model.experts
    expert_tp = par.expert_tp if model.experts > 1 else par.tp
    return dense / par.tp, dense / par.tp + gathered_experts * per_expert / expert_tp


def local_experts_gathered(model: ModelConfig, par: ParallelismConfig, shard: int) -> int:
    """Experts' MLPs a ZeRO-3 unit gathers on one GPU when the dense state is sharded over
    ``shard`` ranks: a dense model's one MLP; for a mixture of experts its ``E / ep`` experts
    when their expert-data-parallel group (:func:`expert_shard_size` ranks) has more than one
    rank, else none."""
    if model.experts == 1:
        return 1
    return model.experts // par.ep if expert_shard_size(par, shard) > 1 else 0
