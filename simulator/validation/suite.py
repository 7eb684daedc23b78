"""Every shipped validation set, replayed into one table (``clustersim validate``).

A set is a callable ``run(root) -> DataFrame`` with one row per published measurement and the
columns of :data:`COLUMNS`: ``set``, ``row`` (the row's id inside its set), ``description``,
``scenario`` (the file that encodes it, relative to ``root``), ``metric``, ``measured``,
``predicted``, ``error`` (predicted / measured - 1), ``scored`` (the row counts towards the
set's MAPE and max |error|), ``gpu`` (GPU spec used), ``stack`` (stack profile used) and
``notes``. The sets (:data:`SETS`):

- ``megatron_sc21``: Megatron-LM SC21 Table 1, hardware TFLOP/s per GPU (:mod:`.megatron`).
- ``nccl``: nccl-tests / rccl-tests logs, busbw per message size (:mod:`.nccl_suite`); scored
  rows are the sizes >= 64 MiB, the ones with a busbw target.
- ``torchtitan``: torchtitan FSDP2 benchmarks (validation/torchtitan_fsdp.csv), tokens/s per GPU.
- ``torchtitan_memory``: the same benchmarks' peak memory per GPU (validation/torchtitan_memory.csv).
- ``megatron_memory``: the MI325X training logs' memory reports (validation/megatron_memory_mi325x.csv):
  the resident state and the first step's peak from Megatron's ``report_memory``, and the device
  memory in use at steady state, GiB (:mod:`.training_memory`).
- ``megatron_bridge_cards_memory``: Megatron-Bridge's verification cards' peak allocated memory over
  a run (validation/megatron_bridge_cards_memory.csv): the hybrid Nemotron 3.5 Lightning on 16 H100
  and 8 GB200 and Nemotron 3 Super on 64 H100, GiB.
- ``nemo``: NeMo 24.07 performance summary (validation/nemo_h100.csv), tokens/s per GPU.
- ``nemo_more``: the eight other pre-training rows of the same NeMo 24.07 table (GPT-3 5B and
  20B, Llama 2 7B to 70B, Nemotron 8B to 340B; validation/nemo_h100_more.csv), tokens/s per GPU.
- ``llama3_paper``: the Llama 3 paper's Table 4 rows of Llama 3 405B on 8,192 and 16,384 H100,
  at sequence 8K and (CP 16) 128K (validation/llama3_paper_table4.csv), model TFLOP/s per GPU
  in PaLM's count.
- ``nemo_long_context``: NeMo 24.03's long-sequence table, Llama 2 7B FP8 on 4 to 1,024 H100
  with context parallelism (validation/nemo_long_context_h100.csv), model TFLOP/s per GPU.
- ``megatron_bridge``: Megatron-Bridge's 25.11 DGX-H100 dense Llama rows
  (validation/megatron_bridge_h100.csv), tokens/s per GPU.
- ``bloom``: BigScience's BLOOM 176B step on 384 A100 (validation/bloom_a100.csv), tokens/s per
  GPU: the DeepSpeed check.
- ``mlperf_gpt3``: NVIDIA's MLPerf Training v4.0 GPT-3 175B step on 512, 10,752 and 11,616 H100
  (validation/mlperf_gpt3_h100.csv), tokens/s per GPU: the 10,000+ GPU check.
- ``mlperf_gpt3_v31``: NVIDIA's and Azure's MLPerf Training v3.1 GPT-3 175B step on 512 to 10,752
  H100 (validation/mlperf_gpt3_v31.csv), tokens/s per GPU.
- ``mlperf_gpt3_v41``: NVIDIA's MLPerf Training v4.1 GPT-3 175B step on 64 B200 and 256-512 H100
  (validation/mlperf_gpt3_v41.csv), tokens/s per GPU.
- ``mlperf_gpt3_oci``: Oracle's MLPerf Training v4.1 GPT-3 175B step on 1,536 and 3,072 H100 over
  RoCE (validation/mlperf_gpt3_oci.csv), tokens/s per GPU.
- ``primus_mi325x``: Primus-Megatron and Megatron-LM logs of Llama 2 7B and 70B, Llama 3.1 70B and
  Mixtral 8x7B on AMD MI325X (validation/primus_mi325x.csv, validation/training_logs), tokens/s per GPU.
- ``megatron_mi300x``: a ROCm Megatron-LM run of Llama 2 7B in FP8 on one server of 8 AMD MI300X
  (validation/megatron_mi300x.csv), tokens/s per GPU: the MI300X training check.
- ``mlperf_llama31_405b``: NVIDIA's MLPerf Training v5.0 Llama 3.1 405B step on 512 to 8,192 H100
  (validation/mlperf_llama31_405b_h100.csv), tokens/s per GPU.
- ``megatron_bridge_b200``: the same table's DGX-B200 dense Llama rows
  (validation/megatron_bridge_b200.csv), tokens/s per GPU: the Blackwell check.
- ``dgxc_nemotron``: NVIDIA's DGX Cloud benchmarking recipes for Nemotron4 15B (NeMo 24.12, BF16
  and FP8 on 16 to 2,048 H100) and 340B (NeMo 24.09, FP8 on 128 to 2,048), release v25.02.01:
  weak-scaling curves
  (validation/dgxc_nemotron_h100.csv), tokens/s per GPU.
- ``dgxc_llama31``: the same release's Llama 3.1 recipes (NeMo 24.12): 8B, 70B and 405B (and the
  405B's 7-, 21- and 42-layer proxies), BF16 and FP8, with context parallelism 2, on 8 to 2,304
  H100 (validation/dgxc_llama31_h100.csv), tokens/s per GPU.
- ``dgxc_gpt3``: the same release's GPT-3 175B recipe (NeMo 24.12), BF16 and FP8 on 128 to
  2,048 H100 (validation/dgxc_gpt3_h100.csv), tokens/s per GPU.
- ``dgxc_grok1``: the same release's Grok-1 314B recipe (NeMo 24.12; mixture of experts, 8
  experts, top 2, expert parallel 8), BF16 and FP8 on 32 to 2,048 H100, with the recipe's
  smaller proxies below 512 GPUs (validation/dgxc_grok1_h100.csv), tokens/s per GPU.
- ``fms_fsdp``: IBM's fms-fsdp README benchmarks: PyTorch FSDP1 (HSDP for 7B, full sharding with
  full recompute for 34B and 70B), eager and torch.compile, Llama 2 on 128 A100 and 96 H100
  (validation/fms_fsdp.csv), tokens/s per GPU.
- ``olmo_core``: Ai2's OLMo-core README throughput table: PyTorch FSDP2 with torch.compile and
  gradient accumulation, OLMo 1B-13B and a Llama 3 8B, BF16 and torchao FP8, on one 8-GPU H100
  server (validation/olmo_core.csv), tokens/s per GPU.
- ``mlperf_llama31_405b_gb200``: MLPerf Training v5.0 Llama 3.1 405B on GB200 NVL72 racks (NVIDIA's
  Tyche on 256 and 512 GPUs, CoreWeave's Carina on 512 to 2,496;
  validation/mlperf_llama31_405b_gb200.csv), tokens/s per GPU: the GB200 check.
- ``megatron_core_scaling``: the Megatron-LM README's H100 scaling runs (Megatron-Core r0.8.0):
  GPT 1.7B to 462B on 48 to 6,144 GPUs and the 177B strong-scaling end points at 96 and 4,608
  (validation/megatron_core_scaling.csv), model TFLOP/s per GPU in Megatron's count.
- ``megatron_selective``: Korthikanti et al. 2022's Megatron-LM runs of GPT 22B to 1T on 8 to 512
  A100 (Selene, data-parallel size 1), full recompute against sequence parallelism with selective
  recompute (validation/megatron_selective_a100.csv), tokens/s per GPU.
- ``sc21_ptd`` and ``sc21_zero3``: SC21 Table 2, Megatron-LM's PTD-P 530B strong scaling on 560
  to 2,240 A100 and DeepSpeed ZeRO-3 (2021) without model parallelism, GPT 175B and 530B on 384
  to 2,240 A100 (validation/sc21_ptd_a100.csv, validation/sc21_zero3_a100.csv), tokens/s per
  GPU from the table's TFLOP/s.
- ``megascale_megatron``: MegaScale's (Jiang et al., NSDI '24) Megatron-LM baseline, GPT 175B
  at a held batch on 256 to 1,024 and 3,072 to 12,288 A100 over multi-rail RoCE, its ablation's
  baseline on 256, and GPT 530B with the batch equal to the GPUs on 2,240 to 11,200
  (validation/megascale_megatron_a100.csv), tokens/s per GPU.
- ``mlperf_v51_llama31``: MLPerf Training v5.1 (NeMo, FP8): Llama 3.1 8B on 8 to 256 B200 (four
  submitters), 72 and 512 GB200 (NVIDIA) and 64 and 128 H100 over Ethernet (Cisco), Llama 3.1
  405B on 256 and 448 B200 (University of Florida) and 512 and 1,024 H200 (Nebius); Dell's 8B on 8
  B300; AMD's implementation of the 8B on one server of 8 MI355X (four submitters) or MI350X (two)
  (validation/mlperf_v51_llama31.csv), tokens/s per GPU from the logged step times or throughput.
- ``megatron_bridge_2604``: Megatron-Bridge's 26.04.01 tables (the performance archive): Llama 3 70B
  on 64 H100, Llama 3.1 405B on 1,024 H100 and on 256 GB200 without context parallelism, FP8
  current scaling; the GB200 MXFP8 and NVFP4 rows of both models
  (validation/megatron_bridge_2604.csv), tokens/s per GPU.
- ``megatron_bridge_2604_moe``: the same tables' mixtures of experts: on H100 Qwen3 30B-A3B on 16
  and Qwen3 235B-A22B on 256 GPUs, FP8 current scaling; the 30B on one 8-GPU GB300, GB200, B300 and
  B200 node and the 235B on 256 of each (GB300, GB200, B300, B200), MXFP8; GPT-OSS 120B on 64 of
  each and of H100, BF16; Kimi K2 on 256 GB300 with the Muon optimizer, MXFP8; the hybrid Nemotron
  3 Nano (Mamba-2, attention and MoE layers) on one 8-GPU GB300, GB200, B300 and B200 node, MXFP8,
  and on 16 H100, FP8 current scaling; the hybrid latent MoE Nemotron 3 Super on 64 of each Blackwell
  GPU, MXFP8 (validation/megatron_bridge_2604_moe.csv), tokens/s per GPU.
- ``megatron_bridge_gptoss_pair``: Megatron-Bridge PR #3561's A/B of GPT-OSS 120B on 64 GB200 (the
  26.04 V2 config): BF16 and MXFP8, each with the alltoall and the HybridEP dispatcher, model
  TFLOP/s converted with Bridge's FLOP count (validation/megatron_bridge_gptoss_pair.csv), tokens/s
  per GPU: the same-config MXFP8/BF16 pair.
- ``megatron_bridge_2606_moe``: the 26.06 tables' Qwen3 rows on Blackwell, the same models, GPUs
  and layouts with 26.06's MXFP8 additions (the all-to-all overlap, TransformerEngine's fused
  grouped MLP, MXFP8 attention, full-iteration CUDA graphs), its DeepSeek-V3 on 256 GB300
  and GB200 and its GPT-OSS 120B on 64 GB300 and GB200 (validation/megatron_bridge_2606_moe.csv),
  tokens/s per GPU.
- ``megatron_bridge_2608``: the 26.08 table (the performance summary at 067f987df), all MXFP8:
  DeepSeek-V3 on 256 GB300 and GB200, GPT-OSS 120B on 64 GB300 and GB200, Qwen3 30B-A3B on one
  8-GPU GB300 and GB200 node and Qwen3 235B-A22B on 256 of each, the hybrid Nemotron 3 Nano on 8
  GB300, Nemotron 3.5 Lightning on 8 GB200 and Nemotron 3 Super on 64 GB300 and GB200
  (validation/megatron_bridge_2608.csv), tokens/s per GPU.
- ``megatron_bridge_dsv3``: the tables' DeepSeek-V3 on 256 B200 and GB200 (25.09 and 25.11), on
  1,024 H100 with DeepEP (25.09) and on 256 GB300, GB200, B300 and B200 (26.04.01), FP8 current
  scaling and MXFP8 (validation/megatron_bridge_dsv3.csv), tokens/s per GPU.
- ``megatron_moe_recipes``: Megatron-LM's MoE recipe index (examples/moe_recipes, dev), Qwen3
  30B-A3B and 235B-A22B and DeepSeek-V3 on 16-256 H100, B200, B300, GB200 and GB300 with and
  without CUDA graphs (validation/megatron_moe_recipes.csv), model TFLOP/s per GPU in Megatron-LM's
  2026 count (:mod:`.megatron_flops`).
- ``megatron_bridge_cards``: Megatron-Bridge's model verification cards (2026-07/08): Qwen3
  30B-A3B on 16 H100, DeepSeek-V3 on 1,024 H100, GPT-OSS 120B on 64 GB300 and the 30B's weak
  scaling on 8-256 GB300; the hybrid Nemotron 3 Super on 64 H100 and 64 GB200 and Nemotron 3.5
  Lightning on 16 H100 and 8 GB200, BF16 (validation/megatron_bridge_cards.csv), tokens/s per GPU.
- ``megatron_bridge_ep_overlap``: Megatron-Bridge PR #5094's A/B of the all-to-all overlap alone,
  Qwen3 30B-A3B on 16 H100 with HybridEP, overlap off and on
  (validation/megatron_bridge_ep_overlap.csv), tokens/s per GPU.
- ``megatron_bridge_gb300``: the 26.04.01 tables' GB300 rows without Megatron FSDP or CPU
  offloading: Llama 3.1 405B on 256 GPUs (FP8 current scaling, MXFP8, NVFP4) and Llama 3 70B on 64
  (MXFP8, NVFP4) (validation/megatron_bridge_gb300.csv), tokens/s per GPU.
- ``megatron_bridge_fsdp``: the tables' Megatron FSDP rows with CPU activation offloading: Llama 3 70B
  on 64 GB300 and 64 GB200 (26.04.01, global batch 256; 25.11, global batch 128) and Llama 3.1 405B
  on 128 GB300 and 128 GB200 at tp 2 (25.11), FP8 current scaling
  (validation/megatron_bridge_fsdp.csv), tokens/s per GPU.
- ``flagperf_deepspeed``: BAAI FlagPerf's DeepSpeed 0.11.1 ZeRO-3 Llama 2 7B (Hugging Face
  transformers, eager, no recompute) on one server of 8 A800 (three batch settings) or 8 H800,
  the export parts with 400 GB/s NVLink (validation/flagperf_deepspeed.csv), tokens/s per GPU.
- ``flagperf_megatron``: the same suite's Megatron-Core 0.6 Llama 3 at a batch of 512 x 8,192:
  the 8B in five layouts on one DGX A800 (tp, pp and dp from 1 to 8) and at tp 2 on 8 and 16 H100
  in BF16 and FP8, the 70B on 64 H100 (validation/flagperf_megatron.csv), tokens/s per GPU.
- ``mlperf_v60``: MLPerf Training v6.0 (NeMo / Megatron-Bridge 26.04, MXFP8 and NVFP4): DeepSeek-V3
  671B on 256 to 8,192 GB300 (NVIDIA, CoreWeave) and on 256 to 8,192 GB200 (NVIDIA, Google),
  GPT-OSS 20B on 8 to 512 GB300 and 72 GB200 in MXFP8, Llama 3.1 405B on 512 and 2,048 GB300 in
  NVFP4, Llama 3.1 8B on 16 H200 and 128 H100 in FP8 (Cisco) (validation/mlperf_v60.csv),
  tokens/s per GPU from the logged step times.
- ``automodel``: NeMo AutoModel's pre-training table on DGX-H100 (PyTorch FSDP2 with TransformerEngine
  kernels and DeepEP on Hugging Face models): Llama 3.1 70B on 64 GPUs with context parallelism 2,
  Qwen3 30B-A3B on 8, DeepSeek-V3 on 256 and the hybrid Nemotron 3 Nano and Super on 8 and 64 with
  expert parallelism and the benchmarks' round-robin fake gate, BF16 (validation/automodel_h100.csv),
  tokens/s per GPU.
- ``megatron_moe_layer``: Megatron-LM's MoE layer benchmark (``tests/functional_tests/test_cases/common/
  moe_perf``, baseline of 2025-12-17): one MoE layer of a Mixtral and a DeepSeek proxy on one DGX
  H100 (ep 8, 4,096 tokens per GPU) with the alltoall, DeepEP and HybridEP dispatchers in BF16 and
  FP8 blockwise (validation/megatron_moe_layer_h100.csv), the layer's forward and backward time in
  ms (:mod:`.layer_times`; error > 0: the model is slower than measured).
- ``stragglers``: ByteDance's straggler traces: job slowdown, median step and p99/p50
  (:mod:`.stragglers`).

Every set uses the same hardware library: one set of constants per GPU, never fitted per set
or per row. The issue's target for each set is MAPE <= 8% and max |error| <= 15%
(:data:`TARGET_MAPE`, :data:`TARGET_MAX`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from simulator.config import HardwareLibrary, load_scenario, resolve_cluster
from simulator.config.stack import DEFAULT_STACK
from simulator.config.yaml_io import did_you_mean, read_yaml_mapping
from simulator.errors import ConfigError, UsageError
from simulator.pipeline import run_scenario
from simulator.units import format_bytes
from simulator.validation import megatron, nccl_suite, training_memory
from simulator.validation.layer_times import layer_seconds
from simulator.validation.megatron_flops import megatron_flops_per_token
from simulator.validation.training_memory import predicted_bytes
from simulator.workload.params import parameter_count

COLUMNS = ["set", "row", "description", "scenario", "metric", "measured", "predicted", "error",
           "scored", "gpu", "stack", "notes"]
TARGET_MAPE = 0.08
TARGET_MAX = 0.15
TOKENS = "tokens/s per GPU"
MEMORY = "peak memory per GPU (GiB)"
NEMO_TFLOPS = "model TFLOP/s per GPU (NeMo's count)"
PALM_TFLOPS = "model TFLOP/s per GPU (PaLM's count)"
MEGATRON_TFLOPS = "model TFLOP/s per GPU (Megatron's count)"
MEGATRON_2026_TFLOPS = "model TFLOP/s per GPU (Megatron-LM's 2026 count)"


def counted_tflops(per_token: Callable) -> Callable:
    """``predicted_of`` for a set published in model TFLOP/s per GPU: the predicted tokens/s per
    GPU times the set's own FLOP count per token ``per_token(model)``, in TFLOP/s."""
    return lambda result, model: result.tokens_per_s / result.gpus * per_token(model) / 1e12


