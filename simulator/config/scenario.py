"""Pydantic models of the scenario file (see SCENARIO_FORMAT.md).

Each section is one model; sizes are bounded so that absurd numbers are
rejected with a message instead of overflowing later. Cross-field rules that
need the hardware (GPU count) live in :mod:`simulator.config.checks`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from simulator.config.hardware import Dtype, NodeSpec
from simulator.config.hybrid import PATTERN_CHARS, Block, MambaConfig
from simulator.config.mla import MlaConfig
from simulator.config.multisite import SitesConfig
from simulator.config.optimizer import OptimizerConfig
from simulator.config.parameter_server import ParameterServerConfig, SyncMode
from simulator.config.stack import DEFAULT_STACK, StackProfile
from simulator.config.variability import DocumentsConfig
from simulator.config.whatif_training import DataLoaderConfig, GradientCompressionConfig, SyncEvery

Count = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]
BigCount = Annotated[int, Strict(), Field(ge=1, le=10**12)]
Ratio = Annotated[float, Strict(), Field(ge=1.0, le=1024.0, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]


class TopologyKind(StrEnum):
    FAT_TREE = "fat-tree"
    RAIL_OPTIMIZED = "rail-optimized"
    SINGLE_SWITCH = "single-switch"
    TORUS = "torus"


class Mlp(StrEnum):
    GELU = "gelu"
    SWIGLU = "swiglu"
    SQUARED_RELU = "squared-relu"
    """Two matrices, ``relu(x)^2`` between them, no biases, RMSNorm, no position embedding:
    Nemotron-H and Nemotron 3 (Megatron-Core ``squared_relu``, Hugging Face ``relu2``)."""


class Schedule(StrEnum):
    GPIPE = "gpipe"
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved-1f1b"


class RankOrder(StrEnum):
    """How ranks map to GPUs, fastest dimension first (Megatron-Core ``order``)."""

    TP_CP_DP_PP = "tp-cp-dp-pp"     # Megatron's default: each pipeline stage a block of GPUs
    TP_CP_PP_DP = "tp-cp-pp-dp"     # NeMo's use_tp_pp_dp_mapping: each pipeline replica a block


class Routing(StrEnum):
    """How a mixture-of-experts router picks a token's ``top_k`` experts (what reaches each GPU:
    :mod:`simulator.workload.token_dedup`)."""

    RANDOM = "random"            # every top_k-subset equally likely (a trained router, forced balance)
    ROUND_ROBIN = "round_robin"  # token t: experts k t .. k t + k - 1 mod E (AutoModel FakeBalancedGate)


class Recompute(StrEnum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class RecomputeModule(StrEnum):
    """A submodule Megatron-Core's selective recompute re-runs (``--recompute-modules``,
    core_v0.17.1 ``TransformerConfig.recompute_modules``; :mod:`simulator.workload.recompute_modules`)."""

    CORE_ATTN = "core_attn"
    MOE_ACT = "moe_act"
    LAYERNORM = "layernorm"
    MLA_UP_PROJ = "mla_up_proj"
    MLP = "mlp"
    MOE = "moe"
    SHARED_EXPERTS = "shared_experts"


class Engine(StrEnum):
    ANALYTICAL = "analytical"
    DES = "des"


class NoiseDistribution(StrEnum):
    NONE = "none"
    LOGNORMAL = "lognormal"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FabricConfig(_Section):
    topology: TopologyKind = TopologyKind.FAT_TREE
    link: str | None = None
    nics_per_node: Annotated[int, Strict(), Field(ge=0, le=1024)] | None = None  # <= 4 per GPU: checks.py
    oversubscription: Ratio = 1.0
    switch_radix: Annotated[int, Strict(), Field(ge=4, le=1024)] = 64
    tiers: Annotated[int, Strict(), Field(ge=2, le=3)] | None = None
    torus_dims: list[Count] | None = None
    pxn: Flag = False  # NCCL PXN: cross-rail sends hop over NVLink to the GPU at the peer's rail NIC
    nvls: Flag = True  # NCCL's NVLink SHARP algorithms (NVLS, NVLS-Tree); false: NCCL_NVLS_ENABLE=0
    chip_torus: Flag = False  # torus of chips (TPU ICI): each chip's own links, one chip per node


class ClusterConfig(_Section):
    node: str | NodeSpec
    nodes: Count = 1
    gpus_per_node: Count | None = None
    fabric: FabricConfig = FabricConfig()
    sites: SitesConfig | None = None   # a cluster spanning sites joined by WAN (docs/what_ifs.md)


class ModelConfig(_Section):
    """Transformer shape. ``preset`` fills the fields; explicit keys override it."""

    preset: str | None = None
    layers: Annotated[int, Strict(), Field(ge=1, le=10_000)]
    hidden: Annotated[int, Strict(), Field(ge=1, le=1_000_000)]
    heads: Annotated[int, Strict(), Field(ge=1, le=100_000)]
    kv_heads: Annotated[int, Strict(), Field(ge=1, le=100_000)] | None = None
    head_dim: Annotated[int, Strict(), Field(ge=1, le=100_000)] | None = None
    """Width of one attention head (default ``hidden // heads``). Models that decouple it from
    the hidden size (Qwen3: 128 with hidden 2,560 and 32 heads; Gemma) give it here: the query
    and attention-output widths are then ``heads * head_dim``, not ``hidden``."""
    ffn_hidden: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] | None = None
    mlp: Mlp = Mlp.GELU
    seq_len: Annotated[int, Strict(), Field(ge=1, le=100_000_000)] = 2048
    vocab: Annotated[int, Strict(), Field(ge=1, le=100_000_000)] = 51200
    experts: Annotated[int, Strict(), Field(ge=1, le=100_000)] = 1
    top_k: Annotated[int, Strict(), Field(ge=1, le=100_000)] = 1
    expert_load: Ratio = 1.0
    """Tokens routed to the busiest expert-parallel rank over the mean (1: balanced routing).
    The busiest rank sets the layer's pace: its expert GEMMs, expert activations and
    all-to-all volume scale by it. A capacity-factor dispatcher that pads computes its
    capacity (1); a dropless one computes what the router sends (Megatron-Core logs tokens
    per expert); Wang et al. 2024 (arXiv:2408.15664) track the same quantity as "MaxVio", the
    busiest expert's load over the mean minus 1. No value is assumed here."""
    router_groups: Annotated[int, Strict(), Field(ge=1, le=100_000)] = 1
    """Groups the router splits the experts into, contiguous ranges of ``experts / groups``
    (DeepSeek-V3's ``n_group``, 8; Megatron-Core's ``moe_router_num_groups``): with
    ``router_group_topk`` a token's ``top_k`` experts come from that many groups only, which
    limits the servers a token reaches (DeepSeek-V3's node-limited routing, at most 4) and so what
    a deduplicating dispatcher sends (:mod:`simulator.workload.token_dedup`). 1: no groups."""
    router_group_topk: Annotated[int, Strict(), Field(ge=1, le=100_000)] | None = None
    """Groups a token's experts are chosen from (DeepSeek-V3's ``topk_group``, 4; Megatron-Core's
    ``moe_router_group_topk``); default ``router_groups`` (no limit)."""
    routing: Routing = Routing.RANDOM
    """How the router picks a token's experts: ``random``, every ``top_k``-subset equally likely
    (a trained router's load as the model assumes it, and Megatron-Core's
    ``moe_router_force_load_balancing``, which routes on random logits); ``round_robin``, token
    ``t`` to the ``top_k`` consecutive experts from ``k t`` (mod ``E``), NeMo AutoModel's
    ``FakeBalancedGate`` (``fake_balanced_gate: true`` in its benchmark configs), which keeps the
    experts balanced but sends a token to as few GPUs as contiguous expert ranges allow."""
    mla: MlaConfig | None = None
    """Multi-head latent attention (:mod:`simulator.config.mla`): the query and key heads are
    ``qk_head_dim + qk_rope_head_dim`` wide, the value heads ``v_head_dim``, one key/value head
    per query head; ``head_dim`` and a smaller ``kv_heads`` do not apply."""
    shared_expert_ffn: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] = 0
    """Width of the shared experts' MLP, which every token of a mixture-of-experts layer runs
    beside the routed ``top_k`` (0: none). Megatron-Core's ``moe_shared_expert_intermediate_size``
    (all shared experts as one MLP: DeepSeek's ``n_shared_experts * moe_intermediate_size``,
    Qwen2-MoE's ``shared_expert_intermediate_size``); split over ``tp`` like a dense MLP, its
    weights replicated across expert-parallel ranks."""
    first_dense_layers: Annotated[int, Strict(), Field(ge=0, le=10_000)] = 0
    """How many of a mixture of experts' first layers have a dense MLP (``dense_ffn`` wide) instead
    of experts: DeepSeek-V3's ``first_k_dense_replace`` (3), Kimi K2's (1); Megatron-Core's
    ``moe_layer_freq`` list ``[0] * k + [1] * (L - k)``. They sit at the front of the first
    pipeline chunks."""
    dense_ffn: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] | None = None
    """Width of the dense layers' MLP (``first_dense_layers``; default ``ffn_hidden``):
    Megatron-Core's ``ffn_hidden_size`` when ``moe_ffn_hidden_size`` sets the experts' width
    (DeepSeek-V3: 18,432 against 2,048)."""
    mtp_layers: Annotated[int, Strict(), Field(ge=0, le=100)] = 0
    """Multi-token prediction depth (DeepSeek-V3: 1; Megatron-Core's ``mtp_num_layers``): each
    predicts one more future token with its own transformer layer (a layer of the model's last
    kind), two norms and a ``2h -> h`` projection, and runs the shared output layer and loss
    again. They sit on the last pipeline stage after its layers (Megatron-Bridge's layout
    token ``m`` before the loss ``L``)."""
    qk_norm: Annotated[bool, Strict()] = False
    """An RMSNorm over the queries and keys after their projections (QK-norm: Qwen3 per head,
    OLMo 2 over the whole projection; Gemma 3): one more memory-bound kernel a layer over the
    ``(heads + kv_heads) head_dim`` query and key elements of each token, whose input backward
    keeps."""
    attention_window: Annotated[int, Strict(), Field(ge=1, le=100_000_000)] | None = None
    """Sliding-window (local) attention: each query attends to itself and the
    ``attention_window - 1`` tokens before it (GPT-OSS: 128, Megatron-Core ``window_size``
    ``(127, 0)``; Mistral 7B: 4,096; Gemma 3: 1,024), in every layer or, with
    ``full_attention_every``, in all but every n-th (:mod:`simulator.workload.attention_window`).
    None: every layer attends causally to the whole sequence."""
    full_attention_every: Annotated[int, Strict(), Field(ge=2, le=10_000)] | None = None
    """With ``attention_window``, every n-th layer keeps full causal attention (Megatron-Core's
    ``window_attn_skip_freq``: GPT-OSS 2, alternating; Gemma 3: 6, five local layers to one
    global). None: every layer is local."""
    moe_latent: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] | None = None
    """Latent mixture of experts (Megatron-Core's ``moe_latent_size``; Nemotron 3 Super 1,024,
    Ultra 2,048): each MoE layer projects its tokens down to this width before the dispatch
    (``fc1_latent_proj``) and back after the combine (``fc2_latent_proj``), both whole on every
    tensor-parallel rank; the routed experts read and write it and the dispatcher moves it. The
    router and the shared experts keep the hidden width. None: the experts work at ``hidden``."""
    rope_concentration: Annotated[float, Field(gt=0.0, le=10.0, allow_inf_nan=False)] = 1.0
    """YaRN's attention concentration factor, the ``mscale`` its rotary embedding multiplies cos
    and sin by (Megatron-Core ``_yarn_get_concentration_factor``: ``0.1 ln(s) + 1`` for a scaling
    factor ``s`` without ``yarn_mscale`` / ``yarn_mscale_all_dim``; GPT-OSS 1.347 at ``s`` = 32,
    whose bridge sets both None; 1 where they cancel, DeepSeek-V3 and Kimi K2, or without YaRN).
    TransformerEngine's fused RoPE takes no such factor, so Megatron-Core applies a rotary
    embedding whose factor is not 1 unfused (``apply_rotary_pos_emb``, core_v0.16.0 on, "Fixes for
    gpt-oss", NVIDIA/Megatron-LM #2038): priced as
    :data:`~simulator.workload.transformer.UNFUSED_ROPE_BYTES`."""
    expert_bias: Annotated[bool, Strict()] = False
    """The routed experts' linears carry biases (GPT-OSS: Megatron-Bridge's GPT-OSS bridge sets
    ``add_bias_linear``): Megatron-Core adds the second linear's bias, times each row's routing
    probability, outside the grouped GEMM (:mod:`simulator.workload.expert_passes`)."""
    tied_embeddings: Annotated[bool, Strict()] | None = None
    """The output layer shares the token embedding's weight (GPT, BLOOM, MPT); default: true
    for ``mlp: gelu`` (GPT-style), false for ``swiglu`` (Llama-style)."""
    dropout: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] | None = None
    """Dropout probability of the hidden states and attention (Megatron's ``hidden_dropout`` and
    ``attention_dropout``): above 0 every dropout keeps a 1-byte mask for backward and the
    fused bias-dropout-add moves it; at 0 PyTorch's dropout returns its input and keeps none.
    Default: 0.1 for ``mlp: gelu`` (GPT-style; Megatron-LM's default), 0 for ``swiglu``
    (Llama-style recipes train without dropout)."""

    mamba: MambaConfig | None = None
    """The Mamba-2 mixer of the model's ``M`` layers (:mod:`simulator.config.hybrid`)."""
    hybrid_pattern: Annotated[str, Strict(), Field(min_length=1, max_length=100_000,
                                                   pattern=f"^[{re.escape(PATTERN_CHARS)}]+$")] | None = None
    """One character per layer, Megatron-Core's ``hybrid_override_pattern``: ``M`` Mamba-2
    mixer, ``*`` attention, ``-`` dense MLP, ``E`` mixture of experts, each with its norm and
    residual (:mod:`simulator.config.hybrid`); ``layers`` is its length. None: every layer is
    ``block``."""
    mtp_pattern: Annotated[str, Strict(), Field(min_length=1, max_length=1_000,
                                                pattern=f"^[{re.escape(PATTERN_CHARS)}]+$")] | None = None
    """A hybrid model's multi-token prediction depth as a pattern (Megatron-Core's
    ``mtp_hybrid_override_pattern``; Nemotron 3 Super ``*E``): each of the ``mtp_layers`` depths
    runs these layers beside its projection, norms and the shared output layer."""
    mtp_shared: Annotated[bool, Strict()] = False
    """The multi-token prediction depths share one set of weights (Megatron-Core's
    ``mtp_use_repeated_layer``: Nemotron 3 Super runs its one MTP block twice): the parameters,
    gradients and optimizer state count once, the compute once per depth."""
    block: Block = Block.FULL
    """What every layer runs when there is no ``hybrid_pattern``: ``full`` a transformer layer
    (attention and MLP), or ``attention``, ``mamba`` or ``mlp`` alone (a pure Mamba-2 model is
    ``block: mamba``)."""

    @model_validator(mode="after")
    def _defaults(self) -> ModelConfig:
        if self.tied_embeddings is None:
            object.__setattr__(self, "tied_embeddings", self.mlp == Mlp.GELU)
        if self.dropout is None:
            object.__setattr__(self, "dropout", 0.1 if self.mlp == Mlp.GELU else 0.0)
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.ffn_hidden is None:
            object.__setattr__(self, "ffn_hidden", 4 * self.hidden)
        if self.router_group_topk is None:
            object.__setattr__(self, "router_group_topk", self.router_groups)
        return self

    def dense_model(self) -> ModelConfig:
        """The model one of its ``first_dense_layers`` is: this transformer with a dense
        ``dense_ffn``-wide MLP and no experts."""
        return self.model_copy(update={"experts": 1, "top_k": 1, "expert_load": 1.0, "shared_expert_ffn": 0,
                                       "router_groups": 1, "router_group_topk": 1,
                                       "ffn_hidden": self.dense_ffn or self.ffn_hidden,
                                       "first_dense_layers": 0, "dense_ffn": None, "mtp_layers": 0,
                                       "moe_latent": None})

    def sublayer_model(self, kind: str) -> ModelConfig:
        """The model one ``kind`` layer of ``hybrid_pattern`` is (:mod:`simulator.config.hybrid`):
        a uniform model of that block, with experts only for ``E`` and a dense MLP of
        ``dense_ffn`` (default ``ffn_hidden``) for ``-``."""
        block = {"M": Block.MAMBA, "*": Block.ATTENTION, "-": Block.MLP, "E": Block.MLP}[kind]
        base = self if kind == "E" else self.dense_model()
        return base.model_copy(update={"block": block, "hybrid_pattern": None})

    @property
    def expert_width(self) -> int:
        """Width of the tokens the routed experts read and write and the dispatcher moves:
        ``moe_latent``, or ``hidden``."""
        return self.moe_latent or self.hidden

    def latent_projection_parameters(self) -> int:
        """A latent mixture of experts' two projections, ``2 h L`` (no biases), whole on every
        tensor-parallel rank (Megatron-Core ``parallel_mode="duplicated"``); 0 without."""
        return 2 * self.hidden * self.moe_latent if self.moe_latent and self.experts > 1 else 0

    @property
    def d_head(self) -> int:
        """Width of one query or key head: ``head_dim`` if given, else ``hidden // heads``;
        with ``mla`` its ``qk_head_dim + qk_rope_head_dim``."""
        if self.mla is not None:
            return self.mla.qk_dim
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def d_value(self) -> int:
        """Width of one value head: ``d_head``, or ``mla.v_head_dim``."""
        return self.mla.v_head_dim if self.mla is not None else self.d_head

    @property
    def q_width(self) -> int:
        """Query width, ``heads * d_head`` elements per token."""
        return self.heads * self.d_head

    @property
    def kv_width(self) -> int:
        """Key width, ``kv_heads * d_head`` elements per token."""
        return self.kv_heads * self.d_head

    @property
    def v_width(self) -> int:
        """Value width, ``kv_heads * d_value`` elements per token."""
        return self.kv_heads * self.d_value

    @property
    def context_width(self) -> int:
        """Attention output width (the input of its output projection), ``heads * d_value``."""
        return self.heads * self.d_value


