"""Kernels replayed from CUDA graphs in a Kineto trace (simulator/measure/graph_capture.py):
the collector's tie of a graph launch to its kernels, the shares and the field value on a
constructed frame, the shipped A100 trace whose job replays graphs (validation/traces/,
HolisticTraceAnalysis test data), and the line ``clustersim import-trace`` prints."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simulator.cli import app
from simulator.measure.graph_capture import FULL_SHARE, graph_summary
from simulator.measure.kineto import read_kineto_trace
from simulator.units import US

TRACES = Path(__file__).resolve().parent.parent / "validation" / "traces"
SXM4 = TRACES / "negative_queue_length_values_check__rank0.json.gz"  # A100-SXM4-80GB, graphs in it


def _frame(rows):
    """A kernels frame from (kind, class, dur_us, launch known, from graph) rows."""
    kind, klass, dur, known, graph = zip(*rows, strict=True)
    return pd.DataFrame({"kind": kind, "kernel_class": klass, "dur_s": np.array(dur) * US,
                         "launch_s": np.where(known, 0.0, np.nan), "from_graph": np.array(graph)})


def test_shares_leave_out_nccl_and_unknown_launches():
    frame = _frame([("kernel", "gemm", 60.0, True, True), ("kernel", "memory", 40.0, True, False),
                    ("kernel", "nccl", 500.0, True, False),       # NCCL: not counted
                    ("kernel", "gemm", 900.0, False, False),      # launch not in the trace
                    ("memcpy", "memory", 70.0, True, False)])     # not a kernel
    summary = graph_summary(frame)
    assert (summary["kernels"], summary["replayed"]) == (2, 1)
    assert summary["kernel_share"] == 0.5 and summary["time_share"] == pytest.approx(0.6)
    assert summary["cuda_graphs"] == "partial"


@pytest.mark.parametrize(("replayed_us", "mode"), [(0.0, "none"), (79.0, "partial"), (80.0, "full")])
def test_field_value_follows_the_replayed_time_share(replayed_us, mode):
    rows = [("kernel", "gemm", replayed_us, True, True)] if replayed_us else []
    rows.append(("kernel", "gemm", 100.0 - replayed_us, True, False))
    assert FULL_SHARE == 0.8 and graph_summary(_frame(rows))["cuda_graphs"] == mode


def test_no_known_compute_kernel_has_no_summary():
    assert graph_summary(_frame([("kernel", "nccl", 5.0, True, False)])) is None


def test_a_graph_launch_marks_every_kernel_it_replays(tmp_path):
    """One cudaLaunchKernel and one cudaGraphLaunch whose correlation id two kernels share."""
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100, "tid": 1}
    launches = [{"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": 2, "tid": 1,
                 "args": {"correlation": corr}}
                for name, ts, corr in (("cudaLaunchKernel", 1, 10), ("cudaGraphLaunch", 5, 11))]
    kernels = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": ts, "dur": 10, "pid": 0, "tid": 7,
                "args": {"correlation": corr, "device": 0, "stream": 7}}
               for i, (ts, corr) in enumerate(((10, 10), (20, 11), (30, 11)))]
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": [step, *launches, *kernels]}).encode()))
    frame = read_kineto_trace(path).kernels.sort_values("start_s")
    assert frame["from_graph"].tolist() == [False, True, True]
    assert graph_summary(frame)["time_share"] == pytest.approx(2 / 3)


def test_shipped_trace_replays_part_of_its_compute():
    """The SXM4 A100 trace's job replays 135 kernels from 70 graph launches, 58.5% of its
    compute kernels' time: partial; the other shipped traces replay none."""
    summary = graph_summary(read_kineto_trace(SXM4).kernels)
    assert (summary["kernels"], summary["replayed"]) == (5300, 135)
    assert summary["time_share"] == pytest.approx(0.585, abs=0.001) and summary["cuda_graphs"] == "partial"
    other = graph_summary(read_kineto_trace(TRACES / "nccl_parser_config__nccl_data.json.gz").kernels)
    assert other["replayed"] == 0 and other["cuda_graphs"] == "none"


def test_import_trace_prints_and_emits_the_capture():
    result = CliRunner().invoke(app, ["import-trace", str(SXM4)])
    assert result.exit_code == 0
    text = " ".join(result.output.split())        # the console wraps at its width
    assert ("CUDA graphs: 135 of 5,300 compute kernels replayed (58.5% of their GPU time): "
            "training.stack.kernels.cuda_graphs partial") in text
    emitted = json.loads(CliRunner().invoke(app, ["import-trace", str(SXM4), "--json"]).output)
    assert emitted["cuda_graphs"]["replayed"] == 135 and emitted["cuda_graphs"]["cuda_graphs"] == "partial"
