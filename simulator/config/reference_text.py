"""The words of the scenario reference: what each key means (see :mod:`simulator.config.reference`)."""

INTRO = """# Scenario reference

Generated from the scenario schema by `python -m simulator.config.reference`; a test keeps
this file equal to the schema. A scenario is one YAML mapping; every key below is optional
unless its default says `required`. Units are SI unless a key's name says otherwise. A
mistake prints one line naming the file, the key and what was expected, and exits with
status 2. Keys in SCENARIO_FORMAT.md keep their meaning; the others are clustersim's
additions (also listed in docs/scenario_extensions.md). Hardware names come from
`clustersim specs`; model presets from `simulator/config/presets.py`; stacks from
`hardware_specs/stacks/` (docs/stacks.md)."""

TYPES = {
    "cluster.node": "name \\\\| mapping",
    "training.stack": "name \\\\| mapping",
    "collectives.algorithm": "name \\\\| mapping",
    "cluster.fabric.torus_dims": "list of int",
    "noise.links[].between": "two switch labels",
    "training.documents.lengths": "list of int 1..100,000,000",
}

MEANINGS = {
    "name": "free text, used in reports",
    "cluster.node": "a node in `hardware_specs/nodes/` (GPU type, GPUs per node, intra-node fabric, "
                    "NICs), or an inline mapping with the same fields",
    "cluster.nodes": "number of servers",
    "cluster.gpus_per_node": "use only this many GPUs of each node (default: all)",
    "cluster.fabric.topology": "how servers are connected",
    "cluster.fabric.link": "a link in `hardware_specs/links/`: the speed of every NIC and switch port "
                           "(default: the node's NIC link)",
    "cluster.fabric.nics_per_node": ("NICs per server (default: one per GPU used, up to the node's); "
                                     "more than the GPUs (up to 4 per GPU, e.g. 16 on OCI's 8-GPU "
                                     "shapes): each GPU's traffic leaves over all the NICs beside it"),
    "cluster.fabric.oversubscription": "down:up port ratio of a leaf (2.0 is 2:1)",
    "cluster.fabric.switch_radix": "ports per fabric switch",
    "cluster.fabric.tiers": "2 or 3 fat-tree tiers (default: 2 while the leaves fit the spines' ports)",
    "cluster.fabric.torus_dims": "torus shape, e.g. `[4, 4, 8]`; the product equals `cluster.nodes`",
    "cluster.fabric.pxn": "NCCL PXN: cross-rail sends hop over NVLink to the GPU next to the "
                          "destination rail's NIC",
    "cluster.fabric.nvls": ("NCCL's NVLink SHARP algorithms (NVLS, NVLS-Tree) on NVSwitch nodes; "
                            "false as `NCCL_NVLS_ENABLE=0`: `auto` chooses among ring and tree"),
    "cluster.fabric.chip_torus": "with `topology: torus`: the torus joins chips, not servers (TPU "
                                 "ICI: each chip's own 2 x d links); one chip per node, "
                                 "`cluster.nodes` counts chips",
    "model.preset": "a published shape that fills the model keys; explicit keys override it (in a "
                    "section such as `mla` or `mamba`, key by key)",
    "model.layers": "transformer layers",
    "model.hidden": "hidden size",
    "model.heads": "attention heads",
    "model.kv_heads": "key/value heads (default: `heads`; fewer is grouped-query attention)",
    "model.head_dim": ("width of one attention head (default `hidden // heads`; Qwen3 and Gemma "
                       "decouple it: query width `heads * head_dim`)"),
    "model.ffn_hidden": "MLP inner width (default: 4 x hidden)",
    "model.mlp": "`gelu` (2 matrices, GPT), `swiglu` (3 matrices, Llama) or `squared-relu` (2 matrices, "
                 "no biases, no position embedding: Nemotron-H and Nemotron 3)",
    "model.seq_len": "tokens per sequence",
    "model.vocab": "vocabulary size",
    "model.experts": "experts per MoE layer (1: dense)",
    "model.qk_norm": "an RMSNorm over the queries and keys after their projections (Qwen3, OLMo 2): "
                     "one more memory-bound pass over them a layer, its input kept for backward",
    "model.dropout": "dropout probability of the hidden states and attention (Megatron's "
                     "`hidden_dropout`, `attention_dropout`): above 0 each dropout keeps a 1-byte "
                     "mask for backward; default 0.1 for `gelu` (GPT-style), 0 for `swiglu` "
                     "(Llama-style recipes)",
    "model.rope_concentration": ("YaRN's attention concentration factor on the rotary embedding's cos and "
                                 "sin (GPT-OSS: 1.347 in the preset, 0.1 ln 32 + 1); other than 1, "
                                 "Megatron-Core applies RoPE unfused, as TransformerEngine's fused RoPE "
                                 "takes no factor (core_v0.16.0 on), priced as its eager ops; "
                                 "clustersim import-log maps a YaRN log's rotary_scaling_factor, "
                                 "mscale and mscale_all_dim to it"),
    "model.expert_bias": "the routed experts' linears carry biases (GPT-OSS: true in the preset); "
                         "Megatron-Core adds the second linear's bias times each row's routing "
                         "probability expert by expert in eager PyTorch unless TransformerEngine's op "
                         "fuser runs the experts (`kernels.grouped_mlp_fusion`), priced as those "
                         "memory-bound passes (`simulator/workload/expert_passes.py`)",
    "model.tied_embeddings": "the output layer shares the token embedding (default: true for `gelu`, "
                             "false for `swiglu`); with pp > 1 its gradient is all-reduced between the "
                             "first and last stages every step",
    "model.top_k": "experts each token visits",
    "model.attention_window": "sliding-window attention: each query attends to itself and the "
                              "`attention_window - 1` tokens before it (GPT-OSS: 128); none: full "
                              "causal attention. With `parallelism.cp` > 1 it needs a scheme that "
                              "gathers the keys (`context_parallel.ring` all_gather or ulysses)",
    "model.full_attention_every": "with `attention_window`, every n-th layer keeps full attention "
                                  "(Megatron-Core `window_attn_skip_freq`; GPT-OSS: 2); none: every "
                                  "layer local",
    "model.router_groups": "expert groups of group-limited routing (DeepSeek-V3: 8; 1: none): a token's "
                           "experts come from `router_group_topk` of them, which limits the servers a "
                           "deduplicating dispatcher sends it to",
    "model.router_group_topk": "groups a token's experts are chosen from (DeepSeek-V3: 4; default: all)",
    "model.routing": "how the router picks a token's experts: `random` (every top_k-subset equally "
                     "likely: a trained router's balanced load, Megatron-Core's forced balancing) or "
                     "`round_robin` (token t to experts k t .. k t + k - 1 mod E: NeMo AutoModel's "
                     "`FakeBalancedGate`, which reaches as few GPUs as contiguous expert ranges allow)",
    "model.expert_load": "tokens routed to the busiest expert-parallel rank over the mean, >= 1 "
                         "(1: balanced); scales that rank's expert GEMMs, expert activations and "
                         "all-to-all",
    "model.mla.q_lora_rank": "multi-head latent attention (DeepSeek-V2/V3, Kimi K2): rank of the query "
                             "latent (0: queries projected from the hidden state directly); `model.mla` "
                             "replaces `head_dim` and `kv_heads` (one key/value head per query head)",
    "model.mla.kv_lora_rank": "rank of the key/value latent",
    "model.mla.qk_head_dim": "query/key head width without position (DeepSeek `qk_nope_head_dim`)",
    "model.mla.qk_rope_head_dim": "rotary part of each query/key head (one rotary key shared by all heads)",
    "model.mla.v_head_dim": "value head width (the attention output is `heads * v_head_dim`)",
    "model.hybrid_pattern": "one character per layer, Megatron-Core's `hybrid_override_pattern`: `M` "
                            "Mamba-2 mixer, `*` attention, `-` dense MLP, `E` mixture of experts, each "
                            "with its norm and residual (Nemotron-H, Nemotron 3); `layers` is its length",
    "model.moe_latent": "latent mixture of experts (Megatron-Core `moe_latent_size`; Nemotron 3 Super "
                        "1024): tokens projected to this width before the dispatch and back after "
                        "the combine, the routed experts working at it (None: the hidden size)",
    "model.mtp_pattern": "a hybrid model's multi-token prediction depth as a pattern (Megatron-Core "
                         "`mtp_hybrid_override_pattern`, e.g. `*E`)",
    "model.mtp_shared": "the prediction depths share one set of weights (Megatron-Core "
                        "`mtp_use_repeated_layer`): held once, run once per depth",
    "model.block": "what every layer runs without `hybrid_pattern`: `full` (attention and MLP), "
                   "`attention`, `mamba` (a pure Mamba-2 model) or `mlp`",
    "model.mamba.heads": "Mamba-2 mixer of the `M` layers: heads `H` (the inner width is `H head_dim`)",
    "model.mamba.head_dim": "channels per Mamba head `P` (Megatron-Core default 64)",
    "model.mamba.state": "state width `N` of the B and C projections (default 128)",
    "model.mamba.groups": "groups sharing B and C, dividing the heads (default 8)",
    "model.mamba.conv_kernel": "width of the causal depthwise convolution (default 4)",
    "model.mamba.chunk": "tokens per chunk of the chunked scan (Megatron-Core default 128)",
    "model.shared_expert_ffn": "width of the shared experts' MLP, run by every token of a MoE layer "
                               "beside its `top_k` routed experts (0: none; Megatron-Core "
                               "`moe_shared_expert_intermediate_size`); split over tp like a dense MLP",
    "model.first_dense_layers": "how many of a mixture of experts' first layers have a dense MLP "
                                "(`dense_ffn` wide) instead of experts (DeepSeek-V3 3, Kimi K2 1; "
                                "Megatron-Core `moe_layer_freq` `[0]*k + [1]*(L-k)`)",
    "model.dense_ffn": "MLP width of those dense layers (default `ffn_hidden`; Megatron-Core "
                       "`ffn_hidden_size` beside `moe_ffn_hidden_size`)",
    "model.mtp_layers": "multi-token prediction depth (Megatron-Core `mtp_num_layers`; DeepSeek-V3 1): each "
                        "adds a layer, a `2h -> h` projection and another pass of the output layer and loss "
                        "on the last pipeline stage",
    "training.global_batch": "sequences per optimizer step",
    "training.micro_batch": "sequences per microbatch",
    "training.dtype": "training precision (`tf32` is refused: a math mode, not a training dtype); "
                      "`fp8` runs linear layers in fp8, the rest in bf16",
    "training.attention": "`flash` (fused kernel) or `unfused` (GEMMs plus softmax over s^2, "
                          "Megatron-LM 2021)",
    "training.stack": "the training stack: a profile in `hardware_specs/stacks/`, or a mapping "
                      "`{base: NAME, <section>: {...}}` that overrides fields (docs/stacks.md)",
    "training.sync": "`sync` (a gradient reduction every step) or `async` (parameter servers: "
                     "each replica pushes gradients and pulls parameters on its own; needs "
                     "`parameter_server`)",
    "training.documents.distribution": "document lengths of the data, so each micro-batch's work "
                                       "varies (attention per document, sum l^2; the rest per "
                                       "token; the analytical engine prices the mean micro-batch, "
                                       "the DES every one, docs/stragglers.md): `lognormal` "
                                       "(`mean_tokens`, `sigma`) or `empirical` (`lengths`)",
    "training.documents.mean_tokens": "mean document length in tokens (lognormal)",
    "training.documents.sigma": "log-space standard deviation of the document length (lognormal)",
    "training.documents.lengths": "document lengths in tokens, drawn uniformly with replacement "
                                  "(empirical)",
    "training.documents.packing": "documents concatenated and cut into `seq_len`-token sequences, "
                                  "attention masked per document; false: one document per sequence, "
                                  "cut at `seq_len`, unpadded",
    "training.optimizer.name": "`adam`, or `muon`: the matrix parameters orthogonalised by Newton-Schulz "
                               "iterations, the embeddings and norms with Adam (Megatron-Core's Muon; "
                               "`optimizer: muon` is short for `{name: muon}`; priced in "
                               "`simulator/workload/muon.py`)",
    "training.optimizer.ns_steps": "Muon's Newton-Schulz iterations per step (Megatron-Core "
                                   "`muon_num_ns_steps`)",
    "training.optimizer.split_qkv": "Muon orthogonalises the fused query-key-value weight as its three "
                                    "blocks (`muon_split_qkv`)",
    "training.optimizer.nesterov": "Muon's Nesterov momentum (`muon_use_nesterov`): one more "
                                   "elementwise pass",
    "training.optimizer.precision_aware": "Adam's state in lower precision (Megatron-Core "
                                          "`use_precision_aware_optimizer`, TransformerEngine's "
                                          "`FusedAdam`): the dtypes below set the optimizer part of "
                                          "memory and the update's traffic; bf16 or fp8 training",
    "training.optimizer.master_dtype": "with `precision_aware`: the master weights (`main_params_dtype`): "
                                       "fp32, fp16 or bf16",
    "training.optimizer.exp_avg_dtype": "with `precision_aware`: Adam's first moment (`exp_avg_dtype`): "
                                        "fp32, fp16, bf16 or fp8",
    "training.optimizer.exp_avg_sq_dtype": "with `precision_aware`: Adam's second moment "
                                           "(`exp_avg_sq_dtype`): fp32, fp16, bf16 or fp8",
    "training.optimizer.param_remainders": "with `precision_aware` and fp32 master weights over bf16 "
                                           "parameters, keep only the 16 bits the bf16 weight lacks "
                                           "(`store_param_remainders`, TransformerEngine >= 2.1): 2 "
                                           "bytes instead of 4",
    "parallelism.tp": "tensor-parallel size",
    "parallelism.pp": "pipeline stages",
    "parallelism.dp": "data-parallel size (default: GPUs / (tp pp cp)); tp x pp x dp x cp = GPUs",
    "parallelism.cp": "context-parallel size",
    "parallelism.ep": "expert-parallel size (divides experts and dp x cp)",
    "parallelism.etp": "expert tensor-parallel size (Megatron-Core expert_tensor_parallel_size; "
                       "divides tp; default tp)",
    "parallelism.sequence_parallel": "Megatron sequence parallelism (TP all-reduces become all-gather "
                                     "+ reduce-scatter)",
    "parallelism.schedule": "pipeline schedule",
    "parallelism.virtual_stages": "model chunks per pipeline rank (interleaved 1F1B); pp x "
                                  "virtual_stages may exceed model.layers by up to 2, the first and last "
                                  "chunks then holding only the embedding and the output layer (Llama 3)",
    "parallelism.zero_stage": "0 DDP, 1 optimizer-state sharding, 2 + gradients, 3 + weights "
                              "(FSDP); default from the stack",
    "parallelism.shard_size": "ZeRO-3 hybrid sharding: shard inside groups of this many dp x cp "
                              "ranks, replicate across them",
    "parallelism.recompute": "activation recompute; what `selective` recomputes depends on the stack",
    "parallelism.recompute_fraction": "with `recompute: full`, the share of each stage's layers "
                                      "recomputed, the others keeping their activations (Megatron-Core "
                                      "`--recompute-method block --recompute-num-layers n`: n / layers per "
                                      "model chunk; torchtitan's layer-wise checkpointing of every N-th "
                                      "block: 1/N; fms-fsdp's `selective_checkpointing` p); default 1",
    "parallelism.recompute_modules": "with `recompute: selective`, the modules it re-runs "
                                     "(Megatron-Core `--recompute-modules`; docs/scenario_extensions.md); "
                                     "default: the stack's policy (Megatron: core_attn)",
    "parallelism.overlap_grad_reduce": "gradient reduction overlapped with the backward pass; "
                                       "default from the stack",
    "parallelism.pipeline_flushes": "pipeline schedules a step, each over `microbatches / "
                                    "pipeline_flushes` of the step's microbatches (must divide them), "
                                    "filling and draining the pipeline and synchronising its gradients, "
                                    "the optimizer once after the last: torchtitan's and NeMo AutoModel's "
                                    "gradient accumulation under pipeline parallelism, one "
                                    "`torch.distributed.pipelining` `schedule.step` per local batch "
                                    "(`simulator/engine/flushes.py`); memory is one schedule's. No effect "
                                    "with pp 1 (a warning says so); not with the training what-ifs, "
                                    "`training.sync: async` or `cluster.sites`. `clustersim scale` keeps "
                                    "each schedule's microbatches and sets it per GPU count",
    "parallelism.cpu_offload_layers": "activation offloading: the first n layers' saved activations are "
                                      "copied to host memory in forward and back in backward, with at "
                                      "most `layers - n` layers' on the GPU (Megatron-Core "
                                      "`cpu_offloading_num_layers`, TransformerEngine's default schedule); "
                                      "needs pp 1 and recompute none; the copies' waits are in the passes "
                                      "(`offload_wait_s`), their rate from the node's `host_memory`",
    "parallelism.rank_order": "how ranks map to GPUs, fastest first: `tp-cp-dp-pp` (Megatron's default: "
                              "each pipeline stage a block of GPUs) or `tp-cp-pp-dp` (NeMo's "
                              "`use_tp_pp_dp_mapping`: each pipeline replica a block)",
    "parallelism.first_stage_layers": "layers on the first pipeline stage (Megatron-Core "
                                      "`--decoder-first-pipeline-num-layers`); the layers left after "
                                      "the first and last stages' are divided evenly over the others",
    "parallelism.last_stage_layers": "layers on the last pipeline stage (Megatron-Core "
                                     "`--decoder-last-pipeline-num-layers`), e.g. fewer to offset the "
                                     "LM head and loss",
    "parallelism.pipeline_layout": "Megatron-Core `--pipeline-model-parallel-layout`: each model chunk's "
                                   "layers, chunks split by `|` in pipeline order (E embedding, t decoder "
                                   "layer, m multi-token prediction, L loss; `x*n`, `(...)*n` repeat), e.g. "
                                   "DeepSeek-V3's `Et|(tt|)*30mL` on pp 8 x 4 virtual stages",
    "collectives.algorithm": "`auto` (NCCL's choice) or an algorithm name, or a mapping per collective",
    "simulate.engine": "`analytical` (closed-form critical path) or `des` (discrete-event replay)",
    "simulate.fidelity": "how finely the DES replays traffic (docs/engines.md)",
    "simulate.contention": "flows share links in the DES (false: alpha-beta times, for cross-checks)",
    "simulate.steps": "steps the DES simulates (percentiles over them)",
    "simulate.seed": "random seed of the DES noise",
    "noise.straggler.distribution": "per-GPU per-step slowdown distribution",
    "noise.straggler.sigma": "spread of the lognormal slowdown",
    "noise.throttle.probability": "per GPU and step, probability of a throttle",
    "noise.throttle.factor": "slowdown of a throttled GPU",
    "noise.slow_gpus[].gpu": "a GPU that is always slower (listed once)",
    "noise.slow_gpus[].factor": "its slowdown",
    "noise.slow_nodes[].node": "a server whose GPUs are all slower (listed once)",
    "noise.slow_nodes[].factor": "its slowdown",
    "noise.links[].between": "a switch-to-switch link, by labels such as `fabric/leaf0`, `fabric/spine3`",
    "noise.links[].fraction": "its share of bandwidth left (0: failed, routed around)",
    "noise.episodes[].gpu": "a GPU slowed for a window of steps (or give node)",
    "noise.episodes[].node": "a server whose GPUs are slowed for a window of steps (or give gpu)",
    "noise.episodes[].factor": "its slowdown during the window",
    "noise.episodes[].start_step": "first slowed step (0-based)",
    "noise.episodes[].steps": "slowed steps (default: to the end of the run)",
    "noise.fail_slow[].scope": "each GPU or each server runs its own on/off fail-slow process",
    "noise.fail_slow[].rate_per_hour": "episodes starting per healthy GPU-hour (or server-hour): "
                                       "mean time between episodes 3600 / rate s",
    "noise.fail_slow[].mean_duration_s": "mean episode length (exponential, in whole steps)",
    "noise.fail_slow[].factor": "slowdown during an episode",
    "noise.host_pause.probability": "per server and step, probability of a host pause (e.g. Python GC)",
    "noise.host_pause.duration_s": "length of one pause",
    "noise.host_pause.synchronized": "all servers pause together at a step's start (Megatron "
                                     "`--manual-gc`), with that probability per step",
    "noise.nic_faults[].gpu": "the GPU whose NIC is faulty (its pipeline sends both ways; its "
                              "stage's gradient synchronisation)",
    "noise.nic_faults[].peer": "only the pipeline link to this GPU (same replica, next or previous stage)",
    "noise.nic_faults[].fraction": "share of bandwidth left (0 < fraction <= 1)",
    "noise.nic_faults[].latency_s": "latency added to every pipeline message over it",
    "noise.nic_faults[].start_step": "first faulty step (0-based)",
    "noise.nic_faults[].steps": "faulty steps (default: to the end of the run)",
    "description": "free text kept with the scenario",
    "parameter_server.servers": "parameter-server shards; each serves 1/servers of the parameters",
    "parameter_server.placement": "`dedicated` (own hosts, one fabric port each) or `colocated` "
                                  "(on the first `servers` training nodes, all their NICs)",
    "parameter_server.bandwidth_GBps": "each server's bandwidth per direction, GB/s (default by "
                                       "placement)",
    "parameter_server.staleness": "bound s: a replica runs at most s iterations ahead of the "
                                  "slowest (0: bulk synchronous)",
    "calibration": "a calibration overlay (`clustersim calibrate -o`), relative to the scenario file",
    "training.gradient_compression.method": "compress the data-parallel gradients: `topk` "
                                            "(values and int32 indices, all-gathered), `powersgd` "
                                            "(rank-r P and Q all-reduced), `int8` or `1bit` "
                                            "(quantised all-to-all and all-gather); docs/what_ifs.md",
    "training.gradient_compression.ratio": "`topk`: share of gradient elements sent",
    "training.gradient_compression.rank": "`powersgd`: approximation rank r",
    "training.gradient_compression.min_compression_rate": "`powersgd`: a matrix a x b is compressed "
                                                          "only if (a + b) r x this < a b (PyTorch's hook)",
    "training.gradient_compression.error_feedback": "keep the compression error and add it to the "
                                                    "next step's gradient (a buffer in memory)",
    "training.sync_every": "local SGD / DiLoCo: reduce over data parallelism (and run the outer "
                           "optimizer) once every K steps; needs zero_stage 0",
    "training.data_loader.sample_bytes": "bytes read from storage per sample",
    "training.data_loader.storage_Bps": "storage read bandwidth of one server (B/s), shared by its "
                                        "data-parallel replicas",
    "training.data_loader.request_latency_s": "latency of one storage request (one per sample)",
    "training.data_loader.cpu_s_per_sample": "CPU preprocessing of one sample by one worker",
    "training.data_loader.workers": "loader worker processes per data-parallel replica",
    "training.data_loader.prefetch_batches": "batches the loader may hold ready ahead of the step",
    "training.data_loader.jitter_sigma": "one-sided lognormal delay of each batch's load time: "
                                         "times exp(abs(N(0, sigma))), never faster than the "
                                         "storage and workers allow (discrete-event engine)",
    "cluster.sites.count": "sites the cluster spans: the servers split into this many sites, each "
                           "holding dp / count whole replicas (data parallelism across sites, the "
                           "rest inside a site); docs/what_ifs.md",
    "cluster.sites.wan.bandwidth_Bps": "each site's WAN uplink, each way (B/s)",
    "cluster.sites.wan.latency_s": "one-way latency between sites",
    "cluster.sites.wan.loss": "packet loss: TCP reaches at most streams x MSS sqrt(3/2) / (RTT "
                              "sqrt(loss)) (Mathis et al. 1997)",
    "cluster.sites.wan.streams": "parallel TCP connections over the WAN",
    "cluster.sites.wan.jitter_sigma": "one-sided lognormal delay of each WAN transfer: times "
                                      "exp(abs(N(0, sigma))), never faster than the link allows "
                                      "(discrete-event engine)",
}
