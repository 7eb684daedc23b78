"""``clustersim init``: a commented starter scenario that loads and runs.

The layout is chosen, not guessed: of the layouts with tensor parallelism inside a server
and power-of-two pipeline stages, the first (least model parallelism, then selective before
full recompute) whose every stage fits in the GPU's memory by :mod:`simulator.workload.memory`.
When none fits, the one that needs the least memory is written and the reason said.
The text is validated by the scenario loader before it is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from simulator.config import HardwareLibrary, scenario_from_text
from simulator.config.hardware import LinkKind
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, ParallelismConfig, Recompute, TrainingConfig
from simulator.errors import ConfigError, UsageError
from simulator.workload.memory import layer_split, stage_memory

DEFAULT_PRESET = "llama3-8b"
DEFAULT_NODE = "dgx-h100"


@dataclass(frozen=True)
class Layout:
    """A candidate layout and the memory its most loaded stage needs (bytes)."""

    tp: int
    pp: int
    dp: int
    recompute: Recompute
    microbatches: int
    memory: float


def choose_layout(model: ModelConfig, gpus_per_node: int, gpus: int, capacity: float) -> Layout:
    """The first layout (see module docstring) that fits in ``capacity`` bytes per GPU, else
    the one that needs the least memory."""
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= gpus_per_node and gpus_per_node % t == 0
           and model.heads % t == 0]
    pps = [p for p in (1, 2, 4, 8, 16, 32, 64, 128) if p <= model.layers]
    candidates = sorted(((t * p, p, t, r) for t, p, r in product(tps, pps, (Recompute.SELECTIVE,
                                                                              Recompute.FULL))
                         if gpus % (t * p) == 0), key=lambda c: (c[0], c[1], c[3] != Recompute.SELECTIVE))
    if not candidates:
        raise UsageError(f"no layout of {gpus} GPUs suits {model.preset}: tp must divide "
                         f"model.heads ({model.heads}) and the {gpus_per_node} GPUs of a server")
    best = None
    for _, pp, tp, recompute in candidates:
        layout = _measure(model, tp, pp, gpus // (tp * pp), recompute)
        if layout.memory <= capacity:
            return layout
        best = layout if best is None or layout.memory < best.memory else best
    return best


def _measure(model: ModelConfig, tp: int, pp: int, dp: int, recompute: Recompute) -> Layout:
    microbatches = max(8, 4 * pp)
    training = TrainingConfig(global_batch=dp * microbatches, micro_batch=1)
    par = ParallelismConfig(tp=tp, pp=pp, dp=dp, sequence_parallel=tp > 1, recompute=recompute)
    split = layer_split(model.layers, pp)
    memory = max(stage_memory(model, training, par, i, n, dp, i == 0, i == pp - 1,
                              microbatches).total for i, n in enumerate(split))
    return Layout(tp, pp, dp, recompute, microbatches, memory)


def starter_scenario(preset: str, node: str, nodes: int,
                     library: HardwareLibrary | None = None) -> tuple[str, Layout, float]:
    """(YAML text, chosen layout, GPU memory in bytes) of a starter scenario.

    Raises
    ------
    UsageError
        Unknown preset or node, or no layout possible.
    """
    library = library or HardwareLibrary()
    if preset not in MODEL_PRESETS:
        raise UsageError(f"--preset: unknown preset '{preset}'; known: {', '.join(MODEL_PRESETS)}")
    try:
        spec = library.node(node)
        capacity = library.gpu(spec.gpu).hbm_capacity_bytes
    except ConfigError as exc:
        raise UsageError(f"--node: {exc.message}") from None
    model = ModelConfig(preset=preset, **MODEL_PRESETS[preset])
    layout = choose_layout(model, spec.gpus, spec.gpus * nodes, capacity)
    chips = library.link(spec.nic_link).kind == LinkKind.ICI    # TPU: a chip-level torus
    text = render(preset, node, nodes, spec.gpus, layout, capacity, chips)
    scenario_from_text(text, "<starter>", library)      # it loads, or this is a bug
    return text, layout, capacity


def render(preset: str, node: str, nodes: int, gpus_per_node: int, layout: Layout,
           capacity: float, chip_torus: bool = False) -> str:
    """The commented YAML of the starter scenario (``chip_torus``: a torus of the nodes'
    chips over their own links, for TPU nodes)."""
    gib, gpus = 2**30, nodes * gpus_per_node
    fits = "fits" if layout.memory <= capacity else "does NOT fit: more nodes or pp/tp needed"
    lines = [
        ("name", f"{preset}-{gpus}x{node}", ""),
        ("description", f"Starter scenario ({preset}, {nodes} x {node}); edit it to your run.", ""),
        ("cluster", "", ""),
        ("  node", node, "a node spec: `clustersim specs` lists them"),
        ("  nodes", nodes, ""),
        ("  fabric", "", ""),
        *([("    topology", "torus", "the chips' own ICI links, most square 2-D unless "
                                    "torus_dims is given"),
           ("    chip_torus", "true", "one chip per node: cluster.nodes counts chips")]
          if chip_torus else
          [("    topology", "fat-tree", "fat-tree | rail-optimized | single-switch | torus")]),
        ("model", "", ""),
        ("  preset", preset, "`clustersim presets` lists them; a key here overrides one"),
        ("training", "", ""),
        ("  global_batch", layout.dp * layout.microbatches,
         f"sequences per step = micro_batch x dp x {layout.microbatches} microbatches"),
        ("  micro_batch", 1, ""),
        ("  dtype", "bf16", "fp32 | bf16 | fp16 | fp8"),
        ("  stack", "megatron-core", "how the framework shards and reduces: docs/stacks.md"),
        ("parallelism", "", ""),
        ("  tp", layout.tp, "tensor parallel, inside a server"),
        ("  pp", layout.pp, "pipeline stages"),
        ("  dp", layout.dp, f"data parallel: tp x pp x dp = {gpus} GPUs"),
        ("  sequence_parallel", str(layout.tp > 1).lower(), ""),
        ("  schedule", "1f1b", "gpipe | 1f1b | interleaved-1f1b (with virtual_stages)"),
        ("  zero_stage", 1, "0 to 3 (1: Megatron's distributed optimizer)"),
        ("  recompute", layout.recompute.value, "none | selective | full"),
        ("collectives", "", ""),
        ("  algorithm", "auto", "or ring, tree, nvls...; per collective: {all_reduce: ring}"),
        ("simulate", "", ""),
        ("  engine", "analytical", "des: discrete-event replay (with steps and noise, a p99)"),
    ]
    body = []
    for key, value, comment in lines:
        text = f"{key}: {value}".rstrip() if value != "" else f"{key}:"
        body.append(f"{text:<31} # {comment}" if comment else text)   # a space before "#": a comment
    header = [
        f"# Starter scenario written by `clustersim init`: {preset} on {nodes} x {node}.",
        "# Every key is documented in docs/scenario_format.md. Then:",
        "#   clustersim check THIS_FILE     facts and a memory check",
        "#   clustersim run THIS_FILE       one training step: time, MFU, memory",
        "# Layout: the least model parallelism whose memory estimate fits the GPU; about",
        f"# {layout.memory / gib:.1f} GiB per GPU of {capacity / gib:.1f} GiB ({fits}).",
    ]
    return "\n".join(header + body) + "\n"
