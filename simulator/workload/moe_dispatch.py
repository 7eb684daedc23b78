"""The router and the token permutations of one mixture-of-experts layer on one GPU.

Megatron-Core's MoE layer (``megatron/core/transformer/moe``: ``router.py``,
``token_dispatcher.py`` ``MoEAlltoAllTokenDispatcher``, ``moe_utils.py``; read at
NVIDIA/Megatron-LM 00611e6e, the same functions since core_v0.9) runs around its expert GEMMs
and all-to-alls, per microbatch:

- the router: a ``(T, E, h)`` GEMM of the local tokens ``T`` (the sequence-parallel shard)
  against the ``E`` experts' gate vectors, then the scores in fp32 (``softmax(logits,
  dtype=float32)``: read and write 8 B per score) and the top-k with the routing map and the
  probabilities it scatters (read the fp32 scores 4 B, write the fp32 probabilities and the
  boolean map 5 B): ``17 T E`` bytes in two memory-bound kernels;
- the dispatch permutation of the local tokens into expert order (``permute``:
  ``tokens.index_select(0, sorted_indices)``: read and write ``k`` copies of each token);
- with more than one local expert, the received tokens sorted by expert and, before the
  combine, back (``sort_chunks_by_idxs``: ``torch.split`` + ``torch.cat``, read and write the
  received tokens, ``R = b s k`` rows after the tensor-parallel gather, times the busiest
  rank's load);
- the combine's un-permutation (``unpermute``: the permuted tokens times their
  probabilities, read and write ``k`` copies; an output of zeros, one copy written; its
  ``scatter_add_`` reads the ``k`` copies and reads and writes the output once).

Bytes per forward, with ``x`` one copy of the local tokens' hidden states (``T h`` elements
in the activation dtype): unfused ``2k x`` (permute) ``+ (3k + 3) x`` (unpermute)
``+ 2 R h + 2 R h`` (the two sorts); fused (``kernels.moe_permute_fusion``: TransformerEngine's
``moe_permute`` / ``moe_unpermute`` / ``moe_sort_chunks_by_index``, TE >= 2.1, Megatron-Core
``--moe-permute-fusion``) the permute reads each token once and writes its ``k`` copies,
``(1 + k) x``, the un-permute reads the ``k`` copies and writes one, ``(k + 1) x``, and each
sort reads and writes the received rows. Backward runs the inverse permutations and the
probabilities' gradient: each kernel moves its forward's bytes once or twice
(:func:`permutation_backward_once`, :mod:`simulator.workload.backward_bytes`).

Megatron-Core's flex dispatcher (``expert_parallel.dispatcher: deepep | hybridep``; its
``_DeepepManager`` and ``_HybridEPManager``, ``token_dispatcher.py`` @ d98e8a64dd) has neither
the source-side permute nor the sorts: DeepEP's and HybridEP's dispatch kernels read the local
tokens by the routing map and deliver each one once per destination GPU, ``D`` dispatched rows
(:mod:`simulator.workload.token_dedup`; ``R`` the expert copies among them); after the dispatch
one permute expands them into expert order and before the combine one un-permute merges the
copies back (TE's ``moe_permute`` on the dispatched rows under DeepEP; DeepEP's own permute
kernel inside ``dispatch_with_permute`` under HybridEP): fused, read ``D`` and write ``R`` rows,
and the reverse (:func:`flex_permutation_parts`). HybridEP with Megatron-Core's
``moe_permute_fusion_into_hybridep`` (``expert_parallel.permute_in_dispatch``; DeepEP
``fuse_permute_dispatch``) writes the expert rows from the dispatch kernel itself: no kernel
beyond the communication's.

Not distinguished: Megatron-Core from about core_v0.13 applies the probabilities to the
expert's activation instead of in ``unpermute`` (the same count within a copy of the
tokens); the auxiliary load-balancing loss (``moe_aux_loss_coeff``, default 0) and the
all-gather dispatcher; other stacks' MoE code (torchtitan's, DeepSpeed's einsum dispatch),
which are priced by the same count.
"""

from __future__ import annotations

import numpy as np

ROUTER_SCORE_BYTES = 8.0
"""Bytes per router score of the fp32 softmax: read and write 4 B."""
ROUTER_TOPK_BYTES = 5.0
"""Bytes per router score of the top-k and its maps: read the fp32 score 4 B, write the
sparse fp32 probability or the boolean routing map (4 + 1 B spread over the scores)."""


def router_gemm(local_tokens: float, experts: int, hidden: int) -> tuple[float, float, float, float]:
    """The router's ``(M, N, K, batch)`` GEMM: ``(T, E, h, 1)``."""
    return (local_tokens, float(experts), float(hidden), 1.0)


def router_bytes(local_tokens: float, experts: int) -> list[float]:
    """Bytes of the router's two memory-bound kernels (scores, top-k): ``8 T E`` and
    ``9 T E``."""
    scores = local_tokens * experts
    return [ROUTER_SCORE_BYTES * scores, (4.0 + ROUTER_TOPK_BYTES) * scores]