class AttentionKernel(StrEnum):
    FLASH = "flash"
    UNFUSED = "unfused"


class TrainingConfig(_Section):
    global_batch: BigCount
    micro_batch: BigCount = 1
    dtype: Dtype = Dtype.BF16
    attention: AttentionKernel = AttentionKernel.FLASH
    stack: StackProfile | str = DEFAULT_STACK   # resolved to a profile by the loader
    gradient_compression: GradientCompressionConfig | None = None   # docs/what_ifs.md
    sync_every: SyncEvery = 1
    data_loader: DataLoaderConfig | None = None
    sync: SyncMode = SyncMode.SYNC   # async: parameter servers (the parameter_server section)
    documents: DocumentsConfig | None = None    # document lengths: work varies per micro-batch
    optimizer: OptimizerConfig = OptimizerConfig()   # adam, or muon (simulator.config.optimizer)

    @field_validator("dtype")
    @classmethod
    def _training_dtype(cls, value: Dtype) -> Dtype:
        if value == Dtype.TF32:
            raise ValueError("tf32 is a GPU math mode, not a training dtype; use fp32, bf16, fp16 or fp8")
        if value == Dtype.FP4:
            raise ValueError("fp4 training is dtype fp8 with training.stack.kernels.fp8_scaling: nvfp4 "
                             "(TransformerEngine's NVFP4BlockScaling recipe); use fp32, bf16, fp16 or fp8")
        return value


