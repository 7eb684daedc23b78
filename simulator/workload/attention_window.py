"""Sliding-window (local) attention: what a layer's fused attention computes when each query sees
only the ``w`` most recent tokens (itself included) instead of every earlier one.

Pairs of (query, key) a causal kernel evaluates per sequence of ``s`` tokens:

    causal:  s (s + 1) / 2              (the library counts s^2 / 2: ``transformer._flash_flops``)
    window:  w (w + 1) / 2 + (s - w) w  for s >= w, else the causal count

(the first ``w`` queries see every earlier token, the others exactly ``w``). A model whose every
n-th layer keeps full attention (``model.full_attention_every``; Megatron-Core
``window_attn_skip_freq``, ``is_layer_window_attention``: layer numbers divisible by n are full,
so GPT-OSS's first layer is local, as its Hugging Face ``layer_types`` list) has
``1 - 1/n`` of its layers local. The model prices one layer for all, so a layer's attention is
the mean over the model's layers of their pairs (:func:`pair_fraction`), and its kernel efficiency
the FLOP-weighted harmonic mean of the two kernels' (:func:`simulator.cost.compute.attention_shape_factor`).

A local kernel computes only the key tiles its band touches (FlashAttention-2's local attention,
cuDNN's sliding window: Dao-AILab/flash-attention ``csrc/flash_attn/src/flash_fwd_kernel.h``
``n_block_min`` from ``window_size_left``), ``w / T + 1`` tiles of ``T`` keys per query tile of
which ``w / T`` carry useful pairs (:func:`simulator.cost.compute.window_tile_efficiency`).

Sources: Megatron-Bridge's GPT-OSS bridge (``src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py``
@ v0.4.2: ``window_size = (sliding_window - 1, 0)``, ``window_attn_skip_freq = 2``); OpenAI's
gpt-oss-120b ``config.json`` (``sliding_window`` 128, ``layer_types`` alternating from
``sliding_attention``).
"""

from __future__ import annotations


def window_pairs(seq: float, window: float) -> float:
    """Query-key pairs of one sequence of ``seq`` tokens under a causal window of ``window``
    tokens: ``w (w + 1) / 2 + (s - w) w`` for ``s >= w``, else ``s (s + 1) / 2``."""
    if window >= seq:
        return seq * (seq + 1) / 2
    return window * (window + 1) / 2 + (seq - window) * window


def local_layer_share(window: int | None, full_every: int | None, layers: int) -> float:
    """Share of the model's ``layers`` with local attention: 0 without a window, 1 with a window
    in every layer, ``(L - floor(L / n)) / L`` with every n-th layer full (Megatron-Core numbers
    layers from 1 and keeps those divisible by n full: GPT-OSS's 36 layers at n = 2 are 18 and
    18). Stages price the model's mean layer, exact where each holds whole periods of n."""
    if window is None:
        return 0.0
    if not full_every:
        return 1.0
    return (layers - layers // full_every) / layers


def band_fraction(seq: float, window: float) -> float:
    """A local layer's pairs over the causal count the library's FLOPs use, ``s^2 / 2``:
    ``min(p_w / (s^2 / 2), 1)`` with ``p_w`` :func:`window_pairs`."""
    return min(window_pairs(seq, window) / (seq * seq / 2), 1.0)


def pair_fraction(seq: float, window: int | None, share: float) -> float:
    """A layer's attention pairs over ``s^2 / 2`` as the mean over the model's layers, a share
    ``f`` of them local (:func:`local_layer_share`): ``(1 - f) + f`` :func:`band_fraction`
    (1 without a window)."""
    if not share or window is None:
        return 1.0
    return (1.0 - share) + share * band_fraction(seq, window)
