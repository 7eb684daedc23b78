"""The interleaved schedule's warm-up count (``simulator.workload.warmup``), the one number the
task order, the activations in flight and the expert overlap's lone passes share: Megatron-LM's
``2 (p - i - 1) + (v - 1) p`` capped at ``m v`` (every forward first when ``m == p``), and
PyTorch's rounds of ``q`` microbatches."""

from __future__ import annotations

import numpy as np

from simulator.config.scenario import Schedule
from simulator.workload.taskgraph import stage_order
from simulator.workload.warmup import interleaved_warmup


def test_megatron_counts():
    """p 4, v 2, m 8: rank 0 runs 2*3 + 1*4 = 10 forwards first, rank 3 runs 4; with m == p
    every rank runs all m v = 8 first; the cap is m v."""
    assert [interleaved_warmup(4, i, 8, 2) for i in range(4)] == [10, 8, 6, 4]
    assert [interleaved_warmup(4, i, 4, 2) for i in range(4)] == [8, 8, 8, 8]
    assert interleaved_warmup(8, 0, 3, 2) == 6


def test_arrays_give_the_scalar_counts():
    ranks = np.arange(4)[:, None]
    for m in (4, 8, 12):
        got = interleaved_warmup(4, ranks, m, 3)
        assert got.shape == (4, 1)
        assert list(got[:, 0]) == [interleaved_warmup(4, i, m, 3) for i in range(4)]


def test_torch_rounds_replace_p():
    """PyTorch's ScheduleInterleaved1F1B: ``(v - 1) q + 2 (p - 1 - i)``, no m == p rule."""
    assert interleaved_warmup(4, 0, 4, 2, round_size=4) == 8      # min(4 + 6, 8)
    assert interleaved_warmup(4, 3, 4, 2, round_size=4) == 4
    assert interleaved_warmup(4, 1, 16, 3, round_size=2) == 2 * 2 + 2 * 2


def test_the_task_order_starts_with_that_many_forwards():
    """The warm-up forwards, then the first steady pair's forward, then the first backward."""
    for m in (4, 8):
        for stage in range(4):
            order = stage_order(Schedule.INTERLEAVED, 4, stage, m, 2)
            first_backward = next(k for k, task in enumerate(order) if not task.forward)
            assert first_backward == min(interleaved_warmup(4, stage, m, 2) + 1, m * 2)
