"""The input pipeline of one data-parallel replica: how long its loader takes to make a
batch, and when a step waits for it (docs/what_ifs.md).

A replica consumes ``S = global_batch / dp`` samples per step. Its loader has ``W`` worker
processes; each sample is one storage request (latency ``l``) of ``b`` bytes, then ``c``
seconds of CPU preprocessing in a worker. The ``R`` replicas whose first pipeline stage
sits on one server share its storage bandwidth ``B``. The loader is as fast as its slower
resource (workers or storage):

    T_load = max(S (l + c) / W,  S b R / B)

(PyTorch ``DataLoader``: each worker fetches and transforms its samples one after another,
the workers run in parallel.) The loader keeps up to ``D`` batches ready (prefetch); the
step consumes one when it starts. In steady state the queue never runs dry when
``T_load <= T_step``, so the step does not change; otherwise it drains (after about
``D T_step / (T_load - T_step)`` steps) and every step then waits ``T_load - T_step``:

    step = max(T_step, T_load),   stall = max(0, T_load - T_step).

With jitter the discrete-event engine replays the queue step by step
(:func:`queue_stalls`), and occasional slow batches show in the tail of the steps.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simulator.config.whatif_training import DataLoaderConfig


def load_seconds(cfg: DataLoaderConfig, samples: float, replicas_per_node: int) -> float:
    """``T_load`` (s): one replica's loader making a batch of ``samples`` (module formula)."""
    workers = samples * (cfg.request_latency_s + cfg.cpu_s_per_sample) / cfg.workers
    storage = samples * cfg.sample_bytes * replicas_per_node / cfg.storage_Bps
    return max(workers, storage)


def replicas_per_node(entry_gpus, gpus_per_node: int) -> int:
    """The most replicas whose first-stage GPU (``entry_gpus``, one per replica) shares a server."""
    nodes = np.asarray(entry_gpus, dtype=np.int64) // gpus_per_node
    return int(np.bincount(nodes).max())


class LoaderQueue:
    """The prefetch queue of every replica, advanced block by block of steps.

    Parameters
    ----------
    depth : int
        Prefetch depth ``D``; the queue is full when the run starts.
    replicas : int
        Loaders ``R`` (columns of the loads given to :meth:`advance`).

    Notes
    -----
    Max-plus recurrence over batches ``i`` (batches ``i < D`` are ready at 0;
    ``start_j = 0`` for ``j < 0``)::

        ready_{i,r} = max(ready_{i-1,r}, start_{i-D}) + L_{i,r}      (i >= D)
        start_i     = max(end_{i-1}, max_r ready_{i,r})
        end_i       = start_i + tau_i,   stall_i = start_i - end_{i-1}

    A loader starts a batch when it has finished the previous one and a slot is free (the
    step ``D`` before consumed its batch). A step starts when every replica has its batch
    (the replicas meet at the gradient reduction, so the slowest batch gates the step).
    """

    def __init__(self, depth: int, replicas: int):
        self.depth = depth
        self.ready = np.zeros(replicas)
        self.starts: deque[float] = deque(maxlen=depth)    # the last ``depth`` step starts
        self.end = 0.0
        self.index = 0

    def advance(self, steps: np.ndarray, loads: np.ndarray) -> np.ndarray:
        """Stall (s) of each step of the block; ``steps`` (k,) are the durations without
        waiting, ``loads`` (k, R) each replica's seconds for its batch."""
        stall = np.zeros(steps.shape[0])
        for i in range(steps.shape[0]):
            if self.index >= self.depth:
                self.ready = np.maximum(self.ready, self.starts[0]) + loads[i]
            latest = float(self.ready.max())
            if latest > self.end:
                stall[i] = latest - self.end
            start = self.end + stall[i]
            self.starts.append(start)
            self.end = start + float(steps[i])
            self.index += 1
        return stall
