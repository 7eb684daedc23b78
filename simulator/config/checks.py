"""Cross-field rules of a scenario: each names the key, the failing constraint and a fix."""

from __future__ import annotations

from math import prod

from simulator.config.fabric_size import check_cluster_size, check_fabric_size
from simulator.config.flush_rules import check_flushes
from simulator.config.hardware import Dtype, GpuSpec, head_widths_key
from simulator.config.hybrid_checks import check_hybrid
from simulator.config.multisite import check_sites
from simulator.config.offload_rules import check_cpu_offload
from simulator.config.pipeline_layout import LayoutError, layout_chunks
from simulator.config.recompute_rules import check_recompute_modules
from simulator.config.resolved import ResolvedCluster
from simulator.config.scenario import (
    ModelConfig,
    ParallelismConfig,
    RankOrder,
    Recompute,
    Routing,
    Scenario,
    Schedule,
    TopologyKind,
)
from simulator.config.stack import (
    ATTENTION_KERNELS,
    CpRing,
    EpDispatcher,
    Fp8AttentionScaling,
    Fp8Scaling,
    ReduceDtype,
    StackProfile,
    fp8_attention_recipe,
)
from simulator.config.stage_split import empty_end_chunks, uneven_split
from simulator.config.whatif_training import check_what_ifs
from simulator.errors import ConfigError

MAX_NICS_PER_GPU = 4
"""The most NICs any GPU server attaches per GPU: AWS p5 and p5e carry 32 EFA devices for 8 GPUs
(AWS EC2 User Guide, "Maximize network bandwidth ... with multiple network cards": the P5 launch
example requests 32 EFA interfaces); OCI's BM.GPU.H100.8 and BM.GPU4.8 carry 16 ports for 8."""


def check_scenario(scenario: Scenario, cluster: ResolvedCluster) -> None:
    """Raise :class:`ConfigError` for the first violated rule, else return None."""
    _check_fabric(scenario, cluster)
    _check_noise(scenario, cluster.gpus, cluster.nodes)
    if scenario.model is None or scenario.training is None:
        return
    _check_model(scenario)
    check_recompute_modules(scenario)
    check_cpu_offload(scenario)
    _check_fp8(scenario, cluster.gpu)
    _check_grouped_mlp_fusion(scenario, cluster.gpu)
    _check_fp8_output_proj(scenario)
    _check_fp8_attention(scenario, cluster.gpu)
    _check_attention_kernel(scenario, cluster.gpu)
    _check_fp4_collectives(scenario)
    _check_optimizer(scenario)
    dp = data_parallel_size(scenario, cluster.gpus)
    _check_layout(scenario, cluster.gpus, dp)
    _check_batch(scenario, dp)
    _check_schedule(scenario, dp)
    check_what_ifs(scenario)
    check_sites(scenario, cluster.gpus_per_node, dp)
    _check_parameter_server(scenario, cluster)


