"""The cross entropy's HBM traffic follows the stack's loss kernel
(simulator/workload/loss_kernels.py, counted from each implementation's passes)."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.stack import LossKernel, LossProfile
from simulator.engine.context import make_context
from simulator.pipeline import session_from_scenario
from simulator.workload.head_kernels import logits_backward, logits_forward
from simulator.workload.loss_kernels import LOSS_TRAFFIC, loss_traffic

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
    # the same eager passes on 2-byte elements, without the casts
    assert LOSS_TRAFFIC[LossKernel.TORCH_BF16] == (8, 2 + 8)
    assert LOSS_TRAFFIC[LossKernel.TORCH_BF16][0] == (LOSS_TRAFFIC[LossKernel.TORCH][0] - 6) / 2
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


@pytest.mark.parametrize(("kernel", "fp32_kernel"), [
    (LossKernel.VOCAB_PARALLEL, (38 - 6, 14 - 6)), (LossKernel.VOCAB_PARALLEL_FUSED, (26 + 2, 14 - 6)),
    (LossKernel.TE, (2 * 2, 2 * 4)), (LossKernel.TORCH, (22 - 6, 26 - 6)),
    (LossKernel.XENTROPY, (2 * 4, 2 * 4))])
def test_fp32_logits_drop_the_kernels_casts_and_add_the_models(kernel, fp32_kernel):
    """On fp32 logits a kernel's own casts are no-ops (Megatron's and torch's ``.float()``, 2 + 4
    forward, and the cast of the gradient back, 4 + 2), the fused Megatron kernel's cast-and-max
    reads 4 bytes, TE's and xentropy's passes move 4-byte elements; the model's cast adds 6 each way."""
    profile = LossProfile(kernel=kernel, fp32_logits=True)
    assert loss_traffic(profile) == (fp32_kernel[0] + 6, fp32_kernel[1] + 6)


@pytest.mark.parametrize(("fp32", "width"), [(False, 2), (True, 4)])
def test_a_shift_copy_moves_the_logits_twice_forward_and_three_times_backward(fp32, width):
    base = loss_traffic(LossProfile(kernel=LossKernel.XENTROPY, fp32_logits=fp32))
    shifted = loss_traffic(LossProfile(kernel=LossKernel.XENTROPY, fp32_logits=fp32, shift_copy=True))
    assert (shifted[0] - base[0], shifted[1] - base[1]) == (2 * width, 3 * width)


def test_the_profile_defaults_are_the_bare_kernels():
    for kernel in LossKernel:
        assert loss_traffic(LossProfile(kernel=kernel)) == LOSS_TRAFFIC[kernel]


@pytest.mark.parametrize(("fp32", "width"), [(False, 2), (True, 4)])
def test_an_unfused_z_loss_is_atens_logsumexp_and_its_gradient(fp32, width):
    """amax 1 + subtract 2 + exp 2 + sum 1 passes forward; (x - lse), exp, times grad (2 each)
    and the add into the cross entropy's gradient (3) backward, of ``n``-byte elements."""
    base = loss_traffic(LossProfile(kernel=LossKernel.TORCH, fp32_logits=fp32))
    with_z = loss_traffic(LossProfile(kernel=LossKernel.TORCH, fp32_logits=fp32, z_loss=True))
    assert (with_z[0] - base[0], with_z[1] - base[1]) == ((1 + 2 + 2 + 1) * width, (2 + 2 + 2 + 3) * width)
