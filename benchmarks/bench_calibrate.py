"""Issue #9 speed target for ``clustersim calibrate``: a calibration over >= 50 rows in <= 60 s.

1. 59 rows (Megatron SC21 10, torchtitan 21, nccl-tests 28 sizes >= 64 MiB) with two free
   GPU constants (the A100 GEMM fraction, the 500 W H100's sustained clock), 5-fold
   cross-validation included, scenario set-up included. Target: <= 60 s.
2. For information (no target): the 28 nccl-tests rows with the default free constants, the
   efficiency of each log's bottleneck link (five links), where every evaluation that moves
   a link rebuilds the clusters that use it.

Usage: python benchmarks/bench_calibrate.py   (from the repository root or benchmarks/)
"""

from __future__ import annotations

import json
import time

from simulator.calibrate.cli import default_parameters
from simulator.calibrate.fit import calibrate_rows
from simulator.calibrate.params import parse_parameters
from simulator.calibrate.rows import set_rows
from simulator.config import HardwareLibrary

TARGET_S = 60.0


def fifty_rows_two_constants() -> dict:
    library = HardwareLibrary()
    start = time.perf_counter()
    rows = set_rows("megatron_sc21") + set_rows("torchtitan") + set_rows("nccl")
    params = parse_parameters(["gpu:a100-sxm-80gb.compute.gemm_peak_fraction",
                               "gpu:h100-sxm-96gb-500w.sustained_clock_fraction"], library)
    cal = calibrate_rows(rows, params, library)
    seconds = time.perf_counter() - start
    return {"rows": len(rows), "constants": len(params), "seconds": round(seconds, 2),
            "meets_target": seconds <= TARGET_S, "evaluations": cal.evaluations,
            "cross_validation": cal.cross_validation,
            "fitted": [round(float(x), 4) for x in cal.fitted],
            "mape_before": round(cal.mape("before"), 4), "mape_after": round(cal.mape("after"), 4),
            "mape_held_out": round(cal.mape("held_out"), 4)}


def nccl_links() -> dict:
    library = HardwareLibrary()
    start = time.perf_counter()
    rows = set_rows("nccl")
    params = parse_parameters(default_parameters(rows), library)
    cal = calibrate_rows(rows, params, library)
    return {"rows": len(rows), "constants": [p.name for p in params],
            "seconds": round(time.perf_counter() - start, 2), "evaluations": cal.evaluations,
            "mape_before": round(cal.mape("before"), 4), "mape_after": round(cal.mape("after"), 4),
            "mape_held_out": round(cal.mape("held_out"), 4)}


if __name__ == "__main__":
    for name, bench in [("calibrate_59_rows_2_constants", fifty_rows_two_constants),
                        ("calibrate_nccl_links", nccl_links)]:
        print(json.dumps({name: bench()}))
