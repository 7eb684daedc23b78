"""Sites joined by WAN links: which replicas a site holds, and what a transfer between
sites costs (docs/what_ifs.md).

A site's uplink carries ``bandwidth_Bps`` each way after a one-way ``latency_s``. Under
packet loss ``p`` a TCP connection reaches at most ``MSS C / (RTT sqrt(p))`` (Mathis,
Semke, Mahdavi and Ott, "The Macroscopic Behavior of the TCP Congestion Avoidance
Algorithm", CCR 1997; ``C = sqrt(3/2)``, ``RTT = 2 latency``), so ``streams`` parallel
connections reach

    B_eff = min(B, streams x MSS sqrt(3/2) / (RTT sqrt(p)))       (B without loss).

The data-parallel reduction across ``S`` sites is hierarchical: inside each site over its
``dp/S`` replicas (the fabric's collectives), then a ring across the sites in which each
site's uplink carries ``2 (S-1)/S`` of the replica's gradient bytes ``G`` (every tensor-
and context-parallel shard of every stage), in ``2 (S-1)`` latency-bound steps:

    T_wan = 2 (S-1)/S x G / B_eff + 2 (S-1) x latency.
"""

from __future__ import annotations

import math

from simulator.config.multisite import SitesConfig, WanConfig

MSS_BYTES = 1460.0
"""TCP maximum segment size on a 1,500-byte Ethernet MTU (1500 - 20 IP - 20 TCP)."""
MATHIS_C = math.sqrt(1.5)


def effective_bandwidth(wan: WanConfig) -> float:
    """``B_eff`` (B/s): the link's bandwidth, or the loss-bound TCP rate if lower."""
    if wan.loss <= 0.0 or wan.latency_s <= 0.0:
        return wan.bandwidth_Bps
    tcp = wan.streams * MSS_BYTES * MATHIS_C / (2.0 * wan.latency_s * math.sqrt(wan.loss))
    return min(wan.bandwidth_Bps, tcp)


def wan_seconds(sites: SitesConfig, replica_bytes: float) -> float:
    """``T_wan`` (s): the ring across ``S`` sites of ``replica_bytes`` (module formula)."""
    s = sites.count
    ring = 2.0 * (s - 1) / s * replica_bytes / effective_bandwidth(sites.wan)
    return ring + 2.0 * (s - 1) * sites.wan.latency_s


def wan_bytes(sites: SitesConfig, replica_bytes: float) -> float:
    """Bytes one site's uplink sends per reduction: ``2 (S-1)/S x G``."""
    return 2.0 * (sites.count - 1) / sites.count * replica_bytes


def split_by_site(group: tuple[int, ...], count: int) -> list[tuple[int, ...]]:
    """A data-parallel group (ranks in replica order) cut into its ``count`` sites' parts."""
    size = len(group) // count
    return [group[i * size:(i + 1) * size] for i in range(count)]
