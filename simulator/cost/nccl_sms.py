"""The streaming multiprocessors NCCL's kernels hold while a collective runs beside compute.

NCCL runs a collective as one CTA per execution channel, and "NCCL CTAs won't share an SM
with compute kernels" (NVIDIA/nccl#689, quoted in nccl#1656): while a collective overlaps a
compute kernel, that kernel has ``SMs - c`` of the GPU's SMs. Execution channels are
"typically 2x the search channels" (sjeaugey, nccl#1041). The search channels are the rings
the topology search finds: across servers one per NIC the group's GPUs use
(:attr:`simulator.collectives.group.Group.channels`), which gives the 16 channels NCCL logs
for a ring over 8-GPU H100 servers with 8 NICs each ("Channel 00/16", nccl#1453), doubled where
NCCL's search doubles them (:func:`internode_search_channels`: with 4 or fewer of a Hopper or
Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8 behind PCIe Gen6). Inside one
NVSwitch server (or NVL72 rack) the search channels are what NCCL's topology search finds for
the GPU's NVLink bandwidth (:func:`ring_search_channels`, the protocol table's
``ring_search``): 12 on an H100's or A100's links and 8 on an H800's or A800's, so 24 and 16
CTAs, as logged (nccl-tests#100: 24 on an HGX A100; nccl#892: 16 on an H800 server; an H100's
all-gather kernel runs 24 blocks, NVIDIA developer forum 2025), and 16 (32 CTAs) on Blackwell's
NVLink5. Other single-server fabrics use the group's own rings. RCCL across servers is taken to follow the
same rule, one search channel per NIC (an estimate: its multi-node defaults are of that order,
8 raised to 24 channels on 4-APU MI300A nodes, ROCm/rccl#1366); the ring construction of a
fully connected mesh across servers (:attr:`~simulator.collectives.group.Group.channels`,
one channel per mesh ring and entry GPU, up to 112 on 8 MI300X) spreads bytes over links and
is not a CTA count.

Small messages use fewer channels (nccl#1216: NCCL drops channels while the message is below
``channels x threads x threshold``); the collectives this prices (ZeRO-3 units, megabytes
each) use them all. The slowdown is reported with the ZeRO-3 exposure (``zero3_exposed_s``)
or, beside Megatron's overlapped data-parallel collectives
(:mod:`simulator.engine.dp_overlap_sms`), with the exposed data-parallel time; both under
data-parallel communication in ``clustersim run``: it is what those collectives cost the step
beyond their own time.
"""

from __future__ import annotations

import numpy as np

from simulator.collectives.group import Group
from simulator.config.hardware import IntraFabricKind
from simulator.workload.chunk_gathers import MAX_SHARE

EXECUTION_PER_SEARCH_CHANNEL = 2
"""NCCL execution channels per topology-search channel (nccl#1041)."""
NCCL_MAX_CHANNELS = 64
"""NCCL's ceiling on a communicator's channels, hence on the CTAs a collective runs:
``MAXCHANNELS`` 64 from NCCL 2.25.1 (32 before; NVIDIA/nccl ``src/include/device.h``, and
``src/graph/connect.cc``: ``nChannels = min(ncclMaxNchannels(), nChannels, config.maxCTAs)``).
It binds on NVL72 racks taken as one server, where a data-parallel group holds up to 64 GPUs
and 256 NICs of a rack and one search channel per NIC would give 128 CTAs."""
NVSWITCH_SERVER_SEARCH_CHANNELS = 8
"""Search channels inside one NVSwitch server whose NVLink generation the protocol table's
``ring_search`` does not list: 16 collective channels on an 8-GPU H800 server (nccl#892) over
:data:`EXECUTION_PER_SEARCH_CHANNEL`."""
DUP_MIN_GBPS = 25.0
"""``ncclTopoDupChannels`` leaves a graph whose channels run under 25 GB/s undoubled."""
NEXT_SPEED_RATIO = 0.49
"""``ncclTopoCompute`` tries a slower speed only while it is over 0.49 of the best graph's."""
_EPS = 1e-9


def nccl_ctas(group: Group) -> int:
    """CTAs (one SM each) NCCL runs a large collective of ``group`` with (module docstring),
    at most :data:`NCCL_MAX_CHANNELS`."""
    if group.servers > 1:           # one search channel per NIC the group uses
        local = min(len(s) for s in group.by_server)
        hw = group.cluster.hw
        search = internode_search_channels(hw, max(1, round(min(local, hw.nic_ports) * hw.nic_lanes)))
    elif group.cluster.hw.node.fabric.kind == IntraFabricKind.NVSWITCH:
        search = nvswitch_search_channels(group.cluster.hw)
    else:
        search = group.channels
    return min(EXECUTION_PER_SEARCH_CHANNEL * search, NCCL_MAX_CHANNELS)


