"""HBM traffic of the cross-entropy loss over the vocabulary, per logit element, by the kernel
the training stack runs (``loss.kernel`` of its profile).

Bytes per element of the ``b s x V/t`` logits this GPU holds, forward and backward, read from
each implementation (bf16 logits from the output layer; fp32 arithmetic):

``vocab_parallel`` (38, 14): Megatron's unfused ``VocabParallelCrossEntropy``
(``megatron/core/tensor_parallel/cross_entropy.py``, NVIDIA/Megatron-LM 00611e6e; the 2021
``megatron/mpu/cross_entropy.py`` on ``output.float()`` runs the same passes). Forward:
``.float()`` (read 2, write 4), the row max (read 4), ``-=`` the max in place (read 4, write 4),
``torch.exp(out=)`` in place (4 + 4), the row sum (4), ``div_`` in place (4 + 4). Backward:
``grad_input.mul_(grad_output)`` on the saved softmax (4 + 4), then autograd casts the fp32
gradient back to bf16 (read 4, write 2).

``vocab_parallel_fused`` (26, 14): the same with ``cross_entropy_loss_fusion`` and
``cross_entropy_fusion_impl: native`` (``megatron/core/fusions/fused_cross_entropy.py``): the
cast and the max in one compiled kernel (read 2, write 4), ``exp(x - max)`` in place (4 + 4),
the sum (4), the division in place (4 + 4); backward the scaling in place (4 + 4) and the cast
to the logits' dtype (4 + 2).

``te`` (2, 4): ``cross_entropy_fusion_impl: te``, TransformerEngine's Triton
``parallel_cross_entropy`` (``transformer_engine/pytorch/triton/cross_entropy.py``): an online
softmax pass reads the bf16 logits once for the max and the sum (2); backward reads them again
and writes the gradient over them in place (2 + 2).

``torch`` (22, 26): eager ``F.cross_entropy(logits.float(), labels)`` (torchtitan's loss, a
Hugging Face model's): ``.float()`` (2 + 4); ``log_softmax`` over a row longer than a block
reads it for the max, again for the sum of exponentials, and a third time to write the
output (4 + 4 + 4 + 4); ``nll_loss`` gathers one element a row. Backward: ``nll_loss``'s
gradient is a zeroed fp32 tensor with one element a row set (write 4);
``_log_softmax_backward_data`` reads it for the row sum and again with the saved output to
write the input gradient (4 + 4 + 4 + 4); the cast back to bf16 (4 + 2).

``torch_bf16`` (8, 10): the same eager ``F.cross_entropy`` on the bf16 logits, without the
upcast (NeMo AutoModel's ``MaskedCrossEntropy(fp32_upcast=False)``, its MoE benchmark configs):
ATen's ``log_softmax`` reads a bf16 row for the max and the sum and again to write the bf16
output, accumulating in fp32 (2 + 2 + 2 + 2); backward the zeroed bf16 ``nll_loss`` gradient
(2) and ``_log_softmax_backward_data`` (2 + 2 + 2 + 2), no casts.

``xentropy`` (4, 4): the fused softmax cross entropy of flash-attn 1.0.9 / apex
(``flash_attn.losses.cross_entropy``, llm-foundry's default ``loss_fn: fused_crossentropy``):
the forward kernel reads the bf16 row for the max and again for the sum (2 + 2); backward reads
it once and writes the gradient (2 + 2).

On fp32 logits (the stack's ``loss.fp32_logits``: the model casts them, read 2 write 4 forward,
read 4 write 2 backward) each kernel reads and writes 4-byte logits and drops its own casts
(``.float()`` of an fp32 tensor returns it): ``vocab_parallel`` (32, 8), ``vocab_parallel_fused``
(28, 8: the compiled cast-and-max reads 4), ``te`` (4, 8), ``torch`` and ``torch_bf16`` (16,
20), ``xentropy``
(8, 8). A shift copy before the loss (``loss.shift_copy``) adds ``2 n`` forward (read and write
the shifted logits) and ``3 n`` backward (the slice's gradient: a zero-filled tensor of the whole
logits written, the slice's gradient read and written into it) for ``n``-byte logits. An unfused
z-loss (``loss.z_loss``: ``logits.logsumexp(-1)``) adds ``6 n`` forward and ``9 n`` backward:
ATen's ``logsumexp`` (aten/src/ATen/native/ReduceOps.cpp ``logsumexp_out_impl``) runs ``amax``
(read), ``self - maxes`` (read, write), ``exp_`` in place (read, write) and ``sum`` (read); its
backward ``grad * (self - result).exp()`` reads and writes three times, and autograd adds that
gradient to the cross entropy's (two reads, a write).

The count is the bytes the kernels move, as for the layer's other memory-bound kernels
(:mod:`simulator.workload.transformer`); the scalar all-reduces over the tensor-parallel group
and the per-row gathers are left out.
"""