class ParallelismConfig(_Section):
    tp: Count = 1
    pp: Count = 1
    dp: Count | None = None
    cp: Count = 1
    ep: Count = 1
    etp: Count | None = None   # expert tensor parallelism (Megatron-Core); None: tp
    sequence_parallel: Flag = False
    schedule: Schedule = Schedule.ONE_F_ONE_B
    virtual_stages: Count = 1
    zero_stage: Annotated[int, Strict(), Field(ge=0, le=3)] = 1
    shard_size: Count | None = None   # ZeRO-3 hybrid sharding: shard in groups of this many dp*cp ranks
    recompute: Recompute = Recompute.NONE
    recompute_modules: tuple[RecomputeModule, ...] | None = None
    """What ``recompute: selective`` re-runs, by Megatron-Core's module names (None: the stack's
    selective policy, :class:`simulator.config.stack.RecomputeProfile`)."""
    recompute_fraction: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)] | None = None
    """Under ``recompute: full``, the share of each stage's layers recomputed; the others keep
    their activations (Megatron-Core ``--recompute-method block --recompute-num-layers n``:
    ``n`` over the layers of a model chunk; torchtitan's layer-wise selective checkpointing of
    every ``N``-th block: ``1 / N``; fms-fsdp's ``selective_checkpointing`` ``p``). None: 1."""
    overlap_grad_reduce: Flag = True
    pipeline_flushes: Count = 1
    """Pipeline schedules run per step: each over ``microbatches / pipeline_flushes`` of the
    step's microbatches, filling and draining the pipeline and reducing its gradients, the
    optimizer once after the last (torchtitan's and NeMo AutoModel's gradient accumulation
    under pipeline parallelism: one ``torch.distributed.pipelining`` ``schedule.step`` per
    local batch; :mod:`simulator.engine.flushes`). 1: one schedule over every microbatch. No
    effect with ``pp`` 1 (:attr:`schedules_per_step`)."""
    cpu_offload_layers: Annotated[int, Strict(), Field(ge=0, le=1_000_000)] = 0
    """Activations of the first this many layers go to host memory in forward and come back in
    backward (Megatron-Core ``cpu_offloading`` with ``cpu_offloading_num_layers``, activations
    only: TransformerEngine's ``get_cpu_offload_context``; :mod:`simulator.cost.activation_offload`)."""
    rank_order: RankOrder = RankOrder.TP_CP_DP_PP
    first_stage_layers: Count | None = None   # Megatron-Core --decoder-first-pipeline-num-layers
    last_stage_layers: Count | None = None    # Megatron-Core --decoder-last-pipeline-num-layers
    pipeline_layout: Annotated[str, Strict(), Field(min_length=1, max_length=100_000)] | None = None
    """Megatron-Core's ``--pipeline-model-parallel-layout`` (:mod:`simulator.config.pipeline_layout`):
    the layers of each model chunk, e.g. ``Et|(tt|)*30mL``."""

    @field_validator("recompute_modules", mode="before")
    @classmethod
    def _a_list_of_names(cls, value):
        """A YAML list of module names (pydantic alone would ask for "a valid tuple")."""
        if value is None or isinstance(value, (list, tuple)):
            return value
        names = ", ".join(module.value for module in RecomputeModule)
        raise ValueError(f"expected a list of module names, e.g. [core_attn, mlp]; valid names: {names}")

    @field_validator("recompute_modules")
    @classmethod
    def _distinct_modules(cls, value: tuple[RecomputeModule, ...] | None):
        if value is not None and len(set(value)) != len(value):
            raise ValueError("each module may be named once")
        return value

    @property
    def recomputed_modules(self) -> frozenset[RecomputeModule] | None:
        """The modules selective recompute re-runs when named (None: not named, or not
        selective recompute)."""
        if self.recompute != Recompute.SELECTIVE or self.recompute_modules is None:
            return None
        return frozenset(self.recompute_modules)

    @property
    def schedules_per_step(self) -> int:
        """Pipeline schedules a step runs: ``pipeline_flushes`` with a pipeline, else 1 (at
        pp 1 there is none to fill and drain)."""
        return self.pipeline_flushes if self.pp > 1 else 1

    @property
    def full_recompute_share(self) -> float:
        """The share of the layers fully recomputed in backward: ``recompute_fraction`` (1 when
        unset) under ``recompute: full``, else 0."""
        if self.recompute != Recompute.FULL:
            return 0.0
        return 1.0 if self.recompute_fraction is None else self.recompute_fraction

    @property
    def expert_tp(self) -> int:
        """Tensor parallelism of the experts' linears: ``etp``, or ``tp`` when unset
        (Megatron-Core's default for ``expert_tensor_parallel_size``)."""
        return self.etp or self.tp


