"""What a result should not be read without: the warnings of :attr:`StepResult.warnings`.

Computed once per ``run_scenario`` (:mod:`simulator.pipeline`), never inside the engines,
so layout sweeps and scaling curves do not pay for them. Each warning is one sentence that
names the key or the number behind it:

- the step does not fit in the GPU's memory (by how much, on which stage, what dominates);
- keys only the discrete-event engine reads (``noise``, ``simulate.fidelity``,
  ``simulate.contention``, ``simulate.steps``, ``simulate.seed``, the what-ifs' jitter
  ``training.data_loader.jitter_sigma`` and ``cluster.sites.wan.jitter_sigma``) set while
  the analytical engine ran;
- a discrete-event run of several steps whose steps are all identical (no noise: the
  percentiles say nothing);
- a layout Megatron-LM would refuse (megatron/training/arguments.py, ``validate_args``:
  with interleaving the layers must divide over the stages and the layers per stage over
  the virtual stages; without it, uneven stages need ``--decoder-first/last-pipeline-num-layers``);
- a key that has no effect (sequence parallelism with tp 1; a recompute module the model has
  nothing for);
- a step that does not fit but would with some layers' activations offloaded: how many
  (:func:`offload_hints`);
- offloaded activations that need more host memory per GPU than the node's
  ``host_memory.capacity_GB`` gives each of its GPUs (:func:`host_memory_warnings`).
"""

from __future__ import annotations

import math

from simulator.config.hybrid import Block
from simulator.config.loader import scenario_stack
from simulator.config.recompute_rules import idle_module_warnings
from simulator.config.resolved import ResolvedCluster
from simulator.config.scenario import NoiseConfig, Recompute, Scenario, Schedule, SimulateConfig
from simulator.results.step import StepResult
from simulator.units import GB, format_bytes
from simulator.workload.memory import offloaded_layer_bytes

DES_ONLY_SIMULATE = ("fidelity", "contention", "steps", "seed")
ENGINE_NEUTRAL_NOISE = ("links",)
"""``noise.links`` degrades the fabric itself, which both engines see."""
MEGATRON_STACKS = ("megatron", "nemo")


def result_warnings(scenario: Scenario, result: StepResult, engine: str,
                    hw: ResolvedCluster | None = None) -> list[str]:
    """Every warning that applies to ``result`` of ``scenario`` run by ``engine``
    (``"analytical"`` or ``"des"``) on the cluster ``hw`` (None: no host memory check), in a
    fixed order."""
    found = memory_warnings(result) + offload_hints(scenario, result)
    found += host_memory_warnings(result, hw) if hw is not None else []
    if engine == "analytical":
        found += des_only_warnings(scenario)
    else:
        found += identical_steps_warnings(result)
    return found + layout_warnings(scenario)


def memory_warnings(result: StepResult) -> list[str]:
    """"does not fit" with the overshoot, the stage and its largest part."""
    if result.fits_in_memory or not result.stages:
        return []
    worst = max(result.stages, key=lambda s: s.memory_bytes)
    over = result.memory_per_gpu_bytes - result.memory_capacity_bytes
    text = (f"does not fit in memory: stage {worst.stage} needs "
            f"{format_bytes(result.memory_per_gpu_bytes)} per GPU, {format_bytes(over)} more than "
            f"the GPU's {format_bytes(result.memory_capacity_bytes)}")
    if worst.memory:
        part = max(worst.memory, key=worst.memory.get)
        text += f"; {part} ({format_bytes(worst.memory[part])}) is the largest part"
    return [text]


