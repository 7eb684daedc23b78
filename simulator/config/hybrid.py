"""Hybrid models: Mamba-2 mixers, attention and MLP as separate layers (``model.hybrid_pattern``,
``model.mamba``, ``model.block``).

Megatron-Core's hybrid stack builds one layer per character of ``hybrid_override_pattern``
(core ``megatron/core/models/hybrid/hybrid_layer_allocation.py``, Megatron-LM d98e8a64dd):

=====  ===========================================  ==================
char   layer                                         ``model.block``
=====  ===========================================  ==================
``M``  norm + Mamba-2 mixer + residual (MambaLayer)  ``mamba``
``*``  norm + self-attention + residual, no MLP      ``attention``
``-``  norm + dense MLP + residual (MLPLayer)        ``mlp`` (dense)
``E``  norm + mixture of experts + residual          ``mlp`` (experts)
=====  ===========================================  ==================

A transformer layer is ``full``: attention and MLP. NVIDIA's Nemotron-H and Nemotron 3 are such
stacks (Nemotron 3 Nano: ``MEMEM*EMEMEM*...``, 23 ``M``, 23 ``E``, 6 ``*``).

The Mamba-2 mixer (Dao and Gu 2024, "Transformers are SSMs", arXiv:2405.21060; Megatron-Core
``megatron/core/ssm/mamba_mixer.py``) has ``H`` heads of ``P`` channels (inner width ``d = H P``),
``G`` groups of ``N``-wide state projections ``B`` and ``C``, a depthwise causal convolution of
width ``K`` over ``x``, ``B`` and ``C``, and scans in chunks of ``Q`` tokens. Its in_proj makes
``z, x, B, C, dt``: ``2 d + 2 G N + H`` columns; its out_proj maps ``d`` back to ``h``.
Defaults are Megatron-Core's (``transformer_config.py``: state 128, head_dim 64, groups 8;
``MambaMixer``: d_conv 4, chunk_size 128).
"""

from __future__ import annotations

import re
from collections import Counter
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

Width = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


class Block(StrEnum):
    """What one layer runs (module table)."""

    FULL = "full"
    ATTENTION = "attention"
    MAMBA = "mamba"
    MLP = "mlp"

    @property
    def has_attention(self) -> bool:
        return self in (Block.FULL, Block.ATTENTION)

    @property
    def has_mlp(self) -> bool:
        return self in (Block.FULL, Block.MLP)

    @property
    def sites(self) -> int:
        """Blocks in the layer, each a norm, a residual add and (with tensor parallelism) one
        column- and row-parallel pair: 2 for a transformer layer, else 1."""
        return 2 if self == Block.FULL else 1


PATTERN_CHARS = "M*-E"
"""The hybrid pattern characters modelled (Megatron-Core also has ``G`` Gated DeltaNet, ``D``
DeepSeek sparse attention, ``+`` latent attention, and ``|`` / ``/`` separators)."""

PATTERN = re.compile(f"[{re.escape(PATTERN_CHARS)}]+")


def pattern_counts(pattern: str) -> dict[str, int]:
    """Layers of each kind in ``pattern``, in :data:`PATTERN_CHARS` order, kinds present only."""
    counts = Counter(pattern)
    return {c: counts[c] for c in PATTERN_CHARS if counts[c]}


class MambaConfig(BaseModel):
    """``model.mamba``: the Mamba-2 mixer's shape (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    heads: Width
    head_dim: Width = 64
    state: Width = 128
    groups: Width = 8
    conv_kernel: Annotated[int, Strict(), Field(ge=1, le=64)] = 4
    chunk: Annotated[int, Strict(), Field(ge=1, le=65_536)] = 128

    @property
    def inner(self) -> int:
        """Inner width ``d = H P``."""
        return self.heads * self.head_dim

    @property
    def in_proj_width(self) -> int:
        """in_proj's output columns, ``z, x, B, C, dt``: ``2 d + 2 G N + H``."""
        return 2 * self.inner + 2 * self.groups * self.state + self.heads

    @property
    def conv_channels(self) -> int:
        """Channels the causal convolution runs over, ``x, B, C``: ``d + 2 G N``."""
        return self.inner + 2 * self.groups * self.state

    def tensor_sizes(self, hidden: int) -> list[int]:
        """Elements of each parameter tensor of one mixer with its fused input norm:
        in_proj ``h (2d + 2GN + H)``, conv1d weight ``(d + 2GN) K`` and bias ``d + 2GN``, dt_bias,
        A_log and D ``H`` each, the gated norm ``d``, out_proj ``d h``, the input norm ``h``
        (Megatron-Core ``MambaMixer.__init__``; no linear biases)."""
        h, channels = hidden, self.conv_channels
        return [h * self.in_proj_width, channels * self.conv_kernel, channels, self.heads, self.heads,
                self.heads, self.inner, self.inner * h, h]