class CollectivesConfig(_Section):
    """``algorithm``: ``auto`` (NCCL's choice per size), one algorithm for every collective
    (as ``NCCL_ALGO``: all_reduce, reduce_scatter, all_gather, broadcast, reduce; all-to-all
    and send/receive stay NCCL's peer-to-peer), or a mapping ``{op: algorithm}``
    (:mod:`simulator.cost.forced` applies it)."""

    algorithm: str | dict[str, str] = "auto"

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        # imported here: simulator.collectives imports this module
        from simulator.collectives.registry import ALGORITHMS
        from simulator.collectives.schedule import Algorithm, Op
        from simulator.config.yaml_io import did_you_mean, short_value

        names = ["auto", *(a.value for a in Algorithm)]
        ops = [o.value for o in Op]
        pairs = [(None, value)] if isinstance(value, str) else list(value.items())
        for op, name in pairs:
            where = f"entry {short_value(op)}: {short_value(name)}: " if op is not None else ""
            if op is not None and op not in ops:
                raise ValueError(f"{where}{op!r} is not a collective{did_you_mean(op, ops)}; "
                                 f"expected one of {', '.join(ops)}")
            if name not in names:
                raise ValueError(f"{where}not an algorithm{did_you_mean(name, names)}; "
                                 f"expected one of {', '.join(names)}")
            if op is not None and name != "auto" and Op(op) not in ALGORITHMS[Algorithm(name)][1]:
                served = ", ".join(sorted(o.value for o in ALGORITHMS[Algorithm(name)][1]))
                raise ValueError(f"{where}{name} does not implement {op} (it serves: {served})")
        return value


