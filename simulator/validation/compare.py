"""Compare a measured nccl-tests log with clustersim's prediction for the same cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.collectives import Algorithm, Op, whole_cluster
from simulator.collectives.schedule import POINT_TO_POINT
from simulator.cost import CollectiveModel
from simulator.errors import UsageError
from simulator.validation.nccl_log import NcclLog


def compare_log(log: NcclLog, model: CollectiveModel, op: Op | None = None,
                algorithm: Algorithm | None = None) -> pd.DataFrame:
    """Predicted against measured time and busbw for every row of ``log``.

    The group is the whole cluster (nccl-tests' MPI_COMM_WORLD). The operation
    is ``op`` or the one the log names; the algorithm is ``algorithm``, else
    the one the log forced with NCCL_ALGO (collectives only: NCCL runs all-to-all and
    send/recv as point-to-point transfers, which NCCL_ALGO does not select), else auto.

    Returns
    -------
    DataFrame with size_bytes, measured_time_s, predicted_time_s, time_ratio
    (predicted / measured), measured_busbw_GBps, predicted_busbw_GBps,
    busbw_error (relative), algorithm, protocol.
    """
    op = op or _log_op(log)
    algorithm = algorithm or _log_algorithm(log, op)
    group = whole_cluster(model.cluster)
    if log.nranks is not None and log.nranks != group.size:
        raise UsageError(f"{log.source}: the log ran on {log.nranks} ranks but the cluster has "
                         f"{group.size} GPUs; describe the same cluster in the scenario")
    sweep = model.sweep(op, algorithm, group, log.size_bytes)
    predicted_busbw = sweep.busbw_Bps / 1e9
    return pd.DataFrame({
        "size_bytes": log.size_bytes,
        "measured_time_s": log.time_s,
        "predicted_time_s": sweep.time_s,
        "time_ratio": sweep.time_s / log.time_s,
        "measured_busbw_GBps": log.busbw_GBps,
        "predicted_busbw_GBps": predicted_busbw,
        "busbw_error": _relative(predicted_busbw, log.busbw_GBps),
        "algorithm": sweep.algorithm,
        "protocol": sweep.protocol,
    })


def _relative(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(measured > 0, predicted / measured - 1.0, np.nan)


def _log_op(log: NcclLog) -> Op:
    if log.op is None:
        raise UsageError(f"{log.source}: cannot tell which collective the log measured; pass --op")
    return Op(log.op)


NCCL_ALGO_NAMES = {"nvlstree": Algorithm.NVLS_TREE.value}
"""``NCCL_ALGO`` values (lower-cased) whose clustersim name differs."""


def _log_algorithm(log: NcclLog, op: Op) -> Algorithm | None:
    if log.algorithm is None or op in POINT_TO_POINT:
        return None
    try:
        return Algorithm(NCCL_ALGO_NAMES.get(log.algorithm, log.algorithm))
    except ValueError:
        return None
