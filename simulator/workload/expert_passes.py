"""Memory-bound passes Megatron-Core runs around its grouped experts besides the token
permutations (:mod:`simulator.workload.moe_dispatch`): the fp8 padding copies and the eager bias
of the experts' second linear. Bytes of one microbatch on the busiest expert rank, as lists of
kernels (forward, backward), each kernel paying its launch overhead when priced.

With ``R`` the rows the GPU's ``e`` local experts receive (``b s k`` times the busiest rank's
load, :meth:`LayerShape.expert_rows`), ``h`` the hidden width, ``n`` the activation bytes and
``q`` the routing probabilities' (4 under DeepEP and HybridEP, which require fp32
probabilities, ``token_dispatcher.py``; the activation dtype under the alltoall dispatcher,
whose router returns them in its input dtype unless ``moe_router_dtype`` is fp32):

- **Padding** (``LayerShape.expert_padding_copies``, the stack's ``expert_parallel.fp8_padding``):
  under fp8 and fp4 ``TEGroupedMLP.forward`` passes the permuted rows and probabilities through
  TransformerEngine's ``Fp8Padding`` and the output through ``Fp8Unpadding``
  (megatron/core/transformer/moe/experts.py, core_v0.10 to core_v0.17.1 unconditionally, from
  core_r0.18 unless the dispatcher or the router padded; transformer_engine/pytorch/module/
  fp8_padding.py v2.9: ``fused_multi_row_padding`` into a new buffer unless every count is
  already a multiple of the alignment, which routed counts practically never are). Forward
  ``[2 n R h, 2 q R, 2 n R h]``; backward the three reversed, the same bytes.
- **Bias** (``model.expert_bias``, experts not fused by TransformerEngine's op fuser): the second
  linear runs with ``skip_bias_add`` and ``_apply_bias`` (core_v0.15 to core_r0.18) adds
  ``t + b p`` expert by expert in eager PyTorch, then concatenates and casts back; in
  ``r = max(n, q)`` bytes: forward per expert a multiply (write ``r``) and an add (read ``n +
  r``, write ``r``), then the cat (``2 r``) and, when ``r != n``, the cast (``r + n``):
  ``5 r + n [+ r + n]`` per element of ``R h``; backward the casts' gradients (``2 (r + n)``
  when ``r != n``), per expert the bias's and the probability's gradients (a multiply and a
  reduction each, ``3 r`` + ``3 r``) and the split's gradient (a cat, ``2 n``):
  ``6 r + 2 n [+ 2 (r + n)]``.
"""

from __future__ import annotations

from simulator.workload.layer_shape import LayerShape

FP32_BYTES = 4.0


def probability_bytes(shape: LayerShape) -> float:
    """``q``: bytes of one routing probability (module docstring)."""
    return FP32_BYTES if shape.moe_flex else float(shape.dtype_bytes)


def padding_kernels(shape: LayerShape, expert_load: float = 1.0) -> tuple[list[float], list[float]]:
    """(forward, backward) kernel bytes of the fp8 padding copies: ``[2 n R h, 2 q R, 2 n R h]``
    each; none without experts or without ``expert_padding_copies``."""
    if shape.model.experts == 1 or not shape.expert_padding_copies:
        return [], []
    rows = shape.expert_rows(expert_load)
    copy = 2.0 * shape.dtype_bytes * rows * shape.model.expert_width
    kernels = [copy, 2.0 * probability_bytes(shape) * rows, copy]
    return kernels, list(kernels)


def bias_kernels(shape: LayerShape, expert_load: float = 1.0) -> tuple[list[float], list[float]]:
    """(forward, backward) kernel bytes of the experts' second-linear bias added in eager
    PyTorch (module docstring); none without experts, without ``model.expert_bias`` or with the
    experts fused (``expert_mlp_fused``)."""
    mdl = shape.model
    if mdl.experts == 1 or not mdl.expert_bias or shape.expert_mlp_fused:
        return [], []
    n = float(shape.dtype_bytes)
    r = max(n, probability_bytes(shape))
    elements = shape.expert_rows(expert_load) * mdl.expert_width
    local = max(mdl.experts / shape.ep, 1.0)
    each = elements / local
    forward = [r * each, (n + 2.0 * r) * each] * int(round(local)) + [2.0 * r * elements]
    backward = [2.0 * r * each, r * each, 2.0 * r * each, r * each] * int(round(local)) + [2.0 * n * elements]
    if r != n:
        forward.append((r + n) * elements)
        backward += [(n + r) * elements, (r + n) * elements]
    return forward, backward


def expert_pass_kernels(shape: LayerShape, expert_load: float = 1.0) -> tuple[list[float], list[float]]:
    """(forward, backward) kernel bytes of both passes (:func:`padding_kernels`,
    :func:`bias_kernels`)."""
    pad_f, pad_b = padding_kernels(shape, expert_load)
    bias_f, bias_b = bias_kernels(shape, expert_load)
    return pad_f + bias_f, pad_b + bias_b