class Fidelity(StrEnum):
    """How finely the discrete-event engine replays traffic (docs/engines.md)."""

    TP_COLLAPSED = "tp-collapsed"   # tp rank 0's flows stand for the tensor-parallel ranks'
    PER_RANK = "per-rank"           # every rank's flows; one flow per collective per pair
    PER_TRANSFER = "per-transfer"   # every rank's flows, collectives step by step


class SimulateConfig(_Section):
    engine: Engine = Engine.ANALYTICAL
    fidelity: Fidelity = Fidelity.TP_COLLAPSED
    contention: Flag = True
    steps: Annotated[int, Strict(), Field(ge=1, le=100_000)] = 1
    seed: Annotated[int, Strict(), Field(ge=0, le=2**63 - 1)] = 0


class StragglerConfig(_Section):
    distribution: NoiseDistribution = NoiseDistribution.NONE
    sigma: Annotated[float, Strict(), Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 0.0


class ThrottleConfig(_Section):
    """Rare per-GPU slowdowns (thermal or power throttling, a noisy neighbour)."""

    probability: Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0
    factor: Annotated[float, Strict(), Field(ge=1.0, le=100.0, allow_inf_nan=False)] = 1.0


class SlowGpuConfig(_Section):
    """One GPU that is always slower by ``factor`` (a bad part, a hot slot)."""

    gpu: Annotated[int, Strict(), Field(ge=0, le=10_000_000)]
    factor: Annotated[float, Strict(), Field(ge=1.0, le=100.0, allow_inf_nan=False)]


class SlowNodeConfig(_Section):
    """One server whose GPUs are all slower by ``factor`` (a throttled chassis, bad cooling)."""

    node: Annotated[int, Strict(), Field(ge=0, le=10_000_000)]
    factor: Annotated[float, Strict(), Field(ge=1.0, le=100.0, allow_inf_nan=False)]


class LinkFaultConfig(_Section):
    """A link between two switches, named by their labels (``fabric/leaf0``, ``fabric/spine3``).

    ``fraction`` < 1 degrades it to that share of its bandwidth; ``fraction: 0`` fails it
    and traffic routes around it.
    """

    between: Annotated[list[str], Field(min_length=2, max_length=2)]
    fraction: Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0


Step = Annotated[int, Strict(), Field(ge=0, le=10_000_000)]
Slowdown = Annotated[float, Strict(), Field(ge=1.0, le=100.0, allow_inf_nan=False)]
Seconds = Annotated[float, Strict(), Field(ge=0.0, le=1e7, allow_inf_nan=False)]


class EpisodeConfig(_Section):
    """A slowdown with a start and a duration: GPU ``gpu`` (or every GPU of server ``node``;
    exactly one of them) runs ``factor`` times slower from step ``start_step`` (0-based) for
    ``steps`` steps (to the end of the run if omitted)."""

    gpu: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] | None = None
    node: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] | None = None
    factor: Slowdown
    start_step: Step = 0
    steps: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] | None = None


