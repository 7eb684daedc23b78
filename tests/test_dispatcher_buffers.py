"""The flex dispatcher's communication buffers: DeepEP's own size hints in closed form
(deepseek-ai/DeepEP csrc/legacy/config.hpp with the recommended configs of
deep_ep/buffers/legacy.py), HybridEP's worst-case NVLink buffers (csrc/hybrid_ep/buffer/
intranode.cu on the hybrid-ep branch), a memory part of its own that the allocator's counters do
not hold, and none for the alltoall dispatcher."""

from __future__ import annotations

import pytest
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run
from test_recompute_modules import DEEPSEEK

from simulator.validation.training_memory import RUNTIME_PARTS
from simulator.workload.dispatcher_buffers import deepep_buffer_bytes, hybridep_buffer_bytes

TOKEN = 2 * 7168 + 8 + 128 * 8 + 128 * 4 + 128 * 4
"""Bytes a DeepSeek-V3 token takes in the queues: the bf16 hidden, source metadata, room for 128
top-k indices, weights and scales."""


def test_one_server_holds_the_nvlink_queues_only():
    """8 ranks, 20 SMs (10 channels), 256 tokens a queue: ``10 x 8 x (2 + 3) x 4`` control bytes
    plus ``10 x 8 x 256`` tokens, rounded up to 128 bytes."""
    expected = 10 * 8 * 5 * 4 + 10 * 8 * 256 * TOKEN
    assert deepep_buffer_bytes(7168, 8, 20) == pytest.approx(-(-expected // 128) * 128, abs=0)


def test_eight_servers_add_the_rdma_queues():
    """64 ranks: 288 tokens a NVLink queue with 8 RDMA peers' control words; the RDMA part
    ``10 x 8 x 18 x 2 x 4 + 2 x 10 x 8 x 128 x (token + 16)`` (128 received tokens, a multiple of
    the 8 sent)."""
    nvl = -(-(10 * 8 * (2 * 8 + 3) * 4 + 10 * 8 * 288 * TOKEN) // 128) * 128
    rdma = 10 * 8 * 18 * 2 * 4 + 2 * 10 * 8 * 128 * (TOKEN + 16)
    assert deepep_buffer_bytes(7168, 64, 20) == nvl + -(-rdma // 128) * 128


def test_more_sms_more_channels_and_no_group_no_buffer():
    assert deepep_buffer_bytes(7168, 8, 40) > 1.9 * deepep_buffer_bytes(7168, 8, 20)
    assert deepep_buffer_bytes(7168, 1, 20) == 0.0


def test_hybridep_sizes_for_every_token_on_one_gpu():
    """8 ranks of 4,096 tokens and 16 local experts at hidden 2,048: ``32,768`` tokens of a
    16-bit row, an fp32 probability for each of the domain's 128 experts and 16 fp32 scales."""
    assert hybridep_buffer_bytes(2048, 4096, 8, 16) == 4096 * 8 * (2 * 2048 + 4 * 128 + 4 * 16)
    assert hybridep_buffer_bytes(2048, 4096, 1, 16) == 0.0


@pytest.mark.parametrize("dispatcher", ["deepep", "hybridep", "alltoall"])
def test_a_memory_part_of_its_own_for_the_flex_dispatcher(tmp_path, dispatcher):
    """The DeepSeek proxy (ep 16 over two servers, 32 experts, one 4,096-token sequence a rank)
    holds the flex dispatcher's buffers beside NCCL's, outside the allocator: the device total
    has them, the allocated figures do not; the alltoall dispatcher's are NCCL's."""
    stack = {"base": "megatron-core", "expert_parallel": {"dispatcher": dispatcher}}
    result = _run(tmp_path, _with(DEEPSEEK, training={"stack": stack}))
    parts = result.stages[0].memory
    expected = {"deepep": deepep_buffer_bytes(7168, 16, 20),
                "hybridep": hybridep_buffer_bytes(7168, 4096, 16, 2)}.get(dispatcher)
    assert parts.get("ep_buffers") == expected
    assert "ep_buffers" in RUNTIME_PARTS
