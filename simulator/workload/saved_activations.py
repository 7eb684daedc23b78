"""Activations a stack's own checkpointing policy keeps, where it differs from Megatron's.

Megatron's counts (selective = core attention recomputed) are
:func:`simulator.workload.layer_activations.activation_bytes_per_layer`. torchtitan's per-op selective
checkpointing (``recompute.selective: every_second_matmul``) keeps instead the outputs of the
ops in its save list: every ``aten.mm`` except every second one per block, the flash-attention
output and its log-sum-exp, and the tensor-parallel reduce-scatters; every other tensor is
recomputed. For a Llama block (mm order wq, wk, wv, wo, w1, w3, w2) that is, per token, with
``t`` tensor-parallel ranks:

- the block input (the checkpoint boundary): ``h`` (``h/t`` with sequence parallelism);
- wq, wv, w1 outputs (column-parallel): ``h/t``, ``k_w/t``, ``f/t`` (``k_w``: K/V width);
- w2's matmul output: ``h`` (with ``t > 1`` the partial sum before its reduce-scatter), and
  the reduce-scatter output ``h/t`` with sequence parallelism;
- the attention output ``h/t`` (2-byte) and its log-sum-exp, 4 bytes per local head;

all 2-byte activations (pytorch/torchtitan ``_save_list`` / ``_get_custom_policy``, 9dec370
and 820504e2; docs/research/stack_facts.md). MoE blocks scale ``f`` by ``top_k``.
"""

from __future__ import annotations

from simulator.config.scenario import ModelConfig

LSE_BYTES = 4
"""Bytes per head and token of flash attention's log-sum-exp (fp32)."""


def op_sac_bytes_per_layer(model: ModelConfig, micro_batch: int, tp: int, sequence_parallel: bool,
                           cp: int = 1, dtype_bytes: int = 2) -> float:
    """Bytes one layer keeps under torchtitan's per-op checkpointing (module docstring), per
    micro-batch of ``micro_batch`` sequences of ``seq_len / cp`` tokens on one GPU.

    ``dtype_bytes s b (h_in + q/t + k_w/t + f k/t + h + h_rs + q/t) + 4 s b a/t`` (``q`` the
    query width ``heads * head_dim``, ``h`` without a decoupled head dimension), with
    ``h_in = h/t`` with sequence parallelism (else ``h``) and ``h_rs = h/t`` with sequence
    parallelism and ``t > 1`` (else 0).
    """
    h, q = model.hidden, model.q_width
    sp_div = tp if sequence_parallel else 1
    reduce_scatter_out = h / tp if sequence_parallel and tp > 1 else 0.0
    per_token = dtype_bytes * (h / sp_div + q / tp + model.v_width / tp
                               + (model.ffn_hidden * model.top_k + model.shared_expert_ffn) / tp + h
                               + reduce_scatter_out + model.context_width / tp)
    per_token += LSE_BYTES * model.heads / tp
    return per_token * model.seq_len / cp * micro_batch


def gathered_input_bytes(model: ModelConfig, micro_batch: int, tp: int, cp: int = 1,
                         dtype_bytes: int = 2) -> float:
    """Bytes one layer keeps beyond Megatron's sequence-parallel count when its
    column-parallel linears save their all-gathered input (DTensor TP: autograd saves the
    replicated input of ``aten.mm`` for the weight gradient; Megatron-LM's
    ``LinearWithGradAccumulationAndAsyncCommunication`` saves the shard and re-gathers it):
    the QKV and MLP inputs, ``2 dtype s b h (1 - 1/t)`` together.
    """
    return 2 * dtype_bytes * model.hidden * model.seq_len / cp * micro_batch * (1.0 - 1.0 / tp)


def head_gathered_input_bytes(model: ModelConfig, micro_batch: int, tp: int, cp: int = 1,
                              dtype_bytes: int = 2) -> float:
    """Bytes the output layer keeps beyond the sequence-parallel shard of its input when, as
    a DTensor ``ColwiseParallel(input_layouts=Shard(1))`` linear (torchtitan's ``output``),
    it saves the all-gathered input for its weight gradient: ``dtype s b h (1 - 1/t)``."""
    return dtype_bytes * model.hidden * model.seq_len / cp * micro_batch * (1.0 - 1.0 / tp)