class FailSlowScope(StrEnum):
    GPU = "gpu"
    NODE = "node"


class FailSlowConfig(_Section):
    """Fail-slow episodes at a fleet's rate: every GPU (or server) alternates between healthy
    and slowed as an on/off Markov process. A healthy unit starts an episode at
    ``rate_per_hour`` per unit-hour (mean time between episodes ``3600 / rate_per_hour`` s);
    an episode lasts ``mean_duration_s`` on average (exponential, rounded to whole steps) and
    slows the unit by ``factor``."""

    scope: FailSlowScope = FailSlowScope.GPU
    rate_per_hour: Annotated[float, Strict(), Field(ge=0.0, le=1e6, allow_inf_nan=False)]
    mean_duration_s: Annotated[float, Strict(), Field(gt=0.0, le=1e9, allow_inf_nan=False)]
    factor: Slowdown


class HostPauseConfig(_Section):
    """Host-side pauses (Python garbage collection, checkpoint threads): per server and step,
    with ``probability``, the server's processes stall ``duration_s`` before one of their
    tasks (chosen uniformly); ``synchronized``: all servers pause together at the start of
    a step, with that probability per step (Megatron-LM's ``--manual-gc``)."""

    probability: Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0
    duration_s: Seconds = 0.0
    synchronized: Flag = False