def offload_hints(scenario: Scenario, result: StepResult) -> list[str]:
    """Where a step that does not fit could under activation offloading (pp 1, no recompute, a
    transformer model: Megatron-Core's rules), the fewest offloaded layers that bring it under
    the GPU's memory, leaving two layers' sets on the GPU for the copies to overlap
    (:mod:`simulator.cost.activation_offload`): ``n + ceil(over / a)`` with ``a`` one layer's
    kept activations."""
    par, model = scenario.parallelism, scenario.model
    mixed = model.hybrid_pattern or model.block != Block.FULL or model.first_dense_layers or model.mtp_layers
    if result.fits_in_memory or par.pp > 1 or par.recompute != Recompute.NONE or mixed:
        return []                       # (layers of several kinds: no one layer's bytes)
    layer = offloaded_layer_bytes(model, scenario.training, par, scenario_stack(scenario))
    over = result.memory_per_gpu_bytes - result.memory_capacity_bytes
    needed = par.cpu_offload_layers + math.ceil(over / layer) if layer > 0 else model.layers
    if needed > model.layers - 2:
        return []
    return [f"offloading the activations of {needed} layers to host memory "
            f"(parallelism.cpu_offload_layers: {needed}; {format_bytes(layer)} each) would bring it "
            "under the GPU's memory"]


def host_memory_warnings(result: StepResult, hw: ResolvedCluster) -> list[str]:
    """Offloaded activations (``parallelism.cpu_offload_layers``) over the host memory a GPU has:
    one socket's ``host_memory.capacity_GB`` over its GPUs (no check where it is not stated)."""
    spec = hw.node.host_memory
    needed = max((s.offload_host_bytes for s in result.stages), default=0.0)
    if not needed or spec is None or spec.capacity_GB is None:
        return []
    per_gpu = spec.capacity_GB * GB * hw.node.pcie.sockets / hw.node.gpus
    if needed <= per_gpu:
        return []
    return [f"does not fit in host memory: the offloaded activations need {format_bytes(needed)} per GPU, "
            f"more than the {format_bytes(per_gpu)} of host memory each GPU of node '{hw.node.name}' has; "
            "lower parallelism.cpu_offload_layers"]


def des_only_warnings(scenario: Scenario) -> list[str]:
    """Keys set away from their defaults that only the discrete-event engine reads."""
    keys = _changed(scenario.simulate, SimulateConfig(), "simulate", DES_ONLY_SIMULATE)
    noise_keys = [k for k in type(scenario.noise).model_fields if k not in ENGINE_NEUTRAL_NOISE]
    keys += _changed(scenario.noise, NoiseConfig(), "noise", noise_keys)
    keys += _what_if_jitter(scenario)
    if not keys:
        return []
    return [f"the analytical engine ignores {', '.join(keys)}: only the discrete-event engine "
            "reads them (run with --engine des or simulate.engine: des)"]


def _what_if_jitter(scenario: Scenario) -> list[str]:
    """The training what-ifs' jitter keys that are set (docs/what_ifs.md)."""
    training, sites = scenario.training, scenario.cluster.sites
    out = []
    if training is not None and training.data_loader is not None and training.data_loader.jitter_sigma > 0:
        out.append(f"training.data_loader.jitter_sigma ({training.data_loader.jitter_sigma:g})")
    if sites is not None and sites.wan.jitter_sigma > 0:
        out.append(f"cluster.sites.wan.jitter_sigma ({sites.wan.jitter_sigma:g})")
    return out


def _changed(section, default, prefix: str, names) -> list[str]:
    out = []
    for name in names:
        value = getattr(section, name, None)
        if value != getattr(default, name, None):
            shown = f" ({value})" if isinstance(value, (int, float, str)) and not isinstance(value, bool) \
                else ""
            out.append(f"{prefix}.{name}{shown}")
    return out


def identical_steps_warnings(result: StepResult) -> list[str]:
    """Several simulated steps, all the same length: nothing varied between them."""
    times = result.step_times_s
    if len(times) < 2 or max(times) - min(times) > 1e-12 * max(times):
        return []
    return [f"all {len(times)} simulated steps are identical ({times[0]:.4f} s): the scenario has "
            "no random noise (noise.straggler, noise.throttle), so p50/p95/p99 say nothing; add "
            "noise or simulate one step"]