def nvswitch_search_channels(hw) -> int:
    """NCCL's ring channels inside one NVSwitch domain of the resolved cluster ``hw``: the
    search of :func:`ring_search_channels` over the GPU's NVLink bandwidth, ``links x rate x
    efficiency`` (the library's NVLink efficiencies are NCCL's own per-link figures,
    ``SM80/SM90/SM100_NVLINK_BW`` in src/graph/topo.h), or
    :data:`NVSWITCH_SERVER_SEARCH_CHANNELS` for a link the protocol table does not list."""
    search = _ring_search(hw)
    if search is None:
        return NVSWITCH_SERVER_SEARCH_CHANNELS
    link = hw.intra_link
    bandwidth = hw.node.fabric.links_per_gpu * link.bandwidth_GBps * link.efficiency
    return ring_search_channels(bandwidth, search.speeds_GBps, search.dup_below_GBps,
                                NCCL_MAX_CHANNELS // 2)


def ring_search_channels(bandwidth_GBps: float, speeds_GBps, dup_below_GBps: float,
                         max_channels: int) -> int:
    """Ring channels NCCL's topology search gives GPUs joined through an NVSwitch by
    ``bandwidth_GBps`` each (src/graph/search.cc ``ncclTopoCompute``, ``ncclTopoDupChannels``):
    at speed ``s`` a ring channel takes ``s`` of every GPU's link, so ``floor(B / s)`` channels
    fit (at most ``max_channels``, MAXCHANNELS/2); starting at the fastest speed not above
    ``B``, the graph with the largest ``channels x s`` is kept, a slower speed is tried while
    it is over 0.49 of the kept graph's, and the search stops once ``channels x s >= B``. The
    kept graph is doubled (at most ``max_channels``) unless its speed is under 25 GB/s, or
    under ``dup_below_GBps`` with more than 4 channels. E.g. 18 NVLink4 links (369 GB/s): 6
    channels at 60, doubled: 12; 8 links (164 GB/s): 4 at 40, doubled: 8."""
    index = next((i for i, s in enumerate(speeds_GBps) if s <= bandwidth_GBps + _EPS),
                 len(speeds_GBps) - 1)
    channels, speed = 0, 0.0
    while True:
        trial = speeds_GBps[index]
        count = min(int(bandwidth_GBps / trial + _EPS), max_channels)
        if count * trial > channels * speed + _EPS:
            channels, speed = count, trial
        done = channels and (channels * speed >= bandwidth_GBps - _EPS or channels == max_channels)
        slower = index + 1 < len(speeds_GBps) and (
            not channels or speeds_GBps[index + 1] / speed > NEXT_SPEED_RATIO)
        if done or not slower:
            break
        index += 1
    return max(doubled_channels(channels, speed, dup_below_GBps, max_channels), 1)


def doubled_channels(channels: int, speed_GBps: float, dup_below_GBps: float, max_channels: int) -> int:
    """``ncclTopoDupChannels``: twice ``channels`` (at most ``max_channels``) unless their
    speed is under 25 GB/s, or under ``dup_below_GBps`` with more than 4 of them."""
    if channels and speed_GBps >= DUP_MIN_GBPS and not (speed_GBps < dup_below_GBps and channels > 4):
        return min(2 * channels, max_channels)
    return channels


def internode_search_channels(hw, channels: int) -> int:
    """NCCL's ring channels across servers for ``channels`` NICs used, one channel each:
    doubled by :func:`doubled_channels` at the channel speed NCCL's search gives the GPU's
    path to its NIC, the fastest of the protocol table's ``inter_speeds_GBps`` within
    ``min(NIC line rate, PCIe rate x efficiency)`` (48 GB/s for NDR on PCIe Gen5: doubled only
    with 4 or fewer channels on Hopper and later; 24 for HDR on Gen4: never; 96 for
    ConnectX-8 on Gen6: always). Unchanged where the table lists no inter speeds for the
    node's NVLink generation."""
    search = _ring_search(hw)
    if search is None or not search.inter_speeds_GBps:
        return channels
    path = min(hw.nic_link.bandwidth_GBps, hw.pcie_link.bandwidth_GBps * hw.pcie_link.efficiency)
    speed = next((s for s in search.inter_speeds_GBps if s <= path + _EPS), search.inter_speeds_GBps[-1])
    return doubled_channels(channels, speed, search.dup_below_GBps, NCCL_MAX_CHANNELS // 2)


def _ring_search(hw):
    """The protocol table's ``ring_search`` entry for the node's NVLink generation, or None."""
    link = hw.intra_link
    return hw.protocols.ring_search.get(link.name) if link is not None else None


GPU_COLLECTIVE_VENDORS = ("NVIDIA", "AMD")
"""Vendors whose parts run collectives on NCCL or RCCL, whose kernels hold SMs (CUs); other
accelerators' collectives (XLA's on TPU) hold no compute units here (share 0)."""


def nccl_sm_share(group: Group) -> float:
    """Share of the GPU's SMs a large collective of ``group`` holds while it runs:
    ``min(c, SMs) / SMs`` with ``c`` = :func:`nccl_ctas` (dimensionless, in [0, 1]; 0 off
    NCCL and RCCL, :data:`GPU_COLLECTIVE_VENDORS`)."""
    if group.cluster.hw.gpu.vendor not in GPU_COLLECTIVE_VENDORS:
        return 0.0
    sms = group.cluster.hw.gpu.sm_count
    return min(nccl_ctas(group), sms) / sms


def overlap_slowed(compute, comm, sm_share):
    """Seconds ``compute`` takes with ``comm`` seconds of NCCL collective beside it holding a
    share ``f`` = ``sm_share`` of the SMs: ``C + f min(c, C / (1 - f))`` (s; the compute runs
    at ``1 - f`` of its pace while both run, at full pace after; ``f`` = 1 stalls it for the
    whole collective). Elementwise on arrays; the scalar form prices ZeRO-3 units in
    :func:`simulator.cost.sharding._pass_exposed`."""
    share = np.minimum(sm_share, MAX_SHARE)
    return compute + share * np.minimum(comm, compute / (1.0 - share))


def excess_beside(compute: float, comm: float, sm_share: float) -> float:
    """Seconds a collective of ``comm`` s adds to a compute kernel of ``compute`` s it runs
    beside, holding a share ``f`` of the SMs: ``max(C', c) - C`` with ``C'`` =
    :func:`overlap_slowed` (``max(0, c - C)`` at ``f`` = 0)."""
    return float(max(overlap_slowed(compute, comm, sm_share), comm) - compute)
