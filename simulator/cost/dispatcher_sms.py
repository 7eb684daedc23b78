"""The SMs an expert-parallel dispatcher's kernels hold while its all-to-alls run beside compute.

Under ``expert_parallel.a2a_overlap`` one microbatch's dispatch and combine run beside another's
compute, which then has the GPU's SMs less the communication kernels' (simulator.cost.ep_overlap).
The alltoall dispatcher's all-to-alls are NCCL's, one CTA per channel (simulator.cost.nccl_sms).
The flex dispatcher's kernels hold a fixed count, one block per SM:

- DeepEP's normal kernels: ``Buffer.num_sms = 20`` (deepseek-ai/DeepEP ``deep_ep/buffer.py``,
  main and the hybrid-ep branch @ cf78085, the commit Megatron-LM's MoE recipes build);
- HybridEP: 24 blocks when the expert group is one NVLink domain, 8 when it spans several
  (``num_sms_dispatch_api`` / ``num_sms_combine_api`` defaults, ``csrc/hybrid_ep/config.cuh``
  @ cf78085; each internode block carries several warp groups);
- Megatron-Core's ``moe_flex_dispatcher_num_sms`` (``moe_deepep_num_sms`` /
  ``moe_hybridep_num_sms`` before it; transformer_config.py, Megatron-LM dev @ d48bd6be0a) sets
  the count, ``expert_parallel.dispatcher_sms`` here; Megatron-Bridge's performance recipes set
  32 for HybridEP (``scripts/performance/utils/overrides.py``, v0.4.2 and v0.5.1).
"""

from __future__ import annotations

from simulator.collectives.group import Group
from simulator.config.stack import EpDispatcher
from simulator.cost.nccl_sms import GPU_COLLECTIVE_VENDORS, nccl_sm_share
from simulator.workload.dispatcher_buffers import DEEPEP_SMS

HYBRIDEP_DOMAIN_SMS = 24
"""HybridEP's default blocks for an expert group inside one NVLink domain."""
HYBRIDEP_SPANNING_SMS = 8
"""HybridEP's default blocks for an expert group over several NVLink domains."""


def dispatcher_sm_share(group: Group, dispatcher: EpDispatcher, sms: int | None = None) -> float:
    """Share of the GPU's SMs the expert group's all-to-all kernels hold: NCCL's for the
    alltoall dispatcher, else ``min(n, SMs) / SMs`` for ``n`` = ``sms`` or the kernels' default
    (module docstring); 0 off NVIDIA and AMD parts."""
    if dispatcher == EpDispatcher.ALLTOALL:
        return nccl_sm_share(group)
    gpu = group.cluster.hw.gpu
    if gpu.vendor not in GPU_COLLECTIVE_VENDORS:
        return 0.0
    count = sms if sms is not None else default_dispatcher_sms(group, dispatcher)
    return min(count, gpu.sm_count) / gpu.sm_count


def default_dispatcher_sms(group: Group, dispatcher: EpDispatcher) -> int:
    """The flex dispatcher kernels' own SM count for ``group`` (module docstring)."""
    if dispatcher == EpDispatcher.DEEPEP:
        return DEEPEP_SMS
    return HYBRIDEP_DOMAIN_SMS if group.servers == 1 else HYBRIDEP_SPANNING_SMS
