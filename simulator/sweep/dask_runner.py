"""Run a layout search on a Dask cluster (``clustersim search --dask``).

Dask is an optional extra (``pip install 'clustersim[dask]'``). The search's layouts are
cut into chunks large enough that the scheduler's per-task cost (about a millisecond,
plus shipping the scenario) stays a small part of each task's work: a chunk holds at
least :data:`MIN_CHUNK` layouts (some 0.1-1 s of work) and the chunks are spread evenly
over the workers (:data:`CHUNKS_PER_WORKER` each, for balance). Each worker builds a
scenario point's cluster and collective cost model once and keeps it for that point's
next chunks; consecutive chunks go to the same worker first (others may take them when
it is busy), so its kept prices serve them, also in the next search (the worker holds its
cache, :func:`evaluate_on_worker`). Every chunk runs
:func:`simulator.sweep.search.evaluate_task`, the function the local run uses, and
results come back in the local order, so the rows are identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from simulator.errors import UsageError
from simulator.sweep.search import Task, evaluate_task
from simulator.sweep.session_cache import SessionCache

MIN_CHUNK = 500
CHUNKS_PER_WORKER = 4
WORKER_CACHE = "clustersim_sessions"
"""The attribute of a Dask worker that holds its :class:`SessionCache`."""


def require_distributed():
    """The ``distributed`` module.

    Raises
    ------
    UsageError
        If Dask is not installed, with the command that installs it.
    """
    try:
        import distributed
    except ImportError:
        raise UsageError("--dask needs Dask: pip install 'clustersim[dask]'") from None
    return distributed


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None):
    """A ``distributed.Client``: on the scheduler at ``scheduler`` (``tcp://HOST:PORT``), or
    on a new LocalCluster of ``workers`` single-threaded worker processes (default: one per
    core), closed on exit.

    Raises
    ------
    UsageError
        If Dask is missing, ``workers`` is below 1, or the scheduler cannot be reached.
    """
    distributed = require_distributed()
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1 (got {workers})")
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise UsageError(f"--scheduler: cannot reach {scheduler} ({exc})") from None
        with client:
            yield client
        return
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        yield client


def rechunk(tasks: list[Task], workers: int) -> list[Task]:
    """``tasks`` regrouped per scenario point into about ``CHUNKS_PER_WORKER * workers``
    chunks in all, none smaller than :data:`MIN_CHUNK` layouts (except a point's last),
    order kept."""
    total = sum(len(t.layouts) for t in tasks)
    size = max(MIN_CHUNK, math.ceil(total / max(1, CHUNKS_PER_WORKER * workers)))
    out: list[Task] = []
    for point in dict.fromkeys(t.point for t in tasks):
        mine = [t for t in tasks if t.point == point]
        found = [layout for t in mine for layout in t.layouts]
        positions = [p for t in mine for p in t.positions]
        out += [Task(point, mine[0].scenario, mine[0].library, found[i:i + size], positions[i:i + size])
                for i in range(0, len(found), size)]
    return out


def _home(index: int, chunks: int, addresses: list[str]) -> list[str] | None:
    """The worker chunk ``index`` of ``chunks`` goes to first: consecutive chunks to the same
    worker (``workers`` blocks in order), so a worker sees the same scenario points, and
    the same layouts in the next search, and reuses the prices it keeps."""
    if not addresses:
        return None
    return [addresses[index * len(addresses) // chunks]]


def evaluate_on_worker(task: Task) -> list[dict[str, Any]]:
    """:func:`~simulator.sweep.search.evaluate_task` with the running Dask worker's own
    :class:`~simulator.sweep.session_cache.SessionCache` (kept on the worker object, so
    its next chunks, also of the next search, reuse what it built)."""
    worker = require_distributed().get_worker()
    cache = getattr(worker, WORKER_CACHE, None)
    if cache is None:
        cache = SessionCache()
        setattr(worker, WORKER_CACHE, cache)
    return evaluate_task(task, cache)


def run_on_dask(tasks: list[Task], client: Any,
                progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Evaluate ``tasks`` on the Dask cluster behind ``client``; rows in the local order."""
    distributed = require_distributed()
    addresses = sorted(client.scheduler_info().get("workers", {}))
    chunks = rechunk(tasks, max(1, len(addresses)))
    futures = [client.submit(evaluate_on_worker, chunk, pure=False, allow_other_workers=True,
                             workers=_home(i, len(chunks), addresses))
               for i, chunk in enumerate(chunks)]
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[list[dict[str, Any]] | None] = [None] * len(chunks)
    total, done = sum(len(t.layouts) for t in chunks), 0
    for future in distributed.as_completed(futures):
        i = index[future.key]
        results[i] = future.result()
        done += len(chunks[i].layouts)
        if progress is not None:
            progress(done, total)
    return [row for chunk in results for row in chunk]
