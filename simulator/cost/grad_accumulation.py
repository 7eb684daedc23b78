"""Gradient accumulation over a step's microbatches outside the weight-gradient GEMM
(ZeRO 0-2 stacks whose ``data_parallel.grad_accumulation`` is ``upcast_add``).

DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py, v0.6.5, ``update_hp_grads``)
keeps a full fp32 gradient buffer and, after every microbatch's backward, adds each parameter's
bf16 gradient into it: ``hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype))``. The cast
materialises a temporary (read ``g``, write ``r`` bytes per parameter) and the in-place add
reads the buffer and the temporary and writes the buffer (``3 r``):

    bytes per parameter per microbatch = g + 4 r

(``g`` the gradient's bytes as autograd makes it, ``r`` the accumulation dtype's; 18 for bf16
into fp32), memory-bound, on every stage's own parameters. Megatron fuses the same sum into
the weight-gradient GEMM (``gradient_accumulation_fusion``), and autograd's own accumulation
into ``.grad`` is part of the backward already, hence ``fused`` costs nothing here.
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.loader import scenario_stack
from simulator.config.stack import GradAccumulation
from simulator.cost.sharding import autograd_gradient_bytes
from simulator.workload.memory import stage_parameters

__all__ = ["upcast_accumulation_bytes_per_param", "upcast_accumulation_seconds"]


def upcast_accumulation_bytes_per_param(grad_bytes: float, accumulation_bytes: float) -> float:
    """``g + 4 r``: the cast's read and write plus the in-place add's two reads and a write."""
    return grad_bytes + 4.0 * accumulation_bytes


def upcast_accumulation_seconds(ctx, layers: int, first: bool, last: bool) -> float:
    """Seconds per microbatch a stage of ``layers`` layers spends adding its gradients into
    the accumulation buffer (module docstring); 0 with ``fused`` accumulation or ZeRO 3."""
    sc = ctx.scenario
    stack = scenario_stack(sc)
    if stack.data_parallel.grad_accumulation != GradAccumulation.UPCAST_ADD or sc.parallelism.zero_stage >= 3:
        return 0.0
    accumulated = stack.data_parallel.accumulation_dtype.nbytes(Dtype(sc.training.dtype))
    per_param = upcast_accumulation_bytes_per_param(autograd_gradient_bytes(sc), accumulated)
    params = stage_parameters(sc.model, sc.parallelism, layers, first, last)[0]
    return float(ctx.compute.memory_time(per_param * params))
