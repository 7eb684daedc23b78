"""Megatron-Core's fine-grained selective recompute (``--recompute-modules``): the forward
kernels backward re-runs for each named module, and the activation bytes it stops keeping.

Megatron-Core core_v0.17.1 (``TransformerConfig.recompute_modules``, default ``["core_attn"]``):

==============  ==========================================  =====================================
module          re-run in backward                          no longer kept per token
==============  ==========================================  =====================================
core_attn       the attention core (flash: its forward)     the ``5 a s^2`` scores (unfused only)
mla_up_proj     q_up and kv_up, the rotary embedding and    Q, K, V (``a (2 d_qk + d_v) / t``) and
                the latents' norms (``qkv_up_proj_and_``    the normed latents the up projections
                ``rope_apply``)                             read (``r_q + r_kv + d_r``)
layernorm       the norms that are modules of their own:    the norm's output (the next linear's
                the input norm with latent attention, the   input, 1 B under fp8: TE is told to
                pre-MLP norm of a MoE layer (TE fuses the   save the 16-bit original, which is
                others into ``LayerNormLinear``: Identity)  discarded)
moe_act         the routed experts' activation              their fc2 input (``top_k f``)
mlp             a dense layer's MLP (fc1, activation, fc2,  its fc1 input and inner activations
                and its tensor-parallel collectives)
moe             a MoE layer's MLP block: router, dispatch   the routed and shared experts' inner
                and combine all-to-alls, experts, shared    activations
                experts
shared_experts  the shared experts' MLP (and collectives)   their inner activations
==============  ==========================================  =====================================

``moe_act``, ``layernorm`` and ``mla_up_proj`` use ``CheckpointWithoutOutput`` (the output is
freed once its consumer has run, recomputed when backward reaches it); the others
``tensor_parallel.checkpoint`` (the module's input kept, the forward run under ``no_grad``).
Both run the function under ``no_grad``, so nothing inside keeps its own saved tensors.
References: NVIDIA/Megatron-LM core_v0.17.1 ``megatron/core/transformer/transformer_config.py``
(``recompute_modules``), ``transformer_layer.py`` (``recompute_input_layernorm``,
``recompute_pre_mlp_layernorm``, ``recompute_mlp``), ``multi_latent_attention.py``
(``recompute_up_proj``), ``moe/experts.py`` (``activation_recompute``), ``moe/moe_layer.py``
(``moe_layer_recompute``), ``tensor_parallel/random.py`` (``CheckpointWithoutOutput``),
``models/gpt/gpt_layer_specs.py`` (which norms are ``IdentityOp``); docs/research/stack_facts.md
section 34.
"""

from __future__ import annotations

import numpy as np

from simulator.config.scenario import Mlp, ModelConfig, RecomputeModule
from simulator.workload.expert_passes import expert_pass_kernels
from simulator.workload.layer_shape import Attention, Kernels, LayerShape, local_tokens
from simulator.workload.mlp_kernels import (
    activation_kernel_bytes,
    expert_activation_bytes,
    latent_gemms,
    mlp_gemms,
    moe_kernel_bytes,
    shared_expert_bytes,
    shared_gemms,
)
from simulator.workload.moe_dispatch import router_gemm
from simulator.workload.transformer import (
    attention_input_gemms,
    latent_norm_bytes,
    norm_traffic,
    rotary_bytes,
    unfused_core_kernels,
)

M = RecomputeModule


def recompute_forward(shape: LayerShape, layer: Kernels, modules: frozenset[RecomputeModule],
                      expert_load: float = 1.0) -> Kernels:
    """Forward kernels one layer re-runs in backward for ``modules`` (module table), given
    the layer's forward ``layer`` (:func:`~simulator.workload.transformer.layer_forward`, for
    the attention core); the busiest expert-parallel rank's ``expert_load``."""
    parts = [_attention_core(shape, layer, modules), _up_projections(shape, modules),
             _norms(shape, modules), _mlp_block(shape, modules, expert_load)]
    gemms = [g for part in parts for g in part[0]]
    linear = [lin for part in parts for lin in part[1]]
    memory = [b for part in parts for b in part[2]]
    attention = layer.attention_flops if M.CORE_ATTN in modules else 0.0
    return Kernels(np.array(gemms, dtype=np.float64).reshape(-1, 4), np.array(memory, dtype=np.float64),
                   np.array(linear, dtype=bool), attention, attention_shape=layer.attention_shape)


