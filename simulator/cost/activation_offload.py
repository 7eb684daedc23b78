"""Activation offloading to host memory: the copies' rate and the stalls they cause.

Megatron-Core's ``cpu_offloading`` (activations only, ``cpu_offloading_num_layers`` = n) wraps
each transformer layer's forward in TransformerEngine's ``get_cpu_offload_context`` with
``model_layers`` = L, the model's layers (NVIDIA/Megatron-LM d98e8a64dd
``megatron/core/transformer/transformer_block.py``). TransformerEngine's default scheduling
(NVIDIA/TransformerEngine d0067d0 ``docs/features/other_optimizations/cpu_offloading/
cpu_offloading.rst``, ``transformer_engine/pytorch/cpu_offload.py``):

- the first n layers' saved tensors are copied to host memory as the layer saves them, on a
  stream of their own, one layer after another;
- at most L - n layers' activations are on the GPU at any time: a layer's forward waits for
  the copy that makes room for it, and in backward a layer's activations are copied back only
  when a finished backward has freed a set; a layer's backward waits for its own copy back.

:func:`offload_stalls` walks that schedule per micro-batch with every layer alike: forward
seconds ``f`` and backward ``b`` per layer, ``t`` seconds to copy one layer's activations
either way. With ``t <= f`` and n well under L the copies hide behind compute and cost nothing;
with n = L - 1 (one set on the GPU) nothing overlaps. Not modelled: the copies' share of HBM
bandwidth beside memory-bound kernels (the TransformerEngine document warns of it) and a
layer's backward starting on the tensors that are back before the rest.
"""

from __future__ import annotations

from simulator.config.resolved import ResolvedCluster
from simulator.units import GBPS_TO_BYTES_PER_S


def offload_bandwidth(hw: ResolvedCluster) -> float:
    """Bytes per second one GPU copies to (or from) host memory while every GPU does the same:
    ``min(B_link e_link / g, B_mem / (G / S))``, with the host link's per-direction rate
    ``B_link`` and efficiency ``e_link`` shared by ``g`` GPUs (the node's
    ``host_memory.gpus_per_link``, 1 by default), and one CPU socket's memory bandwidth
    ``B_mem`` (``host_memory.bandwidth_GBps``, no limit where not stated) shared by its
    ``G / S`` GPUs (the node's GPUs over its ``pcie.sockets``)."""
    link = hw.host_link or hw.pcie_link
    spec = hw.node.host_memory
    rate = link.bandwidth_Bps * link.efficiency / (spec.gpus_per_link if spec else 1)
    if spec is not None and spec.bandwidth_GBps is not None:
        per_socket = hw.node.gpus / hw.node.pcie.sockets
        rate = min(rate, spec.bandwidth_GBps * GBPS_TO_BYTES_PER_S / per_socket)
    return rate


def offload_stalls(layers: int, offloaded: int, forward: float, backward: float,
                   transfer: float) -> tuple[float, float]:
    """(forward, backward) seconds per micro-batch that ``offloaded`` of ``layers`` layers'
    activation copies add to a stage's passes (the module's schedule): the waits of its
    layers for the copies."""
    if offloaded <= 0 or transfer <= 0.0:
        return 0.0, 0.0
    keep = layers - offloaded
    return (_forward_waits(layers, offloaded, keep, forward, transfer),
            _backward_waits(layers, offloaded, keep, backward, transfer))


def _forward_waits(layers: int, offloaded: int, keep: int, forward: float, transfer: float) -> float:
    """Forward: layer j (from 1) starts after layer j - 1 and after layer j - keep's copy out;
    layer i <= n's copy starts with its forward (or the previous copy) and ends no sooner than
    its forward."""
    copied: list[float] = []
    end, copy_end, waits = 0.0, 0.0, 0.0
    for j in range(1, layers + 1):
        start = end
        if j > keep and copied[j - keep - 1] > end:
            waits += copied[j - keep - 1] - end
            start = copied[j - keep - 1]
        end = start + forward
        if j <= offloaded:
            copy_end = max(max(copy_end, start) + transfer, end)
            copied.append(copy_end)
    return waits


def _backward_waits(layers: int, offloaded: int, keep: int, backward: float, transfer: float) -> float:
    """Backward, layers L down to 1: layer i <= n's copy back (in order n, n-1, ...) starts after
    the previous one and after the (n - i + 1)-th finished backward (a set freed); the layer's
    backward waits for it."""
    finished: list[float] = []
    end, reload_end, waits = 0.0, 0.0, 0.0
    for i in range(layers, 0, -1):
        start = end
        if i <= offloaded:
            reload_end = max(reload_end, finished[offloaded - i]) + transfer
            if reload_end > end:
                waits += reload_end - end
                start = reload_end
        end = start + backward
        finished.append(end)
    return waits
