"""Scenario sections of the training what-ifs (docs/what_ifs.md): gradient compression,
local SGD / DiLoCo (``training.sync_every``) and the input pipeline (``training.data_loader``).

Each section is absent by default; absent, nothing in the step changes. Cross-field rules
that need the layout (ZeRO stage, data-parallel size) are in :func:`check_what_ifs`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from simulator.errors import ConfigError

Flag = Annotated[bool, Strict()]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompressionMethod(StrEnum):
    """Gradient compressors: Top-K sparsification, PowerSGD, 8-bit and 1-bit quantisation."""

    TOPK = "topk"
    POWERSGD = "powersgd"
    INT8 = "int8"
    ONE_BIT = "1bit"


class GradientCompressionConfig(_Section):
    """How the data-parallel gradients are compressed before they are exchanged
    (:mod:`simulator.cost.compression`)."""

    method: CompressionMethod
    ratio: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 0.01
    rank: Annotated[int, Strict(), Field(ge=1, le=4096)] = 4
    min_compression_rate: Annotated[float, Strict(), Field(ge=1.0, le=1e6, allow_inf_nan=False)] = 2.0
    error_feedback: Flag = True


class DataLoaderConfig(_Section):
    """The input pipeline of one data-parallel replica (:mod:`simulator.workload.data_loader`)."""

    sample_bytes: Annotated[float, Strict(), Field(gt=0.0, le=1e12, allow_inf_nan=False)]
    storage_Bps: Annotated[float, Strict(), Field(ge=1.0, le=1e15, allow_inf_nan=False)]  # 1 B/s: finite
    request_latency_s: Annotated[float, Strict(), Field(ge=0.0, le=3600.0, allow_inf_nan=False)] = 0.0
    cpu_s_per_sample: Annotated[float, Strict(), Field(ge=0.0, le=3600.0, allow_inf_nan=False)] = 0.0
    workers: Annotated[int, Strict(), Field(ge=1, le=4096)] = 8
    prefetch_batches: Annotated[int, Strict(), Field(ge=1, le=100_000)] = 2
    jitter_sigma: Annotated[float, Strict(), Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 0.0


SyncEvery = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


def check_what_ifs(scenario) -> None:
    """Refuse what-ifs the layout cannot run.

    Raises
    ------
    ConfigError
        Gradient compression with ZeRO-3 (the gradients are reduce-scattered layer by layer
        inside the passes, where no compressor of this model applies); ``sync_every`` above
        1 with ZeRO 1-3 (each replica keeps its own optimizer state between syncs).
    """
    training, par = scenario.training, scenario.parallelism
    if training.gradient_compression is not None and par.zero_stage == 3:
        raise ConfigError("gradient compression needs parallelism.zero_stage 0, 1 or 2 (ZeRO-3 "
                          "reduces gradients inside the passes)", key="training.gradient_compression")
    if training.sync_every > 1 and par.zero_stage != 0:
        raise ConfigError(f"sync_every {training.sync_every} needs parallelism.zero_stage 0: "
                          "between syncs each replica keeps its own full optimizer state",
                          key="training.sync_every")
    if training.sync_every > 1 and training.gradient_compression is not None:
        raise ConfigError("sync_every and gradient_compression together are not modelled; "
                          "choose one", key="training.sync_every")


def without_training_what_ifs(scenario):
    """``scenario`` with no gradient compression, ``sync_every: 1``, no data loader and its
    cluster in one site (``cluster.sites`` dropped): the baseline of the net change."""
    training = scenario.training.model_copy(update={"gradient_compression": None, "sync_every": 1,
                                                    "data_loader": None})
    cluster = scenario.cluster.model_copy(update={"sites": None})
    return scenario.model_copy(update={"training": training, "cluster": cluster})