def _attention_core(shape: LayerShape, layer: Kernels, modules) -> tuple[list, list, list]:
    """Unfused attention's score and context GEMMs and the softmax and dropout between them
    (a flash kernel is re-run by its FLOPs)."""
    unfused = shape.attention == Attention.UNFUSED and shape.model.block.has_attention
    if M.CORE_ATTN not in modules or not unfused:
        return [], [], []
    core = unfused_core_kernels(shape, layer)
    return [tuple(g) for g in core.gemms], [False] * len(core.gemms), list(core.memory_bytes)


def _up_projections(shape: LayerShape, modules) -> tuple[list, list, list]:
    """``mla_up_proj``: q_up (or q_proj) and kv_up, the rotary embedding, the latents' norms."""
    if M.MLA_UP_PROJ not in modules or shape.model.mla is None:
        return [], [], []
    q_up, latent = attention_input_gemms(shape)
    norms = [norm_traffic(shape) * b for b in latent_norm_bytes(shape)]
    return [q_up, latent[0]], [True, True], [rotary_bytes(shape), *norms]


def _norms(shape: LayerShape, modules) -> tuple[list, list, list]:
    """``layernorm``: the norms that are modules of their own (:func:`separate_norms`)."""
    if M.LAYERNORM not in modules:
        return [], [], []
    act = local_tokens(shape) * shape.model.hidden * shape.dtype_bytes
    return [], [], [norm_traffic(shape) * act] * separate_norms(shape.model)


def separate_norms(model: ModelConfig) -> int:
    """Norms of a layer that are not fused into the next linear under TransformerEngine: the
    input norm with latent attention (its down projections are plain linears), the pre-MLP
    norm of a MoE layer (the router reads it) (Megatron-Core ``gpt_layer_specs.py``)."""
    return int(model.mla is not None) + int(model.experts > 1)


def _mlp_block(shape: LayerShape, modules, expert_load: float) -> tuple[list, list, list]:
    """``mlp`` (dense layers), ``moe`` (MoE layers: everything of the block, the fp8 padding
    copies and the eager expert bias of :mod:`simulator.workload.expert_passes` included), else
    ``shared_experts`` and ``moe_act`` apart."""
    mdl = shape.model
    if not mdl.block.has_mlp:
        return [], [], []
    if mdl.experts == 1:
        if M.MLP not in modules:
            return [], [], []
        return mlp_gemms(shape), [True, True], [activation_kernel_bytes(shape)]
    shared = shared_gemms(shape)
    if M.MOE in modules:
        routed = mlp_gemms(shape, expert_load)
        memory = [*expert_activation_bytes(shape, expert_load), *moe_kernel_bytes(shape, expert_load),
                  *shared_expert_bytes(shape), *expert_pass_kernels(shape, expert_load)[0]]
        router = router_gemm(local_tokens(shape), mdl.experts, mdl.hidden)
        latent = latent_gemms(shape)
        return [router, *shared, *routed, *latent], [False] + [True] * (len(shared) + 2 + len(latent)), memory
    gemms, memory = [], []
    if M.SHARED_EXPERTS in modules:
        gemms, memory = shared, shared_expert_bytes(shape)
    if M.MOE_ACT in modules:
        memory = [*memory, *expert_activation_bytes(shape, expert_load)]
    return gemms, [True] * len(gemms), memory


