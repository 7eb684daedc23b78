"""Flow-level network for the discrete-event engine: max-min fair sharing of links.

Active flows share every link they cross; rates are the max-min fair allocation
(progressive filling: repeatedly saturate the link with the smallest fair share and
freeze its flows; Bertsekas & Gallager, "Data Networks", sec. 6.5.2). Rates are
recomputed whenever a flow starts or ends. A flow of ``n`` bytes that is alone on its
path finishes after ``latency + n / min(capacity on its path)``.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
import simpy


def max_min_rates(paths: list[np.ndarray], capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rate (B/s) of each flow; ``paths[i]`` are the edge ids flow i crosses."""
    lengths = np.array([len(p) for p in paths])
    rates = np.where(lengths == 0, np.inf, 0.0)
    if not lengths.any():
        return rates
    rows = np.repeat(np.arange(len(paths)), lengths)
    incidence = sp.csr_matrix((np.ones(rows.size), (rows, np.concatenate(paths))),
                              shape=(len(paths), len(capacity)))
    left = capacity.astype(np.float64).copy()
    active = lengths > 0
    while active.any():
        counts = incidence.T @ active.astype(np.float64)
        used = counts > 0
        share = np.full(len(capacity), np.inf)
        share[used] = left[used] / counts[used]
        level = share.min()
        saturated = (share <= level * (1 + 1e-12)).astype(np.float64)
        frozen = active & ((incidence @ saturated) > 0)
        rates[frozen] = level
        left -= level * (incidence.T @ frozen.astype(np.float64))
        active &= ~frozen
    return rates


class FlowNetwork:
    """Flows on a graph's edges inside a simpy environment (``contention`` shares links)."""

    def __init__(self, env: simpy.Environment, capacity: np.ndarray):
        self.env = env
        self.capacity = capacity
        self._flows: dict[int, list] = {}   # id -> [path, bytes left, done event, bytes]
        self._ids = itertools.count()
        self._rates: dict[int, float] = {}
        self._updated = 0.0
        self._wakeup: simpy.Event | None = None
        self._edge_flows = np.zeros(len(capacity), dtype=np.int64)
        env.process(self._run())

    def transfer(self, path: np.ndarray, nbytes: float, latency: float):
        """A simpy process: wait ``latency``, then move ``nbytes`` over ``path`` at a fair rate."""
        yield self.env.timeout(latency)
        if nbytes <= 0 or len(path) == 0:
            return
        done = self.env.event()
        self._advance()
        fid = next(self._ids)
        self._flows[fid] = [path, float(nbytes), done, float(nbytes)]
        shared = bool(self._edge_flows[path].any())
        self._edge_flows[path] += 1
        if shared:
            self._reschedule()
        else:                       # alone on its links: nobody else's rate changes
            self._rates[fid] = float(self.capacity[path].min())
            self._poke()
        yield done

    def _advance(self) -> None:
        elapsed = self.env.now - self._updated
        for fid, flow in self._flows.items():
            flow[1] -= self._rates.get(fid, 0.0) * elapsed
        self._updated = self.env.now

    def _reschedule(self) -> None:
        ids = list(self._flows)
        rates = max_min_rates([self._flows[i][0] for i in ids], self.capacity)
        self._rates = dict(zip(ids, rates, strict=True))
        self._poke()

    def _poke(self) -> None:
        if self._wakeup is not None and not self._wakeup.triggered:
            self._wakeup.succeed()

    def _run(self):
        while True:
            finish = [(max(f[1], 0.0) / self._rates[i], i) for i, f in self._flows.items()]
            self._wakeup = self.env.event()
            if finish:
                wait, _ = min(finish)
                yield self.env.timeout(wait) | self._wakeup
            else:
                yield self._wakeup
            self._advance()
            finished = [i for i, f in self._flows.items() if f[1] <= 1e-9 * f[3]]
            shared = False
            for i in finished:
                path, _, done, _ = self._flows.pop(i)
                self._rates.pop(i, None)
                self._edge_flows[path] -= 1
                shared |= bool(self._edge_flows[path].any())
                done.succeed()
            if shared:
                self._reschedule()