def layout_warnings(scenario: Scenario) -> list[str]:
    """Layouts Megatron-LM would refuse (Megatron-family stacks) and keys with no effect."""
    if scenario.model is None or scenario.training is None:
        return []
    par, layers = scenario.parallelism, scenario.model.layers
    found = []
    if par.sequence_parallel and par.tp == 1:
        found.append("parallelism.sequence_parallel has no effect with tp 1 (Megatron-LM turns "
                     "it off)")
    found += idle_module_warnings(scenario)
    if par.recompute_fraction is not None and par.recompute != Recompute.FULL:
        found.append(f"parallelism.recompute_fraction has no effect with parallelism.recompute "
                     f"{par.recompute.value} (it is the share of the layers full recompute re-runs)")
    found += flush_warnings(scenario)
    if not _megatron_family(scenario) or par.pp == 1:
        return found
    if par.pipeline_layout is not None or par.first_stage_layers or par.last_stage_layers:
        return found            # Megatron-Core places the layers as given (checked at load)
    where = "(megatron/training/arguments.py, validate_args)"
    if par.schedule == Schedule.INTERLEAVED and par.virtual_stages > 1:
        if layers % par.pp:
            found.append(f"model.layers {layers} do not divide over pp {par.pp} stages: Megatron-LM "
                         f"refuses interleaving then {where}{_slots_note(layers, par)}")
        elif (layers // par.pp) % par.virtual_stages:
            found.append(f"parallelism.virtual_stages {par.virtual_stages} does not divide the "
                         f"{layers // par.pp} layers per stage: Megatron-LM refuses this layout "
                         f"{where}")
    elif layers % par.pp:
        found.append(f"model.layers {layers} do not divide over pp {par.pp} stages: Megatron-LM "
                     "refuses this unless --decoder-first/last-pipeline-num-layers set the uneven "
                     f"stages {where}")
    return found


def flush_warnings(scenario: Scenario) -> list[str]:
    """``pipeline_flushes`` without a pipeline (no effect), or under a Megatron-family stack,
    whose schedule runs every microbatch of the step in one (``forward_backward_func``)."""
    par = scenario.parallelism
    if par.pipeline_flushes == 1:
        return []
    if par.pp == 1:
        return [f"parallelism.pipeline_flushes {par.pipeline_flushes} has no effect with pp 1 (there is no "
                "pipeline to fill and drain; sharding.reduce_every_microbatch sets how often gradients sync)"]
    if _megatron_family(scenario):
        return [f"parallelism.pipeline_flushes {par.pipeline_flushes}: Megatron-LM runs one pipeline "
                "schedule over every microbatch of a step (forward_backward_func); several schedules a "
                "step are torch.distributed.pipelining's under gradient accumulation (torchtitan, "
                "NeMo AutoModel)"]
    return []


def _slots_note(layers: int, par) -> str:
    """How Megatron-LM accepts ``layers`` anyway: ``--account-for-embedding-in-pipeline-split``
    and ``--account-for-loss-in-pipeline-split`` count the embedding and the loss as layers
    (``num_layers += 1`` each before the divisibility checks), and clustersim's own split puts
    one layer fewer in the first and the last chunk, as that accounting does."""
    slots = layers + 2
    if slots % (par.pp * par.virtual_stages):
        return ""
    return (f", unless --account-for-embedding-in-pipeline-split and "
            f"--account-for-loss-in-pipeline-split count the embedding and the loss as layers "
            f"({slots} slots divide over {par.pp * par.virtual_stages} chunks; clustersim's split "
            f"matches that)")


def _megatron_family(scenario: Scenario) -> bool:
    stack = scenario.training.stack
    name = stack if isinstance(stack, str) else stack.name
    return name.startswith(MEGATRON_STACKS)
