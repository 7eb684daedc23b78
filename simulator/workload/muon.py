"""Muon's optimizer step on one GPU: which matrices it orthogonalises, the Newton-Schulz GEMMs, the
elementwise passes, and the state it keeps (``training.optimizer: muon``).

What runs, per matrix parameter (NVIDIA-NeMo/Emerging-Optimizers ``OrthogonalizedOptimizer.step``
and ``muon_utils.newton_schulz``, as Megatron-Core's ``TensorParallelMuon`` calls them, NVIDIA/
Megatron-LM d48bd6be0a ``megatron/core/optimizer/emerging_optimizers.py``):

- decoupled weight decay ``p.add_(p)``, the momentum ``m.lerp_(g)`` (and with Nesterov
  ``g.lerp(m)``), the momentum normalised (a norm and a division), cast to bf16 (the default
  ``muon_fp32_matmul_prec`` "medium" runs the iteration in bf16), ``ns_steps`` iterations
  ``A = X X^T``, ``B = b A + c A A``, ``X = a X + B X`` on the smaller side ``m`` of the
  ``m x n`` matrix (``4 m^2 n + 2 m^3`` FLOPs each), the result cast back to fp32, scaled twice
  (the spectral scale, the extra factor), and ``p.add_(update)``; then Megatron's copy of the fp32
  main weight into the bf16 model weight and the gradient norm for clipping. Elementwise bytes
  per parameter, fp32 weight, gradient and momentum: ``8 + 12 + 12 + 6 + 6 + 16 + 12 + 6 + 4
  = 82``, ``+ 12`` with Nesterov (:func:`elementwise_bytes`); Adam's fused pass is 34
  (:data:`simulator.engine.optimizer_step.ADAM_BYTES_PER_PARAM`). The GEMMs are priced by
  :func:`simulator.cost.newton_schulz.newton_schulz_seconds`.
- each tensor-parallel rank orthogonalises its own shard (``muon_tp_mode`` "blockwise", the
  default: no communication), the fused query-key-value weight as its three blocks
  (``muon_split_qkv``, default True); routed experts one matrix each.
- the embedding, the output layer and every parameter that is not a matrix (norms, biases)
  stay with Adam (``_is_nonlinear_or_embedding``): 12 bytes of state; a Muon matrix keeps its
  fp32 main weight and momentum, 8, :data:`SAVED_STATE_BYTES` less.
- the layer-wise distributed optimizer gives each data-parallel rank whole parameters, about
  ``1 / dp`` of them (``LayerWiseDistributedOptimizer``: "weights are splited into lists and
  each rank only keep its shard"), so the work and the state divide as ZeRO-1's do; its
  gradient all-reduce and in-line weight all-gather are the stack's
  ``data_parallel.sharded_reduce: all_reduce`` and ``overlap_param_gather: false``.
"""

from __future__ import annotations

import numpy as np

from simulator.config.optimizer import OptimizerConfig
from simulator.config.scenario import Mlp, ModelConfig

__all__ = ["SAVED_STATE_BYTES", "elementwise_bytes", "expert_matrices", "layer_matrices", "matrix_elements",
           "stage_matrices"]

SAVED_STATE_BYTES = 4.0
"""Optimizer state a Muon matrix element keeps less than Adam's: one fp32 momentum where Adam keeps
two moments (8 bytes against 12 with the fp32 main weight under mixed precision, 4 against 8 in
fp32 training)."""

_MUON_BYTES = 82.0
_NESTEROV_BYTES = 12.0


def elementwise_bytes(optimizer: OptimizerConfig) -> float:
    """Bytes per Muon parameter of the step's memory-bound kernels (module docstring)."""
    return _MUON_BYTES + (_NESTEROV_BYTES if optimizer.nesterov else 0.0)


def _mlp(hidden: int, ffn: int, mlp: Mlp, tp: int) -> list[tuple[float, float]]:
    """fc1 (SwiGLU's gate and up fused, ``2f x h``) column-parallel, fc2 ``h x f`` row-parallel."""
    width = ffn if mlp == Mlp.GELU else 2 * ffn
    return [(width / tp, hidden), (hidden, ffn / tp)]


