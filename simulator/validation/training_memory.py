"""A Megatron training log's memory figures, in the terms of the model's memory parts.

Megatron-LM's ``report_memory`` prints, once, after the first iteration, rank 0's
``torch.cuda.memory_allocated()`` and ``max_memory_allocated()`` (in MiB, "MB"); AMD's Primus
launcher and ROCm Megatron-LM print the device memory in use every iteration
(``torch.cuda.mem_get_info()``: total - free). Each is a different cut of the model's parts
(:func:`simulator.workload.memory.memory_parts`, the busiest GPU of stage 0, which rank 0 is):

- ``allocated_after_step1``: what stays allocated between steps, the resident model state:
  weights, gradients (Megatron keeps its gradient buffer; FSDP2 its sharded gradients until the
  next ``zero_grad``), optimizer state and the fp8 weight cache, without ZeRO-3's transient
  unsharded weights and gradients (:func:`simulator.workload.unsharded.unsharded_bytes`).
- ``max_allocated_step1``: the first step's peak. Adam's moments do not exist yet during its
  forward and backward: PyTorch's ``Adam`` creates ``exp_avg`` and ``exp_avg_sq`` at the first
  ``step()`` (``torch/optim/adam.py`` ``_init_group``: ``if len(state) == 0``), as
  TransformerEngine's and Apex's ``FusedAdam`` do, and Megatron-Core's optimizers wrap them. So
  the peak is the model's allocated peak (every part but the CUDA context, NCCL buffers and
  the allocator's fragmentation) less the moments: 8 of the 12 bytes per parameter of the
  mixed-precision optimizer state (fp32 master weights 4, moments 8; Muon's momentum, 4 of its
  8), all of an fp32 run's.
  The Primus logs show the moments arriving: device memory in use grows after the first
  iteration by about their size (Llama 2 70B on 16 GPUs: 193.1 to 227.0 GiB; the moments of its
  FSDP2 shard 32.6 GiB).
- ``device_used_steady``: device memory in use at steady state, against the model's total
  (``memory_per_gpu_bytes``): what decides whether a run fits.
- ``max_allocated_steady``: ``torch.cuda.max_memory_allocated()`` over a run of many steps (what
  Megatron-Bridge's verification cards record as ``peak_allocated_memory_gib``): the model's
  allocated peak with the optimizer's moments, every part but the CUDA context, NCCL buffers
  and the allocator's fragmentation.
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.scenario import Scenario
from simulator.config.stack import StackProfile
from simulator.results import StepResult
from simulator.workload.memory import stage_parameters
from simulator.workload.runtime_memory import expert_shard_size, shard_group_size
from simulator.workload.stage_layers import stage_mix, stage_patterns
from simulator.workload.unsharded import unsharded_bytes

GIB = 2.0**30
RUNTIME_PARTS = ("cuda_context", "nccl_buffers", "fragmentation", "ep_buffers")
"""Parts the PyTorch caching allocator's ``allocated`` counters do not hold (DeepEP allocates its
buffer itself: :mod:`simulator.workload.dispatcher_buffers`)."""
MASTER_BYTES = 4.0
"""Bytes per parameter of the fp32 master weight in the mixed-precision optimizer state."""
METRICS = {"allocated_after_step1": "allocated after the first step (GiB)",
           "max_allocated_step1": "peak allocated in the first step (GiB)",
           "device_used_steady": "peak memory per GPU (GiB)",
           "max_allocated_steady": "peak allocated over the run (GiB)"}
"""Each quantity's metric label; the device figure is the set's peak memory (the label the
validation note's memory rows are read by, :mod:`simulator.validation.regimes`)."""


def predicted_bytes(quantity: str, scenario: Scenario, stack: StackProfile, result: StepResult) -> float:
    """The model's figure for one of :data:`METRICS`' quantities (module docstring), bytes."""
    parts = result.stages[0].memory
    if quantity == "device_used_steady":
        return result.memory_per_gpu_bytes
    if quantity == "max_allocated_steady":      # torch.cuda.max_memory_allocated over the steps
        return sum(v for k, v in parts.items() if k not in RUNTIME_PARTS)
    if quantity == "max_allocated_step1":
        allocated = sum(v for k, v in parts.items() if k not in RUNTIME_PARTS)
        return allocated - _first_step_moments(scenario, result, parts["optimizer"])
    if quantity == "allocated_after_step1":
        state = parts["weights"] + parts["gradients"] + parts["optimizer"]
        return state + parts.get("fp8_weight_cache", 0.0) - sum(_transient_unsharded(scenario, stack, result))
    raise ValueError(f"unknown memory quantity {quantity!r}; known: {', '.join(METRICS)}")


def _first_step_moments(scenario: Scenario, result: StepResult, optimizer: float) -> float:
    """Bytes of stage 0's ``optimizer`` part the first step's forward and backward do not hold
    yet: the moments (Adam's two, Muon's momentum), all of it in fp32 training (no master copy),
    else all but the fp32 master weights, 4 bytes per parameter of the GPU's state shard (8 of
    Adam's 12, 4 of Muon's 8; the optimizers create their state at the first ``step()``). With
    the precision-aware optimizer all of it: TransformerEngine's ``FusedAdam`` creates its
    master weights with the moments (``initialize_state``, at the first step)."""
    if scenario.training.dtype == Dtype.FP32 or scenario.training.optimizer.precision_aware:
        return optimizer
    par = scenario.parallelism
    shard = _shard_group(scenario, result) if par.zero_stage >= 1 else 1
    dense, expert = _stage0_parameters(scenario, result)
    return optimizer - MASTER_BYTES * (dense / shard + expert / expert_shard_size(par, shard))


def _transient_unsharded(scenario: Scenario, stack: StackProfile, result: StepResult) -> tuple[float, float]:
    """Stage 0's ZeRO-3 unsharded (weights, gradients) at the peak, bytes; (0, 0) otherwise."""
    par = scenario.parallelism
    if par.zero_stage < 3:
        return 0.0, 0.0
    shard = _shard_group(scenario, result)
    if shard <= 1:
        return 0.0, 0.0
    return unsharded_bytes(stack, scenario.model, par, scenario.training.dtype,
                           _stage0_parameters(scenario, result), result.stages[0].layers,
                           result.microbatches, shard)


def _shard_group(scenario: Scenario, result: StepResult) -> int:
    """The ranks the run's ZeRO shards its dense state over (:func:`shard_group_size`)."""
    par = scenario.parallelism
    return shard_group_size(par, result.gpus // (par.tp * par.pp * par.cp))


def _stage0_parameters(scenario: Scenario, result: StepResult) -> tuple[float, float]:
    """(Dense, expert) parameters one GPU of stage 0 holds (:func:`stage_parameters`)."""
    par = scenario.parallelism
    return stage_parameters(scenario.model, par, result.stages[0].layers, True, par.pp == 1,
                            *stage_mix(scenario.model, par)[0], stage_patterns(scenario.model, par)[0])
