"""Import a PyTorch profiler (Kineto) trace: GPU kernels by class and a per-step breakdown.

References: the Chrome trace event format (Google, "Trace Event Format", complete events
``ph: "X"`` with ``ts``/``dur`` in microseconds); Kineto's JSON writer (pytorch/kineto,
libkineto/src/output_json.cpp) for ``deviceProperties``/``distributedInfo`` and the
``kernel``/``gpu_memcpy``/``gpu_memset``/``cuda_runtime`` categories; PyTorch's profiler
(``torch.profiler.profile.step()`` writes the ``ProfilerStep#N`` annotations;
``record_param_comms`` carries collective sizes). Kernel classes: :mod:`.classify`; step
windows and the partition of each step's wall time: :mod:`.steps`.

Times in the frames are seconds from the start of the first ``ProfilerStep`` annotation. A
trace is one rank's view of its GPU; operations of several devices in one trace are treated as
one timeline (the ``device`` column tells them apart).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import ConfigError
from simulator.measure import launch
from simulator.measure.chrome_json import EXPECTED, iter_events, read_header
from simulator.measure.classify import CLASSES, COMM, collective_op, kernel_class, nccl_kernel_op
from simulator.measure.collect import Columns, collect
from simulator.measure.steps import host_wait, partition, step_windows
from simulator.units import US


@dataclass(frozen=True)
class KinetoTrace:
    """One imported trace.

    Attributes
    ----------
    kernels : pandas.DataFrame
        One row per GPU operation: ``step`` (ProfilerStep number that launched it, <NA> if
        none), ``device``, ``stream``, ``kind`` (kernel/memcpy/memset), ``name``,
        ``kernel_class`` (gemm/attention/memory/other/nccl), ``start_s``, ``dur_s``,
        ``nccl_op`` (from the kernel name), ``collective`` (the PyTorch call), ``bytes``,
        ``launch_s`` (when the API call that launched it started; NaN if not in the trace),
        ``from_graph`` (launched by a CUDA graph launch: replayed from a captured graph).
    steps : pandas.DataFrame
        One row per step: ``step``, ``start_s``, ``end_s``, ``wall_s``, ``host_s`` (the
        annotation's own duration), ``kernels``, ``compute_s``, ``comm_s``,
        ``compute_only_s``, ``comm_overlapped_s``, ``comm_exposed_s``, ``idle_s``, one
        ``<class>_s`` per compute class, and ``host_wait_s``, the part of ``idle_s`` with
        nothing queued (see :mod:`simulator.measure.steps`).
    metadata : dict
        Device name/memory/SMs, rank, world size, backend, NCCL version, counts.
    """

    kernels: pd.DataFrame
    steps: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)


def read_kineto_trace(path: Path | str) -> KinetoTrace:
    """Stream the trace at ``path`` (JSON or gzipped JSON) and build its frames.

    Raises
    ------
    ConfigError
        Empty, binary, truncated or non-trace file, or a trace without ``ProfilerStep#N``
        annotations or GPU kernels; the message names the file and what was expected.
    """
    source = str(path)
    header = read_header(path)
    columns = collect(iter_events(path))
    _require(columns, source)
    steps = _step_table(columns)
    kernels, launched_in = _kernel_frame(columns, steps)
    summary = _summary(kernels, launched_in, steps)
    return KinetoTrace(kernels, summary, _metadata(header, kernels, columns, source))


def _require(columns: Columns, source: str) -> None:
    skipped = (f" ({columns.skipped:,} events skipped for a malformed ts or dur: missing, not a "
               "number, negative, above 1e11 us, or a step of 0 us)") if columns.skipped else ""
    if not columns.steps:
        raise ConfigError("no 'ProfilerStep#N' annotations" + skipped + "; expected " + EXPECTED
                          + " recorded with torch.profiler.profile(schedule=...) and prof.step() "
                          "per iteration", source)
    if not any(kind == "kernel" for kind in columns.gpu_kind):
        raise ConfigError("no GPU kernel events (cat 'kernel')" + skipped + "; expected " + EXPECTED
                          + " recorded with ProfilerActivity.CUDA", source)


def _step_table(columns: Columns) -> pd.DataFrame:
    """ProfilerStep annotations, first of each number, in time order (microseconds)."""
    frame = pd.DataFrame(columns.steps, columns=["step", "ts", "dur"])
    frame = frame.drop_duplicates("step").sort_values("ts", kind="stable")
    return frame.assign(end=frame["ts"] + frame["dur"]).reset_index(drop=True)


def _kernel_frame(columns: Columns, steps: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The kernels frame and, per row, the index of the step that launched it (-1: none)."""
    origin = float(steps["ts"].iloc[0])
    ts = np.frombuffer(columns.gpu_ts, dtype=np.float64)
    launch_ts, launch_tid, from_graph = launch.launches(
        np.frombuffer(columns.gpu_corr, dtype=np.int64),
        np.frombuffer(columns.launch_corr, dtype=np.int64),
        np.frombuffer(columns.launch_ts, dtype=np.float64),
        np.frombuffer(columns.launch_tid, dtype=np.int64),
        np.frombuffer(columns.launch_graph, dtype=np.int8).astype(bool))
    index = launch.step_of(launch_ts, steps["ts"].to_numpy(), steps["end"].to_numpy())
    step = pd.array(steps["step"].to_numpy()[np.maximum(index, 0)], dtype="Int64")
    step[index < 0] = pd.NA
    classes = [kernel_class(name) if kind == "kernel" else "memory"
               for name, kind in zip(columns.gpu_name, columns.gpu_kind, strict=True)]
    frame = pd.DataFrame({
        "step": step,
        "device": np.frombuffer(columns.gpu_device, dtype=np.int64),
        "stream": np.frombuffer(columns.gpu_stream, dtype=np.int64),
        "kind": pd.Categorical(columns.gpu_kind),
        "name": columns.gpu_name,
        "kernel_class": pd.Categorical(classes, categories=[*CLASSES, COMM]),
        "start_s": (ts - origin) * US,
        "dur_s": np.frombuffer(columns.gpu_dur, dtype=np.float64) * US,
        "launch_s": (launch_ts - origin) * US,
        "from_graph": from_graph,
        "blocks": np.frombuffer(columns.gpu_blocks, dtype=np.int64),
    })
    _add_nccl(frame, columns, launch_ts, launch_tid)
    return frame, index


def _add_nccl(frame: pd.DataFrame, columns: Columns, launch_ts: np.ndarray,
              launch_tid: np.ndarray) -> None:
    """``nccl_op`` from kernel names; ``collective`` and ``bytes`` from the kernel's args,
    else from the collective call that launched it (see :mod:`.launch`)."""
    is_nccl = (frame["kernel_class"] == COMM).to_numpy()
    rows = np.flatnonzero(is_nccl)
    names, sizes = launch.comm_calls(columns.comm_ranges, launch_tid[rows], launch_ts[rows])
    own_bytes = np.frombuffer(columns.gpu_bytes, dtype=np.float64)[rows]
    own_names = [columns.gpu_collective[i] for i in rows]
    frame["nccl_op"] = None
    frame["collective"] = None
    frame["bytes"] = np.nan
    frame.loc[is_nccl, "nccl_op"] = [nccl_kernel_op(frame["name"].iat[i]) for i in rows]
    chosen = [own or other for own, other in zip(own_names, names, strict=True)]
    frame.loc[is_nccl, "collective"] = [collective_op(c) if c else None for c in chosen]
    frame.loc[is_nccl, "bytes"] = np.where(np.isnan(own_bytes), sizes, own_bytes)


def _summary(kernels: pd.DataFrame, launched_in: np.ndarray, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step: window, wall time and its partition (see :mod:`.steps`)."""
    origin = float(steps["ts"].iloc[0])
    start = kernels["start_s"].to_numpy()
    end = start + kernels["dur_s"].to_numpy()
    host_start = (steps["ts"].to_numpy() - origin) * US
    host_end = (steps["end"].to_numpy() - origin) * US
    win_start, win_end = step_windows(host_start, host_end, launched_in, start, end)
    codes = kernels["kernel_class"].cat.codes.to_numpy()   # CLASSES..., then nccl last
    parts = partition(win_start, win_end, start, end, codes)
    parts["host_wait_s"] = host_wait(win_start, win_end, start, end, kernels["launch_s"].to_numpy())
    counts = np.bincount(launched_in[launched_in >= 0], minlength=len(steps))
    frame = pd.DataFrame({"step": steps["step"].to_numpy(), "start_s": win_start,
                          "end_s": win_end, "wall_s": win_end - win_start,
                          "host_s": steps["dur"].to_numpy() * US, "kernels": counts})
    for name, values in parts.items():
        frame[name] = values
    return frame


def _metadata(header: dict[str, Any], kernels: pd.DataFrame, columns: Columns,
              source: str) -> dict[str, Any]:
    """What the trace says about the run: device, rank, world size, counts."""
    devices = sorted(int(d) for d in kernels["device"].unique())
    info = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    props = [p for p in header.get("deviceProperties") or [] if isinstance(p, dict)]
    used = next((p for p in props if p.get("id") in devices), props[0] if props else {})
    launched = int(kernels["step"].notna().sum())
    return {
        "source": source, "schema_version": header.get("schemaVersion"),
        "devices": devices, "device_name": used.get("name"),
        "device_memory_bytes": used.get("totalGlobalMem"), "device_sms": used.get("numSms"),
        "rank": info.get("rank"), "world_size": info.get("world_size"),
        "backend": info.get("backend"), "nccl_version": info.get("nccl_version"),
        "steps": [int(s) for s in sorted(set(n for n, _, _ in columns.steps))],
        "gpu_ops": len(kernels), "gpu_ops_in_steps": launched,
        "skipped_events": columns.skipped,
    }


def nccl_table(kernels: pd.DataFrame) -> pd.DataFrame:
    """NCCL kernels grouped by collective (or kernel operation when the call is unknown):
    ``calls``, ``busy_s`` (sum of kernel durations), ``bytes`` (sum where known) and
    ``max_ctas``, the most thread blocks one of its kernels ran (NCCL runs one per channel, so
    the SMs a collective takes from compute beside it; :mod:`simulator.cost.nccl_sms`; NaN
    where the trace gives no grid sizes)."""
    nccl = kernels[kernels["kernel_class"] == COMM]
    op = nccl["collective"].fillna(nccl["nccl_op"]).fillna("unknown")
    grouped = nccl.assign(op=op, ctas=nccl["blocks"].where(nccl["blocks"] > 0)).groupby("op", sort=True)
    return pd.DataFrame({"calls": grouped.size(), "busy_s": grouped["dur_s"].sum(),
                         "bytes": grouped["bytes"].sum(min_count=1),
                         "max_ctas": grouped["ctas"].max()}).reset_index()
