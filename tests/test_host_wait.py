"""The part of a step's idle time in which the GPU waited for the host (``host_wait_s``,
simulator/measure/steps.py ``host_wait``): constructed timelines for each rule, and the
shipped traces (validation/traces/): within ``idle_s``, the two-rank trace host-bound,
the sixteen-rank trace's idle time spent with work queued."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.measure.kineto import read_kineto_trace
from simulator.measure.steps import host_wait

TRACES = Path(__file__).resolve().parent.parent / "validation" / "traces"


def _wait(ops, window=(0.0, 45.0)):
    """host_wait of one window over (start, end, launch) operations."""
    start, end, launch = (np.array(column, dtype=float) for column in zip(*ops, strict=True))
    return host_wait(np.array([window[0]]), np.array([window[1]]), start, end, launch)[0]


def test_idle_before_the_launch_is_the_hosts_and_after_it_the_launch_latency():
    # idle 10-16: nothing queued until the launch at 15, then the launch latency
    assert _wait([(0.0, 10.0, -1.0), (16.0, 20.0, 15.0)]) == pytest.approx(5.0)


def test_idle_with_work_queued_is_a_dependency_not_the_host():
    # idle 20-25 and 28-30 hold the op launched at 18 (it waits for something, not the
    # host); idle 35-45 ends with no operation at all
    assert _wait([(0.0, 20.0, -1.0), (30.0, 35.0, 18.0), (25.0, 28.0, 24.0)]) == 0.0
    # without the early launch the wait 20-24 is the host's (the op at 25 launched at 24)
    assert _wait([(0.0, 20.0, -1.0), (30.0, 35.0, 29.0), (25.0, 28.0, 24.0)]) == pytest.approx(5.0)


def test_an_unknown_launch_proves_nothing():
    # idle 10-40 ends with an op whose launch call is not in the trace
    assert _wait([(0.0, 10.0, -1.0), (40.0, 44.0, np.nan)]) == 0.0


@pytest.mark.parametrize("name", sorted(p.name for p in TRACES.glob("*.json.gz")))
def test_host_wait_is_part_of_the_idle_time(name):
    steps = read_kineto_trace(TRACES / name).steps
    assert (steps["host_wait_s"] >= 0.0).all()
    assert (steps["host_wait_s"] <= steps["idle_s"] + 1e-12).all()


def test_the_shipped_traces_host_bound_and_dependency_bound():
    two_rank = read_kineto_trace(TRACES / "nccl_parser_config__nccl_data.json.gz").steps
    assert two_rank["host_wait_s"].to_numpy() * 1e3 == pytest.approx([162.4, 159.6, 155.8], abs=0.05)
    sixteen = read_kineto_trace(TRACES / "negative_queue_length_values_check__rank0.json.gz").steps
    assert (sixteen["idle_s"] > 0.13).all() and (sixteen["host_wait_s"] < 0.001).all()