def _as_measured(row) -> float:
    """A row's published figure as the CSV gives it."""
    return float(row.measured)


class TokenRows(NamedTuple):
    """A throughput set's published rows as tokens/s per GPU: ``validation/<csv>``, whose
    row ``i`` ``validation/scenarios/<set>/index.csv`` maps to its scenario; ``measured_of(row)``
    the published figure, and for a set published in model FLOP/s ``per_token(model)`` its own
    FLOP count per token, which divides it (the count its comparison multiplies the predicted
    tokens/s by, so the error is unchanged); None for a set published in tokens/s."""

    csv: str
    measured_of: Callable = _as_measured
    per_token: Callable | None = None


@dataclass(frozen=True)
class ValidationSet:
    """One validation set: its name, a title with the source, its metric and its runner."""

    name: str
    title: str
    metric: str
    run: Callable[[Path], pd.DataFrame]
    curves: bool = False
    """Whether its rows form scaling curves, weak or at a held batch
    (:mod:`simulator.validation.curves`)."""
    token_rows: TokenRows | None = None
    """How its rows read as tokens/s per GPU (every throughput set), which
    :mod:`simulator.calibrate.rows` reads to calibrate against it."""


def default_root() -> Path:
    """The checkout that holds ``validation/``: this package's source tree, else the cwd.

    Raises
    ------
    UsageError
        When neither has a ``validation/`` folder (e.g. an installed wheel run elsewhere).
    """
    for candidate in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (candidate / "validation").is_dir():
            return candidate
    raise UsageError("no validation/ folder here or next to the simulator package; run from a "
                     "clustersim source checkout")


