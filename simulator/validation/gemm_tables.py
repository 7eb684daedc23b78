"""A GEMM kernel's per-tile K overhead and fixed time (``compute.gemm_k_overhead``,
``compute.gemm_fixed_us``), read from OpenXLA's measured GEMM tables (``validation/gemm/``,
sources in its ``SOURCES.md``; each figure the median CUPTI kernel time of one shape).

The cost model prices a GEMM of shape (M, N, K) x b at

    time = 2 M N K b / (level * tile_fill * wave_fill * K / (K + k0)) + t_fixed

(:meth:`simulator.cost.compute.ComputeModel.gemm_time`): ``k0`` is each output tile's prologue
and epilogue in K elements of main-loop work that no other tile hides, ``t_fixed`` the kernel's
first fill of its operand pipeline and last tile's epilogue, paid once. Both are fitted
together with one asymptotic level per table, least squares in the log of the kernel time,
over shapes of at least :data:`MIN_WAVES` waves of output tiles (below one wave cuBLAS picks
smaller tiles than the model's, which no ``k0`` captures); the shapes of fewer waves are the
held-out check. The level is not taken from these tables: the spec's peak fraction stays the
large-shape benchmark's (MAMF, hardware_specs/gpus/*.yaml).

A table's ``k0`` is taken into a GPU's spec only where its best rate reaches that GPU's best
large-shape benchmark (:data:`BEST_BENCHMARK`, :func:`as_fast_as_best`): slower kernels lose
more at small K than the ones training runs, so their fall with K overstates the GPU's. So
far that holds for the H100 alone (its two tables reach 809 and 805 TFLOP/s against MAMF's
794.5); the B200's, MI300X's and MI355X's tables run below their GPUs' benchmarks. The
B200's tables give the H100's fixed time within 12%, which is why every NVIDIA part takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

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
class GemmOverheadFit:
    """The fitted per-tile K overhead ``k0`` (K elements of the dtype's main loop), the fixed
    in-kernel time ``fixed_s`` (seconds), each table's asymptotic rate ``levels`` (FLOP/s, by
    file name), the rms of the log residuals at the fit, and how many shapes it rests on."""

    k0: float
    fixed_s: float
    levels: dict[str, float]
    rms: float
    shapes: int


def read_table(folder: Path, name: str, gpu_key: str, dtype: str) -> pd.DataFrame:
    """Rows of one GPU and dtype of a table (a repeated shape keeps its last row)."""
    frame = pd.read_csv(folder / name)
    frame = frame[(frame["gpu"] == gpu_key) & (frame["dtype"] == dtype)]
    return frame.drop_duplicates(["b", "m", "n", "k"], keep="last").assign(table=name)


def with_fills(frame: pd.DataFrame, gpu: GpuSpec) -> pd.DataFrame:
    """``frame`` with the model's tile and wave fill (``fill``), whole waves (``waves``) and
    tiles per SM (``tiles_per_sm``, fractional) on ``gpu``."""
    m, n, b = (frame[c].to_numpy(float) for c in ("m", "n", "b"))
    fill, waves = tile_and_wave_fill(m, n, b, gpu.compute.gemm_tile, gpu.sm_count)
    tm, tn = gpu.compute.gemm_tile
    tiles = np.ceil(m / tm) * np.ceil(n / tn) * b
    return frame.assign(fill=fill, waves=waves, tiles_per_sm=tiles / gpu.sm_count)


def modelled_seconds(frame: pd.DataFrame, k0: float, fixed_s: float, levels: np.ndarray) -> np.ndarray:
    """``2 M N K b / (level * fill * K / (K + k0)) + fixed_s`` for each row of ``frame`` (rows
    from :func:`with_fills`; ``levels`` one asymptotic FLOP/s per row)."""
    k = frame["k"].to_numpy(float)
    return _flops(frame) / (levels * frame["fill"].to_numpy() * k / (k + k0)) + fixed_s


def measured_seconds(frame: pd.DataFrame) -> np.ndarray:
    """Each row's kernel time, ``2 M N K b / FLOP/s`` (the tables' median CUPTI kernel time)."""
    return _flops(frame) / frame["flops_per_s"].to_numpy(float)


def _flops(frame: pd.DataFrame) -> np.ndarray:
    """``2 M N K b`` of each row of ``frame``."""
    return 2.0 * (frame["m"].to_numpy(float) * frame["n"] * frame["k"] * frame["b"]).to_numpy()


def log_residuals(frame: pd.DataFrame, fit: GemmOverheadFit) -> np.ndarray:
    """``log(modelled / measured)`` seconds of each row of ``frame`` (from :func:`with_fills`)
    at ``fit``: positive where the model is slower than the table."""
    levels = frame["table"].map(fit.levels).to_numpy(float)
    return np.log(modelled_seconds(frame, fit.k0, fit.fixed_s, levels) / measured_seconds(frame))


def fit_gemm_overheads(frame: pd.DataFrame, gpu: GpuSpec) -> GemmOverheadFit:
    """The ``k0``, fixed time and per-table levels that best explain ``frame`` (one GPU and
    dtype, any number of tables) on ``gpu``'s tile and SM count: least squares in the log of
    the kernel time over shapes of at least :data:`MIN_WAVES` waves (module docstring)."""
    rows = with_fills(frame, gpu)
    rows = rows[rows["tiles_per_sm"] >= MIN_WAVES]
    names = sorted(rows["table"].unique())
    index = rows["table"].map({name: i for i, name in enumerate(names)}).to_numpy()
    measured = measured_seconds(rows)

    def residuals(params: np.ndarray) -> np.ndarray:
        levels = np.asarray(params[2:])[index] * 1e12
        return np.log(modelled_seconds(rows, params[0], params[1] * 1e-6, levels) / measured)

    start = np.array([128.0, 1.0] + [float(rows["flops_per_s"].max()) / 1e12] * len(names))
    best = least_squares(residuals, start, bounds=(0.0, np.inf))
    levels = {name: float(level) * 1e12 for name, level in zip(names, best.x[2:], strict=True)}
    rms = float(np.sqrt(np.mean(best.fun ** 2)))
    return GemmOverheadFit(float(best.x[0]), float(best.x[1]) * 1e-6, levels, rms, len(rows))


def read_tables(folder: Path, gpu_name: str, dtype: str = BF16) -> pd.DataFrame:
    """Every table :data:`TABLES` lists for ``gpu_name`` and ``dtype``, stacked (``table``
    names each row's file)."""
    parts = [read_table(folder, name, key, dtype) for name, key in TABLES[(gpu_name, dtype)]]
    return pd.concat(parts, ignore_index=True)


def measured_overheads(folder: Path, gpu_name: str, gpu: GpuSpec, dtype: str = BF16) -> GemmOverheadFit:
    """:func:`fit_gemm_overheads` over :func:`read_tables` of ``gpu_name`` and ``dtype``."""
    return fit_gemm_overheads(read_tables(folder, gpu_name, dtype), gpu)


def table_best(folder: Path, gpu_name: str, dtype: str = BF16) -> float:
    """The highest FLOP/s in :func:`read_tables` of ``gpu_name`` and ``dtype``."""
    return float(read_tables(folder, gpu_name, dtype)["flops_per_s"].max())


def as_fast_as_best(folder: Path, gpu_name: str, dtype: str = BF16) -> bool:
    """Whether the tables' kernels reach the GPU's best large-shape benchmark
    (:data:`BEST_BENCHMARK`), the condition for taking their ``k0`` (module docstring)."""
    return table_best(folder, gpu_name, dtype) >= BEST_BENCHMARK[(gpu_name, dtype)]