class NicFaultConfig(_Section):
    """A NIC (``gpu``'s) or one pipeline link (``gpu`` to ``peer``, both directions) at a
    ``fraction`` of its bandwidth and/or ``latency_s`` more per message, from step
    ``start_step`` for ``steps`` steps (to the end if omitted)."""

    gpu: Annotated[int, Strict(), Field(ge=0, le=10_000_000)]
    peer: Annotated[int, Strict(), Field(ge=0, le=10_000_000)] | None = None
    fraction: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 1.0
    latency_s: Annotated[float, Strict(), Field(ge=0.0, le=3600.0, allow_inf_nan=False)] = 0.0
    start_step: Step = 0
    steps: Annotated[int, Strict(), Field(ge=1, le=10_000_000)] | None = None


class NoiseConfig(_Section):
    straggler: StragglerConfig = StragglerConfig()
    throttle: ThrottleConfig = ThrottleConfig()
    slow_gpus: list[SlowGpuConfig] = Field(default_factory=list)
    slow_nodes: list[SlowNodeConfig] = Field(default_factory=list)
    links: list[LinkFaultConfig] = Field(default_factory=list)
    episodes: list[EpisodeConfig] = Field(default_factory=list)
    fail_slow: list[FailSlowConfig] = Field(default_factory=list)
    host_pause: HostPauseConfig = HostPauseConfig()
    nic_faults: list[NicFaultConfig] = Field(default_factory=list)


