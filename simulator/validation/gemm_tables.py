"""The per-tile K overhead of GEMMs (``compute.gemm_k_overhead``), read from OpenXLA's
measured GEMM tables (``validation/gemm/``, sources in its ``SOURCES.md``).

The cost model prices a GEMM of shape (M, N, K) x b at

    efficiency = f * tile_fill * wave_fill * K / (K + k0)

(:meth:`simulator.cost.compute.ComputeModel.gemm_efficiency`): ``k0`` is each output tile's
prologue and epilogue in K elements of main-loop work. Among shapes of the same M, N and b
only the last factor changes with K, so ``k0`` is fitted on the fall of the measured
efficiency with K alone: for each (M, N, b) group, the log of the measured FLOP/s over the
model's fill factors, less ``log(K / (K + k0))``, should be one constant (the group's ``f``);
``k0`` minimises the spread about the group means (least squares in log). Only shapes of at
least :data:`MIN_WAVES` waves of output tiles enter, where wave quantisation no longer
dominates (a single-wave GEMM's efficiency at small K depends on the kernel cuBLAS picks,
which no one ``k0`` captures). The peak fraction ``f`` is not taken from these tables: it stays
the large-shape benchmark's (MAMF, hardware_specs/gpus/*.yaml).

A table's ``k0`` is taken into a GPU's spec only where its best rate reaches that GPU's best
large-shape benchmark (:data:`BEST_BENCHMARK`, :func:`as_fast_as_best`): slower kernels lose
more at small K than the ones training runs, so their fall with K overstates the GPU's. So
far that holds for the H100 alone (its two tables reach 809 and 805 TFLOP/s against MAMF's
794.5); the B200's, MI300X's and MI355X's tables run below their GPUs' benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from simulator.config.hardware import GpuSpec
from simulator.cost.compute import tile_and_wave_fill

MIN_WAVES = 4
"""Fewest waves of output tiles per SM for a shape to enter the fit."""

BF16 = "bf16xbf16->bf16"
FP8 = "f8e4m3fnxf8e4m3fn->bf16"

TABLES: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("h100-sxm", BF16): (("xla_matmul_tensorflow.csv", "sm_90"), ("xla_matmul_openxla.csv", "sm_90")),
    ("b200", BF16): (("xla_matmul_openxla.csv", "sm_100_B200"),),
    ("b200", FP8): (("xla_matmul_openxla.csv", "sm_100_B200"),),
    ("mi300x", BF16): (("xla_matmul_openxla.csv", "gfx942"),),
    ("mi355x", BF16): (("xla_matmul_rocm_xla_gfx950.csv", "gfx950"),),
}
"""Per (library GPU, table dtype): the (file, GPU key) tables that measure it. Not listed: the
``sm_90`` fp8 rows (above the H100's dense fp8 peak) and the ``gfx942`` fp8 rows (erratic):
see validation/gemm/SOURCES.md."""

BEST_BENCHMARK: dict[tuple[str, str], float] = {
    ("h100-sxm", BF16): 794.5e12,
    ("b200", BF16): 1745.0e12,
    ("b200", FP8): 3432.5e12,
    ("mi300x", BF16): 708.0e12,
    ("mi355x", BF16): 1565.0e12,
}
"""FLOP/s of each GPU's best large-shape GEMM benchmark, the one its spec's peak fraction comes
from (hardware_specs/gpus/*.yaml ``sources.compute``): MAMF (stas00/ml-engineering
compute/accelerator/README.md @744d01e1) for the H100, B200 and MI355X, AMD's own
max-achievable-FLOPS measurement (ROCm/rocm-blogs @8e011952) for the MI300X."""


@dataclass(frozen=True)
class KOverheadFit:
    """``k0`` (K elements of the dtype's main loop), the rms of the log residuals about the
    group means at it, and the shapes and (M, N, b) groups it rests on."""

    k0: float
    rms: float
    shapes: int
    groups: int


def read_table(folder: Path, name: str, gpu_key: str, dtype: str) -> pd.DataFrame:
    """Rows of one GPU and dtype of a table (a repeated shape keeps its last row)."""
    frame = pd.read_csv(folder / name)
    frame = frame[(frame["gpu"] == gpu_key) & (frame["dtype"] == dtype)]
    return frame.drop_duplicates(["b", "m", "n", "k"], keep="last").assign(table=name)


def with_fills(frame: pd.DataFrame, gpu: GpuSpec) -> pd.DataFrame:
    """``frame`` with the model's tile and wave fill (``fill``) and waves (``waves``) on ``gpu``."""
    fill, waves = tile_and_wave_fill(frame["m"].to_numpy(float), frame["n"].to_numpy(float),
                                     frame["b"].to_numpy(float), gpu.compute.gemm_tile, gpu.sm_count)
    return frame.assign(fill=fill, waves=waves)


def k_shape_rms(frame: pd.DataFrame, k0: float) -> float:
    """Rms of ``log(FLOP/s / fill) - log(K / (K + k0))`` about its mean in each (table, M, N, b)
    group of ``frame`` (rows from :func:`with_fills`)."""
    k = frame["k"].to_numpy(float)
    resid = np.log(frame["flops_per_s"] / frame["fill"]) - np.log(k / (k + k0))
    spread = resid - resid.groupby([frame["table"], frame["m"], frame["n"], frame["b"]]).transform("mean")
    return float(np.sqrt(np.mean(spread.to_numpy() ** 2)))


def fit_k_overhead(frame: pd.DataFrame, gpu: GpuSpec) -> KOverheadFit:
    """The ``k0`` that best explains the fall of efficiency with K in ``frame`` (one GPU and
    dtype, any number of tables) on ``gpu``'s tile and SM count (module docstring)."""
    rows = with_fills(frame, gpu)
    rows = rows[rows["waves"] >= MIN_WAVES]
    groups = rows.groupby(["table", "m", "n", "b"])["k"].transform("size")
    rows = rows[groups >= 2]
    best = minimize_scalar(lambda k0: k_shape_rms(rows, k0), bounds=(0.0, 5000.0), method="bounded")
    count = rows.groupby(["table", "m", "n", "b"]).ngroups
    return KOverheadFit(float(best.x), float(best.fun), len(rows), count)


def read_tables(folder: Path, gpu_name: str, dtype: str = BF16) -> pd.DataFrame:
    """Every table :data:`TABLES` lists for ``gpu_name`` and ``dtype``, stacked (``table``
    names each row's file)."""
    parts = [read_table(folder, name, key, dtype) for name, key in TABLES[(gpu_name, dtype)]]
    return pd.concat(parts, ignore_index=True)


def measured_k_overhead(folder: Path, gpu_name: str, gpu: GpuSpec, dtype: str = BF16) -> KOverheadFit:
    """:func:`fit_k_overhead` over :func:`read_tables` of ``gpu_name`` and ``dtype``."""
    return fit_k_overhead(read_tables(folder, gpu_name, dtype), gpu)


def table_best(folder: Path, gpu_name: str, dtype: str = BF16) -> float:
    """The highest FLOP/s in :func:`read_tables` of ``gpu_name`` and ``dtype``."""
    return float(read_tables(folder, gpu_name, dtype)["flops_per_s"].max())


def as_fast_as_best(folder: Path, gpu_name: str, dtype: str = BF16) -> bool:
    """Whether the tables' kernels reach the GPU's best large-shape benchmark
    (:data:`BEST_BENCHMARK`), the condition for taking their ``k0`` (module docstring)."""
    return table_best(folder, gpu_name, dtype) >= BEST_BENCHMARK[(gpu_name, dtype)]
