"""DeepEP's communication buffer under the flex dispatcher: DeepEP's own size hints in closed
form (deepseek-ai/DeepEP csrc/legacy/config.hpp with the recommended configs of
deep_ep/buffers/legacy.py), a memory part of its own that the allocator's counters do not hold,
and none for the other dispatchers."""

from __future__ import annotations

import pytest
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run
from test_recompute_modules import DEEPSEEK

from simulator.validation.training_memory import RUNTIME_PARTS
from simulator.workload.dispatcher_buffers import deepep_buffer_bytes

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


@pytest.mark.parametrize(("dispatcher", "held"), [("deepep", True), ("hybridep", False), ("alltoall", False)])
def test_a_memory_part_of_its_own_for_deepep(tmp_path, dispatcher, held):
    """The DeepSeek proxy (ep 16 over two servers) holds DeepEP's buffer beside NCCL's, outside
    the allocator: the device total has it, the allocated figures do not."""
    stack = {"base": "megatron-core", "expert_parallel": {"dispatcher": dispatcher}}
    result = _run(tmp_path, _with(DEEPSEEK, training={"stack": stack}))
    parts = result.stages[0].memory
    if held:
        assert parts["ep_buffers"] == deepep_buffer_bytes(7168, 16, 20)
        assert "ep_buffers" in RUNTIME_PARTS
    else:
        assert "ep_buffers" not in parts