def requantized_elements(shape: LayerShape, recomputed: Kernels, modules: frozenset[RecomputeModule],
                         expert_load: float = 1.0) -> np.ndarray:
    """Elements of each 16-bit tensor cast to fp8 again in backward under fp8 training: the
    inputs of the re-run linears (``M K batch``), the outputs of recomputed norms (their
    linears saved the 16-bit original, ``set_save_original_input``) and, under ``moe_act``,
    the routed experts' fc2 inputs."""
    g = recomputed.gemms[recomputed.linear_mask]
    elements = list(g[:, 0] * g[:, 2] * g[:, 3])
    if M.LAYERNORM in modules:
        elements += [local_tokens(shape) * shape.model.hidden] * separate_norms(shape.model)
    if M.MOE_ACT in modules and M.MOE not in modules and shape.model.experts > 1:
        rows, _, width, batch = mlp_gemms(shape, expert_load)[1]
        elements.append(rows * width * batch)
    return np.array(elements, dtype=np.float64)


def freed_bytes_per_token(model: ModelConfig, modules: frozenset[RecomputeModule], dtype_bytes: int,
                          fp8_inputs: bool) -> tuple[float, float]:
    """Activation bytes per token of one layer that ``modules`` stop keeping (module table):
    (not split by tensor parallelism, split), in the terms of
    :func:`simulator.workload.layer_activations.activation_bytes_per_layer`, whose fp8 inputs
    (``fp8_inputs``) count a linear's saved input at 1 byte."""
    linear_in = 1 if fp8_inputs else dtype_bytes
    replicated = linear_in * model.hidden * separate_norms(model) if M.LAYERNORM in modules else 0.0
    sharded = 0.0
    if M.MLA_UP_PROJ in modules and model.mla is not None:
        replicated += dtype_bytes * model.mla.latent_width
        sharded += dtype_bytes * (model.q_width + model.kv_width + model.v_width)
    if not model.block.has_mlp:
        return replicated, sharded
    if model.experts == 1:
        if M.MLP in modules:
            replicated += linear_in * model.hidden
            sharded += _inner_bytes(model, model.ffn_hidden, dtype_bytes, fp8_inputs)
        return replicated, sharded
    routed = model.ffn_hidden * model.top_k * model.expert_load
    shared = model.shared_expert_ffn
    if M.MOE in modules:
        return replicated, sharded + _inner_bytes(model, routed + shared, dtype_bytes, fp8_inputs)
    if M.SHARED_EXPERTS in modules:
        sharded += _inner_bytes(model, shared, dtype_bytes, fp8_inputs)
    if M.MOE_ACT in modules:
        sharded += (1 if fp8_inputs else dtype_bytes) * routed
    return replicated, sharded


def _inner_bytes(model: ModelConfig, width: float, dtype_bytes: int, fp8_inputs: bool) -> float:
    """Bytes an MLP of inner width ``width`` keeps per token: GELU its input and output, SwiGLU
    its ``2 f`` fc1 output and fc2 input, in 16 bit, the fc2 input at 1 byte under fp8."""
    inner = (3 if model.mlp == Mlp.SWIGLU else 2) * width * dtype_bytes
    return inner - ((dtype_bytes - 1) * width if fp8_inputs else 0.0)


def reruns_mlp_collectives(model: ModelConfig, modules: frozenset[RecomputeModule]) -> bool:
    """Whether the layer's MLP tensor-parallel collectives run again in backward: a dense
    layer's under ``mlp``, the shared experts' under ``moe`` or ``shared_experts`` (the routed
    experts' tokens come through the dispatcher: :func:`reruns_dispatch`)."""
    if not model.block.has_mlp:
        return False
    if model.experts == 1:
        return M.MLP in modules
    return bool(model.shared_expert_ffn) and bool({M.MOE, M.SHARED_EXPERTS} & modules)


def reruns_dispatch(model: ModelConfig, modules: frozenset[RecomputeModule]) -> bool:
    """Whether a MoE layer's dispatch and combine all-to-alls run again in backward (``moe``)."""
    return model.experts > 1 and M.MOE in modules
