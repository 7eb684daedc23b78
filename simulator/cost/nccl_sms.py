"""The streaming multiprocessors NCCL's kernels hold while a collective runs beside compute.

NCCL runs a collective as one CTA per execution channel, and "NCCL CTAs won't share an SM
with compute kernels" (NVIDIA/nccl#689, quoted in nccl#1656): while a collective overlaps a
compute kernel, that kernel has ``SMs - c`` of the GPU's SMs. Execution channels are
"typically 2x the search channels" (sjeaugey, nccl#1041). The search channels are the rings
the topology search finds: across servers one per NIC the group's GPUs use
(:attr:`simulator.collectives.group.Group.channels`), which gives the 16 channels NCCL logs
for a ring over 8-GPU H100 servers with 8 NICs each ("Channel 00/16", nccl#1453); inside one
NVSwitch server NCCL logs 16 collective channels for an 8-GPU H800 server (nccl#892), taken
here for every NVSwitch server (an estimate: no H100 single-server log was found). Other
single-server fabrics use the group's own rings.

Small messages use fewer channels (nccl#1216: NCCL drops channels while the message is below
``channels x threads x threshold``); the collectives this prices (ZeRO-3 units, megabytes
each) use them all. The slowdown is reported with the ZeRO-3 exposure (``zero3_exposed_s``,
under data-parallel communication in ``clustersim run``): it is what those collectives cost
the step beyond their own time.
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.config.hardware import IntraFabricKind

EXECUTION_PER_SEARCH_CHANNEL = 2
"""NCCL execution channels per topology-search channel (nccl#1041)."""
NVSWITCH_SERVER_SEARCH_CHANNELS = 8
"""Search channels inside one NVSwitch server: 16 collective channels on an 8-GPU H800
server (nccl#892) over :data:`EXECUTION_PER_SEARCH_CHANNEL`."""


def nccl_ctas(group: Group) -> int:
    """CTAs (one SM each) NCCL runs a large collective of ``group`` with (module docstring)."""
    search = group.channels
    if group.servers == 1 and group.cluster.hw.node.fabric.kind == IntraFabricKind.NVSWITCH:
        search = NVSWITCH_SERVER_SEARCH_CHANNELS
    return EXECUTION_PER_SEARCH_CHANNEL * search


def nccl_sm_share(group: Group) -> float:
    """Share of the GPU's SMs a large collective of ``group`` holds while it runs:
    ``min(c, SMs) / SMs`` with ``c`` = :func:`nccl_ctas` (dimensionless, in (0, 1])."""
    sms = group.cluster.hw.gpu.sm_count
    return min(nccl_ctas(group), sms) / sms