def permutation_bytes(local_copy: float, received_copy: float, top_k: int, local_experts: float,
                      fused: bool) -> list[float]:
    """Bytes of each permutation kernel of one forward (module docstring), in the order
    permute, un-permute, sorts (:func:`permutation_parts`).

    ``local_copy``: bytes of one copy of the local tokens' hidden states ``x``;
    ``received_copy``: bytes of the received (gathered) token rows ``R h`` at the busiest
    rank; ``top_k``: ``k``; ``local_experts``: experts per expert-parallel rank (the sorts
    run only above one); ``fused``: TransformerEngine's fused permutation kernels.
    """
    permute, unpermute, sorts = permutation_parts(local_copy, received_copy, top_k, local_experts, fused)
    return permute + unpermute + sorts


def permutation_parts(local_copy: float, received_copy: float, top_k: int, local_experts: float,
                      fused: bool) -> tuple[list[float], list[float], list[float]]:
    """Bytes of the permutation kernels of one forward by where Megatron-Core runs them
    (arguments as :func:`permutation_bytes`): the dispatch's permute (before the
    all-to-all), the combine's un-permute (after it) and the two sorts of the received rows
    around the experts (``dispatch_postprocess`` / ``combine_preprocess``)."""
    k = float(top_k)
    if fused:
        permute, unpermute = [(1.0 + k) * local_copy], [(k + 1.0) * local_copy]
    else:
        permute = [2.0 * k * local_copy]                  # index_select
        unpermute = [2.0 * k * local_copy,                # times the probabilities
                     local_copy,                          # zeros
                     (k + 2.0) * local_copy]              # scatter_add_
    sorts = [2.0 * received_copy, 2.0 * received_copy] if local_experts > 1 else []
    return permute, unpermute, sorts


def permutation_backward_once(permutes: int, unpermutes: int, sorts: int, fused: bool) -> list[bool]:
    """Per kernel of :func:`permutation_parts` (or :func:`flex_permutation_parts`), whether its
    backward moves the forward's bytes once: the gradient of a row permutation is the inverse
    permutation of the same rows. TransformerEngine's fused ``moe_permute`` backs off through
    ``unpermute_with_mask_map`` (read ``k`` rows per token, write one: the forward's bytes
    reversed) and ``moe_unpermute``, called without merging probabilities, through
    ``permute_with_mask_map``; ``moe_sort_chunks_by_index`` through ``sort_chunks_by_map`` on the
    inverse map (transformer_engine/pytorch/permutation.py, v2.14); Megatron-Core's unfused sorts
    are a ``torch.cat`` of split chunks, whose gradient is the split and cat of the same rows.
    Megatron-Core applies the routing probabilities in the experts' activation, not in the
    un-permute, since core_v0.13.0 (``unpermute`` without ``probs`` in ``token_dispatcher.py``;
    core_v0.12 and earlier merged them there, whose backward also reads the forward's rows: every
    fused-permutation scenario shipped runs a later core). The unfused permute and un-permute
    (``index_select`` and ``scatter_add_`` over a zero fill) keep the general rule, twice.
    Measured: Megatron-LM's MoE layer benchmark on one DGX H100 (``megatron_moe_layer``) runs the
    alltoall dispatcher's backward 1.69 ms (BF16) and 2.44 ms (FP8) slower than HybridEP's on
    its DeepSeek proxy, about what its forward adds (1.73, 2.47); twice the permutations' bytes
    gave 2.35 and 3.00, once gives 1.82 and 2.47."""
    return [fused] * (permutes + unpermutes) + [True] * sorts


def moe_layer_bytes(local_tokens: float, tokens: float, hidden: int, experts: int, top_k: int,
                    ep: int, dtype_bytes: float, expert_load: float, fused: bool) -> np.ndarray:
    """Bytes of the router's and the permutations' memory-bound kernels in one forward:
    ``local_tokens`` on this GPU (the sequence shard), ``tokens`` the microbatch's tokens
    (``b s``, the rows the tensor-parallel group gathers), the busiest rank's ``expert_load``."""
    local_copy = local_tokens * hidden * dtype_bytes
    received = tokens * top_k * expert_load * hidden * dtype_bytes
    return np.array(router_bytes(local_tokens, experts)
                    + permutation_bytes(local_copy, received, top_k, experts / ep, fused))


def flex_permutation_parts(dispatched_copy: float, received_copy: float, fused: bool,
                           in_dispatch: bool) -> tuple[list[float], list[float]]:
    """Bytes of the flex dispatcher's permute (after the dispatch) and un-permute (before the
    combine) in one forward (module docstring): ``dispatched_copy`` the ``D h`` bytes of the rows
    the dispatch delivers to the busiest rank, ``received_copy`` the ``R h`` bytes of their expert
    copies; ``fused``: TransformerEngine's permutation kernels, ``D + R`` each; unfused, as
    Megatron-Core's index ops on ``R`` copies of ``D`` rows (``2 R``; ``2 R + D + (R + 2 D)``);
    ``in_dispatch``: none (HybridEP's dispatch and combine kernels do it)."""
    if in_dispatch:
        return [], []
    d, r = dispatched_copy, received_copy
    if fused:
        return [d + r], [r + d]
    return [2.0 * r], [2.0 * r, d, r + 2.0 * d]