def data_parallel_size(scenario: Scenario, gpus: int) -> int:
    """``parallelism.dp`` if given, else the GPU count divided by tp*pp*cp."""
    par = scenario.parallelism
    return par.dp if par.dp is not None else max(gpus // (par.tp * par.pp * par.cp), 1)


def _check_fabric(scenario: Scenario, cluster: ResolvedCluster) -> None:
    fabric = scenario.cluster.fabric
    check_cluster_size(cluster.nodes, cluster.gpus_per_node)
    if fabric.oversubscription > fabric.switch_radix - 1:
        raise ConfigError(
            f"{fabric.oversubscription:g}:1 leaves no uplink on a radix-{fabric.switch_radix} leaf "
            f"(at most {fabric.switch_radix - 1}:1: one port up, the rest down)",
            key="cluster.fabric.oversubscription")
    if cluster.nics_per_node > MAX_NICS_PER_GPU * cluster.gpus_per_node:
        raise ConfigError(
            f"{cluster.nics_per_node} NICs for {cluster.gpus_per_node} GPUs per server: GPUDirect "
            f"servers attach at most {MAX_NICS_PER_GPU} NICs per GPU to its PCIe switch",
            key="cluster.fabric.nics_per_node")
    check_fabric_size(fabric, cluster.nodes, cluster.nics_per_node)
    if fabric.chip_torus:
        _check_chip_torus(fabric, cluster)
    if fabric.topology == TopologyKind.TORUS and fabric.torus_dims is not None:
        if len(fabric.torus_dims) not in (2, 3):
            raise ConfigError("expected 2 or 3 dimensions", key="cluster.fabric.torus_dims")
        if prod(fabric.torus_dims) != cluster.nodes:
            raise ConfigError(
                f"{fabric.torus_dims} holds {prod(fabric.torus_dims)} nodes, not cluster.nodes "
                f"({cluster.nodes})", key="cluster.fabric.torus_dims")


def _check_chip_torus(fabric, cluster: ResolvedCluster) -> None:
    """A chip-level torus joins chips, not servers: a torus of nodes holding one chip each."""
    if fabric.topology != TopologyKind.TORUS:
        raise ConfigError(f"a chip-level torus needs cluster.fabric.topology: torus, not "
                          f"{fabric.topology.value}", key="cluster.fabric.chip_torus")
    if cluster.gpus_per_node != 1:
        raise ConfigError(f"a chip-level torus needs one chip per node (cluster.nodes counts "
                          f"chips), not {cluster.gpus_per_node}", key="cluster.fabric.chip_torus")


def _check_parameter_server(scenario: Scenario, cluster: ResolvedCluster) -> None:
    """``training.sync: async`` and the ``parameter_server`` section come together."""
    ps, sync = scenario.parameter_server, scenario.training.sync.value
    if sync == "async" and ps is None:
        raise ConfigError("training.sync: async needs a parameter_server section (servers, "
                          "placement, bandwidth_GBps, staleness)", key="parameter_server")
    if sync != "async" and ps is not None:
        raise ConfigError("parameter servers serve only training.sync: async; set it or remove "
                          "this section", key="parameter_server")
    if ps is not None and ps.placement.value == "colocated" and ps.servers > cluster.nodes:
        raise ConfigError(f"{ps.servers} colocated servers need as many nodes; the cluster has "
                          f"{cluster.nodes}", key="parameter_server.servers")


def _check_noise(scenario: Scenario, gpus: int, nodes: int) -> None:
    noise = scenario.noise
    if not (noise.slow_gpus or noise.slow_nodes or noise.links or noise.episodes or noise.nic_faults):
        return                                  # nothing to check (most scenarios)
    _unique([s.gpu for s in noise.slow_gpus], "noise.slow_gpus", "gpu", "GPU")
    _unique([s.node for s in noise.slow_nodes], "noise.slow_nodes", "node", "node")
    _unique([tuple(sorted(f.between)) for f in noise.links], "noise.links", "between", "link")
    for i, slow in enumerate(noise.slow_gpus):
        if slow.gpu >= gpus:
            raise ConfigError(f"GPU {slow.gpu} is beyond the cluster's {gpus} GPUs (0..{gpus - 1})",
                              key=f"noise.slow_gpus.{i}.gpu")
    for i, slow in enumerate(scenario.noise.slow_nodes):
        if slow.node >= nodes:
            raise ConfigError(f"node {slow.node} is beyond the cluster's {nodes} nodes "
                              f"(0..{nodes - 1})", key=f"noise.slow_nodes.{i}.node")
    for i, episode in enumerate(noise.episodes):
        _check_episode(episode, f"noise.episodes.{i}", gpus, nodes)
    for i, fault in enumerate(noise.nic_faults):
        _check_nic_fault(scenario, fault, f"noise.nic_faults.{i}", gpus)


def _check_episode(episode, key: str, gpus: int, nodes: int) -> None:
    """An episode names exactly one GPU or one node, inside the cluster."""
    if (episode.gpu is None) == (episode.node is None):
        raise ConfigError("name exactly one of gpu and node", key=key)
    if episode.gpu is not None and episode.gpu >= gpus:
        raise ConfigError(f"GPU {episode.gpu} is beyond the cluster's {gpus} GPUs (0..{gpus - 1})",
                          key=f"{key}.gpu")
    if episode.node is not None and episode.node >= nodes:
        raise ConfigError(f"node {episode.node} is beyond the cluster's {nodes} nodes (0..{nodes - 1})",
                          key=f"{key}.node")


def _check_nic_fault(scenario: Scenario, fault, key: str, gpus: int) -> None:
    """A NIC fault names GPUs of the cluster; a link fault's ``peer`` is the same replica's
    GPU on a neighbouring pipeline stage (the link a pipeline send crosses)."""
    for field, gpu in (("gpu", fault.gpu), ("peer", fault.peer)):
        if gpu is not None and gpu >= gpus:
            raise ConfigError(f"GPU {gpu} is beyond the cluster's {gpus} GPUs (0..{gpus - 1})",
                              key=f"{key}.{field}")
    if fault.peer is None or scenario.model is None or scenario.training is None:
        return
    par = scenario.parallelism
    dp, per_entity = data_parallel_size(scenario, gpus), par.tp * par.cp
    (s1, r1), (s2, r2) = (divmod(g // per_entity, dp) for g in (fault.gpu, fault.peer))
    wraps = par.virtual_stages > 1 and {s1, s2} == {0, par.pp - 1}   # interleaved chunks wrap
    if r1 != r2 or (abs(s2 - s1) != 1 and not wraps):
        raise ConfigError(f"GPUs {fault.gpu} (replica {r1}, stage {s1}) and {fault.peer} (replica {r2}, "
                          f"stage {s2}) share no pipeline link; name a GPU of the same replica on the "
                          "next or previous stage, or leave out peer for the whole NIC", key=f"{key}.peer")


def _unique(items: list, section: str, field: str, what: str) -> None:
    """Noise and fault entries are sets: naming the same GPU, node or link twice is refused
    (their factors would otherwise compound without bound)."""
    seen: dict = {}
    for i, item in enumerate(items):
        if item in seen:
            name = " - ".join(item) if isinstance(item, tuple) else item
            raise ConfigError(f"{what} {name} is already listed at {section}.{seen[item]}; list each "
                              f"{what} once, with its one factor", key=f"{section}.{i}.{field}")
        seen[item] = i


def _check_model(scenario: Scenario) -> None:
    model = scenario.model
    _check_mla(model)
    if model.hidden % model.heads and model.head_dim is None and model.mla is None:
        raise ConfigError(f"{model.heads} does not divide model.hidden ({model.hidden}); give "
                          "model.head_dim if the model's heads are not hidden / heads wide",
                          key="model.heads")
    if model.heads % model.kv_heads:
        raise ConfigError(f"{model.kv_heads} does not divide model.heads ({model.heads})",
                          key="model.kv_heads")
    if model.top_k > model.experts:
        raise ConfigError(f"{model.top_k} is more than model.experts ({model.experts})",
                          key="model.top_k")
    _check_router_groups(model)
    if model.shared_expert_ffn and model.experts == 1:
        raise ConfigError(f"{model.shared_expert_ffn} applies to a mixture of experts only (model.experts "
                          "is 1); remove it or set model.experts", key="model.shared_expert_ffn")
    if model.expert_load != 1.0 and model.experts == 1:
        raise ConfigError(f"{model.expert_load:g} applies to a mixture of experts only (model.experts is 1); "
                          "remove it or set model.experts", key="model.expert_load")
    if model.hybrid_pattern is None:
        _check_dense_layers(model)
    _check_attention_window(scenario)
    check_hybrid(scenario)


WINDOW_RINGS = (CpRing.ALL_GATHER, CpRing.ULYSSES)
"""Context-parallel schemes that run sliding-window attention: TransformerEngine keeps its fused
attention over a window only with ``cp_comm_type`` all_gather or a2a (v2.16
``get_attention_backend``: "does not support context parallelism with sliding window attention
and cp_comm_type = p2p / a2a+p2p"), DeepSpeed-Ulysses runs the whole sequence of its heads
locally, and PyTorch's ring attention takes only causal or full masks."""


def _check_attention_window(scenario: Scenario) -> None:
    """A sliding window needs its window; with context parallelism its layers need a scheme that
    gathers the window (:data:`WINDOW_RINGS`): each rank's queries then attend their window of
    the gathered keys (simulator.workload.attention_window)."""
    model = scenario.model
    if model.full_attention_every and model.attention_window is None:
        raise ConfigError(f"{model.full_attention_every} needs model.attention_window (the local layers' "
                          "window in tokens)", key="model.full_attention_every")
    stack = scenario.training.stack if scenario.training is not None else None
    if model.attention_window is None or scenario.parallelism.cp == 1 or not isinstance(stack, StackProfile):
        return
    ring = stack.context_parallel.ring
    if ring not in WINDOW_RINGS:
        raise ConfigError(f"sliding-window attention with context parallelism runs over a gathered "
                          f"sequence (training.stack.context_parallel.ring all_gather or ulysses); "
                          f"the '{ring}' ring has no window path (TransformerEngine refuses it with "
                          f"p2p, PyTorch's ring attention has no window mask)", key="model.attention_window")


def _check_dense_layers(model: ModelConfig) -> None:
    """Dense layers among experts need experts, and leave at least one layer with them."""
    if model.first_dense_layers and model.experts == 1:
        raise ConfigError(f"{model.first_dense_layers} applies to a mixture of experts only (model.experts "
                          "is 1); remove it or set model.experts", key="model.first_dense_layers")
    if model.first_dense_layers >= model.layers:
        raise ConfigError(f"{model.first_dense_layers} leaves no mixture-of-experts layer of "
                          f"model.layers ({model.layers}); expected fewer than model.layers",
                          key="model.first_dense_layers")
    if model.dense_ffn is not None and not model.first_dense_layers:
        raise ConfigError(f"{model.dense_ffn} is the width of the dense layers among experts; set "
                          "model.first_dense_layers or remove it", key="model.dense_ffn")


def _check_mla(model: ModelConfig) -> None:
    """Latent attention sets its own head widths and has one key/value head per query head."""
    if model.mla is None:
        return
    if model.head_dim is not None:
        raise ConfigError("model.mla sets the head widths (qk_head_dim, qk_rope_head_dim, v_head_dim); "
                          "remove model.head_dim", key="model.head_dim")
    if model.kv_heads != model.heads:
        raise ConfigError(f"{model.kv_heads}: latent attention has one key/value head per query head "
                          f"({model.heads}); remove model.kv_heads", key="model.kv_heads")


def _check_fp8(scenario: Scenario, gpu: GpuSpec) -> None:
    """fp8 training needs fp8 tensor cores (TransformerEngine asserts compute capability 8.9 or
    later; torchao's float8 likewise), and MXFP8 block-scaled ones (Blackwell, CDNA 4): a GPU whose spec
    lists no fp8 peak, or no ``mx_block_scaling``, cannot run them. An MXFP8 weight all-gather is
    not the modelled fp8 gather (the local shard cast with a per-tensor scale, then gathered):
    Megatron-Core gathers MXFP8 weights in the gradient buffer's dtype and quantizes each after
    the gather (core_v0.15 ``reuse_grad_buf_for_mxfp8_param_ag``)."""
    if scenario.training.dtype != Dtype.FP8:
        return
    if Dtype.FP8 not in gpu.peak_dense_tflops:
        raise ConfigError(f"the {gpu.name} has no fp8 tensor cores (its spec lists no fp8 peak: "
                          "fp8 training needs Hopper, Ada, Blackwell or an MI300-class GPU); set "
                          "training.dtype: bf16", key="training.dtype")
    stack = scenario.training.stack
    key = "training.stack.kernels.fp8_scaling"
    if isinstance(stack, StackProfile) and stack.kernels.fp8_scaling == Fp8Scaling.NVFP4:
        _check_nvfp4(stack, gpu, key)
    if (isinstance(stack, StackProfile) and stack.kernels.fp8_scaling == Fp8Scaling.BLOCKWISE
            and gpu.vendor.lower() != "nvidia"):
        raise ConfigError(f"blockwise fp8 is TransformerEngine's Float8BlockScaling, run on NVIDIA Hopper "
                          f"(and Blackwell, converted to MXFP8); the {gpu.name} is not modelled with it: use "
                          "dynamic (per-tensor current scaling) or delayed", key=key)
    if not isinstance(stack, StackProfile) or stack.kernels.fp8_scaling != Fp8Scaling.MXFP8:
        return
    if not gpu.mx_block_scaling:
        raise ConfigError(f"MXFP8 needs block-scaled tensor cores (NVIDIA Blackwell, AMD CDNA 4 or "
                          f"later), which the {gpu.name} lacks; use dynamic (per-tensor current "
                          "scaling) or delayed",
                          key=key)
    for part in ("data_parallel", "sharding"):
        if getattr(stack, part).param_gather_dtype == ReduceDtype.FP8:
            raise ConfigError(f"MXFP8 weights are all-gathered in 16 bit and quantized after the "
                              f"gather (Megatron-Core reuse_grad_buf_for_mxfp8_param_ag); set "
                              f"training.stack.{part}.param_gather_dtype: bf16", key=key)


def _check_fp8_attention(scenario: Scenario, gpu: GpuSpec) -> None:
    """fp8 attention is priced from the GPU's measured ratio to bf16 for the recipe TE runs it
    with (``fp8_attention_recipe``) at the model's head widths (``compute.fp8_attention_speedup``):
    it needs fp8 training with per-tensor or MXFP8 scales and a measurement on that GPU of each
    kernel the model runs, the causal one and, with ``model.attention_window``, the
    sliding-window one of that window (which is measured without context parallelism only)."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile):
        return
    if not stack.kernels.fp8_attention:
        if stack.kernels.fp8_attention_recipe != Fp8AttentionScaling.AUTO:
            raise ConfigError("names a recipe for fp8 attention, which is off; set "
                              "training.stack.kernels.fp8_attention: true or remove the recipe",
                              key="training.stack.kernels.fp8_attention_recipe")
        return
    key, model = "training.stack.kernels.fp8_attention", scenario.model
    recipe = fp8_attention_recipe(scenario.training.dtype, stack.kernels)
    if recipe is None:
        raise ConfigError("fp8 attention needs fp8 training; under NVFP4 name its recipe with "
                          "training.stack.kernels.fp8_attention_recipe (mxfp8 or per_tensor: "
                          "TransformerEngine's NVTE_DPA_FP8_RECIPE) or set it false", key=key)
    if model.attention_window is not None and scenario.parallelism.cp > 1:
        raise ConfigError("fp8 attention over sliding windows with context parallelism is not priced "
                          "(cuDNN's fp8 band backward walks the whole causal triangle of its call, which "
                          "gathered keys lengthen; measured only without context parallelism); set it "
                          "false or parallelism.cp: 1", key=key)
    measured = sorted(gpu.compute.fp8_attention_speedup.get(recipe, {}))
    for kernel in _attention_kernel_keys(model):
        if kernel not in measured:
            raise ConfigError(f"no measured {recipe} fp8 attention rate for the kernel {kernel} "
                              f"(head widths[@window]) on {gpu.name} (measured: "
                              f"{', '.join(measured) or 'none'}); set it false", key=key)


def _check_attention_kernel(scenario: Scenario, gpu: GpuSpec) -> None:
    """The named attention kernel is one the library knows or the GPU spec declares, so a typo
    (``cudnm``) is not priced silently at the GPU's generic fractions."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile):
        return
    name = stack.kernels.attention
    if name not in ATTENTION_KERNELS and name not in gpu.compute.attention_kernels:
        known = sorted({*ATTENTION_KERNELS, *gpu.compute.attention_kernels})
        raise ConfigError(f"{name!r}: not an attention kernel; expected one of {', '.join(known)} "
                          "(a GPU spec's compute.attention_kernels may add its own)",
                          key="training.stack.kernels.attention")


def _attention_kernel_keys(model: ModelConfig) -> list[str]:
    """``compute.fp8_attention_speedup`` keys of the attention kernels ``model`` runs: the causal
    one where any layer attends fully, the sliding-window one where any layer is local."""
    window, every = model.attention_window, model.full_attention_every
    full_layers = model.layers if window is None else (model.layers // every if every else 0)
    keys = [head_widths_key(model.d_head, model.d_value)] if full_layers else []
    local = full_layers < model.layers
    return keys + ([head_widths_key(model.d_head, model.d_value, window)] if local else [])


def _check_grouped_mlp_fusion(scenario: Scenario, gpu: GpuSpec) -> None:
    """TransformerEngine fuses a grouped MLP only under block-scaled quantization (MXFP8, NVFP4:
    ``fuse_grouped_mlp_ops`` leaves the ops unfused for any other recipe) and with cuDNN's
    sm100 grouped-GEMM kernels (transformer_engine/pytorch/ops/fused/grouped_mlp.py): an NVIDIA
    GPU with block-scaled tensor cores."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile) or not stack.kernels.grouped_mlp_fusion:
        return
    key = "training.stack.kernels.grouped_mlp_fusion"
    block_scaled = (scenario.training.dtype == Dtype.FP8
                    and stack.kernels.fp8_scaling in (Fp8Scaling.MXFP8, Fp8Scaling.NVFP4))
    if not block_scaled:
        raise ConfigError("TransformerEngine's fused grouped MLP runs only under MXFP8 or NVFP4 "
                          "(training.dtype fp8 with kernels.fp8_scaling mxfp8 or nvfp4); set it false",
                          key=key)
    if gpu.vendor.lower() != "nvidia":        # block-scaled tensor cores: _check_fp8 / _check_nvfp4
        raise ConfigError(f"TransformerEngine's fused grouped MLP runs cuDNN's Blackwell (sm100) "
                          f"kernels, which the {gpu.name} lacks; set it false", key=key)


def _check_fp8_output_proj(scenario: Scenario) -> None:
    """Megatron-Core runs the output layer in fp8 only under fp8 training with the MXFP8 recipe
    (``TransformerConfig.__post_init__`` raises otherwise: "fp8_output_proj must be used
    together with fp8 mode", "requires fp8_recipe='mxfp8'")."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile) or not stack.kernels.fp8_output_proj:
        return
    if scenario.training.dtype != Dtype.FP8 or stack.kernels.fp8_scaling != Fp8Scaling.MXFP8:
        raise ConfigError("Megatron-Core runs the output layer in fp8 only under MXFP8 (training.dtype "
                          "fp8 with kernels.fp8_scaling mxfp8); set it false",
                          key="training.stack.kernels.fp8_output_proj")


def _check_nvfp4(stack: StackProfile, gpu: GpuSpec, key: str) -> None:
    """NVFP4 needs fp4 tensor cores (Blackwell): a spec with an fp4 peak and the fraction of it
    an fp4 GEMM reaches; its weights gather in 4 bits (Megatron-Core ``fp4_param_gather``) or
    16, not as fp8."""
    if Dtype.FP4 not in gpu.peak_dense_tflops or gpu.compute.fp4_gemm_peak_fraction is None:
        raise ConfigError(f"NVFP4 needs fp4 tensor cores (Blackwell or later), which the {gpu.name}'s "
                          "spec does not list (peak_dense_tflops fp4 and compute.fp4_gemm_peak_fraction); "
                          "use dynamic, delayed or mxfp8", key=key)
    for part in ("data_parallel", "sharding"):
        if getattr(stack, part).param_gather_dtype == ReduceDtype.FP8:
            raise ConfigError("NVFP4 weights are all-gathered in 4 bits (Megatron-Core fp4_param_gather) "
                              f"or 16, not fp8; set training.stack.{part}.param_gather_dtype: fp4 or bf16",
                              key=f"training.stack.{part}.param_gather_dtype")


def _check_fp4_collectives(scenario: Scenario) -> None:
    """4-bit collectives: only NVFP4 weights gather in 4 bits; no stack reduces gradients in 4."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile):
        return
    nvfp4 = scenario.training.dtype == Dtype.FP8 and stack.kernels.fp8_scaling == Fp8Scaling.NVFP4
    for part in ("data_parallel", "sharding"):
        section = getattr(stack, part)
        if section.param_gather_dtype == ReduceDtype.FP4 and not nvfp4:
            raise ConfigError("fp4 weight gathers are NVFP4's (training.dtype fp8 with "
                              "kernels.fp8_scaling: nvfp4); set bf16 or fp8",
                              key=f"training.stack.{part}.param_gather_dtype")
        for name, value in section:
            if value == ReduceDtype.FP4 and name != "param_gather_dtype":
                raise ConfigError("only NVFP4 weight gathers run in 4 bits; set bf16 or fp32",
                                  key=f"training.stack.{part}.{name}")


def _check_layout(scenario: Scenario, gpus: int, dp: int) -> None:
    model, par = scenario.model, scenario.parallelism
    if model.heads % par.tp:
        raise ConfigError(f"{par.tp} does not divide model.heads ({model.heads})", key="parallelism.tp")
    if par.pp > model.layers:
        raise ConfigError(f"{par.pp} stages is more than model.layers ({model.layers})",
                          key="parallelism.pp")
    if model.experts % par.ep:
        raise ConfigError(f"{par.ep} does not divide model.experts ({model.experts})",
                          key="parallelism.ep")
    if model.seq_len % par.cp:
        raise ConfigError(f"{par.cp} does not divide model.seq_len ({model.seq_len})",
                          key="parallelism.cp")
    per_replica = par.tp * par.pp * par.cp
    if per_replica * dp != gpus:
        fix = f"use dp = {gpus // per_replica}" if gpus % per_replica == 0 else \
            "choose tp*pp*cp dividing the GPU count"
        raise ConfigError(
            f"tp*pp*dp*cp = {par.tp}*{par.pp}*{dp}*{par.cp} = {per_replica * dp} but the cluster "
            f"has {gpus} GPUs; {fix}", key="parallelism.dp" if par.dp else "parallelism")
    if par.shard_size is not None:
        _check_shard_size(par, dp)
    etp = _check_expert_tp(scenario)
    if (par.tp * dp * par.cp) % (etp * par.ep) and par.ep > 1:
        raise ConfigError(f"etp*ep = {etp}*{par.ep} does not divide tp*dp*cp ({par.tp * dp * par.cp})",
                          key="parallelism.ep")
    block, replica = etp * par.ep, par.tp * par.cp
    if par.ep > 1 and block % replica and replica % block:
        raise ConfigError(f"{par.ep} with etp = {etp}, tp = {par.tp}, cp = {par.cp}: an expert-parallel "
                          "group must cover whole tensor-and-context-parallel groups or lie inside one "
                          "(etp*ep a multiple or a divisor of tp*cp; with etp = tp: ep a multiple or a "
                          "divisor of cp)", key="parallelism.ep")
    _check_pp_inner_experts(par, etp)
    _check_ulysses_heads(scenario)
    _check_a2a_overlap(scenario)
    _check_flex_dispatcher(scenario, etp)


def _check_pp_inner_experts(par: ParallelismConfig, etp: int) -> None:
    """Under ``rank_order: tp-cp-pp-dp`` with pipeline stages, Megatron-Core's expert rank
    generator (order tp-ep-pp-dp) needs the experts' data-parallel size to equal the dense one,
    ``etp ep = tp cp`` (``initialize_model_parallel``'s assertion "When not using pp-last rank
    ordering, the data parallel size of the attention and moe layers must be the same",
    megatron/core/parallel_state.py @ d98e8a64dd)."""
    pp_inner = par.rank_order == RankOrder.TP_CP_PP_DP
    if pp_inner and par.ep > 1 and par.pp > 1 and etp * par.ep != par.tp * par.cp:
        raise ConfigError(f"{par.ep} with etp = {etp} under rank_order tp-cp-pp-dp and pp = {par.pp}: "
                          f"Megatron-Core needs etp*ep = tp*cp ({par.tp * par.cp}) in that order "
                          "(the experts' data-parallel size equal to the dense one); use rank_order "
                          "tp-cp-dp-pp or change ep/etp", key="parallelism.ep")


def _check_expert_tp(scenario: Scenario) -> int:
    """The expert tensor-parallel size (``parallelism.etp``, default tp): it must divide tp."""
    par = scenario.parallelism
    if par.etp is None:
        return par.tp
    if par.tp % par.etp:
        raise ConfigError(f"{par.etp} does not divide tp ({par.tp})", key="parallelism.etp")
    return par.etp


def _check_ulysses_heads(scenario: Scenario) -> None:
    """DeepSpeed-Ulysses scatters attention heads over the context-parallel group: q's heads and
    k/v's heads on each tensor-parallel rank must divide by cp (DeepSpeed
    ``deepspeed/sequence/layer.py`` v0.15.4 asserts ``num_total_head % seq_world_size == 0``)."""
    model, par = scenario.model, scenario.parallelism
    stack = scenario.training.stack
    if par.cp == 1 or not isinstance(stack, StackProfile) or stack.context_parallel.ring != CpRing.ULYSSES:
        return
    for what, heads in (("model.heads", model.heads), ("model.kv_heads", model.kv_heads)):
        local = heads / par.tp
        if local % par.cp:
            raise ConfigError(
                f"{par.cp} does not divide the {local:g} heads of {what} ({heads}) per tensor-parallel "
                f"rank (tp {par.tp}): the stack's DeepSpeed-Ulysses context parallelism "
                "(context_parallel.ring: ulysses) scatters heads over the cp group; choose cp dividing "
                f"{local:g} or a ring-attention stack", key="parallelism.cp")


def _check_a2a_overlap(scenario: Scenario) -> None:
    """Megatron-Core refuses ``overlap_moe_expert_parallel_comm`` without expert parallelism,
    with pipelining but no virtual stages, and with full recompute (core_v0.15.0
    ``megatron/core/transformer/transformer_config.py`` ``__post_init__``)."""
    par, stack = scenario.parallelism, scenario.training.stack
    if not isinstance(stack, StackProfile) or not stack.expert_parallel.a2a_overlap:
        return
    key = "training.stack.expert_parallel.a2a_overlap"
    if par.ep == 1 or scenario.model.experts == 1:
        raise ConfigError("overlapping the expert all-to-alls needs a mixture of experts with "
                          "parallelism.ep > 1; set it false", key=key)
    if par.pp > 1 and par.schedule != Schedule.INTERLEAVED:
        raise ConfigError(f"with pp {par.pp} the expert all-to-all overlap runs only in the interleaved "
                          "schedule (Megatron-Core asserts virtual_pipeline_model_parallel_size); set "
                          "parallelism.schedule: interleaved-1f1b or a2a_overlap false", key=key)
    if par.recompute == Recompute.FULL:
        raise ConfigError("Megatron-Core refuses the expert all-to-all overlap with full recompute; "
                          "set parallelism.recompute to none or selective, or a2a_overlap false", key=key)


def _check_router_groups(model) -> None:
    """Group-limited routing: the groups split the experts evenly, a token picks at most all of
    them, and its ``top_k`` experts fit in the groups it picks (Megatron-Core's router asserts
    the same: ``group_limited_topk``, megatron/core/transformer/moe/moe_utils.py)."""
    groups, picked = model.router_groups, model.router_group_topk
    if model.experts == 1:
        return
    if model.routing == Routing.ROUND_ROBIN and groups > 1:
        raise ConfigError("round-robin routing assigns consecutive experts and has no groups; "
                          "set model.router_groups to 1 or model.routing to random", key="model.routing")
    if model.experts % groups:
        raise ConfigError(f"{groups} groups do not split model.experts ({model.experts}) evenly",
                          key="model.router_groups")
    if picked > groups:
        raise ConfigError(f"{picked} is more than model.router_groups ({groups})",
                          key="model.router_group_topk")
    if model.top_k > picked * (model.experts // groups):
        raise ConfigError(f"model.top_k ({model.top_k}) does not fit in {picked} groups of "
                          f"{model.experts // groups} experts", key="model.router_group_topk")


def _check_flex_dispatcher(scenario: Scenario, etp: int) -> None:
    """Megatron-Core's flex dispatcher (DeepEP, HybridEP) dispatches over one group of every
    tensor- and expert-parallel rank (``MoEFlexTokenDispatcher``'s ``tp_ep_group``,
    megatron/core/transformer/moe/token_dispatcher.py @ d98e8a64dd); the deduplicated schedule
    (simulator.cost.ep_dedup) is built for expert groups without expert tensor parallelism."""
    stack = scenario.training.stack
    if not isinstance(stack, StackProfile):
        return
    profile = stack.expert_parallel
    if profile.permute_in_dispatch and profile.dispatcher != EpDispatcher.HYBRIDEP:
        raise ConfigError("permute_in_dispatch is HybridEP's fused permute (Megatron-Core "
                          "moe_permute_fusion_into_hybridep); set expert_parallel.dispatcher: hybridep or "
                          "remove it", key="training.stack.expert_parallel.permute_in_dispatch")
    if stack.expert_parallel.dispatcher == EpDispatcher.ALLTOALL:
        if stack.expert_parallel.dispatcher_sms is not None:
            raise ConfigError("dispatcher_sms is the flex dispatcher's SM count; the alltoall dispatcher's "
                              "all-to-alls are NCCL's: remove it or set expert_parallel.dispatcher to "
                              "deepep or hybridep", key="training.stack.expert_parallel.dispatcher_sms")
        return
    if scenario.parallelism.ep > 1 and etp > 1:
        raise ConfigError(f"the {stack.expert_parallel.dispatcher.value} dispatcher with parallelism.etp "
                          f"{etp} is not modelled (the flex dispatcher then spans the tp x ep group); set "
                          "parallelism.etp: 1 or expert_parallel.dispatcher: alltoall",
                          key="training.stack.expert_parallel.dispatcher")


def _check_optimizer(scenario: Scenario) -> None:
    """Muon as Megatron-Core runs it: whole weights on each rank, the optimizer state sharded at
    most as ZeRO-1 shards it (its layer-wise distributed optimizer; Megatron-LM refuses
    Torch-FSDP2 and Megatron-FSDP with it)."""
    zero = scenario.parallelism.zero_stage
    dtype = scenario.training.dtype
    if scenario.training.optimizer.precision_aware and dtype not in (Dtype.BF16, Dtype.FP8):
        raise ConfigError(f"precision_aware with training.dtype {dtype.value} is not modelled: "
                          "Megatron-Core's precision-aware optimizer keeps master weights for bf16 (and "
                          "fp8) parameters; use dtype bf16 or fp8", key="training.optimizer")
    if scenario.training.optimizer.muon and zero > 1:
        raise ConfigError(f"muon with parallelism.zero_stage {zero} is not modelled: Megatron-Core runs "
                          "Muon with whole weights and gradients on every rank and its state sharded as "
                          "ZeRO-1 shards it; use zero_stage 0 or 1", key="training.optimizer")


def _check_shard_size(par, dp: int) -> None:
    """Hybrid sharding: the shard groups tile the dp*cp ranks, and only ZeRO-3 shards weights."""
    if par.zero_stage != 3:
        raise ConfigError(f"hybrid sharding needs zero_stage 3 (got {par.zero_stage})",
                          key="parallelism.shard_size")
    if (dp * par.cp) % par.shard_size:
        raise ConfigError(f"{par.shard_size} does not divide dp*cp ({dp * par.cp})",
                          key="parallelism.shard_size")
    if par.shard_size == 1:
        raise ConfigError("1: a shard group of one rank shards nothing (every rank would hold "
                          "whole weights); use shard_size >= 2, or zero_stage 0-2 to replicate",
                          key="parallelism.shard_size")


def _check_batch(scenario: Scenario, dp: int) -> None:
    training = scenario.training
    per_step = training.micro_batch * dp
    if training.global_batch % per_step:
        raise ConfigError(
            f"{training.global_batch} is not a multiple of micro_batch*dp = "
            f"{training.micro_batch}*{dp} = {per_step}; use a multiple such as "
            f"{max(per_step, training.global_batch // per_step * per_step)}", key="training.global_batch")


def _check_schedule(scenario: Scenario, dp: int) -> None:
    model, par, training = scenario.model, scenario.parallelism, scenario.training
    if par.virtual_stages > 1 and par.schedule != Schedule.INTERLEAVED:
        raise ConfigError(
            f"{par.virtual_stages} needs schedule: interleaved-1f1b (got {par.schedule.value})",
            key="parallelism.virtual_stages")
    slots = model.layers + model.mtp_layers
    if par.pipeline_layout is None and par.pp * par.virtual_stages > slots + empty_end_chunks(
            par.pp, par.virtual_stages):
        raise ConfigError(
            f"pp*virtual_stages = {par.pp * par.virtual_stages} chunks is more than model.layers "
            f"({model.layers}){f' + model.mtp_layers ({model.mtp_layers})' if model.mtp_layers else ''} "
            f"+ {empty_end_chunks(par.pp, par.virtual_stages)}: only the first "
            "and last chunks (embedding, output layer) may hold no transformer layer",
            key="parallelism.virtual_stages")
    _check_uneven_split(scenario)
    microbatches = training.global_batch // (training.micro_batch * dp)
    check_flushes(scenario, microbatches)
    per_flush = microbatches // par.schedules_per_step
    if par.schedule == Schedule.INTERLEAVED and par.pp > 1 and per_flush % par.pp:
        several = par.pipeline_flushes > 1
        what = "each pipeline schedule's microbatch count" if several else "the microbatch count"
        flushes = f" / pipeline_flushes {par.pipeline_flushes}" if several else ""
        raise ConfigError(
            f"interleaved-1f1b needs {what} ({per_flush} = global_batch / "
            f"(micro_batch*dp){flushes}) to be a multiple of pp ({par.pp})", key="training.global_batch")


def _check_uneven_split(scenario: Scenario) -> None:
    """``first_stage_layers`` / ``last_stage_layers`` as Megatron-Core accepts them."""
    par = scenario.parallelism
    if par.pipeline_layout is not None:
        _check_pipeline_layout(scenario)
        return
    if par.first_stage_layers is None and par.last_stage_layers is None:
        return
    name = "first_stage_layers" if par.first_stage_layers is not None else "last_stage_layers"
    key = f"parallelism.{name}"
    if par.pp < 2:
        raise ConfigError(f"{getattr(par, name)}: applies only with pipeline parallelism (pp > 1), and "
                          f"parallelism.pp is {par.pp}; remove it or set pp above 1", key=key)
    try:
        uneven_split(scenario.model.layers, par.pp, par.virtual_stages, par.first_stage_layers,
                     par.last_stage_layers)
    except ValueError as error:
        raise ConfigError(f"{error} (model.layers {scenario.model.layers}, pp {par.pp})", key=key) from None


def _check_pipeline_layout(scenario: Scenario) -> None:
    """``pipeline_layout`` as Megatron-Core accepts it, and not with first/last stage counts
    (Megatron-Core asserts the layout excludes them)."""
    par, model = scenario.parallelism, scenario.model
    for key in ("first_stage_layers", "last_stage_layers"):
        if getattr(par, key) is not None:
            raise ConfigError(f"{getattr(par, key)}: parallelism.pipeline_layout already places every layer; "
                              "remove one of them", key=f"parallelism.{key}")
    try:
        layout_chunks(par.pipeline_layout, par.pp, par.virtual_stages, model.layers, model.mtp_layers)
    except LayoutError as error:
        raise ConfigError(f"{par.pipeline_layout!r}: {error}", key="parallelism.pipeline_layout") from None
