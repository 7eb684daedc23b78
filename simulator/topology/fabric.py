"""Builders for the network between servers: single switch, fat-tree, rail-optimized, torus.

Each builder links every NIC (given server-major as ``nics[s][k]``) to the
fabric and returns the switch vertex each NIC attaches to. All fabric links use
the scenario's NIC link spec. Oversubscription ``o`` splits a leaf's ``R``
ports into ``R*o/(1+o)`` down-links and the rest up-links (``o = 2`` is 2:1).
"""

from __future__ import annotations

from itertools import product
from math import ceil

from simulator.config.fabric_size import leaf_ports, uplink_tiers
from simulator.config.hardware import LinkSpec
from simulator.config.scenario import FabricConfig, TopologyKind
from simulator.topology.graph import GraphBuilder, VertexKind


def add_fabric(b: GraphBuilder, nics: list[list[int]], cfg: FabricConfig, link: LinkSpec) -> None:
    """Dispatch on ``cfg.topology`` (see the module docstring)."""
    flat = [n for server in nics for n in server]
    if not flat:
        return
    builders = {
        TopologyKind.SINGLE_SWITCH: lambda: _single_switch(b, flat, link),
        TopologyKind.FAT_TREE: lambda: _fat_tree(b, flat, cfg, link),
        TopologyKind.RAIL_OPTIMIZED: lambda: _rail_optimized(b, nics, cfg, link),
        TopologyKind.TORUS: lambda: _torus(b, nics, cfg, link, _port_lanes(cfg)),
    }
    builders[cfg.topology]()




def _single_switch(b: GraphBuilder, nics: list[int], link: LinkSpec) -> None:
    switch = b.vertex(VertexKind.LEAF, "fabric/switch0")
    for nic in nics:
        b.link(nic, switch, link)


def _fat_tree(b: GraphBuilder, nics: list[int], cfg: FabricConfig, link: LinkSpec) -> None:
    down, up = leaf_ports(cfg)
    leaves = _leaves(b, nics, down, link, "leaf")
    _uplink_tree(b, leaves, up, cfg, link)


def _rail_optimized(b: GraphBuilder, nics: list[list[int]], cfg: FabricConfig,
                    link: LinkSpec) -> None:
    """NIC k of every server on rail k's leaves; rails joined by a spine layer."""
    down, up = leaf_ports(cfg)
    leaves = []
    for rail in range(len(nics[0])):
        rail_nics = [server[rail] for server in nics]
        leaves += _leaves(b, rail_nics, down, link, f"rail{rail}-leaf")
    _uplink_tree(b, leaves, up, cfg, link)


def _leaves(b: GraphBuilder, nics: list[int], down: int, link: LinkSpec, name: str) -> list[int]:
    leaves = [b.vertex(VertexKind.LEAF, f"fabric/{name}{i}") for i in range(ceil(len(nics) / down))]
    for i, nic in enumerate(nics):
        b.link(nic, leaves[i // down], link)
    return leaves


def _uplink_tree(b: GraphBuilder, leaves: list[int], up: int, cfg: FabricConfig,
                 link: LinkSpec) -> None:
    """Two tiers (every leaf to every spine) if the spines' ports suffice, else three."""
    if len(leaves) == 1:
        return
    if uplink_tiers(cfg, len(leaves)) == 2:
        spines = [b.vertex(VertexKind.SPINE, f"fabric/spine{j}") for j in range(up)]
        for leaf, spine in product(leaves, spines):
            b.link(leaf, spine, link, switch_hop=True)
        return
    _three_tier(b, leaves, up, cfg.switch_radix, link)


def _three_tier(b: GraphBuilder, leaves: list[int], up: int, radix: int, link: LinkSpec) -> None:
    """Pods of R/2 leaves with ``up`` aggregation switches; agg j of each pod to core group j."""
    pod_size = radix // 2
    pods = [leaves[i:i + pod_size] for i in range(0, len(leaves), pod_size)]   # <= radix pods
    cores = [[b.vertex(VertexKind.CORE, f"fabric/core{j}-{k}") for k in range(radix // 2)]
             for j in range(up)]
    for p, pod in enumerate(pods):
        for j in range(up):
            agg = b.vertex(VertexKind.SPINE, f"fabric/pod{p}-agg{j}")
            for leaf in pod:
                b.link(leaf, agg, link, switch_hop=True)
            for core in cores[j]:
                b.link(agg, core, link, switch_hop=True)


def torus_dims(cfg: FabricConfig, nodes: int) -> list[int]:
    """The torus shape: ``cfg.torus_dims`` or the most square 2-D factorisation of ``nodes``."""
    return list(cfg.torus_dims or _square_dims(nodes))


def _port_lanes(cfg: FabricConfig) -> float:
    """Links between a port and its torus router: 1 for a NIC; for a chip of a chip-level
    torus (TPU ICI) its 2*d links, since its on-die router feeds them all at once."""
    return 2.0 * len(cfg.torus_dims or [0, 0]) if cfg.chip_torus else 1.0


def _torus(b: GraphBuilder, nics: list[list[int]], cfg: FabricConfig, link: LinkSpec,
           port_lanes: float = 1.0) -> None:
    """One router per server, linked to its 2*d torus neighbours (wrap-around).

    ``nics`` are the ports that attach to the routers: the servers' NICs, or on a
    chip-level torus (``cfg.chip_torus``) the chips themselves, ``port_lanes`` links each.
    """
    dims = torus_dims(cfg, len(nics))
    routers = [b.vertex(VertexKind.ROUTER, f"fabric/router{s}") for s in range(len(nics))]
    for s, server in enumerate(nics):
        for nic in server:
            b.link(nic, routers[s], link, port_lanes)
    lanes = max(len(nics[0]) / (2 * len(dims)), 1.0)
    for coord in product(*(range(d) for d in dims)):
        for axis, size in enumerate(dims):
            if size < 2 or (size == 2 and coord[axis] == 1):
                continue
            nxt = list(coord)
            nxt[axis] = (coord[axis] + 1) % size
            b.link(routers[_flat(coord, dims)], routers[_flat(nxt, dims)], link, lanes,
                   switch_hop=True)


def _flat(coord, dims) -> int:
    index = 0
    for c, d in zip(coord, dims, strict=True):
        index = index * d + c
    return index


def _square_dims(n: int) -> list[int]:
    """The most square 2-D factorisation of ``n``: 12 -> [3, 4]."""
    a = int(n**0.5)
    while n % a:
        a -= 1
    return [a, n // a]


def balanced_dims(n: int, d: int) -> list[int]:
    """The most balanced ``d``-dimensional factorisation of ``n``, ascending:
    ``balanced_dims(2048, 3) -> [8, 16, 16]`` (each axis the largest divisor of what is left
    not above its fair share, the ``k``-th root)."""
    dims = []
    for k in range(d, 1, -1):
        a = max(int(round(n ** (1.0 / k))), 1)
        while a > 1 and (n % a or a ** k > n):
            a -= 1
        dims.append(a)
        n //= a
    return sorted([*dims, n])

