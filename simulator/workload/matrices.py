"""The weight matrices one GPU of a pipeline stage holds, by shape: what PowerSGD compresses.

Shapes are (rows, columns) of each GPU's shard under tensor parallelism ``t`` (Megatron:
column-parallel QKV and fc1 split their output, row-parallel projections their input),
with hidden ``h``, FFN width ``f``, KV width ``k d`` and vocabulary ``V``:

- GPT: QKV ``h x (h + 2 k d)/t``, attention output ``h/t x h``, fc1 ``h x f/t``, fc2 ``f/t x h``;
- Llama: wq ``h x h/t``, wk and wv ``h x k d/t``, wo ``h/t x h``, w1 and w3 ``h x f/t``,
  w2 ``f/t x h``;
- MoE: each of the GPU's ``E / ep`` experts holds the MLP matrices, over ``etp``; the shared
  experts' MLP (width ``f_s``) is one more MLP over ``t``;
- the word embedding ``V/t x h`` on the first stage, the output layer on the last
  (as :func:`simulator.workload.memory.stage_parameters` counts them).

Biases, norms, the router and GPT's learned positions are vectors (or kept uncompressed)
and are the rest of :func:`~simulator.workload.memory.stage_parameters`.
"""

from __future__ import annotations

from simulator.config.scenario import Mlp, ModelConfig, ParallelismConfig


def layer_matrices(model: ModelConfig, tp: int, ep: int, etp: int | None = None
                   ) -> list[tuple[float, float, float]]:
    """(rows, columns, count) of the weight matrices of one layer on one GPU; a mixture of
    experts' MLP matrices split over ``etp`` (default ``tp``)."""
    experts = model.experts / ep if model.experts > 1 else 1
    ffn_split = (etp or tp) if model.experts > 1 else tp
    attention = attention_matrices(model, tp, fused_qkv=model.mlp == Mlp.GELU)
    mlp = mlp_matrices(model.hidden, model.ffn_hidden, model.mlp, ffn_split, experts, fused_gate=False)
    shared = (mlp_matrices(model.hidden, model.shared_expert_ffn, model.mlp, tp, 1, fused_gate=False)
              if model.shared_expert_ffn else [])
    return attention + mlp + shared


def attention_matrices(model: ModelConfig, tp: int, fused_qkv: bool) -> list[tuple[float, float, float]]:
    """(rows, columns, count) of one layer's attention matrices on one GPU: latent attention's
    (:func:`_latent_matrices`), or the query, key and value projections, fused into one
    ``h x (q + 2 k d)/t`` matrix (GPT's and Megatron-Core's ``linear_qkv``) or three, and the
    output projection ``q/t x h``."""
    if model.mla is not None:
        return _latent_matrices(model, tp)
    h, q, kv = model.hidden, model.q_width, model.kv_width
    qkv = [(h, (q + 2 * kv) / tp, 1)] if fused_qkv else [(h, q / tp, 1), (h, kv / tp, 2)]
    return qkv + [(q / tp, h, 1)]


def mlp_matrices(hidden: int, ffn: int, mlp: Mlp, tp: int, count: float, fused_gate: bool
                 ) -> list[tuple[float, float, float]]:
    """(rows, columns, count) of ``count`` MLPs of width ``ffn`` over ``tp``: GELU's (squared
    ReLU's) fc1 and fc2;
    SwiGLU's gate and up projections as two matrices, or fused into one ``h x 2f/t`` matrix
    (Megatron-Core's ``linear_fc1``), and its down projection."""
    f = ffn / tp
    if mlp != Mlp.SWIGLU:
        up = [(hidden, f, count)]
    else:
        up = [(hidden, 2 * f, count)] if fused_gate else [(hidden, f, 2 * count)]
    return up + [(f, hidden, count)]


def _latent_matrices(model: ModelConfig, tp: int) -> list[tuple[float, float, float]]:
    """Latent attention's matrices on one GPU: the down projections whole (Megatron-Core
    ``duplicated``), the up projections and the output projection over ``tp``."""
    mla, h, a = model.mla, model.hidden, model.heads
    q = ([(h, mla.q_lora_rank, 1), (mla.q_lora_rank, a * mla.qk_dim / tp, 1)] if mla.q_lora_rank
         else [(h, a * mla.qk_dim / tp, 1)])
    kv = [(h, mla.kv_lora_rank + mla.qk_rope_head_dim, 1),
          (mla.kv_lora_rank, a * (mla.qk_head_dim + mla.v_head_dim) / tp, 1)]
    return q + kv + [(model.context_width / tp, h, 1)]


def stage_matrices(model: ModelConfig, par: ParallelismConfig, layers: int, first: bool,
                   last: bool) -> list[tuple[float, float, float]]:
    """(rows, columns, count) of every weight matrix one GPU of the stage holds."""
    out = [(r, c, n * layers) for r, c, n in layer_matrices(model, par.tp, par.ep, par.etp)] if layers else []
    embedding = (model.vocab / par.tp, model.hidden)
    if first:
        out.append((*embedding, 1))
    if last and not (first and model.tied_embeddings):
        out.append((*embedding, 1))
    return out


def matrix_elements(matrices: list[tuple[float, float, float]]) -> float:
    """Elements of the matrices: sum of rows x columns x count."""
    return float(sum(r * c * n for r, c, n in matrices))
