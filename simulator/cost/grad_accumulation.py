"""Gradient accumulation over a step's microbatches outside the weight-gradient GEMM
(ZeRO 0-2 stacks whose ``data_parallel.grad_accumulation`` is ``add`` or ``upcast_add``).

Megatron-Core without ``gradient_accumulation_fusion`` (which needs APEX's
``fused_weight_gradient_mlp_cuda``; off in ROCm builds such as Primus) lets the weight-gradient
GEMM write a fresh gradient in the parameter dtype, and the DDP backward hook adds it into the
fp32 main gradient: ``param.main_grad.add_(param.grad.data)``
(megatron/core/distributed/distributed_data_parallel.py, ``_make_backward_post_hook``,
core_v0.12.0). PyTorch's in-place add casts the bf16 operand inside the kernel (TensorIterator's
dynamic casting; no temporary), so it reads ``g`` and ``r`` and writes ``r`` bytes (``add``):

    bytes per parameter per microbatch = g + 2 r

DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py, v0.6.5, ``update_hp_grads``)
keeps a full fp32 gradient buffer and, after every microbatch's backward, adds each parameter's
bf16 gradient into it: ``hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype))``. The cast
materialises a temporary (read ``g``, write ``r`` bytes per parameter) and the in-place add
reads the buffer and the temporary and writes the buffer (``3 r``):

    bytes per parameter per microbatch = g + 4 r

(``g`` the gradient's bytes as autograd makes it, ``r`` the accumulation dtype's; 18 for bf16
into fp32; ``upcast_add``), memory-bound, on every stage's own parameters, its experts
included. Megatron fuses the same sum into
the weight-gradient GEMM (``gradient_accumulation_fusion``), and autograd's own accumulation
into ``.grad`` is part of the backward already, hence ``fused`` costs nothing here.
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.config.stack import GradAccumulation
from simulator.cost.sharding import autograd_gradient_bytes
from simulator.workload.memory import stage_parameters

__all__ = ["accumulation_bytes_per_param", "upcast_accumulation_bytes_per_param",
           "upcast_accumulation_seconds"]


def upcast_accumulation_bytes_per_param(grad_bytes: float, accumulation_bytes: float) -> float:
    """``g + 4 r``: the cast's read and write plus the in-place add's two reads and a write."""
    return grad_bytes + 4.0 * accumulation_bytes


def accumulation_bytes_per_param(kind: GradAccumulation, grad_bytes: float,
                                 accumulation_bytes: float) -> float:
    """Bytes per parameter per microbatch of ``kind`` (module docstring): ``g + 2 r`` for
    ``add``, ``g + 4 r`` for ``upcast_add``, 0 for ``fused``."""
    if kind == GradAccumulation.ADD:
        return grad_bytes + 2.0 * accumulation_bytes
    if kind == GradAccumulation.UPCAST_ADD:
        return upcast_accumulation_bytes_per_param(grad_bytes, accumulation_bytes)
    return 0.0


def upcast_accumulation_seconds(ctx, layers: int, first: bool, last: bool, dense_layers: int = 0,
                                mtp_layers: int = 0, pattern: str = "") -> float:
    """Seconds per microbatch a stage of ``layers`` layers spends adding its gradients (dense
    and expert) into the accumulation buffer (module docstring); 0 with ``fused``
    accumulation or ZeRO 3."""
    sc = ctx.scenario
    data_parallel = scenario_stack(sc).data_parallel
    if data_parallel.grad_accumulation == GradAccumulation.FUSED or sc.parallelism.zero_stage >= 3:
        return 0.0
    accumulated = data_parallel.accumulation_dtype.nbytes(Dtype(sc.training.dtype))
    per_param = accumulation_bytes_per_param(data_parallel.grad_accumulation,
                                             autograd_gradient_bytes(sc), accumulated)
    params = sum(stage_parameters(sc.model, sc.parallelism, layers, first, last, dense_layers, mtp_layers,
                                  pattern))
    return float(ctx.compute.memory_time(per_param * params))