def _attention(model: ModelConfig, tp: int, split_qkv: bool) -> list[tuple[float, float]]:
    """The attention matrices one tensor-parallel rank holds (Megatron-Core's ``linear_qkv`` and
    ``linear_proj``; latent attention's down projections whole, its up projections and output
    split, :mod:`simulator.config.mla`)."""
    h, a = model.hidden, model.heads
    mla = model.mla
    if mla is not None:
        q = ([(mla.q_lora_rank, h), (a * mla.qk_dim / tp, mla.q_lora_rank)] if mla.q_lora_rank
             else [(a * mla.qk_dim / tp, h)])
        kv = [(mla.kv_lora_rank + mla.qk_rope_head_dim, h),
              (a * (mla.qk_head_dim + mla.v_head_dim) / tp, mla.kv_lora_rank)]
        return q + kv + [(h, a * mla.v_head_dim / tp)]
    q, k, v = model.q_width / tp, model.kv_width / tp, model.v_width / tp
    qkv = [(q, h), (k, h), (v, h)] if split_qkv else [(q + k + v, h)]
    return qkv + [(h, model.q_width / tp)]


def layer_matrices(model: ModelConfig, tp: int, split_qkv: bool) -> list[tuple[float, float]]:
    """(rows, cols) of every matrix of one layer outside its routed experts, as one
    tensor-parallel rank holds it: attention, a dense layer's MLP, or a mixture's router
    (``E x h``, whole on every rank) and shared experts."""
    matrices = _attention(model, tp, split_qkv)
    if model.experts == 1:
        return matrices + _mlp(model.hidden, model.ffn_hidden, model.mlp, tp)
    matrices.append((model.experts, model.hidden))
    if model.shared_expert_ffn:
        matrices += _mlp(model.hidden, model.shared_expert_ffn, model.mlp, tp)
    return matrices


def expert_matrices(model: ModelConfig, etp: int) -> list[tuple[float, float]]:
    """(rows, cols) of one routed expert's matrices on one expert-tensor-parallel rank."""
    return _mlp(model.hidden, model.ffn_hidden, model.mlp, etp)


def stage_matrices(model: ModelConfig, tp: int, etp: int, ep: int, split_qkv: bool,
                   layers: int, dense_layers: int, mtp_layers: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Muon matrices one GPU of a stage holds: (dense shapes ``k x 2``, their counts; expert
    shapes, their counts). ``layers`` decoder layers of which ``dense_layers`` are
    :meth:`~simulator.config.scenario.ModelConfig.dense_model` layers, and ``mtp_layers``
    multi-token prediction layers (a layer of the model plus its ``h x 2h`` projection)."""
    routed = layers - dense_layers + mtp_layers
    shapes = [(shape, routed) for shape in layer_matrices(model, tp, split_qkv)]
    if dense_layers:
        shapes += [(shape, dense_layers) for shape in layer_matrices(model.dense_model(), tp, split_qkv)]
    if mtp_layers:
        shapes.append(((model.hidden, 2 * model.hidden), mtp_layers))
    experts = routed * model.experts / ep if model.experts > 1 else 0.0
    expert = [(shape, experts) for shape in expert_matrices(model, etp)] if experts else []
    return (*_arrays(shapes), *_arrays(expert))


def _arrays(shapes: list) -> tuple[np.ndarray, np.ndarray]:
    if not shapes:
        return np.zeros((0, 2)), np.zeros(0)
    return (np.array([shape for shape, _ in shapes], dtype=np.float64),
            np.array([count for _, count in shapes], dtype=np.float64))


def matrix_elements(shapes: np.ndarray, counts: np.ndarray) -> float:
    """Elements of ``counts`` matrices of each of ``shapes`` (:func:`stage_matrices`)."""
    return float(np.dot(shapes.prod(axis=1), counts)) if len(counts) else 0.0
