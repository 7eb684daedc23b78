"""A draft scenario from a Megatron-LM log: arguments -> scenario keys, iterations -> the
measured step time.

Mapping (Megatron argument -> scenario key):

=========================================================  ==================================
``num_layers``, ``hidden_size``, ``num_attention_heads``   ``model.layers``, ``hidden``, ``heads``
``num_query_groups`` (when ``group_query_attention``)      ``model.kv_heads``
``kv_channels`` (when not ``hidden_size / heads``)         ``model.head_dim``
``ffn_hidden_size``, ``seq_length``                        ``model.ffn_hidden``, ``seq_len``
padded vocabulary (log line), ``padded_vocab_size``,       ``model.vocab``
``vocab_size``
``swiglu``                                                 ``model.mlp: swiglu`` (else gelu)
``multi_latent_attention`` with its ranks and head widths   ``model.mla``
``num_experts``, ``moe_router_topk``                       ``model.experts``, ``top_k``
``moe_router_num_groups``, ``moe_router_group_topk``       ``model.router_groups``, ``router_group_topk``
``moe_ffn_hidden_size``                                    ``model.ffn_hidden`` (MoE: the experts' width)
``moe_shared_expert_intermediate_size``                    ``model.shared_expert_ffn``
``moe_layer_freq`` ``[0]*k + [1]*(L-k)``                   ``model.first_dense_layers``, ``dense_ffn``
``mtp_num_layers``                                         ``model.mtp_layers``
``position_embedding_type`` yarn, ``rotary_scaling_factor``, ``model.rope_concentration`` (YaRN's
``mscale``, ``mscale_all_dim``                             factor; :mod:`simulator.measure.logged_rope`)
``hybrid_layer_pattern``, Mamba, ``moe_latent_size``       ``model.hybrid_pattern`` and the rest
                                                           (:mod:`simulator.measure.logged_hybrid`)
``pipeline_model_parallel_layout``                         ``parallelism.pipeline_layout``
``global_batch_size``, ``micro_batch_size``                ``training.global_batch``, ``micro_batch``
``fp8`` (any format) / ``bf16`` / ``fp16``                 ``training.dtype`` fp8/bf16/fp16 (else fp32)
``attention_backend`` unfused/local                        ``training.attention: unfused`` (else flash)
``tensor/pipeline/context/expert_model_parallel_size``     ``parallelism.tp/pp/cp/ep``
``world_size / (tp*pp*cp)``                                ``parallelism.dp``
``sequence_parallel``, ``overlap_grad_reduce``             the same keys
``virtual_pipeline_model_parallel_size`` or                ``parallelism.virtual_stages`` and
``num_layers / pp / num_layers_per_virtual_pipeline_stage`` ``schedule: interleaved-1f1b`` (else 1f1b)
``decoder_first/last_pipeline_num_layers``                 ``parallelism.first/last_stage_layers``
``recompute_granularity`` full/selective,                  ``parallelism.recompute``
``recompute_activations``
``recompute_modules`` (other than ``['core_attn']``)       ``parallelism.recompute_modules``
``cpu_offloading`` with ``cpu_offloading_num_layers``       ``parallelism.cpu_offload_layers``
``cuda_graph_impl`` with ``cuda_graph_modules``/``_scope``  ``kernels.cuda_graphs`` full or partial
(``enable_cuda_graph``, ``external_cuda_graph`` before)
``use_distributed_optimizer`` (Megatron-FSDP:              ``parallelism.zero_stage`` 1 (else 0;
``data_parallel_sharding_strategy``; ``use_torch_fsdp2``)  FSDP: 0/1/2/3; torch FSDP2: 3)
``optimizer`` muon / dist_muon, ``muon_num_ns_steps``,     ``training.optimizer`` (layer-wise
``muon_split_qkv``, ``muon_nesterov``                      distributed: ``zero_stage`` 1)
``use_precision_aware_optimizer`` with ``main_params_dtype``, ``training.optimizer`` ``precision_aware``
``exp_avg_dtype``, ``exp_avg_sq_dtype``                    and its dtypes
=========================================================  ==================================

``untie_embeddings_and_output_weights`` gives ``model.tied_embeddings``. ``training.stack`` is
``megatron-core`` with its loss kernel, and overrides where the log sets the gradient and weight
dtypes, the parameter-gather alignment, the fp8 recipe, the MoE permutation fusion, the fused cross
entropy or torch FSDP2 otherwise
(:func:`_stack`). The cluster comes from the command line
(``--node``, ``--nodes``); the fabric is not in the log and is listed as not inferred.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from simulator.config import HardwareLibrary
from simulator.config.scenario import RecomputeModule
from simulator.config.yaml_io import did_you_mean
from simulator.errors import ConfigError, UsageError
from simulator.measure.logged_hybrid import hybrid_model, latent_width
from simulator.measure.logged_optimizer import layer_wise, logged_optimizer, muon_data_parallel
from simulator.measure.logged_rope import logged_rope
from simulator.measure.megatron_log import MegatronLog
from simulator.measure.steady import Measured, measure_log

STACK = "megatron-core"
_FSDP_STAGES = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}


@dataclass(frozen=True)
class Draft:
    """A scenario mapping, what could not be inferred, and the measurement."""

    scenario: dict[str, Any]
    not_inferred: list[str]
    not_modelled: list[str]
    measured: Measured


def draft_from_log(log: MegatronLog, node: str, nodes: int,
                   library: HardwareLibrary | None = None) -> Draft:
    """Draft scenario for ``log`` run on ``nodes`` servers of type ``node``.

    Raises
    ------
    UsageError
        ``node`` is not in the hardware library or ``nodes`` < 1.
    ConfigError
        A required argument is missing from the log, or the log's world size is not
        ``nodes`` x the node's GPUs.

    Notes
    -----
    The draft is the log's mapping, not checked against the scenario schema;
    :func:`simulator.measure.draft_limits.check_draft` (run by ``clustersim import-log``)
    refuses one that ``clustersim check`` would refuse.
    """
    library = library or HardwareLibrary()
    notes: list[str] = []
    extra: list[str] = []
    _check_cluster(log, node, nodes, library)
    scenario = {"name": _name(log.source), "description": "",
                "cluster": {"node": node, "nodes": nodes},
                "model": _model(log, notes, extra),
                "training": _training(log, notes, extra),
                "parallelism": _parallelism(log, notes, extra)}
    link = library.node(node).nic_link
    notes.insert(0, f"cluster.fabric: topology, link and oversubscription are not in the log; "
                    f"clustersim's defaults apply (non-blocking fat-tree of the node's NIC "
                    f"link, {link})")
    measured = measure_log(log.iterations, scenario["training"]["global_batch"],
                           scenario["model"]["seq_len"], log.arguments["world_size"])
    scenario["description"] = _description(log, measured)
    return Draft(scenario, notes, extra, measured)


def check_node(node: str, nodes: int, library: HardwareLibrary) -> int:
    """GPUs per node of ``node``; UsageError if the library has no such node or ``nodes`` < 1."""
    names = library.names("nodes")
    if node not in names:
        raise UsageError(f"--node: no node spec named '{node}'{did_you_mean(node, names)}; "
                         "run 'clustersim specs' for the list")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise UsageError(f"--nodes: {nodes} is not a positive whole number")
    return library.node(node).gpus


def _check_cluster(log: MegatronLog, node: str, nodes: int, library: HardwareLibrary) -> None:
    per_node = check_node(node, nodes, library)
    world = _required(log, "world_size")
    if world != nodes * per_node:
        raise ConfigError(f"the log's world size {world} is not --nodes {nodes} x {per_node} "
                          f"GPUs per {node} = {nodes * per_node}; give the nodes the run used",
                          log.source, "world_size")


def _required(log: MegatronLog, key: str) -> Any:
    value = log.arguments.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        shown = "missing" if key not in log.arguments else f"'{value}'"
        raise ConfigError(f"argument {shown}; expected a positive integer in the arguments "
                          "block", log.source, key)
    return value


def _name(source: str) -> str:
    stem = source.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".log", ".txt", ".out"):
        stem = stem.removesuffix(suffix)
    return stem or "imported"


def _description(log: MegatronLog, measured: Measured) -> str:
    first, last = measured.iterations[0], measured.iterations[-1]
    text = (f"Draft from the Megatron log {_name(log.source)}: measured "
            f"{measured.step_time_s:.3f} s per iteration (median of iterations {first}-{last})")
    if measured.tflops_per_gpu is not None:
        text += f", {measured.tflops_per_gpu:.1f} TFLOP/s per GPU"
    return text + f", {measured.tokens_per_gpu_s:,.0f} tokens/s per GPU."


def _model(log: MegatronLog, notes: list[str], extra: list[str]) -> dict[str, Any]:
    args = log.arguments
    model: dict[str, Any] = {"layers": _required(log, "num_layers"),
                             "hidden": _required(log, "hidden_size"),
                             "heads": _required(log, "num_attention_heads")}
    mla = _mla_shape(args)
    if mla:
        model["mla"] = mla
    elif args.get("group_query_attention") and isinstance(args.get("num_query_groups"), int):
        model["kv_heads"] = args["num_query_groups"]
    channels = args.get("kv_channels")
    if not mla and isinstance(channels, int) and channels * model["heads"] != model["hidden"]:
        model["head_dim"] = channels
    if isinstance(args.get("ffn_hidden_size"), int):
        model["ffn_hidden"] = args["ffn_hidden_size"]
    else:
        notes.append("model.ffn_hidden: ffn_hidden_size not logged; 4 x hidden assumed")
    model["mlp"] = "swiglu" if args.get("swiglu") else "squared-relu" if args.get("squared_relu") else "gelu"
    if "swiglu" not in args and "squared_relu" not in args:
        notes.append("model.mlp: swiglu not logged; gelu assumed")
    model["seq_len"] = _required(log, "seq_length")
    model.update(_vocab(log, notes))
    if isinstance(args.get("untie_embeddings_and_output_weights"), bool):
        model["tied_embeddings"] = not args["untie_embeddings_and_output_weights"]
    dropout = args.get("hidden_dropout")
    if isinstance(dropout, (int, float)) and not isinstance(dropout, bool) and 0 <= dropout < 1 \
            and float(dropout) != (0.1 if model["mlp"] == "gelu" else 0.0):
        model["dropout"] = float(dropout)       # only where it differs from the mlp's default
    experts = args.get("num_experts")
    if isinstance(experts, int) and experts > 1:
        model.update(_moe_shape(args, experts, extra))
    model.update(hybrid_model(args, model["hidden"], extra))
    model.update(logged_rope(args))
    _note_shape_extras(args, extra)
    return model


def _mla_shape(args: dict[str, Any]) -> dict[str, int]:
    """``multi_latent_attention``: ``model.mla`` from ``q_lora_rank`` (None: 0),
    ``kv_lora_rank``, ``qk_head_dim``, ``qk_pos_emb_head_dim`` and ``v_head_dim``; empty
    otherwise or when a rank or width is not logged."""
    if not args.get("multi_latent_attention"):
        return {}
    keys = {"kv_lora_rank": "kv_lora_rank", "qk_head_dim": "qk_head_dim",
            "qk_rope_head_dim": "qk_pos_emb_head_dim", "v_head_dim": "v_head_dim"}
    shape = {ours: args.get(theirs) for ours, theirs in keys.items()}
    if not all(isinstance(v, int) and v >= 0 for v in shape.values()):
        return {}
    rank = args.get("q_lora_rank")
    return {"q_lora_rank": rank if isinstance(rank, int) else 0, **shape}


def _moe_shape(args: dict[str, Any], experts: int, extra: list[str]) -> dict[str, int]:
    """A mixture of experts' model keys: ``num_experts``, ``moe_router_topk``, group-limited
    routing (``moe_router_num_groups``, ``moe_router_group_topk``); the experts'
    width ``moe_ffn_hidden_size`` as ``model.ffn_hidden`` (every layer is priced as MoE:
    Megatron-Core's ``moe_layer_freq`` 1, its default; another value is noted as not
    modelled); ``moe_shared_expert_intermediate_size`` as ``model.shared_expert_ffn``
    (``moe_shared_expert_overlap`` noted as not modelled)."""
    shape = {"experts": experts, "top_k": int(args.get("moe_router_topk") or 1)}
    groups, picked = args.get("moe_router_num_groups"), args.get("moe_router_group_topk")
    if isinstance(groups, int) and groups > 1 and isinstance(picked, int) and picked < groups:
        shape.update(router_groups=groups, router_group_topk=picked)
    if isinstance(args.get("moe_ffn_hidden_size"), int):
        shape["ffn_hidden"] = args["moe_ffn_hidden_size"]
    shared = args.get("moe_shared_expert_intermediate_size")
    if isinstance(shared, int) and shared > 0:
        shape["shared_expert_ffn"] = shared
    shape.update(_dense_layers(args, extra))
    shape.update(latent_width(args))
    if isinstance(args.get("mtp_num_layers"), int) and args["mtp_num_layers"] > 0:
        shape["mtp_layers"] = args["mtp_num_layers"]
    if args.get("moe_shared_expert_overlap"):
        extra.append("moe_shared_expert_overlap (the shared experts beside the dispatcher: in line)")
    return shape


def _dense_layers(args: dict[str, Any], extra: list[str]) -> dict[str, int]:
    """``moe_layer_freq`` as ``model.first_dense_layers`` when it is DeepSeek's pattern, ``k``
    dense layers then every layer MoE (``[0] * k + [1] * (L - k)``), with ``ffn_hidden_size`` as
    their ``model.dense_ffn``; any other pattern is noted as not modelled (every layer priced
    as MoE)."""
    freq = args.get("moe_layer_freq", 1)
    if freq == 1:
        return {}
    if isinstance(freq, list) and all(x in (0, 1) for x in freq) and 1 in freq:
        k = freq.index(1)
        if all(freq[k:]) and k > 0:
            dense = {"first_dense_layers": k}
            if isinstance(args.get("ffn_hidden_size"), int):
                dense["dense_ffn"] = args["ffn_hidden_size"]
            return dense
    extra.append(f"moe_layer_freq {freq} (dense layers between the MoE ones: every layer priced as MoE)")
    return {}


def _vocab(log: MegatronLog, notes: list[str]) -> dict[str, int]:
    args = log.arguments
    if log.padded_vocab:
        return {"vocab": log.padded_vocab}
    for key in ("padded_vocab_size", "vocab_size"):
        if isinstance(args.get(key), int) and args[key] > 0:
            if key == "vocab_size":
                notes.append("model.vocab: no padded vocabulary logged; the unpadded "
                             "vocab_size is used")
            return {"vocab": args[key]}
    notes.append("model.vocab: the log gives no vocabulary size (tokenizer-defined); "
                 "clustersim's default 51200 applies")
    return {}


def _note_shape_extras(args: dict[str, Any], extra: list[str]) -> None:
    for key in ("normalization", "position_embedding_type", "add_bias_linear"):
        if key in args:
            extra.append(f"{key}: {args[key]}")


def _training(log: MegatronLog, notes: list[str], extra: list[str]) -> dict[str, Any]:
    args = log.arguments
    training: dict[str, Any] = {"stack": _stack(args, extra),
                                "global_batch": _required(log, "global_batch_size"),
                                "micro_batch": _required(log, "micro_batch_size")}
    if _nvfp4(args):
        training["dtype"] = "fp8"       # the fp8 recipes' plumbing, kernels.fp8_scaling: nvfp4
    elif args.get("fp8"):
        training["dtype"] = "fp8"
        recipe = args.get("fp8_recipe")
        extra.append(f"fp8 format {args['fp8']}" + (f", {recipe} scaling" if recipe else "")
                     + " (the format is not modelled; the scaling as kernels.fp8_scaling where it is)")
    else:
        training["dtype"] = "bf16" if args.get("bf16") else "fp16" if args.get("fp16") else "fp32"
    if (optimizer := logged_optimizer(args, extra)) is not None:
        training["optimizer"] = optimizer
    backend = str(args.get("attention_backend", "auto")).lower().split(".")[-1]
    training["attention"] = "unfused" if backend in ("unfused", "local") else "flash"
    if "attention_backend" not in args and "use_flash_attn" not in args:
        notes.append("training.attention: attention backend not logged; flash assumed")
    return training


def _nvfp4(args: dict[str, Any]) -> bool:
    """Whether the log trains with NVFP4 (``--fp4-format`` set, ``fp4_recipe`` nvfp4, its
    default)."""
    return bool(args.get("fp4")) and str(args.get("fp4_recipe") or "nvfp4").lower() == "nvfp4"


def _stack(args: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    """``megatron-core``, with the fields the log sets otherwise than the profile (a mapping
    ``{base: megatron-core, ...}``; docs/stacks.md):

    - ``grad_reduce_in_fp32`` / ``accumulate_allreduce_grads_in_fp32`` false: gradients
      reduced in the parameter dtype (``data_parallel.grad_reduce_dtype: param``);
    - ``fp8_param_gather``: ``data_parallel.param_gather_dtype: fp8`` (with MXFP8, whose
      weights Megatron-Core gathers in the gradient buffer's dtype and quantizes after,
      ``kernels.fp8_params: true`` instead: the weights are still MXFP8 parameters);
    - ROCm's ``no_fp8_weight_transpose_cache`` true (Primus) or ``fp8_weight_transpose_cache``
      false (ROCm Megatron-LM) under fp8: TransformerEngine keeps no transposed fp8 weight,
      ``kernels.fp8_weight_cache: rowwise``;
    - ``align_param_gather`` false: ``data_parallel.param_gather_launch: bucket``;
    - ``ddp_bucket_size`` set: ``data_parallel.bucket_MB``, those parameters in the reduce dtype
      (fp32 unless the log turns fp32 reduction off), used as given (no per-rank floor);
    - ``overlap_param_gather_with_optimizer_step``: ``data_parallel.param_gather_with_optimizer:
      true`` (bucketing off, one bucket per model chunk);
    - ``fp8_recipe`` tensorwise (current scaling): ``kernels.fp8_scaling: dynamic``; mxfp8:
      ``kernels.fp8_scaling: mxfp8``; blockwise: ``kernels.fp8_scaling: blockwise``; ``fp4`` with
      ``fp4_recipe`` nvfp4: ``kernels.fp8_scaling: nvfp4`` (``training.dtype: fp8``) and, with
      ``fp4_param_gather``, ``data_parallel.param_gather_dtype: fp4``;
    - ``use_torch_fsdp2``: Megatron-Core's ``TorchFullyShardedDataParallel`` sets no
      mixed-precision policy (gathers and reduce-scatters in the parameter dtype), keeps
      FSDP2's gradient sync on every microbatch (its ``no_sync`` is a no-op) and drops TE's
      fp8 weight transpose cache: ``sharding.grad_reduce_dtype: param``,
      ``reduce_every_microbatch: true``, ``kernels.fp8_weight_cast: per_forward``;
    - a mixture of experts: ``moe_permute_fusion``, ``overlap_moe_expert_parallel_comm`` and
      ``delay_wgrad_compute`` (:func:`_moe_fields`);
    - ``gradient_accumulation_fusion`` false: the DDP hook adds each microbatch's gradient
      into the fp32 main gradient, ``data_parallel.grad_accumulation: add``;
    - ``overlap_p2p_comm`` false under the interleaved schedule
      (``--no-overlap-p2p-communication``): its sends hold their stage,
      ``pipeline.overlap_p2p: false`` (without virtual stages Megatron-LM logs it false
      whatever was asked, and the profile holds those sends anyway);
    - CUDA graphs (:func:`logged_cuda_graphs`): ``kernels.cuda_graphs`` partial or full;
    - Muon's layer-wise distributed optimizer (:mod:`simulator.measure.logged_optimizer`):
      ``data_parallel.sharded_reduce: all_reduce`` and ``overlap_param_gather`` as logged;
    - the cross entropy, always written (the profile's is the fused one its recipes run):
      ``loss.kernel`` te or ``vocab_parallel_fused`` with ``cross_entropy_loss_fusion`` and
      ``cross_entropy_fusion_impl`` te or native, else ``vocab_parallel`` (the flag unset or
      absent: Megatron's unfused cross entropy, the only one before the flag existed).
    """
    fields: dict[str, dict[str, Any]] = {}
    fp32_grads = args.get("grad_reduce_in_fp32", args.get("accumulate_allreduce_grads_in_fp32"))
    if fp32_grads is False:
        fields.setdefault("data_parallel", {})["grad_reduce_dtype"] = "param"
    recipe = str(args.get("fp8_recipe") or "").lower()
    if args.get("fp8_param_gather"):
        if recipe == "mxfp8":
            fields.setdefault("kernels", {})["fp8_params"] = True
        else:
            fields.setdefault("data_parallel", {})["param_gather_dtype"] = "fp8"
    if args.get("fp8") and (args.get("no_fp8_weight_transpose_cache") is True
                            or args.get("fp8_weight_transpose_cache") is False):
        fields.setdefault("kernels", {})["fp8_weight_cache"] = "rowwise"
    if args.get("align_param_gather") is False:
        fields.setdefault("data_parallel", {})["param_gather_launch"] = "bucket"
    if args.get("overlap_param_gather_with_optimizer_step"):
        fields.setdefault("data_parallel", {})["param_gather_with_optimizer"] = True
    bucket = args.get("ddp_bucket_size")
    if isinstance(bucket, int) and not isinstance(bucket, bool) and bucket > 0:
        fields.setdefault("data_parallel", {})["bucket_MB"] = bucket * (2 if fp32_grads is False else 4) / 1e6
    scaling = {"tensorwise": "dynamic", "mxfp8": "mxfp8", "blockwise": "blockwise"}.get(recipe)
    if args.get("fp8") and scaling:
        fields.setdefault("kernels", {})["fp8_scaling"] = scaling
    if _nvfp4(args):
        fields.setdefault("kernels", {})["fp8_scaling"] = "nvfp4"
        gather = "fp4" if args.get("fp4_param_gather") or args.get("fp4_param") else "param"
        fields.setdefault("data_parallel", {})["param_gather_dtype"] = gather
    if args.get("gradient_accumulation_fusion") is False:
        fields.setdefault("data_parallel", {})["grad_accumulation"] = "add"
    if args.get("overlap_p2p_comm") is False and _interleaved(args):
        fields["pipeline"] = {"overlap_p2p": False}
    if _size(args, "num_experts") > 1:
        _moe_fields(args, fields, extra)
    if (graphs := logged_cuda_graphs(args)) is not None:
        fields.setdefault("kernels", {})["cuda_graphs"] = graphs
    if muon := muon_data_parallel(args):
        fields.setdefault("data_parallel", {}).update(muon)
    fields["loss"] = {"kernel": _loss_kernel(args)}
    if args.get("use_torch_fsdp2"):
        fields["sharding"] = {"grad_reduce_dtype": "param", "reduce_every_microbatch": True}
        if args.get("fp8"):
            fields.setdefault("kernels", {})["fp8_weight_cast"] = "per_forward"
    return {"base": STACK, **fields}


_CUDA_GRAPH_IMPLS = {"enable_cuda_graph": "local", "external_cuda_graph": "transformer_engine"}
_WHOLE_LAYER = ({"full"}, {"attn", "mlp"}, {"attn", "moe"})


def logged_cuda_graphs(args: dict[str, Any]) -> str | None:
    """What the run replays from CUDA graphs (``kernels.cuda_graphs``; None when nothing).

    ``cuda_graph_impl`` (core_v0.15 on; before it ``enable_cuda_graph`` meant ``local`` and
    ``external_cuda_graph`` ``transformer_engine``): ``full_iteration``, or the scope
    ``full_iteration``, is ``full``; otherwise the modules captured in each layer
    (``cuda_graph_modules``, before it ``cuda_graph_scope``; empty or unset: ``full``, the whole
    layer, Megatron-Core's default) are ``full`` when they cover the layer (``full``, or ``attn``
    with ``mlp`` or ``moe``), else ``partial``. ``local`` with any scope but ``full_iteration``
    captures each layer whole (transformer_config.py, core_v0.15.0)."""
    impl = str(args.get("cuda_graph_impl") or "none").lower()
    if impl == "none":
        impl = next((name for flag, name in _CUDA_GRAPH_IMPLS.items() if args.get(flag) is True), "none")
    if impl == "none":
        return None
    modules = _graph_modules(args.get("cuda_graph_modules") or args.get("cuda_graph_scope"))
    if impl == "full_iteration" or "full_iteration" in modules or impl == "local" or not modules:
        return "full"
    return "full" if any(whole <= modules for whole in _WHOLE_LAYER) else "partial"


def _graph_modules(value: Any) -> set[str]:
    """The module names of a logged ``cuda_graph_scope`` / ``cuda_graph_modules``: a name, a
    list's text (``['attn', 'moe_router']``) or enum members' (``[<CudaGraphScope.attn: 2>]``)."""
    words = re.findall(r"[a-z_]+", str(value or "").lower())
    return {word for word in words if word not in ("cudagraphscope", "cudagraphmodule", "none")}


def _interleaved(args: dict[str, Any]) -> bool:
    """Whether the log's arguments set virtual pipeline stages (more than one model chunk)."""
    virtual = args.get("virtual_pipeline_model_parallel_size")
    per_chunk = args.get("num_layers_per_virtual_pipeline_stage")
    return (isinstance(virtual, int) and not isinstance(virtual, bool) and virtual > 1) or \
        (isinstance(per_chunk, int) and not isinstance(per_chunk, bool) and per_chunk > 0)


def _moe_fields(args: dict[str, Any], fields: dict[str, dict[str, Any]], extra: list[str]) -> None:
    """A mixture of experts' stack fields: ``moe_permute_fusion`` -> ``kernels.moe_permute_fusion:
    true``; ``overlap_moe_expert_parallel_comm`` -> ``expert_parallel.a2a_overlap: true`` and
    ``delay_wgrad_compute`` -> ``expert_parallel.delay_wgrad: true``; the flex dispatcher's
    DeepEP or HybridEP backend (``moe_enable_deepep``, ``moe_flex_dispatcher_backend``; deepep by
    default) -> ``expert_parallel.dispatcher`` with its SM count where set (``dispatcher_sms``)
    and, for HybridEP, ``moe_permute_fusion_into_hybridep`` -> ``permute_in_dispatch: true``;
    the router's fp8 padding (:func:`_padding_fields`); noted as not modelled with expert tensor
    parallelism or another backend (ncclep);
    ``use_transformer_engine_op_fuser`` and ``fp8_dot_product_attention`` are noted, as whether
    they ran TE's fused grouped MLP (``kernels.grouped_mlp_fusion``) or MXFP8 attention
    (``kernels.fp8_attention``) depends on environment variables the log does not print."""
    if args.get("moe_permute_fusion"):
        fields.setdefault("kernels", {})["moe_permute_fusion"] = True
    if args.get("overlap_moe_expert_parallel_comm"):
        fields.setdefault("expert_parallel", {})["a2a_overlap"] = True
        if args.get("delay_wgrad_compute"):
            fields["expert_parallel"]["delay_wgrad"] = True
    flex = args.get("moe_token_dispatcher_type") == "flex"
    backend = "deepep" if args.get("moe_enable_deepep") else \
        (args.get("moe_flex_dispatcher_backend") or "deepep") if flex else None
    etp = args.get("expert_tensor_parallel_size") or args.get("tensor_model_parallel_size") or 1
    if backend in ("deepep", "hybridep") and etp == 1:
        fields.setdefault("expert_parallel", {})["dispatcher"] = backend
        sms = _dispatcher_sms(args, backend)
        if sms:
            fields["expert_parallel"]["dispatcher_sms"] = sms
        if backend == "hybridep" and args.get("moe_permute_fusion_into_hybridep"):
            fields["expert_parallel"]["permute_in_dispatch"] = True
    elif backend:
        extra.append(f"the {backend} token dispatcher (priced as the alltoall dispatcher)")
    _padding_fields(args, fields, extra)
    if args.get("use_transformer_engine_op_fuser"):
        extra.append("TransformerEngine's op fuser (its fused grouped MLP also needs "
                     "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, which the log does not print: set "
                     "kernels.grouped_mlp_fusion if the run had it)")
    if args.get("fp8_dot_product_attention"):
        extra.append("fp8_dot_product_attention (TE's fp8 attention takes the linears' recipe unless "
                     "NVTE_DPA_FP8_RECIPE, which the log does not print, says otherwise: set "
                     "kernels.fp8_attention if it did and the GPU has a measured rate, clustersim specs GPU)")


def _padding_fields(args: dict[str, Any], fields: dict[str, dict[str, Any]], extra: list[str]) -> None:
    """How the experts' token counts meet the fp8 alignment: ``moe_router_padding_for_fp8`` or
    ``moe_router_padding_for_quantization`` -> ``expert_parallel.fp8_padding: aligned`` (the router
    pads, no copies); padding to a capacity (``moe_pad_expert_input_to_capacity``) is noted, as the
    counts are aligned only when the capacity is a multiple of 16 (32 for MXFP8)."""
    if args.get("moe_router_padding_for_fp8") or args.get("moe_router_padding_for_quantization"):
        fields.setdefault("expert_parallel", {})["fp8_padding"] = "aligned"
    elif args.get("moe_pad_expert_input_to_capacity") and args.get("moe_expert_capacity_factor"):
        extra.append("moe_pad_expert_input_to_capacity (set expert_parallel.fp8_padding: aligned if "
                     "each expert's capacity is a multiple of 16, 32 under MXFP8: no padding copies)")


def _dispatcher_sms(args: dict[str, Any], backend: str) -> int | None:
    """The flex dispatcher's SM count the log sets (``moe_flex_dispatcher_num_sms``, before it
    ``moe_deepep_num_sms`` / ``moe_hybridep_num_sms``), None for the kernels' default."""
    for name in ("moe_flex_dispatcher_num_sms", f"moe_{backend}_num_sms"):
        value = args.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _loss_kernel(args: dict[str, Any]) -> str:
    """The ``loss.kernel`` a log's arguments run (:func:`_stack`)."""
    if not args.get("cross_entropy_loss_fusion"):
        return "vocab_parallel"
    impl = str(args.get("cross_entropy_fusion_impl") or "native").lower()
    return "te" if impl == "te" else "vocab_parallel_fused"


def _parallelism(log: MegatronLog, notes: list[str], extra: list[str]) -> dict[str, Any]:
    args = log.arguments
    sizes = {key: _parallel_size(log, arg) for key, arg in (
        ("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
        ("cp", "context_parallel_size"), ("ep", "expert_model_parallel_size"))}
    replica = sizes["tp"] * sizes["pp"] * sizes["cp"]
    world = args["world_size"]
    if world % replica:
        raise ConfigError(f"world size {world} is not a multiple of tp*pp*cp = {replica}",
                          log.source, "world_size")
    stages = _virtual_stages(log, sizes["pp"])
    parallelism = {**sizes, "dp": world // replica,
                   "sequence_parallel": bool(args.get("sequence_parallel", False)),
                   "schedule": "interleaved-1f1b" if stages > 1 else "1f1b",
                   "virtual_stages": stages, "zero_stage": _zero_stage(args),
                   "recompute": _recompute(args, extra),
                   "overlap_grad_reduce": bool(args.get("overlap_grad_reduce", False))}
    modules = _recompute_modules(args, extra) if parallelism["recompute"] == "selective" else None
    if modules is not None:
        parallelism["recompute_modules"] = modules
    full = parallelism["recompute"] == "full"
    fraction = _block_recompute_fraction(args, sizes["pp"] * stages) if full else None
    if fraction is not None:
        parallelism["recompute_fraction"] = fraction
    offloaded = _offloaded_layers(args, extra)
    if offloaded:
        parallelism["cpu_offload_layers"] = offloaded
    etp = args.get("expert_tensor_parallel_size")
    if sizes["ep"] > 1 and isinstance(etp, int) and not isinstance(etp, bool) and 0 < etp != sizes["tp"]:
        parallelism["etp"] = etp
    for key, arg in (("first_stage_layers", "decoder_first_pipeline_num_layers"),
                     ("last_stage_layers", "decoder_last_pipeline_num_layers")):
        value = args.get(arg)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            parallelism[key] = value
    if isinstance(args.get("pipeline_model_parallel_layout"), str):
        parallelism["pipeline_layout"] = args["pipeline_model_parallel_layout"]
    for key in ("overlap_param_gather", "tp_comm_overlap"):
        if args.get(key):
            extra.append(f"{key}: True (the stack profile decides how this overlaps)")
    if "overlap_grad_reduce" not in args:
        notes.append("parallelism.overlap_grad_reduce: not logged; False (Megatron's default)")
    return parallelism


def _size(args: dict[str, Any], key: str) -> int:
    value = args.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _parallel_size(log: MegatronLog, key: str) -> int:
    """A parallel size: 1 when the log does not print it or prints None (Megatron's default),
    else :func:`_required` (a 0, -1 or text is an error, not a silent 1)."""
    return 1 if log.arguments.get(key) is None else _required(log, key)


def _virtual_stages(log: MegatronLog, pp: int) -> int:
    """Model chunks per pipeline rank (Megatron's interleaved schedule)."""
    args = log.arguments
    if isinstance(args.get("virtual_pipeline_model_parallel_size"), int):
        return max(args["virtual_pipeline_model_parallel_size"], 1)
    per_chunk = args.get("num_layers_per_virtual_pipeline_stage")
    if isinstance(per_chunk, int) and per_chunk > 0 and pp > 1:
        return max(args["num_layers"] // pp // per_chunk, 1)
    return 1


def _zero_stage(args: dict[str, Any]) -> int:
    """Megatron-FSDP's sharding strategy if it is on; 3 with ``use_torch_fsdp2`` (Megatron-Core's
    ``TorchFullyShardedDataParallel``: ``fully_shard`` on every transformer layer, weights,
    gradients and optimizer state sharded); else 1 with the distributed optimizer (optimizer
    state sharded over data-parallel ranks, as ZeRO-1) or Muon's layer-wise one (whole
    parameters per rank, the same share of the state) and 0 without."""
    if args.get("use_custom_fsdp") or args.get("use_megatron_fsdp"):
        return _FSDP_STAGES.get(str(args.get("data_parallel_sharding_strategy")), 3)
    if args.get("use_torch_fsdp2"):
        return 3
    return 1 if args.get("use_distributed_optimizer") or layer_wise(args) else 0


def _offloaded_layers(args: dict[str, Any], extra: list[str]) -> int:
    """``cpu_offloading_num_layers`` when ``cpu_offloading`` offloads activations (else 0); the
    offloading of weights is not modelled and is noted in ``extra``."""
    count = args.get("cpu_offloading_num_layers")
    if not args.get("cpu_offloading") or not isinstance(count, int) or isinstance(count, bool):
        return 0
    if args.get("cpu_offloading_weights"):
        extra.append("cpu_offloading_weights: True (weight offloading is not modelled)")
    return count if args.get("cpu_offloading_activations", True) else 0


def _block_recompute_fraction(args: dict[str, Any], chunks: int) -> float | None:
    """``recompute_fraction`` of Megatron's ``--recompute-method block``: the first
    ``recompute_num_layers`` layers of each of the ``chunks`` model chunks are recomputed,
    ``n / (layers / chunks)`` of them (None: every layer, or not the block method)."""
    count, layers = args.get("recompute_num_layers"), args.get("num_layers")
    if str(args.get("recompute_method") or "").lower() != "block":
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (count, layers)):
        return None
    fraction = count * chunks / layers
    return round(fraction, 6) if fraction < 1.0 else None


def _recompute_modules(args: dict[str, Any], extra: list[str]) -> list[str] | None:
    """``recompute_modules`` as logged (``['mla_up_proj', 'moe_act']``), None when absent or
    Megatron-Core's default ``['core_attn']``; names clustersim does not know are noted."""
    text = args.get("recompute_modules")
    if not isinstance(text, str):
        return None
    names = [n.strip().strip("'\"") for n in text.strip().strip("[]").split(",") if n.strip()]
    known = [n for n in names if n in {m.value for m in RecomputeModule}]
    if len(known) < len(names):
        extra.append(f"recompute_modules {sorted(set(names) - set(known))} (not modelled)")
    return None if known == ["core_attn"] else known


def _recompute(args: dict[str, Any], extra: list[str]) -> str:
    granularity = str(args.get("recompute_granularity") or "").lower()
    if granularity == "full":
        method, count = args.get("recompute_method"), args.get("recompute_num_layers")
        if (method or count) and str(method or "").lower() != "block":    # block: a share, below
            extra.append(f"recompute_method {method}, recompute_num_layers {count} "
                         "(every layer recomputed)")
        return "full"
    if granularity == "selective" or args.get("recompute_activations"):
        return "selective"
    return "none"
