"""The cross entropy's HBM traffic follows the stack's loss kernel
(simulator/workload/loss_kernels.py, counted from each implementation's passes)."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.stack import LossKernel
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.loss_kernels import LOSS_TRAFFIC, loss_traffic
from simulator.workload.transformer import logits_backward, logits_forward

TOKENS, VOCAB, TP = 2 * 4096, 131072, 2


def _shape(stack: str | dict):
    data = {"cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"layers": 4, "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "mlp": "gelu",
                      "seq_len": 4096, "vocab": VOCAB},
            "training": {"global_batch": 16, "micro_batch": 2, "stack": stack},
            "parallelism": {"tp": TP, "dp": 4}}
    library = HardwareLibrary()
    session = session_from_scenario(scenario_from_mapping(data, "<test>", library), library)
    return make_context(session.scenario, session.collectives).shape


def test_the_counts_add_up_pass_by_pass():
    """Megatron unfused: forward cast 6 + max 4 + subtract 8 + exp 8 + sum 4 + divide 8,
    backward scale 8 + cast 6; eager torch: cast 6 + log_softmax's three reads and a write 16,
    backward zeros 4 + two reads, a read and a write 16 + cast 6; TE: one read, then a read
    and a write; fused Megatron: the unfused less a separate max pass and subtraction (12)."""
    assert LOSS_TRAFFIC[LossKernel.VOCAB_PARALLEL] == (6 + 4 + 8 + 8 + 4 + 8, 8 + 6)
    assert LOSS_TRAFFIC[LossKernel.TORCH] == (6 + 16, 4 + 16 + 6)
    assert LOSS_TRAFFIC[LossKernel.TE] == (2, 2 + 2)
    forward, backward = LOSS_TRAFFIC[LossKernel.VOCAB_PARALLEL_FUSED]
    assert (forward, backward) == (38 - 12, 14)
    assert set(LOSS_TRAFFIC) == set(LossKernel)


@pytest.mark.parametrize(("stack", "kernel"), [
    ("megatron-core", LossKernel.VOCAB_PARALLEL_FUSED), ("megatron-lm-2021", LossKernel.VOCAB_PARALLEL),
    ("nemo", LossKernel.VOCAB_PARALLEL_FUSED), ("torchtitan", LossKernel.TORCH), ("fsdp2", LossKernel.TORCH),
    ({"base": "megatron-core", "loss": {"kernel": "te"}}, LossKernel.TE)])
def test_the_stack_chooses_the_bytes_of_the_last_stage(stack, kernel):
    """b s V / t logit elements (2 x 4,096 x 131,072 / 2) times the kernel's bytes, forward
    and backward apart (the backward is not twice the forward)."""
    shape = _shape(stack)
    elements = TOKENS * VOCAB / TP
    forward, backward = loss_traffic(kernel)
    assert logits_forward(shape).memory_bytes.tolist() == [pytest.approx(elements * forward)]
    assert logits_backward(shape).memory_bytes.tolist() == [pytest.approx(elements * backward)]


def test_the_output_layer_gemms_keep_their_backward():
    """The loss kernel changes only memory traffic: the data- and weight-gradient GEMMs of
    the (b s, V/t, h) output layer are those of the forward GEMM."""
    shape = _shape("megatron-core")
    forward = logits_forward(shape)
    assert (logits_backward(shape).gemms == forward.backward().gemms).all()
    assert logits_backward(shape).flops == pytest.approx(2 * forward.flops)