class Scenario(_Section):
    """A whole scenario file. ``model``/``training``/``parallelism`` are optional so that
    a file with only ``cluster:`` serves ``clustersim collectives``."""

    name: str = "unnamed"
    cluster: ClusterConfig
    model: ModelConfig | None = None
    training: TrainingConfig | None = None
    parallelism: ParallelismConfig = ParallelismConfig()
    collectives: CollectivesConfig = CollectivesConfig()
    simulate: SimulateConfig = SimulateConfig()
    noise: NoiseConfig = NoiseConfig()
    description: str = ""
    calibration: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    """A calibration overlay (``clustersim calibrate -o``), relative to the scenario file."""
    parameter_server: ParameterServerConfig | None = None
    """Parameter servers of ``training.sync: async`` (:mod:`simulator.config.parameter_server`)."""

    @model_validator(mode="after")
    def _stack_defaults(self) -> Scenario:
        """Fill the ``parallelism`` keys the scenario leaves out from the stack's defaults."""
        stack = self.training.stack if self.training is not None else None
        if not isinstance(stack, StackProfile):
            return self
        par = self.parallelism
        unset = {k: v for k, v in stack.defaults.model_dump().items() if k not in par.model_fields_set}
        if unset:
            object.__setattr__(self, "parallelism", par.model_copy(update=unset))
        return self

    @property
    def training_what_if(self) -> str | None:
        """The key of the first training what-if the scenario sets (docs/what_ifs.md:
        gradient compression, local SGD, the input pipeline, a multi-site cluster), or None."""
        t = self.training
        if t is not None and t.gradient_compression is not None:
            return "training.gradient_compression"
        if t is not None and t.sync_every > 1:
            return "training.sync_every"
        if t is not None and t.data_loader is not None:
            return "training.data_loader"
        return "cluster.sites" if self.cluster.sites is not None else None

    def schedule_microbatches(self, dp: int) -> int:
        """Microbatches of one pipeline schedule at data-parallel size ``dp``: global batch /
        (micro batch x dp x :attr:`ParallelismConfig.schedules_per_step`)."""
        return self.training.global_batch // (self.training.micro_batch * dp
                                              * self.parallelism.schedules_per_step)

    @field_validator("name", mode="before")
    @classmethod
    def _name_is_text(cls, value: Any) -> Any:
        if isinstance(value, (int, float)):
            try:
                return str(value)
            except ValueError:  # an int too long for str(): rejected below as "not a valid string"
                return value
        return value
