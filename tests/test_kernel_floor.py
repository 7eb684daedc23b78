"""The fixed time of a memory-bound kernel (simulator/measure/kernel_floor.py): which kernels
count on a constructed frame, the grid sizes the trace reader keeps, the medians of the shipped
A100 traces (validation/traces/, HolisticTraceAnalysis test data), the library constant read
from them, its place in the price of a memory-bound kernel, and the line ``clustersim
import-trace`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from simulator.cli import app
from simulator.config import HardwareLibrary
from simulator.config.hardware import Dtype
from simulator.cost.compute import ComputeModel
from simulator.measure.collect import _grid_blocks
from simulator.measure.kernel_floor import MIN_KERNELS, floor_summary, one_block_memory_durations
from simulator.measure.kineto import read_kineto_trace
from simulator.units import US

TRACES = Path(__file__).resolve().parent.parent / "validation" / "traces"
PG509 = TRACES / "nccl_parser_config__nccl_data.json.gz"          # A100 PG509-200, ns timestamps
SXM4 = TRACES / "negative_queue_length_values_check__rank0.json.gz"  # A100-SXM4-80GB, whole us
LIBRARY = HardwareLibrary()


def _frame(rows):
    """A kernels frame from (kind, class, blocks, dur_us) rows."""
    kind, klass, blocks, dur = zip(*rows, strict=True)
    return pd.DataFrame({"kind": kind, "kernel_class": klass, "blocks": blocks,
                         "dur_s": np.array(dur) * US})


def test_only_one_block_memory_kernels_count():
    frame = _frame([("kernel", "memory", 1, 2.0), ("kernel", "memory", 108, 9.0),   # a full wave
                    ("kernel", "gemm", 1, 7.0), ("memset", "memory", -1, 1.0),      # not memory kernels
                    ("kernel", "memory", -1, 5.0), ("kernel", "memory", 1, 2.5)])    # no grid recorded
    assert one_block_memory_durations(frame) / US == pytest.approx([2.0, 2.5])


def test_too_few_kernels_have_no_summary():
    rows = [("kernel", "memory", 1, 2.0)] * (MIN_KERNELS - 1)
    assert floor_summary(_frame(rows)) is None
    summary = floor_summary(_frame([*rows, ("kernel", "memory", 1, 2.0)]))
    assert summary["kernels"] == MIN_KERNELS and summary["median_us"] == pytest.approx(2.0)


@pytest.mark.parametrize(("grid", "blocks"), [([1, 1, 1], 1), ([4, 2, 3], 24), ([0, 1, 1], -1),
                                              ([1, 1], -1), (None, -1), ([True, 1, 1], -1),
                                              ([1.0, 1, 1], -1), ("1,1,1", -1)])
def test_the_reader_keeps_a_kernels_thread_blocks(grid, blocks):
    assert _grid_blocks(grid) == blocks


@pytest.fixture(scope="module")
def measured():
    return {path.name: floor_summary(read_kineto_trace(path).kernels) for path in (PG509, SXM4)}


def test_the_library_constant_is_the_sub_microsecond_traces_median(measured):
    """a100-sxm-80gb.yaml's 2.1 us is the PG509-200 trace's median (2.08 us over 429 one-block
    kernels, rounded to 0.1 us); every NVIDIA part takes it, the AMD parts none (not measured)."""
    fine = measured[PG509.name]
    assert fine["kernels"] >= 400
    assert 1.9 < fine["median_us"] < 2.3
    for name in ("a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "gb200", "gb300"):
        assert LIBRARY.gpu(name).compute.memory_fixed_us == pytest.approx(fine["median_us"], abs=0.05)
    assert LIBRARY.gpu("mi300x").compute.memory_fixed_us == 0.0


def test_a_whole_microsecond_trace_reads_no_lower(measured):
    """The SXM4 trace rounds durations to whole microseconds: 3-4 us, above the fine trace."""
    assert measured[SXM4.name]["median_us"] >= measured[PG509.name]["median_us"]
    assert measured[SXM4.name]["p25_us"] in (3.0, 4.0)


def test_a_memory_bound_kernel_pays_its_bytes_its_fixed_time_and_the_gap():
    compute = ComputeModel(LIBRARY.gpu("h100-sxm"), Dtype.BF16)
    gpu = compute.gpu
    nbytes = np.array([0.0, 4096.0, 1e9])
    rate = gpu.hbm_bandwidth_Bps * gpu.compute.memory_bandwidth_fraction
    expected = nbytes / rate + (gpu.compute.memory_fixed_us + gpu.compute.kernel_overhead_us) * US
    assert compute.memory_time(nbytes) == pytest.approx(expected, rel=1e-12)


def test_import_trace_prints_the_floor():
    runner = CliRunner()
    text = runner.invoke(app, ["import-trace", str(PG509)]).output
    assert "kernel floor: median 2.08 us" in text and "compute.memory_fixed_us" in text
    data = json.loads(runner.invoke(app, ["import-trace", "--json", str(PG509)]).output)
    assert data["kernel_floor"]["kernels"] == 429
