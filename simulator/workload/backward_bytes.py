"""What a memory-bound kernel's backward moves, per byte its forward moved.

A pointwise kernel's forward reads its inputs (``R`` bytes) and writes its outputs (``W``). Its
backward reads the incoming gradient (``W``) and, unless the kernel is linear in its input, the
forward values its derivative needs (``R``), and writes the input gradients (``R``): ``2 R + W``
(1.5x the forward for a unary kernel, ``R = W``), ``R + W`` (1x) for a linear one. Where one
tensor feeds two kernels (the residual stream into the norm and into the skip), autograd adds
the two gradients (read two, write one). The ratios, per kernel of
:func:`simulator.workload.transformer._memory_bytes`:

=====================  ==========================  =================================  =====
kernel                 forward (bytes)             backward (bytes)                   ratio
=====================  ==========================  =================================  =====
fused norm             read x, write y: 2          read x, dy, write dx: 3            1.5
GELU (+ bias)          2 ffn                       3 ffn, the bias gradient's sum 1   2
squared ReLU           2 ffn                       3 ffn                              1.5
SwiGLU                 read gate, up, write y: 3   read gate, up, dy, write both: 5   5/3
rotary embedding       read, write q and k         the inverse rotation of dq, dk     1
transpose, (un)pad     a copy                      the mirror copy                    1
fused softmax          read, write S: 2 S          read y, dy, write dx: 3 S          1.5
attention dropout      read S, write S, mask: 2.5  read dy, mask, write dx: 2.5 S     1
residual add           read x, r, write y: 3 act   the fork's accumulation: 3 act     1
bias + dropout + add   3.5 act (fused),            dropout's gradient 2.5, the bias   6.5 /
                       7.5 act (eager)             gradient's sum 1, the fork's 3     3.5,
                                                                                      6.5 /
                                                                                      7.5
row permutations       (:mod:`~simulator.workload.moe_dispatch`)                      1
any other kernel       (eager op chains, the router, the Mamba-2 mixer)               2
=====================  ==========================  =================================  =====

Read in the kernels: TransformerEngine's ``rmsnorm_bwd`` and ``ln_bwd`` kernels load ``x``,
``dz``, ``gamma`` and the row statistics and store ``dx`` and per-block ``dgamma`` partials
(transformer_engine/common/normalization/{rmsnorm,layernorm}/*_bwd_kernels.cuh);
``nvte_dswiglu(grad, input, output)`` reads the gradient and the gated input and writes the
input's gradient (transformer_engine/common/activation/swiglu.cu); Megatron-LM's
``scaled_masked_softmax_warp_backward`` reads the gradient and the softmax output and writes
the input gradient (megatron/fused_kernels/scaled_masked_softmax.h);
``bias_gelu_back`` recomputes from the forward's input and autograd sums the bias gradient over
the tokens (megatron/model/fused_bias_gelu.py); PyTorch's ``native_dropout_backward`` reads the
gradient and the one-byte mask. The eager chains keep 2: counted op by op, the eager RMSNorm's
backward moves about 1.8x its forward's bytes.

Checked against two published layer timings: Korthikanti et al. 2022 (arXiv:2205.05198) Table 4,
a GPT 22B layer on 8 A100, whose backward over forward these ratios give within 2%
(tests/test_backward_bytes.py; the general rule of twice the forward's bytes, 4.5-7.4% high), and
Megatron-LM's MoE layer benchmark on one DGX H100 (``megatron_moe_layer`` in docs/validation.md),
whose backward over forward the model now gives a median 3.0% high (3.8% before).
"""

from __future__ import annotations

from simulator.config.scenario import Mlp

GENERIC = 2.0
"""A kernel's backward bytes over its forward's where the kernel is not listed above: it reads
what the forward read and the incoming gradient and writes what the forward wrote."""
ONCE = 1.0
"""A linear kernel's (a copy, a permutation, a rotation, a mask): the gradient moves the same
bytes back."""
FUSED_NORM = 1.5
"""A fused LayerNorm or RMSNorm: read ``x`` and ``dy``, write ``dx``, against read ``x``, write
``y``."""
SOFTMAX = 1.5
"""The fused scale-mask-softmax over the scores: read ``y`` and ``dy``, write ``dx``."""
ATTENTION_DROPOUT = 1.0
"""The attention dropout: read ``dy`` and the one-byte mask, write ``dx``: its forward's bytes."""
FORK_ACCUMULATION_ACT = 3.0
"""Activation bytes (per byte of the hidden activation) of the add of a residual stream's two
gradients, where the stream feeds the norm and the skip."""
DROPOUT_GRADIENT_ACT = 2.5
"""Activation bytes of bias-dropout-add's gradient through the dropout: read ``dy`` and the mask
(half the bytes of a 16-bit element), write ``dx``."""
BIAS_GRADIENT_ACT = 1.0
"""Activation bytes of the bias gradient's sum over the tokens: read ``dx`` once."""


def norm_ratio(fused: bool) -> float:
    """:data:`FUSED_NORM` for a fused norm, :data:`GENERIC` for an eager op chain."""
    return FUSED_NORM if fused else GENERIC


def activation_ratio(mlp: Mlp, fused: bool, weighted: bool) -> float:
    """The MLP activation's ratio (module table): fused GELU with its bias 2, squared ReLU 1.5,
    SwiGLU 5/3; eager, or with an eager routing-probability weighting (``weighted``),
    :data:`GENERIC`."""
    if not fused or weighted:
        return GENERIC
    return _FUSED_ACTIVATION[mlp]


_FUSED_ACTIVATION = {Mlp.GELU: 2.0, Mlp.SQUARED_RELU: 1.5, Mlp.SWIGLU: 5.0 / 3.0}


def residual_backward_act(dropout: bool) -> float:
    """Backward bytes of one residual site per byte of its hidden activation (module table):
    the fork's accumulation, and with dropout the dropout's and the bias's gradients."""
    extra = DROPOUT_GRADIENT_ACT + BIAS_GRADIENT_ACT if dropout else 0.0
    return FORK_ACCUMULATION_ACT + extra


def ratios_from_once(once: list[bool]) -> list[float]:
    """Ratios of kernels marked as moving their forward's bytes once (:data:`ONCE`) or not
    (:data:`GENERIC`)."""
    return [ONCE if o else GENERIC for o in once]
