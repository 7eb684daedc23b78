"""Collect the events that matter from a stream of Kineto trace events into columns.

Kept, with ``ph: "X"`` (complete events) only:

- GPU activity: ``cat`` ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (name, device = ``args.device``
  or ``pid``, stream = ``args.stream`` or ``tid``, ``ts``, ``dur``, ``args.correlation``, and
  the NCCL args PyTorch >= 2.1 copies onto NCCL kernels: ``Collective name``, ``In msg
  nelems``, ``dtype``; a kernel's thread blocks from ``args.grid``);
- launches: ``cat`` ``cuda_runtime`` / ``cuda_driver`` events carrying ``args.correlation``
  (the correlation id ties a kernel to the API call that launched it; a graph launch,
  ``cudaGraphLaunch``, shares its id with every kernel the graph replays);
- steps: ``ProfilerStep#N`` annotations written by ``torch.profiler.profile.step()``;
- collective calls on the CPU: ``record_param_comms`` ops (message sizes) and ``nccl:<op>``
  annotations (operation names), as time ranges per thread.

Everything else (CPU ops, flows, counters, metadata events) is dropped as it streams by.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from simulator.measure.classify import message_bytes

GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
CPU_CATEGORIES = frozenset({"user_annotation", "cpu_op", "gpu_user_annotation"})
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
GRAPH_LAUNCH = re.compile(r"^(cuda|cu|hip)GraphLaunch")


@dataclass
class Columns:
    """Columns of the kept events (plain lists and typed arrays, cheap to grow)."""

    gpu_name: list[str] = field(default_factory=list)
    gpu_kind: list[str] = field(default_factory=list)
    gpu_device: array = field(default_factory=lambda: array("q"))
    gpu_stream: array = field(default_factory=lambda: array("q"))
    gpu_ts: array = field(default_factory=lambda: array("d"))
    gpu_dur: array = field(default_factory=lambda: array("d"))
    gpu_corr: array = field(default_factory=lambda: array("q"))
    gpu_bytes: array = field(default_factory=lambda: array("d"))
    gpu_blocks: array = field(default_factory=lambda: array("q"))
    gpu_collective: list[str | None] = field(default_factory=list)
    launch_corr: array = field(default_factory=lambda: array("q"))
    launch_ts: array = field(default_factory=lambda: array("d"))
    launch_tid: array = field(default_factory=lambda: array("q"))
    launch_graph: array = field(default_factory=lambda: array("b"))
    steps: list[tuple[int, float, float]] = field(default_factory=list)
    comm_ranges: list[tuple[int, float, float, str | None, float]] = field(default_factory=list)
    skipped: int = 0


def collect(events: Iterable[dict[str, Any]]) -> Columns:
    """Stream ``events`` once and keep the columns described in the module docstring."""
    columns, names, tids = Columns(), {}, {}
    for event in events:
        if event.get("ph") != "X":
            continue
        category = event.get("cat")
        try:
            if category in GPU_CATEGORIES:
                _gpu(columns, event, names, GPU_CATEGORIES[category])
            elif category in LAUNCH_CATEGORIES:
                _launch(columns, event, tids)
            elif category in CPU_CATEGORIES:
                _cpu(columns, event, tids)
        except (TypeError, ValueError, OverflowError):
            columns.skipped += 1     # a malformed field (ts not a number, ...): skip the event
    return columns


MAX_DURATION_US = 1e11
"""The longest event duration read (about 28 hours, in the trace's microseconds); a longer,
negative or non-finite one is a malformed field."""


def _timestamp(event: dict[str, Any]) -> float:
    """The event's ``ts`` (us); TypeError when it is missing, ValueError when it is not a finite
    number."""
    ts = float(event.get("ts"))
    if not math.isfinite(ts):
        raise ValueError(f"ts {ts}")
    return ts


def _duration(event: dict[str, Any]) -> float:
    """The event's ``dur`` (us); TypeError when it is missing, ValueError outside
    ``[0, MAX_DURATION_US]`` (NaN included)."""
    dur = float(event.get("dur"))
    if not 0.0 <= dur <= MAX_DURATION_US:
        raise ValueError(f"dur {dur}")
    return dur


def _step_duration(event: dict[str, Any]) -> float:
    """A ``ProfilerStep#N``'s ``dur`` (us): :func:`_duration`, and ValueError at 0 (no iteration
    takes no time; its wall time of 0 would pull the median step of the trace down)."""
    dur = _duration(event)
    if dur == 0.0:
        raise ValueError("a step of 0 us")
    return dur


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _gpu(columns: Columns, event: dict[str, Any], names: dict[str, str], kind: str) -> None:
    args, name = _args(event), str(event.get("name", ""))
    ts, dur = _timestamp(event), _duration(event)
    device = int(args.get("device", event.get("pid", 0)))
    stream = int(args.get("stream", event.get("tid", 0)))
    correlation = int(args.get("correlation", -1))
    collective = args.get("Collective name")
    nbytes = message_bytes(args) if collective is not None else float("nan")
    columns.gpu_ts.append(ts)
    columns.gpu_dur.append(dur)
    columns.gpu_device.append(device)
    columns.gpu_stream.append(stream)
    columns.gpu_corr.append(correlation)
    columns.gpu_name.append(names.setdefault(name, name))
    columns.gpu_kind.append(kind)
    columns.gpu_collective.append(collective if isinstance(collective, str) else None)
    columns.gpu_bytes.append(nbytes)
    columns.gpu_blocks.append(_grid_blocks(args.get("grid")))


def _grid_blocks(grid: Any) -> int:
    """Thread blocks of a kernel's ``grid`` ([x, y, z] in Kineto's args), -1 when the event has
    none (copies, memsets, older traces) or it is not three positive integers."""
    if not (isinstance(grid, list) and len(grid) == 3):
        return -1
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in grid):
        return -1
    return grid[0] * grid[1] * grid[2]


def _launch(columns: Columns, event: dict[str, Any], tids: dict[Any, int]) -> None:
    correlation = _args(event).get("correlation")
    if correlation is None:
        return
    ts = _timestamp(event)
    columns.launch_corr.append(int(correlation))
    columns.launch_ts.append(ts)
    columns.launch_tid.append(tids.setdefault(event.get("tid"), len(tids)))
    columns.launch_graph.append(bool(GRAPH_LAUNCH.match(str(event.get("name", "")))))


def _cpu(columns: Columns, event: dict[str, Any], tids: dict[Any, int]) -> None:
    name = event.get("name")
    if not isinstance(name, str):
        return
    step = STEP_NAME.match(name)
    if step and event.get("cat") != "gpu_user_annotation":
        columns.steps.append((int(step.group(1)), _timestamp(event), _step_duration(event)))
    elif event.get("cat") != "gpu_user_annotation" and (
            name == "record_param_comms" or name.startswith("nccl:")):
        args = _args(event)
        start = _timestamp(event)
        collective = name if name.startswith("nccl:") else args.get("Collective name")
        nbytes = message_bytes(args) if name == "record_param_comms" else float("nan")
        tid = tids.setdefault(event.get("tid"), len(tids))
        columns.comm_ranges.append((tid, start, start + _duration(event),
                                    collective if isinstance(collective, str) else None, nbytes))
