"""Kernels of a layer's MLP block for one microbatch on one GPU: the dense MLP's or the routed
experts' linears (``fc1``, ``fc2``; a latent mixture of experts' two projections), the shared
experts', the activation (fused or eager, with a mixture of experts' probability weighting), the
router's and the token permutations' memory-bound kernels, the residual add, and the expert block
Megatron-Core's combined 1F1B schedule runs apart (:class:`ExpertBlock`). Shapes and units as
:mod:`simulator.workload.transformer`'s table; bytes read plus written per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.config.scenario import Mlp, ModelConfig
from simulator.workload.backward_bytes import ONCE, activation_ratio, ratios_from_once, residual_backward_act
from simulator.workload.layer_shape import Kernels, LayerShape, backward_memory, local_tokens
from simulator.workload.moe_dispatch import (
    flex_permutation_parts,
    permutation_backward_once,
    permutation_parts,
    router_bytes,
)
from simulator.workload.token_dedup import model_hit_probability


def shared_gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    """The shared experts' fc1 and fc2 (``model.shared_expert_ffn``), a dense MLP over ``t``
    on the whole microbatch (Megatron-Core ``SharedExpertMLP``, an ``MLP`` whose linears
    gather and scatter the sequence as a dense layer's do); none without shared experts. They
    come first among the layer's MLP GEMMs, so its MLP tensor-parallel site is theirs."""
    mdl = shape.model
    width = mdl.shared_expert_ffn / shape.tp if mdl.experts > 1 else 0.0
    if not width:
        return []
    up = (2 if mdl.mlp == Mlp.SWIGLU else 1) * width
    return [(shape.tokens, up, mdl.hidden, 1), (shape.tokens, mdl.hidden, width, 1)]


def mlp_forward_flops(shape: LayerShape) -> float:
    """Forward FLOPs of the MLP's GEMMs on this GPU (a mixture of experts': its local experts'
    share of the routed tokens, balanced)."""
    return _gemm_flops(mlp_gemms(shape))


def shared_expert_flops(shape: LayerShape) -> float:
    """Forward FLOPs of the shared experts' two GEMMs, ``2 b s (2|3) h f_s / t`` (0 without)."""
    return _gemm_flops(shared_gemms(shape))


def _gemm_flops(gemms: list[tuple[float, float, float, float]]) -> float:
    """``2 M N K batch`` summed over ``gemms``."""
    return float(sum(2.0 * m * n * k * batch for m, n, k, batch in gemms))


def mlp_gemms(shape: LayerShape, expert_load: float = 1.0) -> list[tuple[float, float, float, float]]:
    """Dense MLP over ``t``, or top_k experts per token spread over ep ranks, each expert's
    linears over the expert tensor parallelism ``etp``: balanced routing times
    ``expert_load`` (the busiest rank's share over the mean) of the expert tensor-parallel
    group's tokens (:attr:`LayerShape.expert_tokens`)."""
    mdl = shape.model
    if mdl.experts == 1:
        rows, batch, t = shape.tokens, 1, shape.tp
    else:
        batch, t = mdl.experts / shape.ep, shape.expert_tp
        rows = shape.expert_rows(expert_load) / batch
    up_width = (2 if mdl.mlp == Mlp.SWIGLU else 1) * mdl.ffn_hidden / t
    width = mdl.expert_width
    return [(rows, up_width, width, batch), (rows, width, mdl.ffn_hidden / t, batch)]


def latent_gemms(shape: LayerShape) -> list[tuple[float, float, float, float]]:
    """A latent mixture of experts' two projections (``model.moe_latent`` ``L``) on this rank's
    tokens, whole on every tensor-parallel rank: ``(b s / t, L, h)`` before the dispatch,
    ``(b s / t, h, L)`` after the combine (``t`` under sequence parallelism); none without."""
    mdl = shape.model
    if not mdl.latent_projection_parameters():
        return []
    tokens = local_tokens(shape)
    return [(tokens, mdl.moe_latent, mdl.hidden, 1), (tokens, mdl.hidden, mdl.moe_latent, 1)]


def moe_kernel_bytes(shape: LayerShape, expert_load: float = 1.0) -> list[float]:
    """The router's and the token permutations' memory-bound kernels, in the order permute,
    un-permute, sorts (:func:`_permutations`); none without experts."""
    return moe_memory_kernels(shape, expert_load)[0] if shape.model.experts > 1 else []


def moe_memory_kernels(shape: LayerShape, expert_load: float) -> tuple[list[float], list[float]]:
    """:func:`moe_kernel_bytes` of a mixture of experts and their backward ratios
    (:attr:`Kernels.memory_backward`: 1 for the permutations :func:`_permutations_once` marks,
    2 for the others and the router's kernels)."""
    parts = _permutations(shape, expert_load)
    router = router_bytes(local_tokens(shape), shape.model.experts)
    once = [False] * len(router) + [o for part in _permutations_once(shape, parts) for o in part]
    return router + [b for part in parts for b in part], ratios_from_once(once)


def _permutations_once(shape: LayerShape, parts: tuple[list[float], list[float], list[float]]
                       ) -> tuple[list[bool], list[bool], list[bool]]:
    """Per kernel of ``parts`` (:func:`_permutations`: permute, un-permute, sorts), whether its
    backward moves its bytes once (:func:`~simulator.workload.moe_dispatch.permutation_backward_once`)."""
    permute, unpermute, sorts = parts
    once = permutation_backward_once(len(permute), len(unpermute), len(sorts), shape.moe_permute_fused)
    cut = len(permute) + len(unpermute)
    return once[:len(permute)], once[len(permute):cut], once[cut:]


def _permutations(shape: LayerShape, expert_load: float) -> tuple[list[float], list[float], list[float]]:
    """Bytes of the permute, the un-permute and the sorts of one forward
    (:func:`~simulator.workload.moe_dispatch.permutation_parts`; under the flex dispatcher
    :func:`~simulator.workload.moe_dispatch.flex_permutation_parts` on the rows its deduplicated
    dispatch delivers, and no sorts)."""
    mdl, nb = shape.model, shape.dtype_bytes
    received = shape.expert_rows(expert_load) * mdl.expert_width * nb
    if shape.moe_flex:
        dispatched = received * dispatched_share(mdl, shape.ep)
        permute, unpermute = flex_permutation_parts(dispatched, received, shape.moe_permute_fused,
                                                    shape.moe_permute_in_dispatch)
        return permute, unpermute, []
    local_copy = local_tokens(shape) * mdl.expert_width * nb
    return permutation_parts(local_copy, received, mdl.top_k, mdl.experts / shape.ep, shape.moe_permute_fused)


def dispatched_share(model: ModelConfig, ep: int) -> float:
    """Rows a deduplicated dispatch delivers to a GPU over the expert copies among them, ``D / R =
    P(e) E / (e k)`` for the ``e = E / ep`` experts it holds
    (:func:`~simulator.workload.token_dedup.model_hit_probability`: the token
    reaches the GPU once whatever number of its experts are there), at most 1."""
    held = model.experts / ep
    hit = model_hit_probability(model, int(held))
    return min(1.0, hit * model.experts / (held * model.top_k))


def shared_expert_bytes(shape: LayerShape) -> list[float]:
    """The shared experts' memory-bound kernels: their activation (as the dense MLP's, over
    ``b s f_s / t``) and the add of their output to the routed experts' (read 2, write 1 act);
    none without shared experts."""
    width = shape.model.shared_expert_ffn if shape.model.experts > 1 else 0
    if not width:
        return []
    nb = shape.dtype_bytes
    inner = shape.tokens * width / shape.tp * nb
    return [_activation_kind_bytes(shape) * inner, 3.0 * local_tokens(shape) * shape.model.hidden * nb]


def expert_activation_bytes(shape: LayerShape, expert_load: float = 1.0) -> list[float]:
    """The MLP activation kernel's bytes (:func:`activation_kernel_bytes`) as a list of kernels:
    none where the experts run TransformerEngine's fused grouped MLP
    (``shape.expert_mlp_fused``), whose fc1 grouped GEMM applies the SwiGLU and the router's
    probabilities in its epilogue and writes fc2's quantized input there
    (``grouped_gemm_glu_wrapper_sm100``), and whose fc2 data-gradient GEMM applies the SwiGLU's
    gradient in its epilogue (``grouped_gemm_dglu_wrapper_sm100``;
    transformer_engine/pytorch/ops/fused/grouped_mlp.py, TE PR #2769, 2026-04, refactored in
    #3117)."""
    if shape.expert_mlp_fused and shape.model.experts > 1:
        return []
    return [activation_kernel_bytes(shape, expert_load)]


def fused_away_casts(shape: LayerShape) -> tuple[int | None, int | None]:
    """Rows of the layer's linear GEMMs (``transformer._gemms`` order: the input linear, the projection,
    the shared experts' two, the routed experts' fc1 and fc2, latent attention's) whose fp8
    casts TransformerEngine's fused grouped MLP makes inside GEMM epilogues: (the linear whose
    forward input cast is fused: the routed fc2, the linear whose output-gradient cast is fused:
    the routed fc1); (None, None) unless ``shape.expert_mlp_fused`` on a mixture of experts."""
    if not (shape.expert_mlp_fused and shape.model.experts > 1):
        return None, None
    fc1 = 2 * shape.model.block.has_attention + len(shared_gemms(shape))
    return fc1 + 1, fc1


PROBS_WEIGHT_BYTES = 6.0
"""Bytes per routed expert's inner element, in units of its 16-bit activation, that the eager
routing-probability weighting adds: Megatron-Core (core_v0.13.0 on) applies the router's fp32
probabilities in the experts' activation, and unfused (``bias_activation_fusion`` false) that is
``act(x) * permuted_probs`` into an fp32 tensor (read 2 B, write 4) and ``.to(bf16)`` (read 4,
write 2): 12 B, 6 units of 2 B (``TEGroupedMLP.forward``'s ``bias_act_func``,
megatron/core/transformer/moe/experts.py at cf39a4ddcf). The fused kernels
(``weighted_bias_swiglu_impl``, TE's fused grouped MLP) weight inside the activation."""


def activation_kernel_bytes(shape: LayerShape, expert_load: float = 1.0) -> float:
    """Bytes of the MLP activation kernel (the module table of
    :func:`~simulator.workload.transformer._memory_bytes`), with a mixture of experts' eager
    probability weighting (:data:`PROBS_WEIGHT_BYTES`) when the
    activation is unfused."""
    ffn = _ffn_elements(shape) * shape.dtype_bytes * max(shape.model.top_k, 1) * expert_load
    weighting = PROBS_WEIGHT_BYTES if shape.model.experts > 1 and not _activation_fused(shape) else 0.0
    return (_activation_kind_bytes(shape) + weighting) * ffn


def _activation_fused(shape: LayerShape) -> bool:
    """Whether the MLP activation runs as one fused kernel (the stack's ``fused_activation``,
    else ``fused``)."""
    return shape.fused if shape.fused_activation is None else shape.fused_activation


def _activation_kind_bytes(shape: LayerShape) -> float:
    """Bytes the MLP activation moves per inner element (the module table of
    :func:`~simulator.workload.transformer._memory_bytes`): fused GELU 2, SwiGLU 3; eager 4, 5."""
    llama = shape.model.mlp == Mlp.SWIGLU
    return (3.0 if llama else 2.0) if _activation_fused(shape) else (5.0 if llama else 4.0)


def residual_bytes(shape: LayerShape) -> float:
    """Bytes of one residual add (bias+dropout+add) kernel (the module table of
    :func:`~simulator.workload.transformer._memory_bytes`): the GPT row with ``model.dropout``
    above 0, the Llama row (no mask) without dropout."""
    return _residual_act(shape) * local_tokens(shape) * shape.model.hidden * shape.dtype_bytes


def _residual_act(shape: LayerShape) -> float:
    """:func:`residual_bytes` per byte of the hidden activation: fused 3 (3.5 with dropout),
    eager 3 (7.5)."""
    plain = shape.model.dropout == 0.0
    return (3.0 if plain else 3.5) if shape.fused else (3.0 if plain else 7.5)


def residual_ratio(shape: LayerShape) -> float:
    """Backward bytes of a residual site over :func:`residual_bytes`
    (:func:`~simulator.workload.backward_bytes.residual_backward_act`): 1 without dropout,
    6.5 / 3.5 fused and 6.5 / 7.5 eager with it."""
    return residual_backward_act(shape.model.dropout > 0.0) / _residual_act(shape)


def activation_backward_ratio(shape: LayerShape) -> float:
    """Backward bytes of :func:`activation_kernel_bytes` over its forward's
    (:func:`~simulator.workload.backward_bytes.activation_ratio`)."""
    fused = _activation_fused(shape)
    return activation_ratio(shape.model.mlp, fused, shape.model.experts > 1 and not fused)


def expert_activation_ratios(shape: LayerShape, kernels: list[float]) -> list[float]:
    """The backward ratios of ``kernels``, :func:`expert_activation_bytes`' list."""
    return [activation_backward_ratio(shape)] * len(kernels)


def shared_expert_ratios(shape: LayerShape, kernels: list[float]) -> list[float]:
    """The backward ratios of ``kernels``, :func:`shared_expert_bytes`' list: the activation's
    (unweighted) and 1 for the add, whose gradient passes to both inputs as it is and is added
    back where the layer's input fed both the routed and the shared experts (read 2, write 1 act)."""
    if not kernels:
        return []
    return [activation_ratio(shape.model.mlp, _activation_fused(shape), False), ONCE]


@dataclass(frozen=True)
class ExpertBlock:
    """The part of a mixture-of-experts layer that Megatron-Core's combined 1F1B schedule runs
    apart from the attention block (``fine_grained_callables.py``, core_v0.15): ``experts``,
    the expert computation node (``routed_experts_compute``: the received rows sorted by
    expert, the expert GEMMs and activation, the rows sorted back; and the shared experts,
    which ``submodule_moe_forward`` computes there too), and ``combine_tail``, the bytes of the
    memory-bound kernels its combine node runs after the all-to-all on the communication
    stream (the un-permutation, the add of the shared experts' output and the MLP's residual
    add)."""

    experts: Kernels
    combine_tail: np.ndarray
    combine_tail_backward: np.ndarray
    """Bytes of the combine tail's backward kernels (:func:`backward_memory` of its kernels'
    ratios, :mod:`simulator.workload.backward_bytes`)."""


def expert_block(shape: LayerShape, expert_load: float = 1.0) -> ExpertBlock:
    """:class:`ExpertBlock` of a mixture-of-experts layer's forward, priced as
    :func:`~simulator.workload.transformer.layer_forward` prices the same kernels (the busiest
    rank's ``expert_load``). The flex dispatcher's permute and un-permute are priced with the
    expert node: under DeepEP they run there (Megatron-Core's ``dispatch_postprocess`` /
    ``combine_preprocess``); under HybridEP inside its dispatch and combine calls, on the
    communication stream when the all-to-alls overlap, where a memory-bound kernel over every
    SM still takes the HBM and SMs the other microbatch's compute would use, so it is not
    counted as hidden."""
    parts = _permutations(shape, expert_load)
    permute, unpermute, sorts = parts
    permute_once, unpermute_once, sorts_once = _permutations_once(shape, parts)
    if shape.moe_flex:                  # permuted after the dispatch, merged before the combine
        sorts, unpermute = permute + unpermute, []
        sorts_once, unpermute_once = permute_once + unpermute_once, []
    gemms = np.array(shared_gemms(shape) + mlp_gemms(shape, expert_load), dtype=np.float64)
    shared = shared_expert_bytes(shape)
    activation = expert_activation_bytes(shape, expert_load)
    shared_ratios = shared_expert_ratios(shape, shared)
    ratios = expert_activation_ratios(shape, activation) + ratios_from_once(sorts_once) + shared_ratios[:1]
    memory = [*activation, *sorts, *shared[:1]]
    experts = Kernels(gemms, np.array(memory), np.ones(len(gemms), bool),
                      memory_backward=backward_memory(memory, ratios))
    tail = [*unpermute, *shared[1:], residual_bytes(shape)]
    tail_ratios = ratios_from_once(unpermute_once) + shared_ratios[1:] + [residual_ratio(shape)]
    return ExpertBlock(experts, np.array(tail), backward_memory(tail, tail_ratios))


def _ffn_elements(shape: LayerShape) -> float:
    """MLP inner elements per token copy on this GPU: ``b s f / t``, or the experts'
    ``expert_tokens f / etp``."""
    if shape.model.experts == 1:
        return shape.tokens * shape.model.ffn_hidden / shape.tp
    return shape.expert_tokens * shape.model.ffn_hidden / shape.expert_tp