def run_validation(root: Path | None = None, names: Sequence[str] | None = None) -> pd.DataFrame:
    """Run the sets ``names`` (default: all, in :data:`SETS` order) and stack their rows."""
    root = Path(root) if root is not None else default_root()
    wanted = list(names) if names else list(SETS)
    for name in wanted:
        if name not in SETS:
            raise UsageError(f"unknown validation set '{name}'{did_you_mean(name, SETS)}; "
                             f"known: {', '.join(SETS)}")
    order = [name for name in SETS if name in wanted]
    frames = [SETS[name].run(root) for name in order]
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per set: rows, scored rows, MAPE and max |error| over the scored rows, target met."""
    records = []
    for name, rows in frame.groupby("set", sort=False):
        errors = rows.loc[rows["scored"], "error"].abs()
        mape, worst = float(errors.mean()), float(errors.max())
        records.append({"set": name, "title": SETS[name].title, "metric": SETS[name].metric,
                        "rows": len(rows), "scored": len(errors), "mape": mape, "max_abs_error": worst,
                        "meets_target": bool(mape <= TARGET_MAPE and worst <= TARGET_MAX)})
    return pd.DataFrame(records)


class Facts(NamedTuple):
    """What a row's scenario uses: GPU spec name, stack label, model section."""

    gpu: str
    stack: str
    model: object


