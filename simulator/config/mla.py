"""Multi-head latent attention (DeepSeek-V2 and -V3, Kimi K2): the shape keys of ``model.mla``.

Queries and keys/values are projected down to low-rank latents and back up per head
(DeepSeek-AI, "DeepSeek-V2", arXiv:2405.04434, sec. 2.1.2-2.1.3): with hidden ``h``, ``a`` heads,
query rank ``r_q`` (``q_lora_rank``; 0: queries projected from the hidden state directly),
key/value rank ``r_kv``, per-head widths ``d_n`` (``qk_head_dim``, the part without position),
``d_r`` (``qk_rope_head_dim``, the rotary part, one key copy shared by all heads) and ``d_v``
(``v_head_dim``), one layer's attention weights are

    q_down h x r_q, q_norm r_q, q_up r_q x a (d_n + d_r)      (or q_proj h x a (d_n + d_r))
    kv_down h x (r_kv + d_r), kv_norm r_kv, kv_up r_kv x a (d_n + d_v)
    out a d_v x h

as Megatron-Core's ``MLASelfAttention`` builds them (core_v0.15
``megatron/core/transformer/multi_latent_attention.py``: the down projections ``duplicated`` on
every tensor-parallel rank, the up projections and ``linear_proj`` split over it).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

Width = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


class MlaConfig(BaseModel):
    """``model.mla``: the latent ranks and per-head widths (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    q_lora_rank: Annotated[int, Strict(), Field(ge=0, le=1_000_000)] = 0
    kv_lora_rank: Width
    qk_head_dim: Width
    qk_rope_head_dim: Annotated[int, Strict(), Field(ge=0, le=1_000_000)]
    v_head_dim: Width

    @property
    def qk_dim(self) -> int:
        """Width of one head's query and key, ``d_n + d_r``."""
        return self.qk_head_dim + self.qk_rope_head_dim

    @property
    def latent_width(self) -> int:
        """Latent elements per token, ``r_q + r_kv + d_r``: the query and key/value latents and the
        shared rotary key (what the up projections read and ``k_pos_emb``)."""
        return self.q_lora_rank + self.kv_lora_rank + self.qk_rope_head_dim

    def duplicated_parameters(self, hidden: int) -> int:
        """Weights every tensor-parallel rank holds whole: the down projections (``h r_q`` and
        ``h (r_kv + d_r)``, Megatron-Core ``parallel_mode='duplicated'``) and the latent norms
        (``r_q + r_kv``)."""
        q = hidden * self.q_lora_rank + self.q_lora_rank
        return q + hidden * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank

    def attention_tensor_sizes(self, hidden: int, heads: int) -> list[int]:
        """Elements of each attention weight tensor of one layer (module docstring)."""
        q = ([hidden * self.q_lora_rank, self.q_lora_rank, self.q_lora_rank * heads * self.qk_dim]
             if self.q_lora_rank else [hidden * heads * self.qk_dim])
        kv = [hidden * (self.kv_lora_rank + self.qk_rope_head_dim), self.kv_lora_rank,
              self.kv_lora_rank * heads * (self.qk_head_dim + self.v_head_dim)]
        return q + kv + [heads * self.v_head_dim * hidden]
