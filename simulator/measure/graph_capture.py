"""How much of a trace's GPU work a job replays from CUDA graphs: the measured counterpart
of the stack field ``kernels.cuda_graphs`` (docs/stacks.md).

CUPTI gives every kernel a captured graph replays the correlation id of the
``cudaGraphLaunch`` call that launched the graph (PyTorch's profiler records that call as a
``cuda_runtime`` event), so a kernel is *replayed* when its launch call is a graph launch
(:mod:`simulator.measure.collect`). Over the compute kernels (NCCL's left out, whose time is
the peers' as much as the GPU's), the summary is the replayed share of the kernels and of
their GPU time, and the field value it points to:

- ``none`` when no kernel is replayed;
- ``full`` when at least :data:`FULL_SHARE` of the compute kernels' time is replayed (every
  layer captured: per-layer graphs or the whole forward-backward; the optimizer step and
  what runs outside the layers stay eager);
- ``partial`` otherwise (some modules of each layer).
"""

from __future__ import annotations

import pandas as pd

from simulator.measure.classify import compute_kernels

FULL_SHARE = 0.8
"""Replayed share of the compute kernels' time from which a trace reads as ``full``: a
judgement, not a measurement (per-layer and whole-iteration capture leave the optimizer step,
and per-layer capture the embedding and the loss, eager; those are taken to be under a fifth
of the compute's time)."""


def graph_summary(kernels: pd.DataFrame) -> dict[str, float | int | str] | None:
    """``kernels``, ``replayed``, ``kernel_share``, ``time_share`` and ``cuda_graphs`` (module
    docstring) over the compute kernels of a :class:`~simulator.measure.kineto.KinetoTrace`
    ``kernels`` frame whose launch call is in the trace; None when there are none."""
    known = kernels[compute_kernels(kernels) & kernels["launch_s"].notna().to_numpy()]
    if known.empty:
        return None
    replayed = known["from_graph"].to_numpy()
    busy = known["dur_s"].to_numpy()
    time_share = float(busy[replayed].sum() / busy.sum()) if busy.sum() > 0 else float(replayed.mean())
    mode = "none" if not replayed.any() else "full" if time_share >= FULL_SHARE else "partial"
    return {"kernels": int(len(known)), "replayed": int(replayed.sum()),
            "kernel_share": float(replayed.mean()), "time_share": time_share, "cuda_graphs": mode}
