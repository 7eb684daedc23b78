"""How many switches a scenario's fabric needs, counted before any is built.

A leaf of radix ``R`` at oversubscription ``o`` has ``down = round(R o / (1 + o))`` ports to
NICs and the rest up (:func:`leaf_ports`). A fat-tree needs ``ceil(NICs / down)`` leaves, a
rail-optimized fabric ``rails x ceil(servers / down)`` (each rail its own leaves). Two tiers
join at most ``R`` leaves (every leaf to every spine); three tiers at most ``R`` pods of ``R / 2``
leaves (Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture", SIGCOMM
2008). :func:`check_fabric_size` refuses a fabric beyond that from the counts alone, so a
million-server scenario is refused at once instead of after its graph is built.

Fabrics without a radix bound (``single-switch``, ``torus``, or a fat-tree of large radix) are
bounded by :data:`MAX_GPUS` (:func:`check_cluster_size`): the cluster graph holds every GPU,
NIC and switch, and beyond it building and routing it takes minutes and tens of GB.
"""

from __future__ import annotations

from math import ceil

from simulator.config.scenario import FabricConfig, TopologyKind
from simulator.errors import ConfigError


def leaf_ports(cfg: FabricConfig) -> tuple[int, int]:
    """(down, up) ports of a leaf of radix R at oversubscription o: down = round(R*o/(1+o))."""
    radix, o = cfg.switch_radix, cfg.oversubscription
    down = min(max(round(radix * o / (1.0 + o)), 1), radix - 1)
    return down, radix - down


def leaf_count(cfg: FabricConfig, servers: int, nics_per_server: int) -> int:
    """Leaves of a fat-tree or rail-optimized fabric (module docstring); 0 for the others."""
    down = leaf_ports(cfg)[0]
    if cfg.topology == TopologyKind.FAT_TREE:
        return ceil(servers * nics_per_server / down)
    if cfg.topology == TopologyKind.RAIL_OPTIMIZED:
        return nics_per_server * ceil(servers / down)
    return 0


def uplink_tiers(cfg: FabricConfig, leaves: int) -> int:
    """Switch tiers joining ``leaves`` leaves (``cluster.fabric.tiers``, else 2 while every leaf
    reaches every spine, else 3); :class:`ConfigError` when they cannot (module docstring)."""
    radix = cfg.switch_radix
    tiers = cfg.tiers or (2 if leaves <= radix else 3)
    if tiers == 2 and leaves > radix:
        raise ConfigError(f"{leaves} leaves need more than two tiers of radix-{radix} switches",
                          key="cluster.fabric.tiers")
    if tiers == 3 and ceil(leaves / (radix // 2)) > radix:
        raise ConfigError(f"{leaves} leaves exceed a three-tier fat-tree of radix {radix}",
                          key="cluster.fabric.switch_radix")
    return tiers


MAX_GPUS = 131_072
"""The most GPUs a scenario's cluster may hold (2**17, eight times the largest validated run,
Llama 3 405B on 16,384 H100). On one core, one step of 131,072 GPUs takes about 20 s and
2.5 GB, an nccl-tests table over them (``clustersim collectives``) about 50 s and 7 GB
(GB200 NVL72 servers); a million GPUs took 90 s and 9 GB, and the table was killed for
lack of memory."""


def check_cluster_size(servers: int, gpus_per_server: int) -> None:
    """Refuse a cluster of more than :data:`MAX_GPUS` GPUs before its graph is built."""
    gpus = servers * gpus_per_server
    if gpus > MAX_GPUS:
        fits = MAX_GPUS // gpus_per_server
        nodes = f", {fits:,} of these nodes" if fits else ""
        raise ConfigError(f"{servers:,} nodes x {gpus_per_server:,} GPUs = {gpus:,} GPUs is more than "
                          f"clustersim simulates (at most {MAX_GPUS:,} GPUs{nodes})", key="cluster.nodes")


def check_fabric_size(cfg: FabricConfig, servers: int, nics_per_server: int) -> None:
    """:func:`uplink_tiers` of the leaves the fabric will have, from the counts alone."""
    leaves = leaf_count(cfg, servers, nics_per_server)
    if leaves > 1:
        uplink_tiers(cfg, leaves)
