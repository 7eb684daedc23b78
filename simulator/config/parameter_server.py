"""Scenario schema of asynchronous training with parameter servers (``training.sync: async``
and the ``parameter_server`` section); the engine is :mod:`simulator.engine.async_ps`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict


class SyncMode(StrEnum):
    """How data-parallel replicas combine gradients."""

    SYNC = "sync"      # every step, a collective reduction (a barrier)
    ASYNC = "async"    # each replica pushes to and pulls from parameter servers on its own


class Placement(StrEnum):
    """Where parameter servers run (sets their default bandwidth)."""

    DEDICATED = "dedicated"   # their own CPU hosts, one fabric port each
    COLOCATED = "colocated"   # on the first ``servers`` training nodes, all their NICs


class ParameterServerConfig(BaseModel):
    """``servers`` shards of the parameters, each serving pushes and pulls over
    ``bandwidth_GBps`` per direction (default by ``placement``); a replica may run at most
    ``staleness`` iterations ahead of the slowest (stale synchronous parallel, Ho et al.,
    NIPS 2013; 0 is bulk synchronous)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: Annotated[int, Strict(), Field(ge=1, le=100_000)]
    placement: Placement = Placement.DEDICATED
    # from 1e-9 GB/s (1 B/s): smaller gave an infinite step
    bandwidth_GBps: Annotated[float, Strict(), Field(ge=1e-9, le=1e6, allow_inf_nan=False)] | None = None
    staleness: Annotated[int, Strict(), Field(ge=0, le=1_000_000)] = 4