def scenario_facts(path: Path, library: HardwareLibrary) -> Facts:
    """GPU spec, stack label and model of the scenario at ``path``.

    The stack label is the profile name with the scenario's overrides as ``section.key=value``
    (``torchtitan + kernels.fused_elementwise=false``); ``-`` for a cluster-only scenario.
    """
    scenario = load_scenario(path, library)
    gpu = resolve_cluster(scenario.cluster, library).gpu.name
    if scenario.training is None:
        return Facts(gpu, "-", None)
    raw = (read_yaml_mapping(path).get("training") or {}).get("stack", f"{DEFAULT_STACK} (default)")
    if not isinstance(raw, dict):
        return Facts(gpu, str(raw), scenario.model)
    if "name" in raw and "base" not in raw:
        return Facts(gpu, f"{raw['name']} (inline profile)", scenario.model)
    overrides = [f"{key}={value}" for key, value in _flatten({k: v for k, v in raw.items() if k != "base"})]
    return Facts(gpu, " + ".join([str(raw.get("base", DEFAULT_STACK)), *overrides]), scenario.model)


def _flatten(mapping: dict, prefix: str = "") -> list[tuple[str, object]]:
    pairs = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            pairs += _flatten(value, f"{prefix}{key}.")
        else:
            pairs.append((f"{prefix}{key}", str(value).lower() if isinstance(value, bool) else value))
    return pairs


def _megatron(root: Path) -> pd.DataFrame:
    """SC21 Table 1 through :func:`simulator.validation.megatron.replay`."""
    table = megatron.replay(root / "validation" / "megatron_sc21_table1.csv", root / "scenarios")
    library, rows = HardwareLibrary(), []
    for r in table.itertuples():
        path = root / "scenarios" / f"sc21-{r.model.lower()}.yaml"
        gpu, stack, _ = scenario_facts(path, library)
        rows.append({"set": "megatron_sc21", "row": r.model,
                     "description": f"GPT {r.model}, {r.gpus} GPUs, tp {r.tp} x pp {r.pp} x dp {r.dp}",
                     "scenario": _relative(path, root), "metric": "hardware TFLOP/s per GPU",
                     "measured": r.measured_tflops, "predicted": r.predicted_tflops, "error": r.error,
                     "scored": True, "gpu": gpu, "stack": stack,
                     "notes": f"bubble {r.bubble_fraction:.1%}, step {r.step_time_s:.2f} s"})
    return pd.DataFrame(rows)


def _nccl(root: Path) -> pd.DataFrame:
    """Every nccl-tests log with a scenario; busbw rows >= 64 MiB are scored."""
    folder = root / "validation" / "nccl_tests"
    table = nccl_suite.replay(folder)
    library = HardwareLibrary()
    gpus = {stem: scenario_facts(folder / "scenarios" / f"{stem}.yaml", library).gpu
            for stem in table["log"].unique()}
    return pd.DataFrame([_nccl_row(r, gpus[r.log], _relative(folder / "scenarios" / f"{r.log}.yaml", root))
                         for r in table.itertuples()])


def _nccl_row(r, gpu: str, scenario: str) -> dict:
    timed = r.target.startswith("time")
    met = {True: "met", False: "not met"}.get(r.meets_target)
    target = f"target {r.target}: {met}" if met else "no target"
    return {"set": "nccl", "row": format_bytes(r.size_bytes), "description": r.log,
            "scenario": scenario, "metric": "time (us)" if timed else "busbw (GB/s)",
            "measured": r.measured_time_s * 1e6 if timed else r.measured_busbw_GBps,
            "predicted": r.predicted_time_s * 1e6 if timed else r.predicted_busbw_GBps,
            "error": r.time_ratio - 1.0 if timed else r.busbw_error,
            "scored": r.target.startswith("busbw"), "gpu": gpu, "stack": "-",
            "notes": f"{r.algorithm}/{r.protocol}; {target}"}


def _torchtitan(root: Path) -> pd.DataFrame:
    return _indexed(root, "torchtitan", "torchtitan_fsdp.csv", lambda row: float(row.measured),
                    lambda row, result, model: f"{row.set}; step {result.step_time_s:.2f} s")


def _torchtitan_memory(root: Path) -> pd.DataFrame:
    """Peak memory per GPU of the rows ``validation/torchtitan_memory.csv`` names (GiB)."""
    data = pd.read_csv(root / "validation" / "torchtitan_memory.csv")
    folder = root / "validation" / "scenarios" / "torchtitan"
    index = _read_index(folder / "index.csv", len(pd.read_csv(root / "validation" / "torchtitan_fsdp.csv")))
    library, rows = HardwareLibrary(), []
    for entry in index[index["row"].isin(data["row"])].itertuples():
        path = folder / entry.scenario
        facts = scenario_facts(path, library)
        result = run_scenario(path, library=library)
        measured = float(data.loc[data["row"] == entry.row, "measured_gib"].iloc[0])
        predicted = result.memory_per_gpu_bytes / 2**30
        rows.append({"set": "torchtitan_memory", "row": str(entry.row), "description": entry.description,
                     "scenario": _relative(path, root), "metric": MEMORY, "measured": measured,
                     "predicted": predicted, "error": predicted / measured - 1.0, "scored": True,
                     "gpu": facts.gpu, "stack": facts.stack,
                     "notes": f"capacity {result.memory_capacity_bytes / 2**30:.0f} GiB"})
    return pd.DataFrame(rows)


def _megatron_memory(root: Path) -> pd.DataFrame:
    """The MI325X training logs' memory figures (``validation/megatron_memory_mi325x.csv``, GiB)
    against the model's (:mod:`simulator.validation.training_memory`): three per log."""
    return _memory_rows(root, "megatron_memory", "megatron_memory_mi325x.csv", "primus_mi325x")


def _cards_memory(root: Path) -> pd.DataFrame:
    """Megatron-Bridge's verification cards' peak allocated memory
    (``validation/megatron_bridge_cards_memory.csv``, GiB) against the model's; the scenarios are
    the ``megatron_bridge_cards`` set's."""
    return _memory_rows(root, "megatron_bridge_cards_memory", "megatron_bridge_cards_memory.csv",
                        "megatron_bridge_cards")


def _memory_rows(root: Path, name: str, csv_name: str, folder_name: str) -> pd.DataFrame:
    """Set ``name``'s rows from ``validation/<csv_name>`` (row, scenario, what, quantity,
    measured_gib, source, notes, and a log where one is read), GiB, each against
    :func:`~simulator.validation.training_memory.predicted_bytes` of its scenario in
    ``validation/scenarios/<folder_name>``, run once however many rows name it."""
    data = pd.read_csv(root / "validation" / csv_name)
    folder = root / "validation" / "scenarios" / folder_name
    library, rows, runs = HardwareLibrary(), [], {}
    for r in data.itertuples():
        path = folder / r.scenario
        if r.scenario not in runs:
            runs[r.scenario] = (load_scenario(path, library), run_scenario(path, library=library),
                                scenario_facts(path, library))
        scenario, result, facts = runs[r.scenario]
        predicted = predicted_bytes(r.quantity, scenario, scenario.training.stack, result) / 2**30
        where = " ".join(str(x) for x in (getattr(r, "log", ""), r.source.split(":")[0]) if x)
        rows.append({"set": name, "row": str(r.row), "description": f"{r.what}: {r.quantity}",
                     "scenario": _relative(path, root), "metric": training_memory.METRICS[r.quantity],
                     "measured": float(r.measured_gib), "predicted": predicted,
                     "error": predicted / float(r.measured_gib) - 1.0, "scored": True,
                     "gpu": facts.gpu, "stack": facts.stack, "notes": f"{r.notes}; {where}"})
    return pd.DataFrame(rows)


