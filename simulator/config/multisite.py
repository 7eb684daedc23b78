"""Scenario section of a cluster that spans sites (``cluster.sites``; docs/what_ifs.md).

The sites partition the data-parallel replicas: site ``j`` of ``S`` holds replicas
``j dp/S .. (j + 1) dp/S - 1`` and the servers they run on; every other kind of traffic
(tensor, pipeline, context, expert) stays inside a replica and so inside its site, on the
fabric of ``cluster.fabric``. The sites are joined by WAN links
(:mod:`simulator.topology.multisite`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from simulator.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WanConfig(_Section):
    """One site's WAN uplink: bandwidth each way, one-way latency, packet loss (TCP-bound,
    Mathis et al. 1997) over ``streams`` parallel connections, and a lognormal jitter of
    each transfer (discrete-event engine)."""

    bandwidth_Bps: Annotated[float, Strict(), Field(ge=1.0, le=1e15, allow_inf_nan=False)]  # 1 B/s: finite
    latency_s: Annotated[float, Strict(), Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 0.0
    loss: Annotated[float, Strict(), Field(ge=0.0, le=0.5, allow_inf_nan=False)] = 0.0
    streams: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] = 1
    jitter_sigma: Annotated[float, Strict(), Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 0.0


class SitesConfig(_Section):
    count: Annotated[int, Strict(), Field(ge=2, le=1024)]
    wan: WanConfig


def check_sites(scenario, gpus_per_node: int, dp: int) -> None:
    """Refuse a multi-site layout the model does not cover.

    Raises
    ------
    ConfigError
        ``dp`` not divisible by the site count; a server shared by two sites (its GPUs
        must hold replicas of one site: ``gpus_per_node`` divides ``dp/S x tp x cp``);
        ZeRO 1-3 (optimizer state sharded across sites); gradient compression with sites.
    """
    sites = scenario.cluster.sites
    if sites is None or scenario.training is None:
        return
    par, count = scenario.parallelism, sites.count
    if dp % count:
        raise ConfigError(f"{count} sites need the data-parallel size ({dp}) divisible by them "
                          "(a site holds whole replicas)", key="cluster.sites.count")
    if (dp // count * par.tp * par.cp) % gpus_per_node:
        raise ConfigError(f"a site's replicas ({dp // count} x tp {par.tp} x cp {par.cp} GPUs) do "
                          f"not fill whole {gpus_per_node}-GPU servers", key="cluster.sites.count")
    if par.zero_stage != 0:
        raise ConfigError("sites need parallelism.zero_stage 0 (no optimizer state sharded over "
                          "the WAN)", key="cluster.sites")
    if scenario.training.gradient_compression is not None:
        raise ConfigError("sites and gradient_compression together are not modelled",
                          key="cluster.sites")
