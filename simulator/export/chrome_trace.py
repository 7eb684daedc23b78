"""Chrome/Perfetto trace of a simulated step (chrome://tracing, ui.perfetto.dev).

One process per node, one thread per (GPU, stream); every task is a complete event
(``"ph": "X"``) with microsecond timestamps, as the Trace Event Format specifies
(Google, "Trace Event Format", 2016). The file's ``otherData`` says which simulated step it
shows; in-layer communication the engine folds into a pass has its own thread
(:mod:`simulator.export.timeline_rows`). The file is written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path

from simulator.export.atomic import write_atomic


def trace_events(frame, gpus_per_node: int) -> list[dict]:
    """Trace events from a timeline DataFrame (see :func:`simulator.engine.des.timeline`)."""
    events, threads = [], {}
    for row in frame.itertuples():
        node, local = divmod(int(row.gpu), gpus_per_node)
        key = (node, local, row.stream)
        if key not in threads:
            threads[key] = len(threads) + 1
            events.append({"ph": "M", "name": "thread_name", "pid": node, "tid": threads[key],
                           "args": {"name": f"gpu{local} {row.stream}"}})
        events.append({"ph": "X", "name": row.name, "cat": row.kind, "pid": node,
                       "tid": threads[key], "ts": row.start_s * 1e6,
                       "dur": (row.end_s - row.start_s) * 1e6, "args": {"bytes": row.bytes}})
    nodes = sorted({k[0] for k in threads})
    events += [{"ph": "M", "name": "process_name", "pid": n, "args": {"name": f"node {n}"}}
               for n in nodes]
    return events


def write_trace(frame, gpus_per_node: int, path: Path | str, label: str = "") -> None:
    """Write the trace of ``frame`` to ``path`` (atomically); ``label`` names the step shown."""
    document = {"traceEvents": trace_events(frame, gpus_per_node), "displayTimeUnit": "ms"}
    if label:
        document["otherData"] = {"step": label}
    write_atomic(path, json.dumps(document), "--trace")