def _nemo(root: Path) -> pd.DataFrame:
    return _indexed(root, "nemo", "nemo_h100.csv", _nemo_tokens, _nemo_notes)


def _nemo_tokens(row) -> float:
    """tokens/s per GPU, which the NeMo CSV gives in its notes (``tokens/s/GPU 726``)."""
    found = re.search(r"tokens/s/GPU\s+([0-9][0-9,]*(?:\.[0-9]+)?)", str(row.notes))
    if found is None:
        raise ConfigError(f"row {row.Index + 1} ({row.model}): no 'tokens/s/GPU N' in notes",
                          "validation/nemo_h100.csv", "notes")
    return float(found.group(1).replace(",", ""))


def _nemo_notes(row, result, model) -> str:
    per_token = nemo_flops_per_token(model)
    predicted = result.tokens_per_s / result.gpus * per_token / 1e12
    return (f"model TFLOP/s per GPU (NeMo's count, {per_token / 1e9:.1f} GFLOP/token): measured "
            f"{row.measured / 1e12:.0f}, predicted {predicted:.0f}; step {result.step_time_s:.2f} s")


def nemo_flops_per_token(model) -> float:
    """NeMo's "model FLOPs" per token (docs/research/stack_facts.md, section 1).

    ``l h^2 (12 + 12 g/a + c f/h + 12 s/h) + 6 V h`` with c = 18 for SwiGLU, 12 for GeLU:
    the attention score/context matmuls at full s^2 and the logit layer counted, forward and
    backward (NeMo ``FLOPsMeasurementCallback``, r2.0.0rc1; Megatron's
    ``num_floating_point_operations``). GPT-3 175B at s 2048: 1076.4 GFLOP.
    """
    layers, h, s = model.layers, model.hidden, model.seq_len
    mlp = 18.0 if model.mlp.value == "swiglu" else 12.0
    core = 12.0 + 12.0 * model.kv_heads / model.heads + mlp * model.ffn_hidden / h + 12.0 * s / h
    return layers * h * h * core + 6.0 * model.vocab * h


def _nemo_more(root: Path) -> pd.DataFrame:
    """The NeMo 24.07 rows the ``nemo`` set leaves out: tokens/s per GPU as published."""
    return _indexed(root, "nemo_more", "nemo_h100_more.csv", lambda row: float(row.measured),
                    lambda row, result, model: f"{_bridge_notes(row, result, model)}; "
                                               f"step {result.step_time_s:.2f} s{_fit_note(result)}")


def _step_set(name: str, csv_name: str):
    """The runner of a set compared as tokens/s per GPU with the measured step beside the
    predicted one (``validation/<csv_name>``): the DGX Cloud recipes' and llm-foundry's
    curves, the MLPerf result logs' training blocks, BLOOM's logged step."""
    return lambda root: _indexed(root, name, csv_name, lambda row: float(row.measured), _step_notes)


def _step_entry(name: str, title: str, csv_name: str | None = None, curves: bool = False) -> ValidationSet:
    """The entry of a :func:`_step_set` set ``name`` (its CSV ``validation/<name>_h100.csv``
    unless ``csv_name``): tokens/s per GPU, with its scaling curves in the report when
    ``curves``."""
    csv_name = csv_name or f"{name}_h100.csv"
    return ValidationSet(name, title, TOKENS, _step_set(name, csv_name), curves=curves,
                         token_rows=TokenRows(csv_name))


def _curve_entry(name: str, title: str) -> ValidationSet:
    """The entry of a curve set ``name`` (:func:`_step_entry` with its curves)."""
    return _step_entry(name, title, curves=True)


def _step_notes(row, result, model) -> str:
    """The measured step (seconds, from tokens/s per GPU) beside the predicted one."""
    measured_step = row.seq_len * row.global_batch / row.measured / row.gpus
    return f"measured step {measured_step:.3f} s, predicted {result.step_time_s:.3f} s{_fit_note(result)}"


def _fit_note(result) -> str:
    """``; predicted memory X GiB does not fit`` when the scenario's step does not fit."""
    if result.fits_in_memory:
        return ""
    return f"; predicted memory {result.memory_per_gpu_bytes / 2**30:.1f} GiB does not fit"


def _llama3_paper(root: Path) -> pd.DataFrame:
    """The Llama 3 paper's 405B rows: model TFLOP/s per GPU as published, against the
    predicted tokens/s per GPU times PaLM's FLOP count per token (:func:`palm_flops_per_token`)."""
    return _indexed(root, "llama3_paper", "llama3_paper_table4.csv",
                    lambda row: float(row.measured) / 1e12, _pipeline_notes,
                    metric=PALM_TFLOPS, predicted_of=counted_tflops(palm_flops_per_token))


def _pipeline_notes(row, result, model) -> str:
    """Predicted tokens/s per GPU, bubble and step (and memory when it does not fit)."""
    return (f"{_tokens_note(result)}; bubble {result.bubble_fraction:.1%}; step "
            f"{result.step_time_s:.2f} s{_fit_note(result)}")


def palm_flops_per_token(model) -> float:
    """PaLM's model FLOPs per token, ``6 N + 12 L H Q T`` (Chowdhery et al. 2023, "PaLM",
    JMLR, App. B): N parameters (embeddings included), L layers, H heads of size Q (H Q = the
    hidden size), T the sequence length; attention at full T^2. We read the Llama 3 paper's
    MFU as using it (docs/validation.md). Llama 3 405B at T = 8192: 2.638 TFLOP."""
    return 6.0 * parameter_count(model) + 12.0 * model.layers * model.hidden * model.seq_len



def _nemo_long_context(root: Path) -> pd.DataFrame:
    """NeMo's long-sequence table: model TFLOP/s per GPU as published, against the predicted
    tokens/s per GPU times NeMo's FLOP count per token (:func:`nemo_flops_per_token`)."""
    return _indexed(root, "nemo_long_context", "nemo_long_context_h100.csv",
                    lambda row: float(row.measured) / 1e12,
                    lambda row, result, model: f"{_tokens_note(result)}; step {result.step_time_s:.2f} s",
                    metric=NEMO_TFLOPS, predicted_of=counted_tflops(nemo_flops_per_token))


def _megatron_core_scaling(root: Path) -> pd.DataFrame:
    """The Megatron-LM README's scaling runs: model TFLOP/s per GPU as published, against the
    predicted tokens/s per GPU times Megatron's FLOP count per token (``num_floating_point_
    operations``, core_r0.8.0, the same formula as :func:`nemo_flops_per_token`)."""
    return _indexed(root, "megatron_core_scaling", "megatron_core_scaling.csv",
                    lambda row: float(row.measured), _pipeline_notes,
                    metric=MEGATRON_TFLOPS, predicted_of=counted_tflops(nemo_flops_per_token))


def _megatron_moe_recipes(root: Path) -> pd.DataFrame:
    """Megatron-LM's MoE recipe index: model TFLOP/s per GPU as published, against the predicted
    tokens/s per GPU times Megatron-LM's 2026 count (:func:`megatron_flops_per_token`)."""
    return _indexed(root, "megatron_moe_recipes", "megatron_moe_recipes.csv", _as_measured,
                    _pipeline_notes, metric=MEGATRON_2026_TFLOPS,
                    predicted_of=counted_tflops(megatron_flops_per_token))



