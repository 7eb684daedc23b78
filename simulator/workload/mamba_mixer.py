"""Kernels of one Mamba-2 mixer for one microbatch on one GPU (``model.mamba``,
:mod:`simulator.config.hybrid`), as Megatron-Core trains it.

With ``T = b s`` tokens, tensor-parallel ``t``, heads ``H`` of ``P`` channels (``d = H P``),
``G`` groups of state width ``N``, chunks of ``Q`` tokens and in_proj width ``W = 2d + 2GN + H``;
``H, G, d, W`` below are per rank (over ``t``: Megatron-Core splits the heads and the groups):

=====================  ====================================  ====================================
kernel                 work                                  notes
=====================  ====================================  ====================================
in_proj                GEMM ``(T, W, h)``                    column-parallel, the norm fused in
chunk states           ``T/Q H`` GEMMs ``(P, N, Q)``         fp32 states out
C B^T                  ``T/Q G`` GEMMs ``(Q, Q, N)``         per group, the whole chunk square
state to output        ``T/Q H`` GEMMs ``(Q, P, N)``
intra-chunk output     ``T/Q H`` GEMMs ``(Q, P, Q/2)``       causal: half the square
out_proj               GEMM ``(T, h, d)``                    row-parallel
=====================  ====================================  ====================================

Training runs the memory-efficient path (``use_mem_eff_path``, the default):
``mamba_split_conv1d_scan_combined`` (state-spaces/mamba ``ops/triton/ssd_combined.py``) keeps
only in_proj's output and the ungated scan output and recomputes the convolution, ``C B^T`` and
the chunk states in backward, which also runs the causal product once more for the decay's
gradient: 11 matrix products against the forward's 4, ``(6GQN + 10HPN + 3HPQ)`` FLOPs per token
against ``(2GQN + 4HPN + HPQ)`` (:func:`backward_rerun_gemms` adds the three that a GEMM's data
and weight gradients do not account for). The scan's products are priced as the GEMMs they are;
their Triton kernels' own efficiency is not known and not modelled.

The memory-bound kernels (:func:`mixer_memory_bytes`), forward, per rank: the two transposing
copies around the fused call (``zxbcdt`` in, ``y`` out; Megatron-Core ``mamba_mixer.py``
``.contiguous()``), the causal convolution with its SiLU over ``x, B, C``, the chunked cumulative
sum of ``dt`` (fp32 ``dt`` and ``dA`` out), the chunk states' fp32 write, the state passing
(fp32 in, activation dtype out), ``C B^T``'s fp32 write, the chunk scan's reads (``C B^T``, ``x``,
``C``, the passed states, ``z``, ``dt``, ``dA``) and its two outputs (gated and ungated), and the
grouped RMSNorm of the gated output. Backward moves twice the forward's bytes, the general rule of
:mod:`simulator.workload.backward_bytes` (the mixer's kernels are not counted one by one).

References
----------
Dao and Gu, "Transformers are SSMs", ICML 2024, arXiv:2405.21060, sec. 6 (the chunked SSD
algorithm). Megatron-LM d98e8a64dd ``megatron/core/ssm/mamba_mixer.py`` (``MambaMixer``);
state-spaces/mamba e9594ce ``mamba_ssm/ops/triton/ssd_combined.py``, ``ssd_chunk_state.py``,
``ssd_state_passing.py``, ``ssd_bmm.py``, ``ssd_chunk_scan.py``; Dao-AILab/causal-conv1d.
"""

from __future__ import annotations

from simulator.config.hybrid import MambaConfig

FP32_BYTES = 4
"""The scan's fp32 intermediates: ``dt``, ``dA`` cumulative sums, chunk states, ``C B^T``."""


def _per_rank(mamba: MambaConfig, tp: int) -> tuple[float, float, float, float, float]:
    """(heads, groups, inner width, in_proj width, convolution channels) on one of ``tp`` ranks."""
    return (mamba.heads / tp, mamba.groups / tp, mamba.inner / tp, mamba.in_proj_width / tp,
            mamba.conv_channels / tp)


def projection_gemms(mamba: MambaConfig, hidden: int, tokens: float, tp: int) -> list[tuple[float, ...]]:
    """in_proj ``(T, W/t, h)`` and out_proj ``(T, h, d/t)``: the mixer's two linear layers."""
    return [(tokens, mamba.in_proj_width / tp, hidden, 1), (tokens, hidden, mamba.inner / tp, 1)]


def scan_gemms(mamba: MambaConfig, tokens: float, tp: int) -> list[tuple[float, ...]]:
    """The chunked scan's four batched products (module table), forward."""
    heads, groups, _, _, _ = _per_rank(mamba, tp)
    q, p, n = mamba.chunk, mamba.head_dim, mamba.state
    chunks = tokens / q
    return [(p, n, q, chunks * heads), (q, q, n, chunks * groups), (q, p, n, chunks * heads),
            (q, p, q / 2, chunks * heads)]


def backward_rerun_gemms(mamba: MambaConfig, tokens: float, tp: int) -> list[tuple[float, ...]]:
    """Products the scan's backward runs besides each forward product's two gradients: the
    recomputed chunk states and ``C B^T``, and the causal product for the decay's gradient
    (``_chunk_scan_bwd_ddAcs_stable``)."""
    states, cb, _, causal = scan_gemms(mamba, tokens, tp)
    return [states, cb, causal]


def mixer_memory_bytes(mamba: MambaConfig, tokens: float, tp: int, act_bytes: int) -> list[float]:
    """Bytes each memory-bound forward kernel of the mixer moves (module docstring), in order:
    transpose in, convolution, cumulative sum, chunk states, state passing, ``C B^T``, chunk
    scan, transpose out, gated norm."""
    heads, groups, inner, width, channels = _per_rank(mamba, tp)
    t, n, q, a, f = tokens, mamba.state, mamba.chunk, act_bytes, FP32_BYTES
    states = t / q * heads * mamba.head_dim * n          # chunk-state elements
    dt_da = 2 * t * heads * f
    return [2 * t * width * a,
            2 * t * channels * a,
            t * heads * a + dt_da,
            t * (inner + groups * n) * a + dt_da + states * f,
            states * (f + a),
            2 * t * groups * n * a + t * groups * q * f,
            t * groups * q * f + t * (2 * inner + groups * n) * a + states * a + dt_da + 2 * t * inner * a,
            2 * t * inner * a,
            2 * t * inner * a]
