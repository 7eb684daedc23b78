"""Warm-up forward passes of the interleaved 1F1B schedule, the one count the schedule's task
order, the activation memory in flight and the expert overlap's lone passes all read.

Megatron-LM (``megatron/core/pipeline_parallel/schedules.py``,
``forward_backward_pipelining_with_interleaving``): pipeline rank ``i`` of ``p``, with ``v``
model chunks and ``m`` microbatches, runs ``2 (p - i - 1) + (v - 1) p`` forward chunk passes
before its first backward, at most all ``m v`` of them, and every forward first when
``m == p`` (``all_warmup_microbatches``). PyTorch's ``ScheduleInterleaved1F1B``
(torch.distributed.pipelining) counts rounds of ``q`` microbatches instead of ``p``:
``(v - 1) q + 2 (p - 1 - i)``, with no ``m == p`` rule.
"""

from __future__ import annotations

import numpy as np


def interleaved_warmup(p: int, stage, m: int, v: int, round_size: int | None = None):
    """Warm-up forward chunk passes of pipeline rank ``stage`` (an int, or an array of ranks):
    ``min(2 (p - stage - 1) + (v - 1) g, m v)`` with ``g = p`` (Megatron, every pass when
    ``m == p``) or ``g = round_size`` (PyTorch's interleaved schedule)."""
    total = m * v
    if round_size is None and m == p:
        return total if np.isscalar(stage) else np.full(np.shape(stage), total)
    group = p if round_size is None else round_size
    count = np.minimum(2 * (p - stage - 1) + (v - 1) * group, total)
    return int(count) if np.isscalar(stage) else count
