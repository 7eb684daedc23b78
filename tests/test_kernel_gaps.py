"""The GPU's own gap between back-to-back kernels (simulator/measure/kernel_gaps.py): which
pairs count on a constructed trace frame, the medians of the shipped A100 traces
(validation/traces/, HolisticTraceAnalysis test data), the library's per-kernel overhead
between them, and the line ``clustersim import-trace`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simulator.cli import app
from simulator.config import HardwareLibrary
from simulator.measure.kernel_gaps import MIN_PAIRS, gap_summary, queued_gaps
from simulator.measure.kineto import read_kineto_trace
from simulator.units import US

TRACES = Path(__file__).resolve().parent.parent / "validation" / "traces"
PG509 = TRACES / "nccl_parser_config__nccl_data.json.gz"          # A100 PG509-200
SXM4 = TRACES / "negative_queue_length_values_check__rank0.json.gz"  # A100-SXM4-80GB


def _frame(rows):
    """A kernels frame from (stream, kind, class, start_us, dur_us, launch_us) rows."""
    stream, kind, klass, start, dur, launch = zip(*rows, strict=True)
    return pd.DataFrame({"device": 0, "stream": stream, "kind": kind, "kernel_class": klass,
                         "start_s": np.array(start) * US, "dur_s": np.array(dur) * US,
                         "launch_s": np.array(launch) * US})


def test_only_queued_plain_pairs_nothing_else_ended_in_count():
    frame = _frame([
        (7, "kernel", "gemm", 0.0, 10.0, -5.0),
        (7, "kernel", "memory", 12.0, 3.0, -4.0),     # queued before 0.0: gap 2
        (7, "kernel", "gemm", 40.0, 5.0, 30.0),       # launched after the previous started
        (7, "kernel", "gemm", 60.0, 5.0, 35.0),       # waits for stream 9's op ending at 50
        (9, "kernel", "memory", 45.0, 5.0, 0.0),
        (7, "kernel", "nccl", 70.0, 5.0, 36.0),       # NCCL: its start waits for peers
        (7, "memcpy", "memory", 90.0, 5.0, 37.0),     # not a kernel
        (7, "kernel", "gemm", 101.0, 1.0, 38.0),
        (7, "kernel", "gemm", 103.5, 1.0, 39.0),      # queued, gap 1.5
    ])
    assert queued_gaps(frame) / US == pytest.approx([2.0, 1.5])


def test_too_few_pairs_have_no_summary():
    rows = [(0, "kernel", "gemm", 10.0 * i, 8.0, -1.0) for i in range(MIN_PAIRS)]
    assert gap_summary(_frame(rows)) is None                 # MIN_PAIRS kernels: one pair fewer
    summary = gap_summary(_frame([*rows, (0, "kernel", "gemm", 10.0 * MIN_PAIRS, 8.0, -1.0)]))
    assert summary["pairs"] == MIN_PAIRS and summary["median_us"] == pytest.approx(2.0)


@pytest.fixture(scope="module")
def measured():
    return {path.name: gap_summary(read_kineto_trace(path).kernels) for path in (PG509, SXM4)}


def test_shipped_traces_medians(measured):
    """The two complete traces' queued gaps, as docs/measurements.md tabulates them: about
    1.15 us on the PG509 A100 (0.1 us timestamps), 3 us on the SXM4 A100 (1 us timestamps,
    so the middle half is whole microseconds)."""
    pg509, sxm4 = measured[PG509.name], measured[SXM4.name]
    assert pg509["pairs"] == 387 and pg509["median_us"] == pytest.approx(1.15, abs=0.01)
    assert sxm4["pairs"] == 4228 and sxm4["median_us"] == pytest.approx(3.0, abs=0.01)
    assert (sxm4["p25_us"], sxm4["p75_us"]) == pytest.approx((3.0, 4.0), abs=0.01)


@pytest.mark.parametrize("gpu", ["a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm", "b200"])
def test_library_kernel_overhead_lies_between_the_measured_medians(measured, gpu):
    """The per-kernel overhead the NVIDIA specs charge is not above or below both traces'
    medians (the hardware_specs sources cite them)."""
    low, high = sorted(m["median_us"] for m in measured.values())
    overhead = HardwareLibrary().gpu(gpu).compute.kernel_overhead_us
    assert low <= overhead <= high


def test_import_trace_prints_and_exports_the_gap():
    runner = CliRunner()
    text = runner.invoke(app, ["import-trace", str(PG509)])
    assert text.exit_code == 0
    assert "kernel gap: median 1.15 us (middle half 1.06-1.25) over 387" in text.output
    exported = runner.invoke(app, ["import-trace", "--json", str(SXM4)])
    assert exported.exit_code == 0
    assert json.loads(exported.output)["kernel_gap"]["pairs"] == 4228
