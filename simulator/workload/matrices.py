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
    h, f = model.hidden, model.ffn_hidden
    q, kv = model.q_width, model.kv_width
    experts = model.experts / ep if model.experts > 1 else 1
    ft = f / (etp or tp) if model.experts > 1 else f / tp
    fs = model.shared_expert_ffn / tp
    up = 1 if model.mlp == Mlp.GELU else 2
    if model.mla is not None:
        attention = _latent_matrices(model, tp)
    elif model.mlp == Mlp.GELU:
        attention = [(h, (q + 2 * kv) / tp, 1), (q / tp, h, 1)]
    else:
        attention = [(h, q / tp, 1), (h, kv / tp, 2), (q / tp, h, 1)]
    mlp = [(h, ft, up * experts), (ft, h, experts)]
    shared = [(h, fs, up), (fs, h, 1)] if fs else []
    return attention + mlp + shared


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
