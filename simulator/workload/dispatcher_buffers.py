"""Device memory DeepEP's communication buffer holds for the flex dispatcher's normal kernels.

Megatron-Core's flex dispatcher with DeepEP (``expert_parallel.dispatcher: deepep``) makes one
``deep_ep.Buffer`` for the expert group, sized by DeepEP's own hints for the larger of its
recommended dispatch and combine configs (``get_buffer``, megatron/core/transformer/moe/
fused_a2a.py @ d98e8a64dd). The buffer is allocated by DeepEP (CUDA IPC memory for the NVLink
part, NVSHMEM's symmetric heap for the RDMA part), outside PyTorch's caching allocator, so it
counts against the device's memory and not against ``torch.cuda.max_memory_allocated``.

DeepEP's hints (``Config::get_nvl_buffer_size_hint``, ``get_rdma_buffer_size_hint``,
csrc/legacy/config.hpp; recommended configs ``Buffer.get_dispatch_config`` /
``get_combine_config``, deep_ep/buffers/legacy.py; deepseek-ai/DeepEP @ dd758ca, the normal
kernels of V1), for ``c = num_sms / 2`` channels, ``n = min(N, 8)`` NVLink peers and ``r =
max(N / 8, 1)`` RDMA peers of an ``N``-rank group, ``t`` tokens a channel's receive queue holds
and ``H`` bytes per token (``hidden x 2``: Megatron-Core's ``get_hidden_bytes`` counts at least
2 bytes an element)::

    NVL  = c n (2 r + 3) 4 + c n t_nvl (H + 8 + 128 x 8 + 128 x 4 + 128 x 4)
    RDMA = c r (8 x 2 + 2) 2 x 4 + 2 c r t_rdma (H + 8 + 128 x 8 + 128 x 4 + 128 x 4 + 16)

(8 bytes of source metadata per token, room for 128 top-k indices of 8 bytes, 128 weights and 128
scales of 4; RDMA 0 inside one server). With the default 20 SMs, ``N`` 64 and DeepSeek-V3's hidden
7,168 that is 0.38 + 0.34 GB.

HybridEP (``dispatcher: hybridep``; Megatron-Core's ``init_hybrid_ep_buffer`` with the rank's
token count, ``fused_a2a.py``) sizes its NVLink buffers for the worst case, every token of the
group routed to one GPU: ``M = T N`` tokens of ``T`` a rank, a 16-bit token buffer, an fp32
probability per token and local expert of the domain, an fp32 scale per 128 elements, the
dispatch sharing the combine's buffers (``use_shared_buffer``)::

    HybridEP = M (2 H' + 4 E_local N + 4 H' / 128)      (H' the hidden width in elements)

(``NVLCoordinator::allocate_combine_buffers`` / ``allocate_dispatch_buffers``,
csrc/hybrid_ep/buffer/intranode.cu, deepseek-ai/DeepEP branch hybrid-ep @ 94a9f8f); its RDMA
buffers across NVLink domains are not counted.
"""

from __future__ import annotations

DEEPEP_SMS = 20
"""DeepEP's default SM count for its normal kernels (``Buffer.num_sms``, deep_ep/buffers/legacy.py):
``num_sms / 2`` channels."""
NVL_PEERS = 8
"""GPUs DeepEP's normal kernels reach over NVLink (``LEGACY_NUM_MAX_NVL_PEERS``)."""
MAX_TOPK = 128
MAX_SCALES = 128
SOURCE_META_BYTES = 8
TOPK_INDEX_BYTES = 8
FLOAT_BYTES = 4
INT4_BYTES = 16
ALIGNMENT = 128

RECEIVE_TOKENS = {        # ranks: ((dispatch nvl, rdma send, rdma recv), (combine nvl, rdma send, rdma recv))
    2: ((256, 6, 128), (256, 6, 128)), 4: ((256, 6, 128), (256, 6, 128)),
    8: ((256, 6, 128), (256, 6, 128)), 16: ((288, 20, 128), (288, 12, 128)),
    24: ((288, 8, 128), (288, 8, 128)), 32: ((288, 8, 128), (288, 8, 128)),
    48: ((288, 8, 128), (288, 8, 128)), 64: ((288, 8, 128), (288, 8, 128)),
    96: ((480, 12, 128), (480, 8, 128)), 128: ((560, 12, 128), (560, 8, 128)),
    144: ((720, 12, 128), (720, 8, 128)), 160: ((720, 12, 128), (720, 8, 128)),
}
"""DeepEP's recommended configs' receive queues per channel, by expert-group size."""


def deepep_buffer_bytes(hidden: int, ranks: int, sms: int) -> float:
    """Bytes of the DeepEP buffer one GPU of an expert group of ``ranks`` holds (module
    docstring): the larger NVL and RDMA hints of the dispatch and combine configs. A group size
    DeepEP has no config for takes the next larger one's (the largest beyond them)."""
    if ranks < 2:
        return 0.0
    sizes = sorted(RECEIVE_TOKENS)
    configs = RECEIVE_TOKENS[next((size for size in sizes if size >= ranks), sizes[-1])]
    token = (2 * hidden + SOURCE_META_BYTES + MAX_TOPK * (TOPK_INDEX_BYTES + FLOAT_BYTES)
             + MAX_SCALES * FLOAT_BYTES)
    channels = sms // 2
    nvl = max(_nvl_bytes(channels, ranks, tokens, token) for tokens, _, _ in configs)
    rdma = max(_rdma_bytes(channels, ranks, send, recv, token) for _, send, recv in configs)
    return float(nvl + rdma)


def _nvl_bytes(channels: int, ranks: int, tokens: int, token: int) -> int:
    """``Config::get_nvl_buffer_size_hint``: control words and ``tokens`` per channel and peer."""
    nvl, rdma = min(ranks, NVL_PEERS), max(ranks // NVL_PEERS, 1)
    return _aligned(channels * nvl * ((2 * rdma + 3) * 4 + tokens * token))


def _rdma_bytes(channels: int, ranks: int, send: int, recv: int, token: int) -> int:
    """``Config::get_rdma_buffer_size_hint``: 0 inside one server, else send and receive halves
    of ``recv`` tokens (rounded up to a multiple of ``send``) per channel and RDMA peer."""
    if ranks <= NVL_PEERS:
        return 0
    rdma, queue = ranks // NVL_PEERS, -(-recv // send) * send
    control = channels * rdma * (NVL_PEERS * 2 + 2) * 2 * 4
    return _aligned(control + 2 * channels * rdma * queue * (token + INT4_BYTES))


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def hybridep_buffer_bytes(hidden: int, tokens: float, ranks: int, local_experts: float) -> float:
    """Bytes of HybridEP's NVLink buffers on one GPU of an expert group of ``ranks`` whose
    ranks each hold ``tokens`` tokens and ``local_experts`` experts (module docstring); 0
    without a group."""
    if ranks < 2:
        return 0.0
    per_token = 2 * hidden + FLOAT_BYTES * local_experts * ranks + FLOAT_BYTES * (hidden // MAX_SCALES)
    return float(tokens * ranks * per_token)
