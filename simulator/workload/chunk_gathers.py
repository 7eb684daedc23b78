"""The weight all-gathers of an interleaved pipeline, chunk by chunk, and the time they add.

With a sharded optimizer (ZeRO 1-2) and ``overlap_param_gather``, each step starts by
all-gathering the updated weights over the data-parallel group. Under the interleaved
schedule Megatron-Core launches them one model chunk ahead (``param_sync_func``, set when
``align_param_gather`` is on, the default of Megatron-LM and of NeMo's and
Megatron-Bridge's recipes with virtual stages; NeMo 1's Apex distributed Adam is driven by
the same hook):

- chunks 0 and 1 at the start of the step;
- chunk ``c + 1`` (``c >= 1``) when virtual microbatch ``k`` starts on pipeline rank ``i``
  with ``k + i`` the first microbatch of chunk ``c`` (``k = c p - i``): every rank at about
  the moment rank 0 starts chunk ``c``;
- a chunk's first forward waits for its whole gather (its buckets are dispatched together
  and gathered in the order backward fills them, the chunk's last layer first);
- the gathers of a rank run one after another on its data-parallel communicator.

(Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``,
``forward_backward_pipelining_with_interleaving``: "Synchronize params for first two model
chunks" and ``param_sync_virtual_microbatch_id = virtual_microbatch_id +
pipeline_parallel_rank``; the same logic at df72712, the Megatron-Core of MLPerf Training
v3.1's NeMo; ``DistributedDataParallel.start_param_sync`` / ``finish_param_sync``.)

A chunk's gather therefore hides behind about ``p`` chunk forwards of rank 0's warm-up,
whatever the microbatch count: at a large data-parallel size, where the ring's gather of a
chunk takes longer than ``p`` chunk forwards, the gathers pace the warm-up and the step
grows by their excess. :func:`batch_gather_delay` evaluates the task graph with these
waits for many layouts at once, level by level as :mod:`simulator.workload.wavefront`
does; :func:`gathered_finish` is the same longest path walked task by task (its oracle in
the tests). The step's extra time is the latest finish minus that of the graph without them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from simulator.config.scenario import Schedule
from simulator.workload.taskgraph import EXACT_MICROBATCHES, Task, _chunk_task, _evaluation_order
from simulator.workload.wavefront import distinct_rows, duration_rows, lagged, relax_levels, wavefront

MAX_SHARE = 1.0 - 1e-12
"""The largest SM share a gather is taken to hold: 1 (every SM) as a limit, so that
``C / (1 - f)`` exceeds any gather (as :func:`simulator.cost.nccl_sms.overlap_slowed` does)."""


def gather_delay(forward, backward, m: int, v: int, p2p: float, gather, share=None,
                 lag: float = 0.0) -> float:
    """Seconds the chunk-ahead weight gathers add to one interleaved pipeline's step: the
    row of :func:`batch_gather_delay` for per-stage ``forward``, ``backward`` and ``gather``
    seconds, send seconds ``p2p`` (held) and ``lag`` (overlapped) and, optionally, per-stage
    SM ``share`` of the gathers."""
    f, b, g = (np.asarray(x, float)[None, :] for x in (forward, backward, gather))
    shares = None if share is None else np.asarray(share, float)[None, :]
    return float(batch_gather_delay(f, b, m, v, np.array([p2p], float), g, share=shares,
                                    lag=np.array([lag], float))[0])


def batch_gather_delay(forward: np.ndarray, backward: np.ndarray, m: int, v: int, p2p: np.ndarray,
                       gather: np.ndarray, plain: np.ndarray | None = None,
                       share: np.ndarray | None = None, lag: np.ndarray | None = None) -> np.ndarray:
    """Seconds the chunk-ahead weight gathers add to the step of each of ``n`` interleaved
    pipelines that share ``p``, ``m`` and ``v``.

    Parameters
    ----------
    forward, backward : ndarray, shape (n, p)
        Per stage, seconds of one microbatch's forward and backward over all its chunks.
    m, v : int
        Microbatches per step and chunks per stage (``v > 1``).
    p2p : ndarray, shape (n,)
        Seconds of a stage-to-stage send that hold its stage.
    gather : ndarray, shape (n, p)
        Per stage, seconds of one chunk's weight all-gather.
    plain : ndarray, shape (n,), optional
        Each row's latest finish without the gathers, where the caller already has it
        (:func:`simulator.workload.wavefront.batch_stage_clocks`, the same floating-point
        operations); used up to :data:`~simulator.workload.taskgraph.EXACT_MICROBATCHES`,
        else evaluated here.
    share : ndarray, shape (n, p), optional
        Per stage, the share of SMs NCCL's kernels hold while a gather runs
        (:func:`simulator.cost.nccl_sms.nccl_sm_share`): a task that runs beside a gather is
        slowed, ``C + f min(G, C / (1 - f))`` with ``G`` the gather's time still to run when
        the task starts (the sends are not slowed). None: not slowed.
    lag : ndarray, shape (n,), optional
        Seconds of an overlapped send (the receiver's wait only); None: none.

    Returns
    -------
    ndarray, shape (n,)
        ``max_i finish_i(with gathers) - max_i finish_i(without)`` (s), >= 0. Above
        :data:`~simulator.workload.taskgraph.EXACT_MICROBATCHES` microbatches the graph of the
        largest multiple of ``p`` below it is evaluated: the gathers touch only the first
        group of ``p`` microbatches.
    """
    p = forward.shape[1]
    if plain is not None and m <= EXACT_MICROBATCHES:
        finish = _batch_finish(forward, backward, m, v, p2p, gather, share, lag)
        return np.maximum(0.0, finish.max(axis=1) - plain)
    evaluated = m if m <= EXACT_MICROBATCHES else (EXACT_MICROBATCHES // p) * p
    shares = None if share is None else np.concatenate([share, np.zeros_like(share)])
    both = _batch_finish(np.concatenate([forward, forward]), np.concatenate([backward, backward]),
                         evaluated, v, np.concatenate([p2p, p2p]),
                         np.concatenate([gather, np.zeros_like(gather)]), shares,
                         None if lag is None else np.concatenate([lag, lag]))
    n = forward.shape[0]
    return np.maximum(0.0, both[:n].max(axis=1) - both[n:].max(axis=1))


def batch_clocks_with_gathers(forward: np.ndarray, backward: np.ndarray, m: int, v: int, p2p: np.ndarray,
                              rows: list[int], gather: np.ndarray, share: np.ndarray,
                              lag: np.ndarray | None = None
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The clocks of ``n`` interleaved pipelines (per row and stage, finish and start of the
    last task: :func:`~simulator.workload.wavefront.batch_exact_clocks`') and the chunk-ahead
    gathers' delay of the rows ``rows`` (:func:`batch_gather_delay`, per stage ``gather``
    seconds and SM ``share``), in one walk of the graph (``m`` at most
    :data:`~simulator.workload.taskgraph.EXACT_MICROBATCHES`; ``lag``: overlapped sends).

    Every row is walked without gathers as a column whose gathers take 0 s and hold no SMs:
    its waits change nothing (a chunk's gathers are launched on its stage by a task that
    starts before the chunk's first forward there, so ``max(start, ready)`` is the start)
    and its slowdowns add exactly 0, so its clocks are the plain recurrence's, bit for bit.
    Rows alike (:func:`~simulator.workload.wavefront.distinct_rows`) are walked once.
    """
    p = forward.shape[1]
    lag = np.zeros_like(p2p) if lag is None else lag
    plain, plain_of = distinct_rows(np.concatenate([forward, backward, p2p[:, None], lag[:, None]], axis=1))
    picked = np.asarray(rows)
    slow, slow_of = distinct_rows(np.concatenate([forward[picked], backward[picked], p2p[picked, None],
                                                  lag[picked, None], gather, share], axis=1))
    columns, k = np.concatenate([plain, picked[slow]]), len(plain)
    none = np.zeros((k, p))
    gathers, shares = np.concatenate([none, gather[slow]]), np.concatenate([none, share[slow]])
    finish, last_start = _batch_walk(forward[columns], backward[columns], m, v, p2p[columns], gathers,
                                     shares, slice(k, None), lag[columns])
    finish_all, last_all = finish[:k][plain_of], last_start[:k][plain_of]
    waits = np.maximum(0.0, finish[k:][slow_of].max(axis=1) - finish_all[picked].max(axis=1))
    return finish_all, last_all, waits


def _batch_finish(forward: np.ndarray, backward: np.ndarray, m: int, v: int, p2p: np.ndarray,
                  gather: np.ndarray, share: np.ndarray | None = None,
                  lag: np.ndarray | None = None) -> np.ndarray:
    """Per row and stage, the finish time (s) of the interleaved task graph whose chunk
    forwards wait for their gathers: the recurrence of
    :func:`simulator.workload.wavefront.batch_exact_clocks` with each stage's gather chain
    updated at the levels holding its launches and its waits (:func:`gathered_finish`), and
    with ``share``, each task slowed by the gather running beside it."""
    return _batch_walk(forward, backward, m, v, p2p, gather, share, lag=lag)[0]


def _batch_walk(forward: np.ndarray, backward: np.ndarray, m: int, v: int, p2p: np.ndarray,
                gather: np.ndarray, share: np.ndarray | None = None, watched: slice = slice(None),
                lag: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`_batch_finish`, the start of each stage's last task): the slowdowns are
    evaluated while a gather of the ``watched`` rows runs (the others' hold no SMs); ``lag``
    per row, the seconds of an overlapped send (None: none)."""
    f, b = forward / v, backward / v
    n, p = f.shape
    x = p2p.reshape(n, 1)
    table = np.stack([b, b + x, f, f + x], axis=2).reshape(n, 4 * p).T
    graph = wavefront(Schedule.INTERLEAVED, p, m, v)
    points = _level_points(p, m, v)
    g = gather.T                                        # (p, n)
    ready = np.zeros((p, v, n))
    ready[:, 0], ready[:, 1] = g, 2.0 * g
    done = duration_rows(table, graph)                  # durations, made finish times level by level
    slowed = None if share is None else _Slowed(f, b, share, graph.kinds, ready[:, 1].copy(), watched)
    last_point = max(points, default=-1)                # no launch nor wait after this level
    lags = lagged(graph, lag)
    for level, (start, stop, size, sources) in enumerate(graph.levels):
        if slowed is None and level > last_point:       # the rest: the graph's plain recurrence
            relax_levels(done, graph.levels[level:], lags)
            break
        if lags is not None:
            begin = lags.begin(done, start, stop, size, sources)
        else:
            waited = done.take(sources, axis=0)
            begin = np.maximum(waited[:size], waited[size:])
        for row, stage, chunk in points.get(level, ()):
            if chunk > 0:                               # launch chunk c after chunk c - 1's gather
                ready[stage, chunk] = np.maximum(begin[row], ready[stage, chunk - 1]) + g[stage]
                if slowed is not None:
                    slowed.launched(stage, ready[stage, chunk])
            else:                                       # the chunk's first forward waits for it
                np.maximum(begin[row], ready[stage, -chunk], out=begin[row])
        extra = None if slowed is None else slowed.extra(start, stop, begin)
        if extra is None and level >= last_point:
            slowed = None                               # settled (:meth:`_Slowed.extra`)
        now = done[start:stop]
        now += begin                                    # duration + start: the same sum
        if extra is not None:
            now += extra
    finish = done[graph.last_task].T
    return finish, finish - table[graph.last_kind].T


class _Slowed:
    """What NCCL's SMs take from the tasks that run beside a stage's weight gathers (see
    :func:`batch_gather_delay`'s ``share``): per stage, when its gathers end (``busy``)."""

    def __init__(self, f: np.ndarray, b: np.ndarray, share: np.ndarray, kinds: np.ndarray,
                 busy: np.ndarray, watched: slice = slice(None)):
        n, p = f.shape
        self.compute = np.stack([b, b, f, f], axis=2).reshape(n, 4 * p).T    # (4p, n) by kind
        self.share = np.minimum(share.T, MAX_SHARE)                           # (p, n) by stage
        self.kinds = kinds
        self.busy = busy                                 # (p, n)
        self.watched = watched                           # the rows whose gathers hold SMs
        self.until = float(busy[:, watched].max(initial=0.0))   # the last gather's end, any stage

    def launched(self, stage: int, ready: np.ndarray) -> None:
        """A gather of ``stage`` is launched, to end at ``ready`` (per row)."""
        self.busy[stage] = ready
        self.until = max(self.until, float(ready[self.watched].max(initial=0.0)))

    def extra(self, start: int, stop: int, begin: np.ndarray) -> np.ndarray | None:
        """Seconds the level's tasks (``start:stop``, begun at ``begin``) lose:
        ``f min(G, C / (1 - f))`` with ``G`` the gather time left when each begins; None
        once every gather has ended (most of the graph). Once None after the last launch,
        None for every later level: a level's earliest start is no earlier than the one
        before's (each task waits for a task of the level before; durations >= 0)."""
        if self.until <= float(begin[:, self.watched].min(initial=np.inf)):
            return None
        kinds = self.kinds[start:stop]                   # the level's tasks' (only these)
        stage = kinds // 4
        share, compute = self.share.take(stage, axis=0), self.compute.take(kinds, axis=0)
        left = np.maximum(self.busy[stage] - begin, 0.0)
        return share * np.minimum(left, compute / (1.0 - share))


@lru_cache(maxsize=64)
def _level_points(p: int, m: int, v: int) -> dict[int, tuple[tuple[int, int, int], ...]]:
    """Per level of the wavefront, its tasks that launch a gather, ``(row in the level, stage,
    chunk launched)``, then those that wait for one, ``(row, stage, -chunk needed)``: launches
    first, as a task launches chunk c + 1 before it waits for chunk c (launched chunks are
    >= 2, so the sign tells them apart)."""
    graph = wavefront(Schedule.INTERLEAVED, p, m, v)
    starts = np.array([level[0] for level in graph.levels])
    out: dict[int, list] = {}
    for sign, points in zip((1, -1), _gather_points(p, m, v), strict=True):
        for tid, chunk in points.items():
            position = int(graph.positions[tid])
            level = int(np.searchsorted(starts, position, side="right")) - 1
            row, stage = position - int(starts[level]), tid // (2 * m * v)
            out.setdefault(level, []).append((row, stage, sign * chunk))
    return {level: tuple(items) for level, items in out.items()}


def gathered_finish(forward: np.ndarray, backward: np.ndarray, m: int, v: int, p2p: float,
                    gather: np.ndarray, share: np.ndarray | None = None, lag: float = 0.0) -> np.ndarray:
    """Per stage, the finish time (s) of the interleaved task graph whose chunk forwards wait
    for their weight gathers (module docstring): the longest path of
    :func:`simulator.workload.taskgraph.exact_clocks` with, for each stage, a chain of
    ``v`` gathers of ``gather[i]`` seconds, and with ``share`` (per stage) each task slowed
    by the gather beside it (:func:`batch_gather_delay`); ``lag`` an overlapped send's seconds."""
    p = len(forward)
    f, b = forward / v, backward / v
    order, _ = _evaluation_order(Schedule.INTERLEAVED, p, m, v)
    table = np.stack([b, b + p2p, f, f + p2p], axis=1).ravel().tolist()
    arrive = [0.0, lag] * (2 * p)
    sent = [0.0] * (2 * p)                   # per stage and direction, the last send's arrival
    compute = np.stack([b, b, f, f], axis=1).ravel().tolist()
    shares = [0.0] * p if share is None else [min(float(x), MAX_SHARE) for x in share]
    dispatches, releases = _gather_points(p, m, v)
    ready = [[0.0] * v for _ in range(p)]
    for i in range(p):                       # chunks 0 and 1 at the start of the step
        ready[i][0] = float(gather[i])
        ready[i][1] = 2.0 * float(gather[i])
    busy = [ready[i][1] for i in range(p)]
    done, clock = [0.0] * (2 * p * m * v), [0.0] * p
    for tid, stage, dep, kind in order:
        now = clock[stage]
        if dep >= 0 and done[dep] > now:
            now = done[dep]
        if sent[kind >> 1] > now:            # the stage's previous send this way
            now = sent[kind >> 1]
        if tid in dispatches:               # launch chunk c after chunk c - 1's gather
            c = dispatches[tid]
            ready[stage][c] = max(now, ready[stage][c - 1]) + float(gather[stage])
            busy[stage] = ready[stage][c]
        if tid in releases and ready[stage][releases[tid]] > now:
            now = ready[stage][releases[tid]]
        left, f_s = max(busy[stage] - now, 0.0), shares[stage]
        extra = f_s * min(left, compute[kind] / (1.0 - f_s))
        now += table[kind]
        now += extra
        done[tid] = now + arrive[kind]
        if kind & 1:
            sent[kind >> 1] = done[tid]
        clock[stage] = now
    return np.array(clock)


@lru_cache(maxsize=64)
def _gather_points(p: int, m: int, v: int) -> tuple[dict[int, int], dict[int, int]]:
    """Task ids (as :func:`simulator.workload.taskgraph.compiled_graph` numbers them) where a
    chunk's gather is launched and where a chunk first needs its weights, each mapped to the
    chunk: ``({task: chunk launched}, {task: chunk needed})``."""
    def tid(t: Task) -> int:
        return ((t.stage * 2 + t.forward) * m + t.microbatch) * v + t.chunk

    dispatches, releases = {}, {}
    for i in range(p):
        for c in range(v):
            releases[tid(Task(i, True, 0, c))] = c
        for c in range(2, v):
            dispatches[tid(_chunk_task(i, (c - 1) * p - i, p, v, True))] = c
    return dispatches, releases