def _bridge_set(name: str, csv_name: str):
    """The runner of a Megatron-Bridge performance-summary set (one system's dense Llama
    rows): tokens/s per GPU as published, the table's model TFLOP/s beside."""
    return lambda root: _indexed(root, name, csv_name, lambda row: float(row.measured),
                                 lambda row, result, model: f"{_bridge_notes(row, result, model)}; "
                                                            f"step {result.step_time_s:.2f} s")


def _bridge_notes(row, result, model) -> str:
    """The row's published model TFLOP/s (from its notes; the table's own FLOP count)."""
    found = re.search(r"TFLOP/sec/GPU\s+([0-9]+)", str(row.notes))
    return f"the table's model TFLOP/s per GPU {found.group(1)}" if found else "-"



def _tokens_note(result) -> str:
    return f"predicted {result.tokens_per_s / result.gpus:,.0f} tokens/s per GPU"


def _tokens_per_gpu(result, model) -> float:
    return result.tokens_per_s / result.gpus


def _indexed(root: Path, name: str, csv_name: str, measured_of, notes_of, metric: str = TOKENS,
             predicted_of=_tokens_per_gpu) -> pd.DataFrame:
    """A CSV of published rows and ``validation/scenarios/<name>/index.csv`` (row, scenario,
    description): run each scenario and compare ``metric`` (default tokens/s per GPU)."""
    data = pd.read_csv(root / "validation" / csv_name)
    folder = root / "validation" / "scenarios" / name
    index = _read_index(folder / "index.csv", len(data))
    library, rows = HardwareLibrary(), []
    for entry in index.itertuples():
        path = folder / entry.scenario
        facts = scenario_facts(path, library)
        result = run_scenario(path, library=library)
        row = next(data.iloc[[entry.row - 1]].itertuples())
        measured, predicted = measured_of(row), predicted_of(result, facts.model)
        rows.append({"set": name, "row": str(entry.row), "description": entry.description,
                     "scenario": _relative(path, root), "metric": metric, "measured": measured,
                     "predicted": predicted, "error": predicted / measured - 1.0, "scored": True,
                     "gpu": facts.gpu, "stack": facts.stack, "notes": notes_of(row, result, facts.model)})
    return pd.DataFrame(rows)


def _read_index(path: Path, rows: int) -> pd.DataFrame:
    """``index.csv``, checked to map each CSV row (1-based order) to exactly one scenario."""
    if not path.is_file():
        raise ConfigError("missing: one line 'row,scenario,description' per CSV row", str(path))
    index = pd.read_csv(path)
    if list(index.columns) != ["row", "scenario", "description"]:
        raise ConfigError("expected the columns row,scenario,description", str(path))
    if sorted(index["row"]) != list(range(1, rows + 1)):
        raise ConfigError(f"rows must be 1..{rows}, each once (the CSV's order)", str(path), "row")
    return index


LAYER_MS = "one layer's forward or backward time (ms)"


def _layer_times(name: str, csv_name: str):
    """The runner of a set that times one layer alone (``validation/<csv_name>``: a ``pass`` of
    forward or backward and its ``measured`` ms per row; :mod:`.layer_times`)."""
    def run(root: Path) -> pd.DataFrame:
        data = pd.read_csv(root / "validation" / csv_name)
        folder = root / "validation" / "scenarios" / name
        index = _read_index(folder / "index.csv", len(data))
        library, rows, priced = HardwareLibrary(), [], {}
        for entry in index.itertuples():
            path = folder / entry.scenario
            if entry.scenario not in priced:         # two rows (forward, backward) per scenario
                priced[entry.scenario] = layer_seconds(path, library), scenario_facts(path, library)
            row = data.iloc[entry.row - 1]
            (forward, backward), facts = priced[entry.scenario]
            predicted = 1e3 * (forward if row["pass"] == "forward" else backward)
            rows.append({"set": name, "row": str(entry.row), "description": entry.description,
                         "scenario": _relative(path, root), "metric": LAYER_MS,
                         "measured": float(row.measured), "predicted": predicted,
                         "error": predicted / float(row.measured) - 1.0, "scored": True, "gpu": facts.gpu,
                         "stack": facts.stack, "notes": f"predicted forward {1e3 * forward:.2f} ms, "
                                                        f"backward {1e3 * backward:.2f} ms"})
        return pd.DataFrame(rows)
    return run


def _stragglers(root: Path) -> pd.DataFrame:
    """Straggler traces (:mod:`simulator.validation.stragglers`); needs no file under ``root``."""
    from simulator.validation.stragglers import validation_rows
    return validation_rows()


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


