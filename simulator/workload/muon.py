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

from simulator.config.optimizer import OptimizerConfig
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.workload.matrices import attention_matrices, mlp_matrices

Matrix = tuple[float, float, float]
"""(rows, columns, count), as :mod:`simulator.workload.matrices` lists them."""

__all__ = ["SAVED_STATE_BYTES", "elementwise_bytes", "expert_matrices", "layer_matrices", "stage_matrices"]

SAVED_STATE_BYTES = 4.0
"""Optimizer state a Muon matrix element keeps less than Adam's: one fp32 momentum where Adam keeps
two moments (8 bytes against 12 with the fp32 main weight under mixed precision, 4 against 8 in
fp32 training)."""

_MUON_BYTES = 82.0
_NESTEROV_BYTES = 12.0


def elementwise_bytes(optimizer: OptimizerConfig) -> float:
    """Bytes per Muon parameter of the step's memory-bound kernels (module docstring)."""
    return _MUON_BYTES + (_NESTEROV_BYTES if optimizer.nesterov else 0.0)


def layer_matrices(model: ModelConfig, tp: int, split_qkv: bool) -> list[Matrix]:
    """(rows, columns, count) of every matrix of one layer outside its routed experts, as one
    tensor-parallel rank holds it (:mod:`simulator.workload.matrices`, with Megatron-Core's fused
    ``linear_fc1``, and ``linear_qkv`` split into its three blocks when ``split_qkv``): attention,
    a dense layer's MLP, or a mixture's router (``E x h``, whole on every rank) and shared experts."""
    matrices = attention_matrices(model, tp, fused_qkv=not split_qkv)
    if model.experts == 1:
        return matrices + mlp_matrices(model.hidden, model.ffn_hidden, model.mlp, tp, 1, fused_gate=True)
    matrices.append((model.experts, model.hidden, 1))
    if model.shared_expert_ffn:
        matrices += mlp_matrices(model.hidden, model.shared_expert_ffn, model.mlp, tp, 1, fused_gate=True)
    return matrices


def expert_matrices(model: ModelConfig, etp: int) -> list[Matrix]:
    """(rows, columns, count) of one routed expert's matrices on one expert-tensor-parallel rank."""
    return mlp_matrices(model.hidden, model.ffn_hidden, model.mlp, etp, 1, fused_gate=True)


def stage_matrices(model: ModelConfig, par: ParallelismConfig, split_qkv: bool, layers: int,
                   dense_layers: int, mtp_layers: int) -> tuple[list[Matrix], list[Matrix]]:
    """The Muon matrices one GPU of a stage holds, (outside the routed experts, the routed
    experts'), each as (rows, columns, count): ``layers`` decoder layers of which
    ``dense_layers`` are :meth:`~simulator.config.scenario.ModelConfig.dense_model` layers, and
    ``mtp_layers`` multi-token prediction layers (a layer of the model plus its ``h x 2h``
    projection)."""
    routed = layers - dense_layers + mtp_layers
    dense = [(r, c, n * routed) for r, c, n in layer_matrices(model, par.tp, split_qkv)]
    if dense_layers:
        dense += [(r, c, n * dense_layers)
                  for r, c, n in layer_matrices(model.dense_model(), par.tp, split_qkv)]
    if mtp_layers:
        dense.append((model.hidden, 2 * model.hidden, mtp_layers))
    experts = routed * model.experts / par.ep if model.experts > 1 else 0.0
    expert = [(r, c, n * experts) for r, c, n in expert_matrices(model, par.expert_tp)] if experts else []
    return dense, expert