from __future__ import annotations

from simulator.config.stack import LossKernel, LossProfile

_BYTES: dict[LossKernel, tuple[tuple[float, float], tuple[float, float], float]] = {
    # kernel:                      (bf16 logits,  fp32 logits,  peak)
    LossKernel.VOCAB_PARALLEL: ((38.0, 14.0), (32.0, 8.0), 4.0),
    LossKernel.VOCAB_PARALLEL_FUSED: ((26.0, 14.0), (28.0, 8.0), 4.0),
    LossKernel.TE: ((2.0, 4.0), (4.0, 8.0), 2.0),
    LossKernel.TORCH: ((22.0, 26.0), (16.0, 20.0), 12.0),
    LossKernel.TORCH_BF16: ((8.0, 10.0), (16.0, 20.0), 6.0),
    LossKernel.XENTROPY: ((4.0, 4.0), (8.0, 8.0), 4.0),
}

LOSS_TRAFFIC: dict[LossKernel, tuple[float, float]] = {k: v[0] for k, v in _BYTES.items()}
"""(forward, backward) HBM bytes per logit element of each implementation (module docstring)."""

LOSS_TRAFFIC_FP32: dict[LossKernel, tuple[float, float]] = {k: v[1] for k, v in _BYTES.items()}
"""(forward, backward) bytes per logit element of each implementation on fp32 logits
(module docstring), the model's cast apart."""

LOSS_PEAK_BYTES: dict[LossKernel, float] = {k: v[2] for k, v in _BYTES.items()}
"""Bytes per logit element alive at each implementation's memory peak: Megatron's keeps one
fp32 ``exp_logits``, reused in place for the gradient (Korthikanti et al. 2022 sec. 4.3); TE's
saves the bf16 logits and writes the gradient over them; eager torch holds the fp32 log-softmax
output, its incoming gradient and the input gradient at the start of backward (in bf16 without
the upcast, 6); flash-attn's
xentropy saves the bf16 logits and writes a bf16 gradient beside them."""

FP32_CAST = (6.0, 6.0)
"""Bytes per logit element of the model's cast to fp32 (read 2, write 4) and of its backward
(read 4, write 2)."""


def loss_traffic(loss: LossKernel | LossProfile) -> tuple[float, float]:
    """(forward, backward) bytes per logit element the loss moves: its kernel's
    (:data:`LOSS_TRAFFIC`; a bare kernel is taken on bf16 logits), with a :class:`LossProfile`'s
    fp32 logits (:data:`LOSS_TRAFFIC_FP32` plus :data:`FP32_CAST`), shift copy (``2 n``,
    ``3 n`` for ``n``-byte logits) and unfused z-loss (``6 n``, ``9 n``) added."""
    if not isinstance(loss, LossProfile):
        return LOSS_TRAFFIC[LossKernel(loss)]
    kernel = LossKernel(loss.kernel)
    if not loss.fp32_logits:
        forward, backward = LOSS_TRAFFIC[kernel]
        width = 2.0
    else:
        forward, backward = (a + b for a, b in zip(LOSS_TRAFFIC_FP32[kernel], FP32_CAST, strict=True))
        width = 4.0
    if loss.shift_copy:
        forward, backward = forward + 2.0 * width, backward + 3.0 * width
    if loss.z_loss:
        forward, backward = forward + 6.0 * width, backward + 9.0 * width
    return forward, backward
