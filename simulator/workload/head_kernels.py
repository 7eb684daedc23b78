"""Kernels outside the transformer layers for one microbatch on one GPU: the embedding lookup
(first stage), the output layer and its loss (last stage; the loss's bytes per logit from
:mod:`simulator.workload.loss_kernels`) and a multi-token prediction layer's own work.
"""

from __future__ import annotations

import numpy as np

from simulator.workload.layer_shape import Kernels, LayerShape


def logits_forward(shape: LayerShape) -> Kernels:
    """Output layer and cross entropy on the last stage: the ``(b s, V/t, h)`` GEMM and the
    loss's forward bytes per logit element (:mod:`simulator.workload.loss_kernels`).

    With the output layer in MXFP8 (``kernels.fp8_output_proj``; ``output_proj_cast_bytes``
    > 0) the GEMM is a linear, run at the fp8 rate, and its input, ``b s h`` elements, is
    quantized first (``output_proj_cast_bytes`` per element,
    :func:`simulator.cost.fp8_casts.cast_bytes_per_element`). The weight's copy, made once a
    step (``V h / t`` elements, 3.8 GB of traffic for DeepSeek-V3 at ``t = 1``, under 1 ms on
    Blackwell), is not priced; its bytes in memory are the other TE linears' fp8 copies
    (:mod:`simulator.workload.fp8_weight_cache`, counted on the last stage)."""
    cast = shape.output_proj_cast_bytes * shape.tokens * shape.model.hidden
    memory = [_logit_elements(shape) * shape.loss_traffic[0]] + ([cast] if cast else [])
    return Kernels(_logits_gemm(shape), np.array(memory), _output_proj_linear(shape))


def logits_backward(shape: LayerShape) -> Kernels:
    """The output layer's data- and weight-gradient GEMMs and the loss's backward bytes per
    logit element (not twice the forward's: the implementations differ,
    :mod:`simulator.workload.loss_kernels`); in MXFP8 the logits' gradient, ``b s V / t``
    elements, is quantized before both GEMMs (:func:`logits_forward`)."""
    head = Kernels(_logits_gemm(shape), np.zeros(0), _output_proj_linear(shape)).backward()
    cast = shape.output_proj_cast_bytes * _logit_elements(shape)
    memory = [_logit_elements(shape) * shape.loss_traffic[1]] + ([cast] if cast else [])
    return Kernels(head.gemms, np.array(memory), head.linear, is_backward=True)


def _logits_gemm(shape: LayerShape) -> np.ndarray:
    mdl = shape.model
    return np.array([(shape.tokens, mdl.vocab / shape.tp, mdl.hidden, 1)], dtype=np.float64)


def _output_proj_linear(shape: LayerShape) -> np.ndarray:
    """The output GEMM's linear mask: an fp8 linear only under ``kernels.fp8_output_proj``."""
    return np.array([shape.output_proj_cast_bytes > 0])


def _logit_elements(shape: LayerShape) -> float:
    """Logit elements of one microbatch on this GPU: ``b s V / t``."""
    return shape.tokens * shape.model.vocab / shape.tp


def mtp_forward(shape: LayerShape) -> Kernels:
    """One multi-token prediction layer's work besides its transformer layer and the shared
    output layer and loss (Megatron-Core ``MultiTokenPredictionLayer.forward``,
    megatron/core/transformer/multi_token_prediction.py): the shifted tokens' embedding
    lookup, the two RMSNorms (embedding and hidden state), their concatenation, the
    column-parallel projection ``eh_proj`` ``(b s, h/t, 2h)`` and the final norm; the
    memory-bound steps read and write ``b s h`` each (the concatenation ``2 b s h``)."""
    act = shape.tokens * shape.model.hidden * shape.dtype_bytes
    h = shape.model.hidden
    gemm = np.array([(shape.tokens, h / shape.tp, 2 * h, 1)], dtype=np.float64)
    return Kernels(gemm, np.array([3 * act, 2 * act, 2 * act, 4 * act, 2 * act]), np.ones(1, bool))


def embedding_forward(shape: LayerShape) -> Kernels:
    """Token (and position) embedding lookup on the first stage: memory-bound."""
    act = shape.tokens * shape.model.hidden * shape.dtype_bytes
    return Kernels(np.zeros((0, 4)), np.array([3 * act]))
