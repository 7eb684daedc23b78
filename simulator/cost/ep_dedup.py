"""Deduplicated expert dispatch: DeepEP's and HybridEP's kernels behind Megatron-Core's flex
token dispatcher (``expert_parallel.dispatcher: deepep | hybridep``), as one schedule of the
stage's expert-parallel groups.

The all-to-all dispatcher sends one copy of a token per (token, expert) pair: ``n = T k h b``
bytes per rank for ``T`` tokens of ``h`` elements of ``b`` bytes routed to ``k`` experts
(:func:`simulator.cost.in_layer.ep_collective`). DeepEP's normal kernels and HybridEP send a
token once per destination GPU inside a server and once per destination *server* across
servers, to the GPU of the same local rank there (the rail peer), which forwards it over NVLink
to the GPUs holding its experts (deepseek-ai/DeepEP ``docs/legacy.md``, "Normal kernels with
NVLink and RDMA forwarding"; HybridEP's hierarchical design, DeepEP PR #420;
``docs/research/stack_facts.md`` section 47). On a group of ``N`` servers with ``G`` of its
GPUs each and ``e = E / (N G)`` experts per GPU, per rank and per dispatch:

- to each rail peer on another server: ``T h b P(e G)``, a fraction ``P(e G) / k`` of ``n``;
- to each other GPU of its own server: its own tokens, ``T h b P(e)``, and those its ``N - 1``
  rail peers sent it, ``(N - 1) T h b P(e)``: a fraction ``N P(e) / k`` of ``n``;

with ``P(m)`` :func:`~simulator.workload.token_dedup.model_hit_probability` of each destination's own
expert range (group-limited routing, ``model.router_groups``, included: DeepSeek-V3's token
reaches at most 4 servers). The kernels forward while they receive, so both legs run at once:
one non-pipelined step whose time is its busiest link's, priced by the network model as every
schedule is (the links' rates and NCCL's point-to-point efficiency; DeepEP's README reports its
kernels at the links' rates: 153-158 GB/s over H800 NVLink, 43-58 GB/s per 400 Gb/s NIC). The
combine sends the same bytes back. Not modelled: the SMs the kernels hold (priced as NCCL's
under ``a2a_overlap``), and the replay of these flows by the discrete-event engine, which keeps
the priced duration. An expert group spread unevenly over servers has no rail peer for every
rank: it keeps the all-to-all's price.
"""

from __future__ import annotations

import numpy as np

from simulator.collectives import Algorithm, Op, Schedule, Step
from simulator.topology.cluster import Cluster
from simulator.workload.token_dedup import model_hit_probability


def dedup_schedule(cluster: Cluster, groups, model) -> Schedule | None:
    """The dispatch of every group in ``groups`` (global GPU indices) at once, as fractions of
    ``n = T k h b`` (module docstring) for ``model``'s routing (its experts, ``top_k`` and
    router groups); None if a group's servers hold unequal shares of it (no rail peer for
    every rank) or it has a single rank."""
    per_node = cluster.hw.gpus_per_node
    src, dst, frac = [], [], []
    for gpus in groups:
        parts = _by_server(np.asarray(gpus, dtype=np.int64), per_node)
        if parts is None or parts.size < 2:
            return None
        reach = _reach(model, *parts.shape)
        vertices = cluster.gpu_vertices(parts.ravel()).reshape(parts.shape)
        for (a, b), shares in ((_rail_pairs(vertices), reach[0]), (_server_pairs(vertices), reach[1])):
            src.append(vertices.ravel()[a])
            dst.append(vertices.ravel()[b])
            frac.append(shares.ravel()[b])          # what a flow carries is its destination's share
    step = Step.of_arrays(np.concatenate(src), np.concatenate(dst), np.concatenate(frac))
    return Schedule(Op.ALL_TO_ALL, Algorithm.DIRECT, len(groups[0]), (step,), pipelined=False)


def _reach(model, servers: int, local: int) -> tuple[np.ndarray, np.ndarray]:
    """Per destination, as (servers, local) arrays over ``k``: what each rail flow into a server
    carries, ``P(server) / k``, and what each NVLink flow into a GPU carries, ``N P(GPU) / k``; a
    GPU holds the contiguous experts of its expert-parallel rank (rank order: server-major)."""
    k, p = model.top_k, model_hit_probability
    per_gpu = model.experts // (servers * local)
    server = np.array([[p(model, per_gpu * local, s * per_gpu * local)] * local for s in range(servers)])
    gpu = np.array([[p(model, per_gpu, (s * local + i) * per_gpu) for i in range(local)]
                    for s in range(servers)])
    return server / k, servers * gpu / k


def _by_server(gpus: np.ndarray, per_node: int) -> np.ndarray | None:
    """The group's GPUs as an (servers, GPUs per server) array in rank order, None if uneven."""
    servers = gpus // per_node
    order = np.unique(servers, return_index=True)[1]
    rows = [gpus[servers == s] for s in servers[np.sort(order)]]
    if len({len(r) for r in rows}) != 1:
        return None
    return np.stack(rows)


def _rail_pairs(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) flat indices into the (servers, local) grid of every rank to its rail peer on
    every other server."""
    servers = vertices.shape[0]
    grid = np.arange(vertices.size).reshape(vertices.shape)
    a, b = np.meshgrid(np.arange(servers), np.arange(servers), indexing="ij")
    keep = a != b
    return grid[a[keep]].ravel(), grid[b[keep]].ravel()


def _server_pairs(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) flat indices of every rank to every other rank of its server."""
    grid = np.arange(vertices.size).reshape(vertices.shape)
    local = vertices.shape[1]
    i, j = np.meshgrid(np.arange(local), np.arange(local), indexing="ij")
    keep = i != j
    return grid[:, i[keep]].ravel(), grid[:, j[keep]].ravel()