SETS: dict[str, ValidationSet] = {
    "megatron_sc21": ValidationSet(
        "megatron_sc21", "Megatron-LM SC21 Table 1 (Narayanan et al., arXiv:2104.04473)",
        "hardware TFLOP/s per GPU", _megatron),
    "nccl": ValidationSet(
        "nccl", "nccl-tests / rccl-tests logs (validation/nccl_tests/INDEX.md)",
        "busbw (GB/s) at >= 64 MiB", _nccl),
    "torchtitan": ValidationSet(
        "torchtitan", "torchtitan FSDP2 benchmarks (pytorch/torchtitan benchmarks/ @ b5bcd76c)",
        TOKENS, _torchtitan, token_rows=TokenRows("torchtitan_fsdp.csv")),
    "torchtitan_memory": ValidationSet(
        "torchtitan_memory", "torchtitan peak memory (pytorch/torchtitan benchmarks/ @ b5bcd76c)",
        MEMORY, _torchtitan_memory),
    "megatron_memory": ValidationSet(
        "megatron_memory", "Megatron-LM and Primus memory reports on AMD MI325X, Llama 2 7B and 70B, "
        "Llama 3.1 70B and Mixtral 8x7B on 16-64 GPUs (hisohara/ai-scripts @ 4fb66ab5, 97db03fb)",
        "memory per GPU (GiB): resident, first-step peak, device in use", _megatron_memory),
    "megatron_bridge_cards_memory": ValidationSet(
        "megatron_bridge_cards_memory", "Megatron-Bridge model verification cards' peak allocated memory, "
        "the hybrid Nemotron 3.5 Lightning on 16 H100 and 8 GB200 and Nemotron 3 Super on 64 H100 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df, ad69969c3)", "peak allocated memory per GPU (GiB)",
        _cards_memory),
    "nemo": ValidationSet(
        "nemo", "NeMo 24.07 performance summary (NVIDIA/NeMo @ 070a0bb1)", TOKENS, _nemo, curves=True,
        token_rows=TokenRows("nemo_h100.csv", _nemo_tokens)),
    "nemo_more": ValidationSet(
        "nemo_more", "NeMo 24.07 performance summary, the other pre-training rows (NVIDIA/NeMo @ 070a0bb1)",
        TOKENS, _nemo_more, token_rows=TokenRows("nemo_h100_more.csv")),
    "llama3_paper": ValidationSet(
        "llama3_paper", "Llama 3 paper, Table 4: Llama 3 405B on 8,192 and 16,384 H100 (arXiv:2407.21783)",
        PALM_TFLOPS, _llama3_paper,
        token_rows=TokenRows("llama3_paper_table4.csv", per_token=palm_flops_per_token)),
    "nemo_long_context": ValidationSet(
        "nemo_long_context",
        "NeMo long-sequence performance, Llama 2 7B FP8 on H100 (NVIDIA/NeMo @ 5b47a94c)",
        NEMO_TFLOPS, _nemo_long_context,
        token_rows=TokenRows("nemo_long_context_h100.csv", per_token=nemo_flops_per_token)),
    "megatron_bridge": ValidationSet(
        "megatron_bridge",
        "Megatron-Bridge 25.11 performance summary, DGX-H100 (NVIDIA-NeMo/Megatron-Bridge @ 97ad8cc6f)",
        TOKENS, _bridge_set("megatron_bridge", "megatron_bridge_h100.csv"),
        token_rows=TokenRows("megatron_bridge_h100.csv")),
    "megatron_bridge_b200": ValidationSet(
        "megatron_bridge_b200",
        "Megatron-Bridge 25.11 performance summary, DGX-B200 (NVIDIA-NeMo/Megatron-Bridge @ 97ad8cc6f)",
        TOKENS, _bridge_set("megatron_bridge_b200", "megatron_bridge_b200.csv"),
        token_rows=TokenRows("megatron_bridge_b200.csv")),
    "bloom": _step_entry(
        "bloom", "BLOOM 176B on 384 A100, Megatron-DeepSpeed (bigscience-workshop/bigscience @ 9e64ede)",
        "bloom_a100.csv"),
    "mlperf_gpt3": _step_entry(
        "mlperf_gpt3", "MLPerf Training v4.0 GPT-3 175B, NVIDIA on 512 to 11,616 H100 "
        "(mlcommons/training_results_v4.0 @ 6fe95437)", curves=True),
    "mlperf_gpt3_v31": _step_entry(
        "mlperf_gpt3_v31", "MLPerf Training v3.1 GPT-3 175B, NVIDIA and Azure on 512 to 10,752 H100 "
        "(mlcommons/training_results_v3.1 @ d06288b2)", "mlperf_gpt3_v31.csv", curves=True),
    "mlperf_gpt3_v41": _step_entry(
        "mlperf_gpt3_v41", "MLPerf Training v4.1 GPT-3 175B, NVIDIA on 64 B200 and 256-512 H100 "
        "(mlcommons/training_results_v4.1 @ b87b9e39)", "mlperf_gpt3_v41.csv"),
    "mlperf_gpt3_oci": _step_entry(
        "mlperf_gpt3_oci", "MLPerf Training v4.1 GPT-3 175B, Oracle OCI on 1,536 and 3,072 H100 over "
        "RoCE (mlcommons/training_results_v4.1 @ b87b9e39)", "mlperf_gpt3_oci.csv", curves=True),
    "primus_mi325x": _step_entry(
        "primus_mi325x", "Primus-Megatron and Megatron-LM on AMD MI325X, Llama 2 7B and 70B, Llama 3.1 "
        "70B and Mixtral 8x7B on 16-64 GPUs (hisohara/ai-scripts @ 4fb66ab5, 97db03fb)", "primus_mi325x.csv"),
    "megatron_mi300x": _step_entry(
        "megatron_mi300x", "ROCm Megatron-LM on AMD MI300X, Llama 2 7B FP8 on 8 GPUs "
        "(hisohara/ai-scripts @ 913709dd)", "megatron_mi300x.csv"),
    "megatron_moe_layer": ValidationSet(
        "megatron_moe_layer", "Megatron-LM's MoE layer benchmark, Mixtral and DeepSeek proxies on one "
        "DGX H100, three dispatchers, BF16 and FP8 (NVIDIA/Megatron-LM @ cf39a4ddcf)", LAYER_MS,
        _layer_times("megatron_moe_layer", "megatron_moe_layer_h100.csv")),
    "mlperf_llama31_405b": _step_entry(
        "mlperf_llama31_405b", "MLPerf Training v5.0 Llama 3.1 405B, NVIDIA on 512 to 8,192 H100 "
        "(mlcommons/training_results_v5.0 @ 0fdc28f0)", curves=True),
    "dgxc_nemotron": _curve_entry(
        "dgxc_nemotron",
        "DGX Cloud benchmarking, Nemotron4 15B and 340B on 16-2,048 H100 "
        "(NVIDIA/dgxc-benchmarking @ 0b71cfda)"),
    "dgxc_llama31": _curve_entry(
        "dgxc_llama31",
        "DGX Cloud benchmarking, Llama 3.1 8B-405B with CP 2 on 8-2,304 H100 "
        "(NVIDIA/dgxc-benchmarking @ 0b71cfda)"),
    "dgxc_gpt3": _curve_entry(
        "dgxc_gpt3",
        "DGX Cloud benchmarking, GPT-3 175B on 128-2,048 H100 (NVIDIA/dgxc-benchmarking @ 0b71cfda)"),
    "dgxc_grok1": _curve_entry(
        "dgxc_grok1",
        "DGX Cloud benchmarking, Grok-1 314B (MoE) on 32-2,048 H100 (NVIDIA/dgxc-benchmarking @ 0b71cfda)"),
    "llm_foundry": _curve_entry(
        "llm_foundry",
        "llm-foundry MPT benchmarks, PyTorch FSDP on 128-512 H100 (mosaicml/llm-foundry @ 5e85bd62d)"),
    "fms_fsdp": _step_entry(
        "fms_fsdp", "IBM fms-fsdp, PyTorch FSDP1 Llama 2 7B-70B on 128 A100 and 96 H100 "
        "(foundation-model-stack/fms-fsdp @ 4ffb9bd, 3b1ce15)", "fms_fsdp.csv"),
    "olmo_core": _step_entry(
        "olmo_core", "Ai2 OLMo-core, PyTorch FSDP2 OLMo 1B-13B and Llama 8B, BF16 and FP8 on 8 H100 "
        "(allenai/OLMo-core @ 41400c46f)", "olmo_core.csv"),
    "mlperf_llama31_405b_gb200": _step_entry(
        "mlperf_llama31_405b_gb200",
        "MLPerf Training v5.0 Llama 3.1 405B, NVIDIA and CoreWeave on 256 to 2,496 GB200 in NVL72 racks "
        "(mlcommons/training_results_v5.0 @ 0fdc28f0)", "mlperf_llama31_405b_gb200.csv", curves=True),
    "megatron_core_scaling": ValidationSet(
        "megatron_core_scaling",
        "Megatron-LM README scaling runs, Megatron-Core r0.8.0, GPT 1.7B-462B on 48-6,144 H100 "
        "(NVIDIA/Megatron-LM @ f2e5db402c)", MEGATRON_TFLOPS, _megatron_core_scaling, curves=True,
        token_rows=TokenRows("megatron_core_scaling.csv", lambda row: float(row.measured) * 1e12,
                             nemo_flops_per_token)),
    "megatron_selective": _step_entry(
        "megatron_selective",
        "Korthikanti et al. 2022, Megatron-LM GPT 22B-1T on 8-512 A100: full vs selective recompute "
        "(arXiv:2205.05198)", "megatron_selective_a100.csv"),
    "sc21_ptd": _step_entry(
        "sc21_ptd", "SC21 Table 2: Megatron-LM PTD-P, GPT 530B on 560-2,240 A100 at a fixed batch "
        "(arXiv:2104.04473)", "sc21_ptd_a100.csv"),
    "sc21_zero3": _step_entry(
        "sc21_zero3", "SC21 Table 2: DeepSpeed ZeRO-3 (2021) without model parallelism, GPT 175B and "
        "530B on 384-2,240 A100 (arXiv:2104.04473)", "sc21_zero3_a100.csv"),
    "megascale_megatron": _step_entry(
        "megascale_megatron", "MegaScale (NSDI '24): Megatron-LM of January 2023, GPT 175B strong "
        "scaling on 256-12,288 A100 and 530B weak scaling on 2,240-11,200 over RoCE (arXiv:2402.15627)",
        "megascale_megatron_a100.csv", curves=True),
    "mlperf_v51_llama31": _step_entry(
        "mlperf_v51_llama31",
        "MLPerf Training v5.1 Llama 3.1 8B and 405B on 8-1,024 B200, GB200, H100 and H200 "
        "(mlcommons/training_results_v5.1 @ 441d65f4)", "mlperf_v51_llama31.csv", curves=True),
    "megatron_bridge_2604": _step_entry(
        "megatron_bridge_2604",
        "Megatron-Bridge 26.04.01 performance tables, Llama 3 70B and 3.1 405B on H100 and GB200 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)", "megatron_bridge_2604.csv"),
    "megatron_bridge_2604_moe": _step_entry(
        "megatron_bridge_2604_moe",
        "Megatron-Bridge 26.04.01 performance tables, Qwen3 30B-A3B and 235B-A22B, GPT-OSS 120B, "
        "Kimi K2 and the hybrid Nemotron 3 Nano and Super (MoE) on 16-256 H100 and 8-256 Blackwell GPUs "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)",
        "megatron_bridge_2604_moe.csv"),
    "megatron_bridge_gptoss_pair": _step_entry(
        "megatron_bridge_gptoss_pair",
        "Megatron-Bridge PR #3561, GPT-OSS 120B on 64 GB200 in BF16 and MXFP8, alltoall and HybridEP "
        "dispatchers (NVIDIA-NeMo/Megatron-Bridge @ 7345f5a35)",
        "megatron_bridge_gptoss_pair.csv"),
    "megatron_bridge_2606_moe": _step_entry(
        "megatron_bridge_2606_moe",
        "Megatron-Bridge 26.06 performance tables, Qwen3 30B-A3B and 235B-A22B, DeepSeek-V3 and GPT-OSS 120B "
        "(MoE) on 8-256 Blackwell GPUs with the fused grouped MLP and full-iteration CUDA graphs "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)",
        "megatron_bridge_2606_moe.csv"),
    "megatron_bridge_2608": _step_entry(
        "megatron_bridge_2608",
        "Megatron-Bridge 26.08 performance table, DeepSeek-V3, GPT-OSS 120B, Qwen3 30B-A3B and 235B-A22B "
        "and the hybrid Nemotron 3 Nano, 3.5 Lightning and 3 Super (MoE) on 8-256 GB300 and GB200, MXFP8 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)",
        "megatron_bridge_2608.csv"),
    "megatron_bridge_dsv3": _step_entry(
        "megatron_bridge_dsv3",
        "Megatron-Bridge 25.09, 25.11 and 26.04.01 performance tables, DeepSeek-V3 (671B MoE) on 256 "
        "Blackwell GPUs and 1,024 H100 (NVIDIA-NeMo/Megatron-Bridge @ 067f987df)",
        "megatron_bridge_dsv3.csv"),
    "megatron_moe_recipes": ValidationSet(
        "megatron_moe_recipes",
        "Megatron-LM MoE recipes, Qwen3 30B-A3B and 235B-A22B and DeepSeek-V3 on 16-256 H100 and Blackwell "
        "GPUs, with and without CUDA graphs (NVIDIA/Megatron-LM dev @ d48bd6be0a)", MEGATRON_2026_TFLOPS,
        _megatron_moe_recipes,
        token_rows=TokenRows("megatron_moe_recipes.csv", lambda row: float(row.measured) * 1e12,
                             megatron_flops_per_token)),
    "megatron_bridge_cards": _step_entry(
        "megatron_bridge_cards",
        "Megatron-Bridge model verification cards (2026-07/08), Qwen3 30B-A3B, DeepSeek-V3, GPT-OSS "
        "120B and the hybrid Nemotron 3 Super and 3.5 Lightning on 8-1,024 H100, GB200 and GB300 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)",
        "megatron_bridge_cards.csv", curves=True),
    "megatron_bridge_ep_overlap": _step_entry(
        "megatron_bridge_ep_overlap",
        "Megatron-Bridge PR #5094, Qwen3 30B-A3B on 16 H100 with HybridEP, the all-to-all overlap off "
        "and on (NVIDIA-NeMo/Megatron-Bridge @ 7ded17dae)", "megatron_bridge_ep_overlap.csv"),
    "megatron_bridge_gb300": _step_entry(
        "megatron_bridge_gb300",
        "Megatron-Bridge 26.04.01 performance tables, Llama 3 70B and 3.1 405B on 64 and 256 GB300 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 067f987df)", "megatron_bridge_gb300.csv"),
    "megatron_bridge_fsdp": _step_entry(
        "megatron_bridge_fsdp",
        "Megatron-Bridge 25.11 and 26.04.01 performance tables, Megatron FSDP with CPU activation "
        "offloading, Llama 3 70B on 64 and Llama 3.1 405B on 128 GB300 and GB200 "
        "(NVIDIA-NeMo/Megatron-Bridge @ 97ad8cc6f, 067f987df)", "megatron_bridge_fsdp.csv"),
    "flagperf_deepspeed": _step_entry(
        "flagperf_deepspeed",
        "FlagPerf DeepSpeed ZeRO-3, Llama 2 7B on 8 A800 and 8 H800 (FlagOpen/FlagPerf @ 1b5a0303)",
        "flagperf_deepspeed.csv"),
    "flagperf_megatron": _step_entry(
        "flagperf_megatron",
        "FlagPerf Megatron-Core 0.6, Llama 3 8B and 70B on 8 A800 and 8-64 H100 "
        "(FlagOpen/FlagPerf @ 1b5a0303)",
        "flagperf_megatron.csv"),
    "mlperf_v60": _step_entry(
        "mlperf_v60",
        "MLPerf Training v6.0 DeepSeek-V3 671B on 256-8,192 GB200 and GB300, GPT-OSS 20B on 8-512 "
        "GB300 and 72 GB200, Llama 3.1 405B on 512 and 2,048 GB300 and 8B on 16 H200 and 128 H100 "
        "(Richardyu114/training_results_v6.0 @ eabf23a0, "
        "a fork of mlcommons/training_results_v6.0)", "mlperf_v60.csv", curves=True),
    "automodel": _step_entry(
        "automodel",
        "NeMo AutoModel pre-training, PyTorch FSDP2 with TE and DeepEP: Llama 3.1 70B, Qwen3 30B-A3B, "
        "DeepSeek-V3, Kimi K2 and the hybrid Nemotron 3 Nano and Super on 8-1,024 H100 "
        "(NVIDIA-NeMo/Automodel @ 89e3a9fdd, 8d9bfb90e, bb0c0bfb0, c0e4fe1bc, 2013a4dd6)"),
    "stragglers": ValidationSet(
        "stragglers",
        "ByteDance straggler traces (Lin et al., OSDI'25; ByteDance-Seed/StragglerAnalysis @ 8efcd7f3)",
        "job slowdown, step p50 and p99/p50", _stragglers),
}


def finite(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite (JSON has no NaN)."""
    return float(value) if value is not None and np.isfinite(value) else None
