"""``clustersim validate``: every shipped validation set, its scenarios and its error budget.

Sources of the measured rows: validation/README.md (torchtitan_fsdp.csv: pytorch/torchtitan
benchmarks @ b5bcd76c; nemo_h100.csv: NVIDIA/NeMo performance_summary.md @ 070a0bb1;
megatron_sc21_table1.csv: SC21 Table 1; nccl_tests/INDEX.md). The issue's target for every
set is MAPE <= 8% and max |error| <= 15%; the regression guards at the end hold each set at
(or below) the figures it reached when the suite was written, plus 2 percentage points.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.config import HardwareLibrary, load_scenario
from simulator.pipeline import run_scenario
from simulator.validation import report
from simulator.validation.curves import scaling_curves
from simulator.validation.regimes import TAGS, read_row_errors, row_errors
from simulator.validation.suite import SETS, nemo_flops_per_token, run_validation, summary

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "validation" / "scenarios"
TRAINING_SETS = {"torchtitan": "torchtitan_fsdp.csv", "nemo": "nemo_h100.csv",
                 "nemo_more": "nemo_h100_more.csv",
                 "llama3_paper": "llama3_paper_table4.csv",
                 "nemo_long_context": "nemo_long_context_h100.csv",
                 "megatron_bridge": "megatron_bridge_h100.csv",
                 "megatron_bridge_b200": "megatron_bridge_b200.csv",
                 "bloom": "bloom_a100.csv",
                 "mlperf_gpt3": "mlperf_gpt3_h100.csv",
                 "mlperf_llama31_405b": "mlperf_llama31_405b_h100.csv",
                 "mlperf_gpt3_v41": "mlperf_gpt3_v41.csv",
                 "mlperf_gpt3_v31": "mlperf_gpt3_v31.csv",
                 "mlperf_gpt3_oci": "mlperf_gpt3_oci.csv",
                 "primus_mi325x": "primus_mi325x.csv",
                 "megatron_mi300x": "megatron_mi300x.csv",
                 "dgxc_nemotron": "dgxc_nemotron_h100.csv",
                 "dgxc_llama31": "dgxc_llama31_h100.csv",
                 "dgxc_gpt3": "dgxc_gpt3_h100.csv",
                 "dgxc_grok1": "dgxc_grok1_h100.csv",
                 "megatron_core_scaling": "megatron_core_scaling.csv",
                 "mlperf_llama31_405b_gb200": "mlperf_llama31_405b_gb200.csv",
                 "megatron_selective": "megatron_selective_a100.csv",
                 "sc21_ptd": "sc21_ptd_a100.csv", "sc21_zero3": "sc21_zero3_a100.csv",
                 "megascale_megatron": "megascale_megatron_a100.csv",
                 "mlperf_v51_llama31": "mlperf_v51_llama31.csv",
                 "megatron_bridge_2604": "megatron_bridge_2604.csv",
                 "megatron_bridge_2604_moe": "megatron_bridge_2604_moe.csv",
                 "megatron_bridge_gptoss_pair": "megatron_bridge_gptoss_pair.csv",
                 "megatron_bridge_2606_moe": "megatron_bridge_2606_moe.csv",
                 "megatron_bridge_2608": "megatron_bridge_2608.csv",
                 "megatron_bridge_dsv3": "megatron_bridge_dsv3.csv",
                 "megatron_moe_recipes": "megatron_moe_recipes.csv",
                 "megatron_bridge_cards": "megatron_bridge_cards.csv",
                 "megatron_bridge_ep_overlap": "megatron_bridge_ep_overlap.csv",
                 "megatron_bridge_gb300": "megatron_bridge_gb300.csv",
                 "megatron_bridge_fsdp": "megatron_bridge_fsdp.csv",
                 "fms_fsdp": "fms_fsdp.csv", "olmo_core": "olmo_core.csv",
                 "flagperf_deepspeed": "flagperf_deepspeed.csv",
                 "flagperf_megatron": "flagperf_megatron.csv",
                 "mlperf_v60": "mlperf_v60.csv",
                 "automodel": "automodel_h100.csv"}
ALL_SCENARIOS = sorted(SCENARIOS.glob("*/*.yaml"))
MARGIN = 0.02


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return run_validation(ROOT)


@pytest.fixture(scope="module")
def scores(frame) -> dict:
    return {r.set: r for r in summary(frame).itertuples()}


def _index(name: str) -> pd.DataFrame:
    return pd.read_csv(SCENARIOS / name / "index.csv")


# Published runs that the model predicts over their GPU's memory (a documented memory miss,
# docs/validation.md): the excess stays under this fraction of the capacity.
OVER_MEMORY = {  # 86.1 of 80 GiB since the cached fp8 weights count (docs/validation.md, nemo_more)
               "nemo_more/nemotron-340b-128gpu-fp8": 0.11}


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario_checks_and_runs_with_finite_results(path, capsys):
    """`clustersim check FILE` succeeds and the step has finite, positive time and throughput;
    it fits in memory, as the published run did, except the documented misses."""
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    result = run_scenario(path)
    assert math.isfinite(result.step_time_s) and result.step_time_s > 0
    assert math.isfinite(result.tokens_per_s) and result.tokens_per_s > 0
    assert math.isfinite(result.memory_per_gpu_bytes)
    excess = OVER_MEMORY.get(f"{path.parent.name}/{path.stem}")
    if excess is None:
        assert result.fits_in_memory
    else:
        assert 1.0 < result.memory_per_gpu_bytes / result.memory_capacity_bytes < 1.0 + excess


@pytest.mark.parametrize("name", TRAINING_SETS)
def test_index_maps_every_csv_row_to_one_scenario(name):
    """index.csv lists CSV rows 1..N once each, and exactly the folder's scenario files."""
    data = pd.read_csv(ROOT / "validation" / TRAINING_SETS[name])
    index = _index(name)
    assert sorted(index["row"]) == list(range(1, len(data) + 1))
    assert set(index["scenario"]) == {p.name for p in (SCENARIOS / name).glob("*.yaml")}


@pytest.mark.parametrize("name", TRAINING_SETS)
def test_scenarios_encode_their_csv_row(name):
    """Shape, sequence, GPU count, layout and global batch equal the published row; the header
    comment names the row."""
    data = pd.read_csv(ROOT / "validation" / TRAINING_SETS[name])
    for entry in _index(name).itertuples():
        row, path = data.iloc[entry.row - 1], SCENARIOS / name / entry.scenario
        scenario = load_scenario(path)
        model, par, fabric = scenario.model, scenario.parallelism, scenario.cluster
        assert (model.layers, model.hidden, model.heads, model.kv_heads, model.ffn_hidden, model.vocab,
                model.seq_len) == (row.layers, row.hidden, row.heads, row.kv_heads, row.ffn_hidden,
                                   row.vocab, row.seq_len), entry.scenario
        assert (par.tp, par.pp, par.dp, par.cp) == (row.tp, row.pp, row.dp, row.cp), entry.scenario
        assert fabric.nodes == row.nodes and scenario.training.global_batch == row.global_batch
        assert f"CSV row {entry.row} of" in path.read_text().splitlines()[0]


def test_nemo_flop_count_reproduces_the_published_tflops():
    """NeMo's model TFLOP/s per GPU = tokens/s per GPU x its FLOPs per token (stack_facts.md sec. 1):
    782/726, 842/782, 738/1533, 697/12036 agree with the count to rounding (0.5%)."""
    data = pd.read_csv(ROOT / "validation" / "nemo_h100.csv")
    for entry in _index("nemo").itertuples():
        row = data.iloc[entry.row - 1]
        tokens = float(row.notes.split("tokens/s/GPU")[1].strip(" .").split()[0].rstrip("."))
        per_token = nemo_flops_per_token(load_scenario(SCENARIOS / "nemo" / entry.scenario).model)
        assert tokens * per_token == pytest.approx(row.measured, rel=0.005), entry.scenario


def test_every_set_is_replayed(frame):
    assert list(frame["set"].unique()) == list(SETS)
    assert (frame.groupby("set")["scored"].sum() > 0).all()
    assert frame.loc[frame["scored"], "error"].notna().all()


def test_command_prints_the_report_and_writes_it_byte_for_byte(tmp_path, capsys):
    """`clustersim validate --set ... --write PATH` prints the report and writes it byte for byte
    (two small sets: the whole suite's report is checked from the fixture below)."""
    target = tmp_path / "validation.md"
    assert main(["validate", "-q", "--set", "nemo", "--set", "sc21_zero3", "--write", str(target)]) == 0
    printed = capsys.readouterr().out
    assert target.read_text() == printed
    assert f"## {SETS['nemo'].title}" in printed and f"| {SETS['sc21_zero3'].name} |" in printed
    assert f"## {SETS['torchtitan'].title}" not in printed


def test_report_has_every_set_and_the_committed_report_is_current(frame):
    """The report of the whole suite names every set, in its heading and its summary row, and
    lists the derived GPUs' constants; docs/validation.md is that report (stale after a model
    change until `clustersim validate --write` rewrites it)."""
    library = HardwareLibrary()
    text = report.markdown_report(frame, library, row_errors(frame, ROOT, library))
    for validation_set in SETS.values():
        assert f"## {validation_set.title}" in text
        assert f"| {validation_set.name} |" in text
    assert "| h100-sxm-96gb-500w | h100-sxm |" in text
    assert (ROOT / "docs" / "validation.md").read_text() == text


def test_json_output_has_summary_rows_and_constants(capsys):
    assert main(["validate", "--set", "nemo", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["set"] for s in data["summary"]] == ["nemo"]
    assert len(data["rows"]) == 4 and set(data["constants"]) == {"h100-sxm"}
    assert data["constants"]["h100-sxm"]["sustained_clock_fraction"] == 1.0


def test_committed_row_errors_are_the_suites(frame):
    """simulator/validation/row_errors.csv, which `clustersim run` reads, holds every throughput
    and peak-memory row the suite gives now, with the same tags and errors (to its 4 decimals); stale after a
    model change until `clustersim validate --write-row-errors` rewrites it."""
    now = row_errors(frame, ROOT, HardwareLibrary())
    committed = read_row_errors()
    keys = ["set", "row", "scenario", "kind", *TAGS, "curve", "gpus", "batch"]
    assert committed[keys].astype(str).values.tolist() == now[keys].astype(str).values.tolist()
    assert committed["error"].to_numpy() == pytest.approx(now["error"].to_numpy(), abs=1.5e-4)


def test_unknown_set_is_a_usage_error(capsys):
    assert main(["validate", "--set", "nemoo"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'nemo'" in err and len(err.strip().splitlines()) == 1



def test_every_set_has_its_text_and_every_text_file_belongs_to_a_set():
    prose_dir = Path(report.__file__).parent / "prose"
    keys = {path.stem for path in prose_dir.glob("*.md")}
    assert all(report.has_prose(name) and report.prose(name).strip() for name in SETS)
    extra = keys - set(SETS) - {"constants", "nccl_misses"}
    assert {key.removesuffix("_after") for key in extra} <= set(SETS), extra

# Regression guards: (MAPE, max |error|) reached when the suite was written, rounded up.
# The issue's target per set is MAPE <= 8% and max |error| <= 15%.
ACHIEVED = {
    # SC21 Table 1, hardware TFLOP/s per GPU: 1.8% / 4.6%, target met.
    # 1.7% / 4.5% with NCCL's SMs beside the overlapped data-parallel collectives (2026-11-27).
    # 1.6% / 4.3% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 1.6% / 4.5%.
    # 1.6% / 4.4% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 1.6% / 4.3%.
    # 2.4% / 4.3% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 1.6% / 4.4%.
    "megatron_sc21": (0.024, 0.043),
    # busbw at >= 64 MiB: 28.4% / 193.1%, target NOT met; the scored rows include the documented
    # misses (A3 Mega's TCPXO transport, the A100 sendrecv log, the H100 PCIe bridge).
    # 22.6% / 193.1% with the DGX Cloud benchmarking recipe's DGX H100 all-reduce log added
    # (2026-11-28: 9 rows, 4.5% / 10.6%, the NVLS mid sizes the one miss).
    # 22.0% / 193.1% with NVIDIA/nccl#2169's one-server H100 alltoall row added (2026-11-28, the
    # first all-to-all log: -1.8%, met).
    # 20.7% / 193.1% with four OCI logs added and a server's every NIC used (2026-11-29: A100
    # 1 server +3.3%, 2 servers NCCL 2.21 +5.5%, met; NCCL 2.26 +22.6%, the tuner's ring; H100
    # 2 servers -16% to -17.5%, NVLS-Tree not modelled). 20.2% / 193.1% with NVLS-Tree
    # modelled (that log +11% to +13.5%: NVLS's single-server efficiency; 2026-11-29).
    # 22.0% / 262.3% with OCI's 21 Blackwell logs (B300 servers, GB200/GB300 NVL72 racks; the
    # B300/GB300 NIC path on PCIe Gen6 and NCCL's Blackwell NVLS efficiency 0.74 read first):
    # 36 of their 47 rows met; the max is the GB300 two-rack all-to-all (+262%, that run's).
    # 20.8% / 262.3% with NCCL's NVLS chunk loop (simulator/cost/nvls_chunks.py, 2026-11-29):
    # the DGX H100 curve met from 16 MiB (was +10.6% at 64 MiB), two H100 servers' NVLS-Tree
    # met at 1-4 GiB, the racks' NVLS-Tree +22% to +38% (was +30% to +47%). 20.6% / 262.3% with
    # NCCL's own double binary tree (trees.cc; three GB200 racks +24% to +27%, was +31%).
    # 20.5% / 262.3% with at most 32 NVLS heads a node (NCCL_MAX_NVLS_ARITY). 19.7% / 262.3%
    # with NCCL's NVLS-Tree ceiling per head (perChMaxNVLSTreeBws): two OCI H100 and two B300
    # servers within 4% (were +11% to +15%). 16.0% / 262.3% with Azure's AI benchmarking guide
    # added (2026-11-29, scored once: NVLS forced on one H100 and one H200 VM, every scored row
    # within 7%; an A100 VM +3.5% to +30%, a GB200 tray's ring +5.8% to +15.4%). 16.2% / 262.3%
    # once NVLS-Tree's network legs ran at the network's rate, NVLink SHARP's efficiency on the
    # NVLink side only (tuning.cc): A3 Mega's rows from 1 GiB move to NVLS-Tree (+5% to +13%).
    # 15.7% / 262.3% with dstack's three two-server logs (Nebius H100, Lambda and GCP A4 B200;
    # 2026-11-29, scored once): within 8% from 512 MiB, +15% to +54% at 64-256 MiB.
    # 14.7% / 262.3% with the tree's protocol rates as NCCL's tuning.cc has them (0.92 /
    # 0.242 / 0.8625, were 0.9 / 0.263 / 0.915) and NCCL's treeCorrectionFactor (2026-11-29):
    # Nebius +8.6% at 64 MiB (was +19%), the B200 pairs within 10% from 256 MiB.
    # 14.0% / 262.3% with NCCL's per-channel tree ceilings (perChMaxTreeBws, 2.28's Blackwell
    # figures; 2 channels per NIC) and LL ceiling (llMaxBws): the B200 pairs +4% / +10% at 64
    # MiB (were +28% / +35%), +13% / +21% at 128 MiB (were +32% / +41%).
    # 13.5% / 262.3% with four MI325X rccl-tests ring logs of AMD's AAC11 cluster (1, 2, 4 and
    # 8 servers, 4-16 GiB; 2026-11-29, scored once): every row met, +5.2% to +9.5%.
    "nccl": (0.135, 2.623),
    # tokens/s per GPU, 24 rows: 5.9% / 22.6%: MAPE target met, max NOT met (the 8B context-
    # parallel rows: CP 2 -10.0%, CP 4 +18.6%, CP 8 +22.7%; the 405B PP rows +6.2% / +7.1%).
    # 5.5% / 17.5% before attention's rate depended on the sequence length (the CP rows run
    # 32K-64K tokens per rank, which FlashAttention-2's benchmark puts above the 8K rate).
    # 5.8% / 22.5% with FSDP2's gather copy-out (sharding.gather_copy_out, 2026-11-29); 5.7% /
    # 22.5% with the shard's cast and copy before each gather (sharding.gather_copy_in).
    # 5.7% / 22.4% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.7% / 22.5%.
    # 4.8% / 22.4% once per-op SAC recomputed every second matmul under float8 and async TP as in
    # bf16 (the policy sees aten.mm before torchao's subclass and Inductor's fusion; 2026-11-30):
    # the 8B float8 per-op-SAC rows -9.5..-6.2% -> -1.0..+2.9%, the 8B async TP row -4.0% -> +6.5%.
    # 5.3% / 22.5% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 4.8% / 22.4%.
    # 5.2% / 22.5% (not met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 5.3% / 22.5%.
    # 5.1% / 22.5% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 5.2% / 22.5%.
    # 4.9% / 21.1% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.1% / 22.5%.
    "torchtitan": (0.049, 0.211),
    # MI325X training logs' memory (2026-11-29, with TransformerEngine's cached fp8 weights; 31% /
    # 80% without them): resident state -0.5% to -6.0%, first-step peak -4.4% to +6.3%, device
    # in use -9.7% to -19.3% (ROCm's runtime and the allocator's cached blocks, not modelled):
    # 6.5% / 19.3%, max NOT met. 6.9% / 20.8% once Llama-style models keep no dropout masks
    # (the logs' hidden_dropout and attention_dropout are 0): first-step peak -6.3% to +5.7%.
    # 6.4% / 17.8% once MoE layers keep their experts' permuted inputs (Mixtral -2.6% / -17.8%).
    "megatron_memory": (0.064, 0.178),
    # Megatron-Bridge cards' peak allocated memory, Nemotron 3.5 Lightning (2026-11-30, scored
    # once): 16 H100 -10.6%, 8 GB200 -8.8%. Nemotron 3 Super on 64 H100 added 2026-12-01 with the
    # precision-aware optimizer's fp16 master weights and bf16 moments (scored once): -15.0%;
    # 11.5% / 15.0%, NOT met.
    "megatron_bridge_cards_memory": (0.105, 0.129),
    # tokens/s per GPU: 4.1% / 7.6%, target met (6.2% / 11.0% before fp8 GEMMs' per-tile
    # overhead was scaled by the fp8/bf16 peak ratio and TE userbuffers' reduce-scatters were
    # paired with their GEMMs; 4.9% / 9.6% before attention's rate depended on the length;
    # 4.4% / 8.3% before the cuDNN backward came from cuDNN's own benchmark).
    # 3.9% / 7.0% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28).
    # 4.0% / 7.0% once Megatron's overlapped input-gradient collective held its NCCL kernels' SMs
    # beside the weight-gradient GEMM (simulator/cost/tp_exposure.py, 2026-11-28).
    # 5.3% / 7.0% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 3.3% / 4.7% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.3% / 7.0%.
    # 3.4% / 4.7% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 3.3% / 4.7%.
    # 4.4% / 6.2% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 3.4% / 4.7%.
    # 3.7% / 5.8% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 4.4% / 6.2%.
    # 3.7% / 5.7% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 3.7% / 5.8%.
    # 3.8% / 5.9% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 3.7% / 5.7%.
    "nemo": (0.038, 0.059),
    # model TFLOP/s per GPU, 9 rows, 4 to 1,024 GPUs: 13.8% / 23.2%, NOT met (every row high,
    # 5-9% at 4K-16K rising to 18-23% from 128K on, where attention dominates: the library's
    # cuDNN attention rate; the generic cp ring gave -31% at 512K and 1M). 12.8% / 20.6% before
    # attention's rate depended on the sequence length (above the 8K rate from 32K per rank);
    # 15.8% / 26.3% with the cuDNN backward estimated from FlashAttention-3's ratio.
    # 13.2% / 22.4% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28).
    # 13.1% / 22.4% once Megatron's overlapped input-gradient collective held its NCCL kernels' SMs
    # beside the weight-gradient GEMM (simulator/cost/tp_exposure.py, 2026-11-28).
    # 13.1% / 22.2% with NCCL's NVLS chunk loop on the tensor-parallel all-reduces (2026-11-29).
    # 12.1% / 22.1% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 13.1% / 22.2%.
    # 12.7% / 22.2% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 12.1% / 22.1%.
    # 12.5% / 22.1% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 12.7% / 22.2%.
    # 12.4% / 22.1% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 12.5% / 22.1%.
    # 12.0% / 21.3% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 12.4% / 22.1%.
    # 12.1% / 20.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 12.0% / 21.3%.
    "nemo_long_context": (0.121, 0.200),
    # tokens/s per GPU, 8 rows (the rest of the NeMo 24.07 table), out of sample: 7.1% / 12.8%,
    # target met (GPT-3 5B +12.3%, GPT-3 20B +13.0%, Nemotron 8B +12.1%: no pipeline, dp 32-64;
    # Nemotron 340B -10.2% with predicted memory over 80 GiB; the other four within 5%). First
    # scored at 8.6% / 17.5%, before TE userbuffers' reduce-scatters were modelled per GEMM and
    # Nemotron's unfused activation (bias_activation_fusion false) was read.
    # 6.8% / 11.7% with NCCL's SMs beside the overlapped data-parallel collectives (2026-11-27).
    # 6.8% / 11.5% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 7.4% / 12.1% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 5.6% / 9.3% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 7.5% / 12.1%.
    # 6.6% / 10.6% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.4% / 8.8%.
    # 6.2% / 10.2% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 6.6% / 10.6%.
    # 5.9% / 10.2% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 6.2% / 10.2%.
    # 5.8% / 10.0% (met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound kernels
    # beside them (simulator/cost/hbm_contention.py): was 5.9% / 10.2%.
    # 6.0% / 9.4% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.8% / 10.0%.
    "nemo_more": (0.060, 0.094),
    # model TFLOP/s per GPU (PaLM's count), Llama 3 405B on 8,192 and 16,384 H100, out of
    # sample: 19.4% / 29.0%, NOT met (8K rows +14.8% / +14.4%, a shared level error, their
    # 16K/8K scaling right: test_llama3_scaling_from_8k_to_16k_gpus; the 128K CP row +29.0%).
    # 19.1% / 28.8% with NCCL's SMs beside the overlapped data-parallel collectives (2026-11-27).
    # 19.0% / 28.7% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 18.6% / 28.5% once Megatron's overlapped input-gradient collective held its NCCL kernels' SMs
    # beside the weight-gradient GEMM (simulator/cost/tp_exposure.py, 2026-11-28).
    # 19.4% / 28.5% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 18.4% / 27.9% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 19.4% / 28.5%.
    # 18.2% / 27.3% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 18.4% / 27.9%.
    # 18.9% / 27.7% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 18.2% / 27.2%.
    # 18.8% / 27.6% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 18.9% / 27.7%.
    # 18.6% / 27.5% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 18.8% / 27.6%.
    # 18.5% / 27.4% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 18.6% / 27.5%.
    # 17.5% / 26.1% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 18.5% / 27.4%.
    "llama3_paper": (0.175, 0.261),
    # tokens/s per GPU, 2 rows (Megatron-Bridge 25.11, H100, 64 and 1,024 GPUs): 8.6% / 8.8%,
    # MAPE target NOT met (70B -8.3%, 405B +8.8%; -10.2% / +3.0% while every microbatch
    # recast the fp8 weights, which TE caches under Megatron-Core). 7.9% / 8.8%, met, with the
    # recipes' TE cross entropy (loss.kernel te, 6 B per logit against 36; 2026-11-28).
    # 7.8% / 8.8% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 8.1% / 14.5% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 7.6% / 11.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 8.1% / 14.5%.
    # 7.5% / 11.2% later on 2026-11-30, FP8 current scaling's amax all-reduces over the tensor-parallel
    # group (kernels.fp8_sp_amax_reduction): was 7.6% / 11.8%.
    # 7.7% / 12.9% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 7.4% / 11.0%.
    # 7.7% / 12.6% (met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 7.7% / 12.9%.
    # 7.6% / 12.1% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 7.7% / 12.6%.
    # 7.6% / 12.0% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 7.6% / 12.1%.
    # 7.4% / 11.5% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 7.6% / 12.0%.
    "megatron_bridge": (0.074, 0.115),
    # tokens/s per GPU, 2 rows (the same table's DGX-B200 rows: 8B on 8, 405B on 128 GPUs), the
    # first Blackwell check, scored once after b200.yaml was set from kernel benchmarks:
    # 8.2% / 12.1%, MAPE target NOT met (8B +4.3%, 405B +12.1%, high as its H100 sibling);
    # 8.0% / 11.8% with the weight gathers a chunk ahead in fp8 (2026-11-26); 7.98% / 11.7%,
    # the MAPE target met at its edge, with NCCL's SMs beside the overlapped data-parallel
    # collectives (simulator/engine/dp_overlap_sms.py, 2026-11-27); 7.2% / 11.2% with B200's
    # memory rate from cuDNN's norm benchmark; 8.3% / 11.3%, NOT met, with the recipes' TE
    # cross entropy (loss.kernel te, 6 B per logit against 36; the 8B row +3.2% -> +5.2%).
    # 8.2% / 11.3% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28). 10.6% / 14.5% (4
    # rows), MAPE NOT met, with the table's FP8-MX rows once MXFP8 was modelled (8B +11.6%,
    # 405B +14.5%: MXFP8 measured 3.6% / 5.6% slower than FP8-CS, modelled 2.2% faster / 2.9%
    # slower), 2026-11-28.
    # 11.1% / 14.5% once Blackwell's per-tensor fp8 casts wrote one copy, not a copy and its
    # transpose (gpu fp8_any_layout, TransformerEngine's FP8 docs), 2026-11-28.
    # 2.6% / 6.1%, met, once Blackwell's sustained-load clock (b200.yaml sustained_clock_fraction
    # 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put the GB200 0.863 of where
    # A100, H100 and H200 sit against the model), 2026-11-29: the 405B rows +12.1% / +14.5% ->
    # -0.4% / +2.2%, the 8B rows +6.4% / +11.6% -> -6.1% / -1.7%.
    # 5.2% / 7.7% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 5.2% / 7.0% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.2% / 7.7%.
    # 5.1% / 7.0% later on 2026-11-30, FP8 current scaling's amax all-reduces over the tensor-parallel
    # group (kernels.fp8_sp_amax_reduction): was 5.2% / 7.0%.
    # 5.9% / 8.9% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 5.1% / 7.0%.
    # 5.9% / 9.6% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.9% / 8.8%.
    # 5.8% / 9.6% (met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 5.9% / 9.6%.
    # 5.7% / 9.0% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.8% / 9.6%.
    # 5.7% / 8.9% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 5.7% / 9.0%.
    # 5.2% / 8.4% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.7% / 8.9%.
    "megatron_bridge_b200": (0.052, 0.084),
    # tokens/s per GPU, 1 row (BLOOM 176B on 384 A100, Megatron-DeepSpeed with DeepSpeed's
    # BF16_Optimizer), the first DeepSpeed check, scored once after the stack was read from the
    # code: +5.8% (+12.6% without the fp32 upcast-and-add accumulation and the all-reduce);
    # +5.2% with the tied embedding's fp32 all-reduce between the first and last stages.
    # 5.1% / 5.1% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.2% / 5.2%.
    # 5.0% / 5.0% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.1% / 5.1%.
    # 4.9% / 4.9% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.0% / 5.0%.
    "bloom": (0.049, 0.049),
    # tokens/s per GPU, 3 rows (NVIDIA's MLPerf Training v4.0 GPT-3 175B on 512, 10,752 and
    # 11,616 H100, step times from the result logs), the 10,000+ GPU check, scored once:
    # 3.7% / 4.0%, target met (-3.2%, +3.9%, +4.0%); 2.2% / 3.4% (-3.4%, +1.5%, +1.6%) with the
    # weight gathers a chunk ahead in fp8 and the tied embedding's all-reduce (2026-11-26);
    # 1.9% / 3.5% with NCCL's SMs beside the overlapped data-parallel collectives (2026-11-27).
    # 2.0% / 3.5% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 2.1% / 3.6% with NCCL's own double binary tree for the fp8 amax all-reduces (2026-11-29).
    # 0.6% / 0.8% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 3.4% / 3.6% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 0.6% / 0.8%.
    # 1.9% / 2.3% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 3.7% / 4.1%.
    # 2.4% / 2.8% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 1.9% / 2.3%.
    # 2.6% / 3.2% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 2.4% / 2.8%.
    # 2.7% / 3.2% (met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound kernels
    # beside them (simulator/cost/hbm_contention.py): was 2.6% / 3.2%.
    # 3.5% / 3.9% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 2.7% / 3.2%.
    "mlperf_gpt3": (0.035, 0.039),
    # tokens/s per GPU, 5 rows (NVIDIA's MLPerf Training v5.0 Llama 3.1 405B on 512 to 8,192
    # H100, step times from the result logs), scored once: 0.9% / 1.6%, target met; 1.0% / 1.7%
    # with the weight gathers a chunk ahead in fp8; 1.5% / 4.0% once the submissions' bf16 gradient
    # reduction (grad_reduce_in_fp32=False) replaced the profile's fp32 (2026-11-26).
    # 1.4% / 3.7% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 1.5% / 3.8% once OVERLAP_PARAM_GATHER_WITH_OPTIM_STEP was encoded where the configs set it
    # (data_parallel.param_gather_with_optimizer: NeMo 2 then turns bucketing off; 2026-11-28).
    # 5.7% / 7.5% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 3.2% / 5.1% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.7% / 7.5%.
    # 3.1% / 4.9% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 3.2% / 5.1%.
    # 4.8% / 6.5% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 3.0% / 4.8%.
    # 4.3% / 6.0% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 4.8% / 6.5%.
    # 4.2% / 5.9% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 4.3% / 6.0%.
    # 3.7% / 5.4% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 4.2% / 5.9%.
    "mlperf_llama31_405b": (0.037, 0.054),
    # tokens/s per GPU, 3 rows (NVIDIA's MLPerf Training v4.1 GPT-3 175B on 64 B200 and 256 and
    # 512 H100), scored once: 5.4% / 8.6%, target met (B200 +0.8%; H100 -8.6% and -6.7%); 5.4% /
    # 8.7% now.
    # 5.6% / 8.7% once Blackwell's per-tensor fp8 casts wrote one copy, not a copy and its
    # transpose (gpu fp8_any_layout, TransformerEngine's FP8 docs), 2026-11-28.
    # 8.7% / 10.3%, NOT met, once Blackwell's sustained-load clock (b200.yaml
    # sustained_clock_fraction 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put
    # the GB200 0.863 of where A100, H100 and H200 sit against the model), 2026-11-29: the B200
    # row +1.2% -> -10.3%, now as slow as its round's H100 rows (-8.7%, -7.0%); the round's
    # measured B200/H100 ratio per GPU, 2.03, is modelled 2.00 (2.25 before).
    # 2.8% / 4.1% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 4.8% / 6.7% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 2.8% / 4.1%.
    # 3.6% / 4.9% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 4.9% / 6.7%.
    # 4.1% / 5.3% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 3.6% / 4.9%.
    # 5.1% / 6.3% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 4.1% / 5.3%.
    "mlperf_gpt3_v41": (0.051, 0.063),
    # tokens/s per GPU, 8 rows (MLPerf Training v3.1 GPT-3 175B: NVIDIA Eos on 512 to 10,752 H100,
    # Azure on 10,752), scored once: 5.3% / 11.4%, target met; the error grows as the
    # microbatches per step fall (-0.8% with 128, +4.5% with 16, +8% with 8; Azure +11.4%);
    # 3.7% / 8.6% (-1.0%, +3.0%, +5.5%, Azure +8.6%) with the weight gathers a chunk ahead and
    # the tied embedding's all-reduce (2026-11-26); 3.4% / 8.1% with NCCL's SMs beside the
    # overlapped data-parallel collectives (dp_overlap_sms, 2026-11-27).
    # 2.2% / 5.7% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 5.7% / 8.0% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 2.4% / 3.9% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.7% / 8.0%.
    # 4.3% / 6.6% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 2.3% / 3.9%.
    # 3.6% / 5.8% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 4.3% / 6.6%.
    # 3.3% / 5.7% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 3.6% / 5.8%.
    # 2.6% / 4.7% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 3.3% / 5.7%.
    "mlperf_gpt3_v31": (0.026, 0.047),
    # tokens/s per GPU, 2 rows (Oracle's MLPerf Training v4.1 GPT-3 175B on 1,536 and 3,072 H100
    # over RoCE), scored once: 7.9% / 10.8%, target met (-4.9%, +10.8%: the 3,072-GPU runs' step
    # swings by 25% from block to block; network congestion is not modelled); 7.4% / 9.0% on
    # 2026-11-26; 7.3% / 8.7% with NCCL's SMs beside the overlapped collectives (2026-11-27).
    # 7.3% / 8.6% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 8.8% / 16.6%, NOT met, once every NIC of a server carried traffic (16 per OCI server, one
    # per GPU before: -6.0% -> -1.1%, +8.6% -> +16.6%, the fast blocks' step; 2026-11-29).
    # 10.4% / 19.0% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 8.5% / 16.1% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 10.4% / 19.0%.
    # 9.5% / 18.0% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 8.5% / 15.9%.
    # 9.0% / 17.6% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 9.5% / 18.0%.
    # 8.5% / 16.4% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 9.0% / 17.6%.
    "mlperf_gpt3_oci": (0.085, 0.164),
    # tokens/s per GPU, 3 rows (Primus-Megatron logs on AMD MI325X: Llama 2 7B on 64, 70B with
    # torch FSDP2 on 16, Mixtral 8x7B with ep 8 on 64 GPUs), the first AMD training check, scored
    # once: 13.4% / 37.0%, NOT met (the dense rows -3.0% and +0.3%; Mixtral +37%: dropless MoE
    # at random initialisation, router and permutations not modelled); 14.4% / 36.7% on
    # 2026-11-27 with RCCL's CUs beside compute counted per NIC (16 of 304, the 70B FSDP2 row
    # +0.3% -> +3.4%; 224 before, the mesh's ring construction) and priced beside DDP's too.
    # 13.1% / 33.0% with the MoE router and unfused token permutations priced (2026-11-28);
    # the run forces balanced routing (moe_router_force_load_balancing), so not load imbalance.
    # 12.4% / 29.4% with the experts' gradients reduced over their expert-data-parallel groups
    # and the logs' unfused gradient accumulation priced (the 7B row -2.7% -> -4.3%).
    # 12.3% / 29.2% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 12.4% / 29.3% once each buffer's buckets held its own tensors (experts' or the rest's, 2026-11-29).
    # 10.4% / 29.3% with the same author's Megatron-LM Llama 3.1 70B FSDP2 log on 64 MI325X
    # added as row 4 (2026-11-29, scored once: -4.5%).
    # 10.1% / 28.3% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 10.3% / 28.9%.
    "primus_mi325x": (0.101, 0.283),
    # tokens/s per GPU, 1 row (ROCm Megatron-LM Llama 2 7B FP8, dp 8 on one server of 8 MI300X,
    # hisohara/ai-scripts @ 913709dd: from-source TransformerEngine without hipBLASLt tuning or
    # flash-attn), the first MI300X training check, out of sample, scored once on 2026-12-01 with
    # no constant changed: 26.3% / 26.3%, NOT met (predicted 16,148, measured 12,787; the same
    # model on MI325X under Primus v25.9 reads -4.5%).
    # 26.6% / 26.6% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 26.3% / 26.3%.
    "megatron_mi300x": (0.266, 0.266),
    # one MoE layer's forward and backward ms, 24 rows (Megatron-LM's moe_perf baseline on one
    # DGX H100, NVIDIA/Megatron-LM @ cf39a4ddcf: Mixtral and DeepSeek proxies, three dispatchers,
    # BF16 and FP8 blockwise), out of sample, scored once on 2026-12-01 with no constant
    # changed: 11.3% / 26.5%, NOT met (BF16 9.1%: Mixtral fast, DeepSeek's backward slow; FP8
    # blockwise priced as per-tensor scaling, the Mixtral FP8 rows -15% to -27%).
    # 11.0% / 27.9% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 11.3% / 26.5%.
    # 8.6% / 17.8% once blockwise fp8 became expressible (kernels.fp8_scaling: blockwise, the
    # Hopper block-scaled GEMM ratio 0.813 from TransformerEngine's GEMM profiling guide, not
    # from this set; 2026-12-01): the Mixtral FP8 rows -15..-28% -> -9..-18%; was 11.0% / 27.9%.
    # 8.0% / 15.9% once the test's unfused expert activation was encoded (TransformerConfig's
    # bias_activation_fusion default) and its eager fp32 probability weighting priced
    # (PROBS_WEIGHT_BYTES; 2026-12-01): the Mixtral rows -3..+10%, DeepSeek -4..+16%; was 8.6% / 17.8%.
    # 7.0% / 14.6% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 8.0% / 15.9%.
    # 7.3% / 14.9% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 7.0% / 14.6%.
    # 7.4% / 14.3% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 7.3% / 14.9%.
    "megatron_moe_layer": (0.074, 0.143),
    # model TFLOP/s per GPU (Megatron's count), 11 rows (the Megatron-LM README's H100 scaling
    # runs, Megatron-Core r0.8.0: GPT 1.7B-462B on 48-6,144 GPUs and the 177B strong-scaling
    # end points), out of sample: 14.9% / 27.1%, NOT met (every row fast: predicted MFU 45-58%,
    # measured 41-49%; the 1.7B row +27%); 14.4% / 26.0% with NCCL's SMs beside the
    # overlapped data-parallel collectives (2026-11-27); 13.7% / 22.0% with the unfused
    # vocab-parallel loss's 52 B per logit (loss.kernel, 2026-11-28; the 1.7B row +26 -> +22%).
    # 13.5% / 21.7% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 14.4% / 21.7% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 12.8% / 19.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 14.4% / 21.7%.
    # 12.4% / 19.0% once Megatron-Core's per-step zeroing of its whole gradient buffer was
    # priced (data_parallel.zero_grad_buffer, 2026-11-30): was 12.8% / 19.8%.
    # 13.5% / 20.3% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 12.4% / 19.0%.
    # 13.3% / 20.0% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 13.5% / 20.3%.
    # 12.8% / 20.0% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 13.3% / 20.0%.
    # 12.8% / 19.7% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 12.8% / 20.0%.
    # 11.7% / 19.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 12.8% / 19.7%.
    "megatron_core_scaling": (0.117, 0.190),
    # tokens/s per GPU, 8 rows (Korthikanti et al. 2022, arXiv:2205.05198 Table 4: GPT 22B-1T on
    # 8-512 A100, full recompute and sequence parallelism + selective recompute, dp 1), out of
    # sample, scored once on 2026-11-28: 4.7% / 8.3%, target met (the 1T rows -8.3% / -7.3%).
    # 5.0% / 8.6% once Megatron's overlapped input-gradient collective held its NCCL kernels' SMs
    # beside the weight-gradient GEMM (simulator/cost/tp_exposure.py, 2026-11-28).
    # 5.2% / 8.7% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.0% / 8.6%.
    # 5.3% / 8.8% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.2% / 8.7%.
    # 5.4% / 8.9% (met) since 2026-12-01, NCCL's own channel count inside an NVLink domain (its
    # topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 5.3% / 8.8%.
    # 5.7% / 8.9% (met) since 2026-12-02, selective recompute of the unfused attention core
    # re-running its softmax and dropout (1.19 ms a 22B layer, Table 4 of the same paper measured
    # 1.3; 0.48 with the two GEMMs alone): was 5.4% / 8.9%; the selective rows read 1-4 points
    # slower (22B +2.0% -> -1.1%, 1T -7.8% -> -8.4%).
    # 5.7% / 9.5% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.7% / 8.9%.
    "megatron_selective": (0.057, 0.095),
    # tokens/s per GPU, 3 rows (SC21 Table 2, Megatron-LM PTD-P GPT 530B on 560-2,240 A100 at a
    # fixed batch), out of sample, scored once on 2026-11-28: 1.7% / 3.9%, met.
    # 1.6% / 3.7% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 1.7% / 3.9%.
    # 1.6% / 3.6% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 1.6% / 3.7%.
    # 1.4% / 3.1% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 1.6% / 3.6%.
    "sc21_ptd": (0.014, 0.031),
    # tokens/s per GPU, 6 rows (SC21 Table 2, DeepSpeed ZeRO-3 of 2021 without model
    # parallelism, GPT 175B and 530B on 384-2,240 A100), scored once on 2026-11-28: 147% / 292%
    # with the profile as it stood, 117% / 241% with the list collectives' per-rank copies,
    # 51.5% / 99.0% with prefetch 0 (the gathers' device syncs, read from DeepSpeed 0.4);
    # 18.5% / 36.3% with the host's issue of those copies, 9 us each (2026-11-29); 22.5% /
    # 45.6% with v0.4.0's persistent small tensors and its reuse-distance re-gathers (the same
    # day): NOT met, every row fast (the 530B rows 23-46%); 10.8% / 18.5% with the host's Python
    # loop that builds each list and the all-gather's zero fill (2026-11-30): NOT met, the 175B
    # row on 1,536 GPUs -18.5%, the 530B rows +13-17%. 10.7% / 20.0% once a ring across servers
    # paid NCCL's net-overhead floor per step (2 us on DGX A100's AMD hosts, 6 us under Simple;
    # 2026-11-30): the 530B rows +12-16%, the 175B row on 1,536 GPUs -20.0%.
    # 10.5% / 22.1% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 10.7% / 20.0%.
    # 10.3% / 22.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 10.5% / 22.1%.
    "sc21_zero3": (0.103, 0.220),
    # tokens/s per GPU, 12 rows (MegaScale, NSDI '24, Table 2: Megatron-LM of January 2023, GPT
    # 175B at a held batch on 256-1,024 and 3,072-12,288 A100 over multi-rail RoCE; Table 3's
    # baseline, batch 256 on 256; Figure 9's 530B at batch = GPUs on 2,240-11,200), out of sample,
    # scored once on 2026-12-02 with flash-attn 1.x (kernels.attention fa1, added for it) and no
    # constant changed: 7.1% / 12.0%, met (the eight Table 2 rows read 3.9% / 8.5% with the unfused
    # core, not kept). The 175B curves are the miss (test below).
    # 6.1% / 10.9% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 7.1% / 12.0%.
    "megascale_megatron": (0.061, 0.109),
    # tokens/s per GPU, 7 rows (MLPerf Training v5.0 Llama 3.1 405B on GB200 NVL72: NVIDIA's Tyche
    # on 256 and 512, CoreWeave's Carina on 512 to 2,496 GPUs), the first GB200 check: 16.3% /
    # 25.9% when scored without the runs' rank mapping, 13.9% / 20.4% with it
    # (parallelism.rank_order tp-cp-pp-dp); 20.5% / 24.0% with the submissions' bf16 gradient
    # reduction (grad_reduce_in_fp32=False), NOT met: compute 21% short per microbatch, the fixed
    # part per step twice the runs'; 20.4% / 23.9% with NCCL's SMs beside the overlapped
    # data-parallel collectives (2026-11-27).
    # 12.9% / 16.0% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 12.8% / 15.9% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28).
    # 13.7% / 16.8% once Blackwell's per-tensor fp8 casts wrote one copy, not a copy and its
    # transpose (gpu fp8_any_layout, TransformerEngine's FP8 docs), 2026-11-28.
    # 1.5% / 2.6%, met, once Blackwell's sustained-load clock (b200.yaml sustained_clock_fraction
    # 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put the GB200 0.863 of where
    # A100, H100 and H200 sit against the model), 2026-11-29: every row +10% to +17% -> -2.2% to
    # +2.6%.
    # 1.6% / 3.6% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 1.6% / 2.5% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 1.6% / 3.6%.
    # 2.5% / 3.7% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 1.6% / 2.5%.
    # 3.2% / 4.4% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 2.5% / 3.6%.
    # 2.6% / 3.8% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 3.2% / 4.4%.
    # 2.6% / 3.7% (met) since 2026-12-01, NCCL's own channel count inside an NVLink domain (its
    # topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 2.6% / 3.8%.
    # 2.5% / 3.7% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 2.6% / 3.7%.
    # 2.0% / 3.2% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 2.5% / 3.7%.
    "mlperf_llama31_405b_gb200": (0.020, 0.032),
    # tokens/s per GPU, 21 rows (NVIDIA DGX Cloud recipes: Nemotron4 15B BF16 and FP8 on 16 to
    # 2,048 H100, Nemotron4 340B FP8 on 128 to 2,048), out of sample: 2.7% / 5.7% (3.3% / 6.5%
    # when scored first), target met. The 340B curve loses 10.5% from 128 to 2,048 GPUs
    # measured, 3.1% predicted. 2.5% / 5.4% with NCCL's SMs beside the overlapped collectives.
    # 2.5% / 5.3% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 3.6% / 8.9% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 2.1% / 6.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 3.9% / 9.0%.
    # 3.1% / 8.3% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 2.0% / 6.7%.
    # 2.9% / 8.0% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 3.1% / 8.3%.
    # 2.6% / 7.9% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 2.9% / 8.0%.
    # 2.2% / 7.1% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 2.6% / 7.9%.
    "dgxc_nemotron": (0.022, 0.071),
    # tokens/s per GPU, 34 rows (DGX Cloud Llama 3.1 8B, 70B, 405B and its proxies, BF16 and
    # FP8, cp 2, 8 to 2,304 H100), out of sample: 3.2% / 9.4% (3.1% / 9.9% when scored first),
    # target met.
    # 3.9% / 9.3% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 3.5% / 9.2% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 3.9% / 9.3%.
    # 3.7% / 9.2% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 3.5% / 9.2%.
    # 3.8% / 8.6% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 3.7% / 9.2%.
    # 3.7% / 8.6% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 3.8% / 8.6%.
    # 3.8% / 8.7% (met) since 2026-12-01, NCCL's own channel count inside an NVLink domain (its
    # topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 3.7% / 8.6%.
    # 3.7% / 8.7% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 3.8% / 8.7%.
    # 3.8% / 8.7% (met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound kernels
    # beside them (simulator/cost/hbm_contention.py): was 3.7% / 8.7%.
    # 3.5% / 8.2% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 3.8% / 8.7%.
    "dgxc_llama31": (0.035, 0.082),
    # tokens/s per GPU, 10 rows (DGX Cloud GPT-3 175B, BF16 and FP8, 128 to 2,048 H100), out of
    # sample: 3.9% / 8.3% (3.5% / 7.9% since 2026-11-26's weight gathers and tied-embedding
    # all-reduce), target met (the FP8 curve's end); first scored at 4.8% / 10.1%, before
    # TE's fp8 amax all-reduce (kernels.fp8_amax_reduction) was modelled; 4.5% / 9.1% before
    # attention's rate depended on the sequence length (2K here: slower than at 8K).
    # 3.4% / 7.9% with NCCL's SMs beside the overlapped data-parallel collectives (2026-11-27).
    # 7.0% / 12.6% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 3.7% / 8.4% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 7.0% / 12.6%.
    # 5.8% / 11.0% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 3.7% / 8.3%.
    # 5.2% / 10.2% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.8% / 11.0%.
    # 5.1% / 10.2% (met) since 2026-12-01, NCCL's channels across servers doubled as its search
    # doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with 4 or
    # fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on ConnectX-8
    # behind PCIe Gen6): was 5.2% / 10.2%.
    # 4.0% / 9.1% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.1% / 10.2%.
    "dgxc_gpt3": (0.040, 0.091),
    # tokens/s per GPU, 14 rows (DGX Cloud Grok-1 314B, MoE 8 experts top 2, ep 8, BF16 and FP8,
    # 32 to 2,048 H100): 10.7% / 22.4%, NOT met. First scored at 12.1% / 14.4% (every row slow),
    # before the expert all-to-all carried only each rank's sequence shard (Megatron-Core's
    # dispatcher); now every row fast, FP8 most (the FP8 speed-up over-predicted). 8.6% / 19.7%
    # with the router and the dispatcher's unfused token permutations priced (2026-11-28);
    # 8.5% / 19.5% with NeMo 2's fused cross entropy (loss.kernel vocab_parallel_fused);
    # 8.7% / 19.7% once the MoE layers' MLP block ran no dense tensor-parallel collectives
    # (the dispatcher's gather replaces them; they had been counted twice).
    # 8.7% / 19.8% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 8.6% / 19.7% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28).
    # 11.5% / 20.3% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 10.0% / 18.4% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 11.5% / 20.3%.
    # 10.9% / 19.5% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 10.0% / 18.3%.
    # 10.3% / 18.7% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 10.9% / 19.5%.
    # 10.3% / 18.6% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 10.3% / 18.7%.
    # 9.8% / 18.4% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 10.3% / 18.6%.
    "dgxc_grok1": (0.098, 0.184),
    # tokens/s per GPU, 18 rows (llm-foundry MPT 1B-70B, PyTorch FSDP1 via Composer, 128 to 512
    # H100), out of sample: 9.3% / 20.4%, NOT met (the rows without activation checkpointing
    # 7-20% fast, widening with the GPU count). First scored at 13.2% / 27.8% (the Triton
    # attention rows priced as FlashAttention-2, attention at its 8K rate); 11.6% / 25.8% with
    # the Triton kernel and attention's length dependence, before FSDP1's gradient copy-in,
    # cast and pre-division (sharding.grad_copy_in, predivide) were modelled; 10.1% / 22.5%
    # before NCCL's SM share beside compute (simulator/cost/nccl_sms.py); 10.0% / 23.3% with
    # MPT's fused xentropy loss (loss.kernel xentropy, 8 B per logit against 36; 2026-11-28).
    # 10.9% / 28.3% with MPT's own code encoded (dropout 0, the bias in nn.Linear's GEMM,
    # flash_attn_fn's unpad/pad copies: kernels.attention_unpad; 2026-11-29): recomputed rows
    # -7% to +5%, the rows without recompute +12% to +28%.
    # 10.3% / 26.3% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 10.9% / 28.3%.
    # 10.7% / 27.8% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 10.3% / 26.3%.
    # 10.6% / 27.5% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 10.7% / 27.8%.
    # 10.5% / 27.5% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 10.6% / 27.5%.
    # 11.5% / 29.9% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 10.5% / 27.5%.
    "llm_foundry": (0.115, 0.299),
    # tokens/s per GPU, 10 rows (IBM fms-fsdp, PyTorch FSDP1 Llama 2 7B-70B on 128 A100 and 96
    # H100, eager and torch.compile), out of sample, scored once on 2026-11-29: 8 rows 8.1% /
    # 22.4%; with the eager 13B (recompute_fraction 0.5, added the same day) 8.1% / 22.4%, NOT
    # met (A100 -9% to +2%, H100 +3% to +22%: opposite signs, same software). 8.0% / 21.9% with
    # FSDP1's cast of each shard before its gather (sharding.gather_copy_in, 2026-11-29).
    # 7.6% / 20.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 8.0% / 21.9%.
    # 7.9% / 21.5% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 7.6% / 20.8%.
    # 7.8% / 21.3% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 7.9% / 21.5%.
    # 7.5% / 18.6% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 7.8% / 21.3%.
    # 6.9% / 18.6% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 7.5% / 18.6%.
    # 6.9% / 18.4% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 6.9% / 18.6%.
    # 7.3% / 20.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 6.9% / 18.4%.
    "fms_fsdp": (0.073, 0.200),
    # tokens/s per GPU, 8 rows (Ai2 OLMo-core, PyTorch FSDP2 OLMo 1B-13B and Llama 8B, BF16 and
    # FP8, on one 8-H100 server, 32-256 microbatches a step), out of sample, scored once on
    # 2026-11-29: 17.6% / 37.7%; 14.7% / 33.1% once FSDP2's gather copy-out was modelled
    # (sharding.gather_copy_out); 13.5% / 31.4% with the OLMo models' QK-norm (model.qk_norm);
    # 11.3% / 30.1% with the fp32 logits and their shifted copy (loss.fp32_logits, shift_copy);
    # 8.8% / 30.2% with the 1B's unfused z-loss (loss.z_loss) and the fused rows' Triton kernel
    # as its passes run (loss.kernel te); 8.2% / 28.7% with the sharded gradient's accumulation
    # over microbatches (pipeline_fsdp.copy_in_seconds); 7.6% / 28.1% with the shard's cast and
    # copy before each gather (sharding.gather_copy_in), NOT met (13B +13% / +28%).
    # 6.4% / 25.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 7.6% / 28.1%.
    # 7.2% / 27.4% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 6.4% / 25.8%.
    # 7.2% / 27.1% (not met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 7.2% / 27.4%.
    # 7.0% / 26.5% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 7.2% / 27.1%.
    # 5.9% / 24.2% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 7.0% / 26.5%.
    # 5.4% / 22.6% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 5.9% / 24.2%.
    # 5.9% / 23.7% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.4% / 22.6%.
    "olmo_core": (0.059, 0.237),
    # tokens/s per GPU, 4 rows (FlagPerf, DeepSpeed 0.11.1 ZeRO-3 Llama 2 7B, Hugging Face eager
    # layers without recompute, on one server of 8 A800 or 8 H800), out of sample, scored once
    # on 2026-11-30 with no constant changed: 9.0% / 26.3%, NOT met (A800 +6.9%, +2.3%, -0.5%;
    # H800 +26.3%, the Hopper miss of eager stacks: docs/research/stack_facts.md section 49).
    # 8.6% / 24.8% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 9.0% / 26.3%.
    # 8.8% / 25.6% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 8.6% / 24.8%.
    # 8.6% / 25.2% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 8.8% / 25.6%.
    # 8.4% / 24.8% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 8.6% / 25.2%.
    # 9.0% / 26.6% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 8.4% / 24.8%.
    "flagperf_deepspeed": (0.090, 0.266),
    # tokens/s per GPU, 9 rows (FlagPerf, Megatron-Core 0.6 Llama 3 8B at batch 512 x 8192: five
    # layouts on one DGX A800, tp 2 on 8 and 16 H100 in BF16 and FP8), out of sample, scored once
    # on 2026-11-30 with no constant changed: 12.4% / 22.4%, NOT met (A800 -1.9% to -8.7%, H100
    # +17.7% to +22.4%: the Hopper gap of the 2023-mid-2024 runs, stack_facts section 49).
    # 12.6% / 22.4% with row 10, the suite's 70B on 64 H100 (tp 8 x pp 4 x dp 2), +14.5%.
    # 11.7% / 20.0% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 12.6% / 22.4%.
    # 12.3% / 21.4% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 11.7% / 20.0%.
    # 12.1% / 20.7% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 12.3% / 21.4%.
    # 12.0% / 20.6% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 12.1% / 20.7%.
    # 12.4% / 21.3% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 12.0% / 20.6%.
    "flagperf_megatron": (0.124, 0.213),
    # peak memory per GPU, 18 rows: 9.2% / 25.5%, NOT met (the 405B pipeline rows 16-26% low).
    # 9.6% / 26.2% once Llama-style models keep no dropout masks (model.dropout 0, 2026-11-29).
    "torchtitan_memory": (0.096, 0.262),
    # tokens/s per GPU, 15 rows (MLPerf Training v5.1 Llama 3.1: 8B on 8-256 B200, 72-512 GB200
    # and 64-128 H100 over Ethernet, 405B on 256-448 B200 and 512-1,024 H200), out of sample,
    # scored once on 2026-11-28: 15.7% / 50.6% over the first 9 rows, 17.9% / 50.6% with
    # University of Florida's 8B curve, 20.2% / 57.2% with NVIDIA's GB200 8B rows, NOT met (H200
    # 405B -2.5%/-2.7%; B200 405B +17%, as the other Blackwell 405B sets; the multi-server 8B rows
    # +10% to +57%, the two tp 2 rows the widest).
    # 20.2% / 61.4% once each data-parallel NCCL call paid the collective's latency and
    # the first weight bucket its gather dtype's bytes (simulator/engine/dp_calls.py, 2026-11-28).
    # 18.1% / 61.4% once OVERLAP_PARAM_GATHER_WITH_OPTIM_STEP was encoded where the configs set it
    # (data_parallel.param_gather_with_optimizer: NeMo 2 then turns bucketing off; 2026-11-28).
    # 17.9% / 60.0% once TE's cp ring exchanges held their NCCL kernels' SMs beside each
    # step's attention (simulator/cost/context_parallel.py, 2026-11-28).
    # 19.1% / 62.8% once Blackwell's per-tensor fp8 casts wrote one copy, not a copy and its
    # transpose (gpu fp8_any_layout, TransformerEngine's FP8 docs), 2026-11-28.
    # 18.4% once Dell's one-server B300 8B row (+8.7%) joined with the b300 GPU (2026-11-29).
    # 10.4% / 50.1%, NOT met, once Blackwell's sustained-load clock (b200.yaml
    # sustained_clock_fraction 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put
    # the GB200 0.863 of where A100, H100 and H200 sit against the model), 2026-11-29: the B200
    # 405B rows +17.4% / +18.5% -> +3.9% / +4.9%; the B300 8B row (inheriting it) +8.6% ->
    # -3.8%; the small-step 8B rows stay fast (+9% to +50%).
    # 11.2% / 51.2% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 9.7% / 51.2% with AMD's six one-server rows (MI355X -6.3% to -1.2%, MI350X +8.3% / +12.0%;
    # the mi355x and mi350x GPUs, 2026-11-29).
    # 9.0% / 51.2% once the MI350X had its own hipBLASLt fp8 GEMM rate (HipKittens' MI350X
    # sweep, 2026-11-30): its rows +8.3% / +12.0% -> +1.5% / +5.0%.
    # 8.7% / 50.1% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 9.0% / 51.2%.
    # 8.6% / 47.6% later on 2026-11-30, FP8 current scaling's amax all-reduces over the tensor-parallel
    # group (kernels.fp8_sp_amax_reduction): was 8.7% / 50.1%.
    # 8.0% / 39.2% once context-parallel ranks reduced their gradients with the
    # data-parallel ranks in one dp x cp group (Layout.stage_gradient_groups, 2026-11-30): was 8.6% / 47.6%.
    # 7.6% / 36.6% (MAPE met) once Megatron-Core's per-step zeroing of its whole gradient buffer
    # was priced (data_parallel.zero_grad_buffer, 2026-11-30): was 8.0% / 39.2%.
    # 7.6% / 33.6% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 7.6% / 36.6%.
    # 7.4% / 31.6% (not met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 7.6% / 33.6%.
    # 7.0% / 28.0% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 7.4% / 31.6%.
    # 7.1% / 27.1% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 7.0% / 28.0%.
    # 7.0% / 27.1% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 7.1% / 27.1%.
    # 6.9% / 28.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 7.0% / 27.1%.
    "mlperf_v51_llama31": (0.069, 0.280),
    # tokens/s per GPU, 3 rows (Megatron-Bridge 26.04.01: Llama 3 70B on 64 H100, Llama 3.1 405B on
    # 1,024 H100 and 256 GB200 without cp), out of sample, scored once on 2026-11-28: 5.3% / 9.4%,
    # met (the 405B rows -1.1% and +5.5%, the 70B row -9.4%). 9.6% / 16.7%, NOT met, with the
    # same table's GB200 MXFP8 rows once MXFP8 was modelled (70B +16.7%, 405B +15.3%; MXFP8 ran
    # 7.4% slower than FP8 current scaling there, modelled 1.2% faster), 2026-11-28.
    # 9.8% / 16.7% once Blackwell's per-tensor fp8 casts wrote one copy, not a copy and its
    # transpose (gpu fp8_any_layout, TransformerEngine's FP8 docs), 2026-11-28.
    # 9.1% / 16.7% with the GB200 NVFP4 rows (+3.9%, -10.9%) once NVFP4 was modelled, 2026-11-28.
    # 7.0% / 20.7%, MAPE met, max NOT met, once Blackwell's sustained-load clock (b200.yaml
    # sustained_clock_fraction 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put
    # the GB200 0.863 of where A100, H100 and H200 sit against the model), 2026-11-29: the GB200
    # MXFP8 rows +16.7% / +15.3% -> +2.4% / +0.7%, the NVFP4 405B row -10.9% -> -20.7% (its rows'
    # measured NVFP4 gain over FP8, 26.04.01, is not reproduced).
    # 5.7% / 15.5% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 5.7% / 16.4% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 5.7% / 15.5%.
    # 5.7% / 15.7% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.7% / 16.4%.
    # 5.8% / 15.8% (not met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 5.7% / 15.7%.
    # 5.8% / 16.1% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.8% / 15.8%.
    # 5.8% / 16.4% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 5.8% / 16.1%.
    # 5.6% / 16.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.8% / 16.4%.
    "megatron_bridge_2604": (0.056, 0.160),
    # tokens/s per GPU, 2 rows (Megatron-Bridge 26.04.01 Qwen3 30B-A3B on 16 H100 and 235B-A22B on
    # 256 H100, FP8 current scaling, 16- and 32-way expert parallelism), out of sample, scored once
    # on 2026-11-28: 18.9% / 21.7%, NOT met (both slow, -16.1% and -21.7%: the expert all-to-alls
    # priced in series at line rate, where the runs overlap them or use DeepEP's hybridep kernels).
    # 18.8% / 21.5% once the 235B row's all-to-all overlap was modelled (simulator/cost/ep_overlap.py,
    # 2026-11-28): that row -21.7% -> +21.5%, communication-bound at the all-to-alls' modelled rate.
    # 19.6% / 21.5% once TransformerEngine's per-expert GEMMs (4 streams) and per-expert fp8
    # quantization were priced (kernels.grouped_gemm_streams, 2026-11-28): the 30B row -17.7%.
    # 10.8% / 21.5% once the table's four 8-GPU Blackwell rows of the 30B joined (2026-11-29):
    # GB300 -2.1%, B300 -0.3% at micro batch 8; GB200 +14.5%, B200 +8.6% at micro batch 4.
    # 9.4% / 21.5% once Blackwell's sustained-load clock (b200.yaml sustained_clock_fraction
    # 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put the GB200 0.863 of where
    # A100, H100 and H200 sit against the model), 2026-11-29: GB200 +14.5% -> +6.9%, B200 +8.6% ->
    # +1.2%, B300 -0.3% -> -6.9% (inheriting it); GB300 unchanged. 9.5% / 21.5% with Qwen3's
    # QK-norm (model.qk_norm in the qwen3 presets, 2026-11-29).
    # 10.0% / 24.4% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 10.1% / 24.1% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 10.0% / 24.4%.
    # 10.3% / 24.1% since the B300/GB300 took the B300's own MAMF GEMM fractions (2026-11-30).
    # 14.3% / 33.5% since the rows that ran the flex dispatcher's hybridep kernels state it
    # (expert_parallel.dispatcher, simulator/cost/ep_dedup.py, 2026-11-30): the 30B H100 row
    # -19.3% -> +33.5% (its all-to-alls 19.4 s -> 5.0 s: the MoE layer's compute is what is
    # missing), the Blackwell rows +7.7% / -1.2% / +13.9% / +5.4% (B200, B300, GB200, GB300).
    # 13.3% / 37.5% with the table's Qwen3 235B rows on 256 Blackwell GPUs (rows 7-10, scored once
    # on 2026-11-30): GB300 -5.1%, GB200 -1.3%, B300 -3.8%, B200 (alltoall dispatcher) +37.5%.
    # 25.9% / 64.1% with the table's GPT-OSS 120B rows (rows 11-15, BF16 on 64 GPUs, scored once on
    # 2026-11-30 when sliding-window attention became expressible): +39.5% to +64.1%, not identified.
    # 28.2% / 64.1% once the flex dispatcher priced its own permutations (deduplicated rows, no
    # sorts; 2026-11-30): the hybridep rows faster, the eager ones further from the measurements.
    # 24.8% / 57.1% later on 2026-11-30, the fp8 padding copies around the grouped experts and GPT-OSS's
    # eager expert bias (expert_parallel.fp8_padding, model.expert_bias): was 28.2% / 64.1%.
    # 23.4% / 56.9% with the table's Kimi K2 row (row 16, 256 GB300, MXFP8, the Muon optimizer:
    # training.optimizer, scored once on 2026-11-30): +2.8% (+5.7% priced with Adam's step).
    # 21.4% / 56.9% once Blackwell's Mamba-2 scan products ran at the scan_product_fraction derived
    # from state-spaces/mamba#904 (2026-12-01; validation/mamba2_gpus.csv): Nemotron 3 Nano +4.5% to
    # +14.5% (was +19.6% to +30.4%), Super +7.2% to +45.5% (was +16.3% to +63.0%); was 26.2% / 63.0%.
    # 22.4% / 60.4% once the GPT-OSS rows ran TE's cross entropy, as Megatron-Bridge's perf
    # overrides set for every recipe (an encoding fix, 2026-12-01; the rows moved +3.3 to +10.8 points).
    # 24.7% / 62.8% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 22.4% / 60.4%.
    # 23.6% / 58.1% once GPT-OSS's YaRN rotary embedding ran unfused (concentration 0.1 ln 32 + 1 is not 1:
    # Megatron-Core's eager RoPE, model.rope_concentration; 2026-12-01): was 24.7% / 62.8%.
    # 24.4% / 58.3% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 23.6% / 58.1%.
    # 23.3% / 56.4% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 24.4% / 58.3%.
    # 23.2% / 56.4% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 23.3% / 56.4%.
    # 23.0% / 56.4% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 23.2% / 56.4%.
    # 24.4% / 58.0% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 23.0% / 56.4%.
    "megatron_bridge_2604_moe": (0.244, 0.580),
    # tokens/s per GPU, 4 rows (Megatron-Bridge PR #3561's A/B of GPT-OSS 120B on 64 GB200, the V2
    # config: BF16 and MXFP8 by the alltoall and HybridEP dispatchers; model TFLOP/s over Bridge's
    # 27.16 GFLOP per token), out of sample, scored once on 2026-12-01: 77.1% / 95.8%, NOT met
    # (BF16 +61.6% / +59.2%, MXFP8 +95.8% / +91.9%; measured MXFP8/BF16 1.035x and 1.060x, the
    # model 1.25x and 1.28x: the time the model misses is time MXFP8 does not shorten).
    # 80.7% / 101.3% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 77.1% / 95.8%.
    # 73.0% / 91.6% once GPT-OSS's YaRN rotary embedding ran unfused (concentration 0.1 ln 32 + 1 is not 1:
    # Megatron-Core's eager RoPE, model.rope_concentration; 2026-12-01): was 80.7% / 101.3%.
    # 73.7% / 92.2% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 73.0% / 91.6%.
    # 72.5% / 90.4% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 73.7% / 92.2%.
    # 71.3% / 87.6% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 72.5% / 90.4%.
    # 71.3% / 87.5% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 71.3% / 87.6%.
    # 74.3% / 91.6% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 71.3% / 87.5%.
    "megatron_bridge_gptoss_pair": (0.743, 0.916),
    # tokens/s per GPU, 5 rows (Megatron-Bridge 26.06 Qwen3 30B-A3B on 8 GB300, GB200, B300 and
    # 235B-A22B on 256 GB300, GB200, MXFP8 with the all-to-all overlap and TE's fused grouped MLP,
    # kernels.grouped_mlp_fusion), out of sample, scored once on 2026-11-30: 4.3% / 5.5%, met (every
    # row -3.0% to -5.5%; the model's gains over the 26.04.01 rows 1.27-1.33x against the measured
    # 1.30-1.56x: the full-iteration CUDA graphs' host time is not modelled).
    # 6.3% / 14.2% with the table's DeepSeek-V3 rows on 256 GB300 and GB200 (rows 6-7, the same
    # day): -14.2% and -8.3% (the GB300 row's MXFP8 attention is not expressible).
    # 7.9% / 15.4% (NOT met) once HybridEP's kernels held the 32 SMs the recipes give them beside the
    # overlapped compute (expert_parallel.dispatcher_sms, 2026-11-30; NCCL's 16 CTAs before): every
    # row 1-1.3 points slower, the DeepSeek-V3 GB300 row (MXFP8 attention not expressible) -15.4%.
    # 7.5% / 10.4% (met) once TE's MXFP8 attention became expressible (kernels.fp8_attention, the
    # same day, at cuDNN's measured MXFP8/bf16 ratios): the Qwen3 rows 0.4-0.8 points slower (at
    # 128/128 the backward runs 0.92x bf16), the DeepSeek-V3 GB300 row -15.4% -> -10.4%.
    # 10.4% / 21.3% (NOT met) with the table's GPT-OSS 120B rows on 64 GB300 and GB200 (rows 8-9,
    # scored once the same day, when fp8 attention over sliding windows became expressible):
    # +21.3% and +19.8%, fully graphed (not host time; the sinks, the vocabulary, the biases left).
    # 8.1% / 25.0% with the flex dispatcher's own permutations (the same day): Qwen3 -3.7..+1.3%,
    # DeepSeek-V3 -7.5% / -7.3%, GPT-OSS +25.0% / +22.7%.
    # 8.0% / 30.1% once the recipes' MXFP8 output layer became expressible (kernels.fp8_output_proj,
    # 2026-12-01; v0.5.1 sets it for DeepSeek-V3 and GPT-OSS under MXFP8 on GB200/GB300):
    # DeepSeek-V3 -6.3% -> -2.3% (GB300), -7.5% -> -0.7% (GB200); GPT-OSS +24.8% -> +30.1%,
    # +22.7% -> +28.3% (its miss lies elsewhere: the sinks, the small shapes).
    # 8.5% / 33.0% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 8.0% / 30.1%.
    # 6.8% / 24.5% once GPT-OSS's YaRN rotary embedding ran unfused (concentration 0.1 ln 32 + 1 is not 1:
    # Megatron-Core's eager RoPE, model.rope_concentration; 2026-12-01): was 8.5% / 33.0%.
    # 6.8% / 24.1% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 6.8% / 24.5%.
    # 6.7% / 23.5% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 6.8% / 24.1%.
    # 6.6% / 23.4% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 6.7% / 23.5%.
    # 7.5% / 26.8% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 6.6% / 23.4%.
    "megatron_bridge_2606_moe": (0.075, 0.268),
    # tokens/s per GPU, 12 rows (Megatron-Bridge's 26.08 table, MXFP8: DeepSeek-V3 on 256 GB300 and
    # GB200, GPT-OSS 120B on 64, Qwen3 30B-A3B on 8 and 235B-A22B on 256 of each, Nemotron 3 Nano on 8
    # GB300, Nemotron 3.5 Lightning on 8 GB200, Nemotron 3 Super on 64 GB300 and GB200; recipes of
    # v0.6.0, each the one an earlier set's row encodes), out of sample, scored once on 2026-12-01:
    # 11.1% / 37.6%, NOT met. DeepSeek-V3 and Qwen3 -6.5% to +2.9% (fully graphed), GPT-OSS +25.4% /
    # +23.9%, Nano +5.5%, Lightning +7.7%, Super +14.6% (GB300) / +37.6% (GB200): the same recipes'
    # misses as in megatron_bridge_2606_moe and megatron_bridge_2604_moe, measured 0.98-1.06x there.
    # 11.1% / 37.6% with the MXFP8 output layer (kernels.fp8_output_proj, 2026-12-01): DeepSeek-V3
    # -5.6% -> -1.5% and -6.5% -> +0.4%, GPT-OSS +25.4% -> +30.7% and +23.9% -> +29.6%.
    # 12.9% / 39.1% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 11.1% / 37.6%.
    # 11.6% / 39.1% once GPT-OSS's YaRN rotary embedding ran unfused (concentration 0.1 ln 32 + 1 is not 1:
    # Megatron-Core's eager RoPE, model.rope_concentration; 2026-12-01): was 12.9% / 39.1%.
    # 12.1% / 41.0% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 11.6% / 39.1%.
    # 11.6% / 38.7% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 12.1% / 41.0%.
    # 11.5% / 38.4% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 11.6% / 38.7%.
    # 12.7% / 39.7% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 11.5% / 38.4%.
    "megatron_bridge_2608": (0.127, 0.397),
    # tokens/s per GPU, 4 rows (Megatron-Bridge 25.09/25.11 DeepSeek-V3 on 256 GB200 and B200, FP8
    # and MXFP8), out of sample, scored once on 2026-11-28 when dense layers among the experts, MTP
    # and the pipeline layout became expressible: 44.9% / 58.5%, NOT met (every row fast, +18% at 4
    # experts per GPU, +46-59% at 32; the host's per-expert kernel issue is the leading candidate,
    # unmeasured here, so not modelled). 43.6% / 57.2% once the recipes' recompute_modules
    # [mla_up_proj] became expressible (2026-11-29); 42.9% / 56.5% once flash attention's backward
    # counted 3 d_qk + 2 d_v products per score (2.6x forward at 192/128) the same day.
    # 28.2% / 39.8% once Blackwell's sustained-load clock (b200.yaml sustained_clock_fraction
    # 0.863, GB200 0.93 x it: Azure's 10,000-iteration cuBLASLt GEMMs put the GB200 0.863 of where
    # A100, H100 and H200 sit against the model), 2026-11-29: GB200 +15.4% -> +5.2%, the B200 rows
    # +45% to +57% -> +29% to +40% (their experts per GPU: the host's per-expert kernel issue,
    # unmodelled).
    # 29.1% / 39.8% (not met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 27.9% / 38.5% since 2026-11-30, the H100's GEMM K overhead measured (244, was 128;
    # Blackwell's sustained factor re-derived, 0.853): was 29.1% / 39.8%.
    # 27.4% / 38.5% with the 25.09 H100 row (1,024 GPUs, DeepEP with group-limited routing and the
    # all-to-all overlap), scored once on 2026-11-30: +25.4% (+2.7% had it been priced as the
    # alltoall dispatcher it did not run).
    # 18.6% / 38.5% with the 26.04.01 table's rows on 256 GB300, GB200, B300 and B200 (rows 6-9,
    # scored once on 2026-11-30): -9.3%, -7.8%, +4.6%, +8.9%.
    # 18.3% / 38.5% with the dispatchers' own SM counts (expert_parallel.dispatcher_sms, the same
    # day): DeepEP's 20 of the H100's 132 SMs beside the overlapped compute, not NCCL's 16.
    # 18.5% / 38.5% with the flex dispatcher's own permutations (2026-11-30).
    # 17.9% / 37.2% later on 2026-11-30, the fp8 padding copies around the grouped experts and GPT-OSS's
    # eager expert bias (expert_parallel.fp8_padding, model.expert_bias): was 18.5% / 38.5%.
    # 18.7% / 39.0% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 17.9% / 37.2%.
    # 19.0% / 38.9% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 18.7% / 39.0%.
    # 18.9% / 38.9% (not met) since 2026-12-01, each current-scaling fp8 cast its three
    # TE kernels (amax, scale, cast; NVFP4 two), not one: was 19.0% / 38.9%.
    # 18.5% / 38.3% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 18.9% / 38.9%.
    # 18.3% / 38.3% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 18.5% / 38.3%.
    # 17.8% / 37.5% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 18.3% / 38.3%.
    "megatron_bridge_dsv3": (0.178, 0.375),
    # tokens/s per GPU, 5 rows (Megatron-Bridge 26.04.01 Llama 3.1 405B on 256 GB300 in FP8-CS,
    # MXFP8 and NVFP4, Llama 3 70B on 64 in MXFP8 and NVFP4), out of sample, scored once on
    # 2026-11-29 with the new gb300 GPU: 9.2% / 11.0%, NOT met (every row slow by 5-11%: the GB300
    # modelled as a GB200 with its memory, fp4 and NICs); 7.7% / 9.5%, met, once its attention
    # fractions came from cuDNN's GB300/GB200 benchmark ratio (1.21x forward, 1.08x backward; found
    # after the rows were scored, nothing read off them); 7.4% / 9.5% with the B200's 148 SMs for
    # the unpublished enabled count (160, the full die, before). Its GEMM clock at 1,400 W is not
    # modelled.
    # 5.7% / 9.2% (met) once the interleaved schedule's sends overlapped the next pass
    # (pipeline.overlap_p2p: Megatron-Core's overlap_p2p_comm, 2026-11-29).
    # 6.6% / 10.5% since the B300/GB300 took the B300's own MAMF GEMM fractions (2026-11-30).
    # 6.8% / 10.8% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 6.6% / 10.6%.
    # 7.1% / 11.0% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 6.8% / 10.8%.
    # 7.3% / 11.3% (met) since 2026-12-01, NCCL's own channel count inside an NVLink domain (its
    # topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 7.1% / 11.0%.
    # 7.3% / 11.4% (met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound kernels
    # beside them (simulator/cost/hbm_contention.py): was 7.3% / 11.3%.
    # 6.4% / 10.2% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 7.3% / 11.4%.
    "megatron_bridge_gb300": (0.064, 0.102),
    # tokens/s per GPU, 6 rows (Megatron-Bridge's Megatron FSDP rows with CPU activation offloading:
    # Llama 3 70B on 64 GB300 and GB200 in 26.04.01 and 25.11, Llama 3.1 405B on 128 of each at tp 2
    # in 25.11, FP8-CS), out of sample, scored once on 2026-12-01 when parallelism.cpu_offload_layers
    # became expressible: 5.2% / 10.3%, met (the GB300 70B 26.04.01 row -10.3%; the copies hide
    # behind compute in every row, the offloading is what makes the 70B runs fit).
    # 5.0% / 10.5% (met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's K
    # overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 5.2% / 10.3%.
    # 5.1% / 10.7% (met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 5.0% / 10.5%.
    # 5.4% / 11.8% (met) since 2026-12-01, NCCL's own channel count inside an NVLink domain (its
    # topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 5.1% / 10.7%.
    # 5.4% / 11.9% (met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound kernels
    # beside them (simulator/cost/hbm_contention.py): was 5.4% / 11.8%.
    # 5.3% / 10.7% (met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 5.4% / 11.9%.
    "megatron_bridge_fsdp": (0.053, 0.107),
    # model TFLOP/s per GPU in Megatron-LM's 2026 count, 14 rows (Megatron-LM's MoE recipe index,
    # dev @ d48bd6be0a: Qwen3 30B-A3B, 235B-A22B and DeepSeek-V3 on 16-256 H100, B200, B300, GB200,
    # GB300), out of sample, scored once on 2026-11-30: 18.4% / 66.5%, NOT met. Every row reads
    # fast by as much as its host launches: the three full-iteration CUDA graph recipes +1.5% to
    # +6.7%, the DeepSeek-V3 rows with TE-scoped graphs on GB200/GB300 +4.2% / +1.1%, the eager or
    # partly graphed rows +9.3% to +66.5% (host time is not modelled).
    # 17.8% / 71.0% once the flex dispatcher's kernels held their own SMs beside the overlapped
    # compute (expert_parallel.dispatcher_sms, the same day): full-graph rows -2.4% to +6.7%.
    # 21.7% / 74.9% with the flex dispatcher's own permutations (2026-11-30): the full-graph rows
    # +1.4% / +1.7% / +13.2%, the eager ones faster still (host time not modelled).
    # 24.7% / 78.4% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 21.7% / 74.9%.
    # 24.8% / 78.4% once row 2's FP8 blockwise was encoded as such (was per-tensor current
    # scaling; the row +31.0% -> +32.5%: its per-expert casts cost less than current scaling's
    # amax passes, its GEMMs more; 2026-12-01): was 24.7% / 78.4%.
    # 24.6% / 79.9% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 24.8% / 78.4%.
    # 23.4% / 78.6% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 24.6% / 79.9%.
    # 24.0% / 78.5% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 23.4% / 78.6%.
    "megatron_moe_recipes": (0.240, 0.785),
    # tokens/s per GPU, 7 rows (Megatron-Bridge's model verification cards, 2026-07/08: Qwen3 30B on
    # 16 H100 BF16, DeepSeek-V3 on 1,024 H100 BF16, GPT-OSS 120B on 64 GB300 MXFP8 with a full graph,
    # the 30B's weak scaling on 8-256 GB300), out of sample, scored once on 2026-11-30: 8.9% / 31.6%,
    # NOT met: +10.5%, +2.3%, GPT-OSS +31.6% (not host time: fully graphed), the curve -3.5% to -5.3%
    # and flat as measured (-0.36% per doubling).
    # 9.2% / 31.6% with the weak-scaling rows' MXFP8 attention stated (kernels.fp8_attention, the
    # same day): -4.0% to -5.7%.
    # 7.8% / 21.8% once fp8 attention over sliding windows became expressible (the same day;
    # cuDNN's GPT-OSS benchmark: the window kernel's fp8 backward 4.2x bf16's time at 4K): GPT-OSS
    # +31.6% -> +21.8%.
    # 9.2% / 26.9% with the flex dispatcher's own permutations and the 30B H100 recipe's HybridEP
    # permute fusion stated (2026-11-30): that row +26.9%, the weak-scaling points +1.1..+3.0%.
    # 9.5% / 26.9% with Blackwell's Mamba-2 scan products at the scan_product_fraction from
    # state-spaces/mamba#904 (2026-12-01): Nemotron 3 Super on 64 GB200 +30.5% -> +19.2%, Nemotron
    # 3.5 Lightning on 8 GB200 (26.08.rc2) -1.9% -> -10.2%; was 9.8% / 30.5%.
    # 9.6% / 26.9% with NCCL's 64-channel ceiling on the 64-GPU racks' data-parallel CTAs (2026-12-01).
    # 10.0% / 30.7% with GPT-OSS's MXFP8 output layer (kernels.fp8_output_proj, 2026-12-01): that row
    # +25.4% -> +30.7%.
    # 11.8% / 33.6% once the permutations' gradients moved their forward bytes once, not twice (TE's
    # permute / un-permute / chunk-sort backward is the inverse permutation; 2026-12-01, checked on
    # megatron_moe_layer's alltoall - HybridEP backward difference): was 10.0% / 30.7%.
    # 11.0% / 26.9% once GPT-OSS's YaRN rotary embedding ran unfused (concentration 0.1 ln 32 + 1 is not 1:
    # Megatron-Core's eager RoPE, model.rope_concentration; 2026-12-01): was 11.8% / 33.6%.
    # 10.9% / 27.1% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 11.0% / 26.9%.
    # 10.4% / 25.8% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 10.9% / 27.1%.
    # 10.3% / 25.8% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 10.4% / 25.8%.
    # 11.6% / 27.4% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 10.3% / 25.8%.
    "megatron_bridge_cards": (0.116, 0.274),
    # tokens/s per GPU, 2 rows (Megatron-Bridge PR #5094's A/B of the all-to-all overlap alone, Qwen3
    # 30B-A3B on 16 H100, HybridEP), out of sample, scored once on 2026-12-01 with no constant
    # changed: 21.6% / 24.4%, NOT met (off +18.7%, on +24.4%). The pair holds: the overlap hides
    # 3.89 s predicted, 3.64-4.13 s measured (test below).
    # 21.7% / 24.6% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 21.6% / 24.4%.
    # 20.5% / 23.3% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 21.7% / 24.6%.
    # 21.5% / 24.2% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 20.5% / 23.3%.
    "megatron_bridge_ep_overlap": (0.215, 0.242),
    # tokens/s per GPU, 10 rows (MLPerf Training v6.0: DeepSeek-V3 on 256-512 GB300 and 256-8,192
    # GB200, Llama 3.1 405B NVFP4 on 2,048 GB300, Cisco's Llama 3.1 8B FP8 on 16 H200 and 128 H100;
    # scored once on 2026-12-01, nothing changed for it). NOT met: GB300 -9.5% / -9.1%, GB200
    # +12.1% (Google 256), +23.3% / +25.8% / +38.5% / +60.3% at 512 / 2,048 / 4,096 / 8,192 (a
    # fixed batch: 240 to 16 microbatches a step; measured per GPU 36% below the 512-GPU point at
    # 8,192, predicted 17%), the 405B +6.0%, the 8B -0.9% and +6.9%.
    # 26.1% / 83.7% over 15 rows with GPT-OSS 20B on 8 / 72 / 512 GB300 (+15.4% / +53.8% / +83.7%)
    # and 72 GB200 (+46.6%: each step 40-70 ms longer than predicted), the 405B on 512 GB300 (-0.6%)
    # and the 2,048-GPU 405B's network read from its system file (+5.7%) (2026-12-01).
    # 22.7% / 83.7% over 18 rows with CoreWeave's DeepSeek-V3 on 2,048 / 4,096 / 8,192 GB300 (tp 1,
    # RoCE, 32 to 8 microbatches a step) scored: -2.4% / -59.2% / -57.0% when first run (a third
    # switch tier's D-mod-K funnelled cross-rail rings onto two cores, and 128 NCCL CTAs were
    # charged on a 64-GPU rack); +0.8% / -7.5% / -9.3% with D-mod-K keyed by the destination's
    # leaf and port and NCCL's 64-channel ceiling (2026-12-01).
    # 21.6% / 83.7% with the GB300 configurations' FP8_OUTPUT_PROJ=True (kernels.fp8_output_proj,
    # 2026-12-01; the GB200 ones leave it off): NVIDIA GB300 -9.5% / -8.6% -> -1.9% / -1.0%,
    # CoreWeave +0.8% / -7.5% / -9.3% -> +8.8% / -0.7% / -3.6%.
    # 21.2% / 76.9% (not met) since 2026-12-01, each GEMM kernel's fixed time (5.2 us), the H100's
    # K overhead refitted with it (138, was 244), and Blackwell's sustained-load factor (0.865, was
    # 0.853) and Mamba-2 scan fraction (0.26, was 0.21) re-derived through them: was 22.3% / 83.7%.
    # 20.1% / 70.0% (not met) since 2026-12-01, each memory-bound kernel's fixed
    # time (2.1 us, measured in a shipped A100 trace): was 21.2% / 76.9%.
    # 19.4% / 69.8% (not met) since 2026-12-01, NCCL's own channel count inside an NVLink domain
    # (its topology search for the GPU's NVLink bandwidth: 24 CTAs on A100 and H100 servers, 32 on
    # Blackwell, 16 on H800 and A800; 16 everywhere before): was 20.1% / 70.0%.
    # 19.3% / 69.8% (not met) since 2026-12-01, NCCL's channels across servers doubled as its
    # search doubles them (one per NIC at the fastest speed within the GPU's path to its NIC; with
    # 4 or fewer of a Hopper or Blackwell server's GPUs in the group on 400G NICs, and on
    # ConnectX-8 behind PCIe Gen6): was 19.4% / 69.8%.
    # 19.1% / 69.8% (not met) since 2026-12-01, NCCL's rings' HBM draw slowing the memory-bound
    # kernels beside them (simulator/cost/hbm_contention.py): was 19.3% / 69.8%.
    # 19.2% / 71.6% (not met) since 2026-12-02, each memory-bound kernel's backward moving the
    # bytes it reads and writes (backward_bytes.py; A100 0.72, derating 0.829): was 19.1% / 69.8%.
    "mlperf_v60": (0.192, 0.716),
    # tokens/s per GPU, 5 rows (NeMo AutoModel's DGX-H100 pre-training table: Llama 3.1 70B with
    # FSDP2 x cp 2, Qwen3 30B-A3B with EP 8, DeepSeek-V3 with pp 4 x EP 64, the hybrid Nemotron 3
    # Nano and Super with EP over every GPU, BF16), out of sample, scored once on 2026-12-02 after
    # reading the code each row ran (K/V heads exchanged as stored, the MoE benchmarks' round-robin
    # fake gate, the loss without upcast, FSDP2 units of hybrid layers): 9.9% / 14.9%, NOT met
    # (-7.5%, +0.9%, +14.9%, -14.9%, -11.5%; 7.8% / 14.9% over the first three).
    # 7 rows since later on 2026-12-02, when several pipeline schedules a step became expressible
    # (parallelism.pipeline_flushes): DeepSeek-V3 on 1,024 H100 (+32.2%) and Kimi K2 on 256 (+27.5%),
    # each with gradient accumulation under pipeline parallelism, scored once: 15.6% / 32.2%, NOT met.
    "automodel": (0.156, 0.322),
}


@pytest.mark.parametrize("name", list(ACHIEVED))
def test_set_error_does_not_regress(scores, name):
    """The set's MAPE and max |error| stay within 2 percentage points of ACHIEVED.

    Issue target: MAPE <= 8% and max |error| <= 15% per set; met by megatron_sc21 and nemo,
    not by nccl and torchtitan (figures in ACHIEVED's comments).
    """
    mape, worst = ACHIEVED[name]
    got = scores[name]
    assert got.mape <= mape + MARGIN, f"{name}: MAPE {got.mape:.1%} > {mape:.1%} + 2 pp"
    assert got.max_abs_error <= worst + MARGIN, f"{name}: max {got.max_abs_error:.1%} > {worst:.1%} + 2 pp"


def test_automodel_moe_rows_route_as_their_fake_gate(frame, tmp_path):
    """NeMo AutoModel's MoE benchmarks run FakeBalancedGate (token t to experts 8t .. 8t+7): on
    the Qwen3 30B-A3B server each token reaches one GPU where random routing reaches 5.3, so the
    row is priced with model.routing round_robin; with random routing DeepEP would move 5.3x the
    bytes and the row read about -12% (docs/validation.md, automodel)."""
    row = frame[(frame.set == "automodel") & (frame.row == "2")].iloc[0]
    assert abs(row.error) < 0.05
    text = (SCENARIOS / "automodel" / "qwen3-30b-a3b-8gpu-h100-ep8.yaml").read_text()
    assert "  routing: round_robin\n" in text
    random_routing = tmp_path / "random.yaml"
    random_routing.write_text(text.replace("  routing: round_robin\n", "  routing: random\n"))
    random_step = run_scenario(random_routing).step_time_s
    measured_step = 512 * 4096 / row.measured / 8
    assert -0.16 < measured_step / random_step - 1 < -0.08


def test_mlperf_gb200_steps_split_into_microbatch_work_and_a_fixed_part(frame):
    """MLPerf v5.0 Llama 3.1 405B on GB200: every row runs the same 64-GPU replica, so the
    measured steps fit ``m w + X`` (Carina's 512- and 1,024-GPU rows: w = 0.169 s per microbatch,
    X = 0.33 s). The predicted w is within 4% of the measured (0.163 s) since Blackwell's
    sustained-load clock came from Azure's long cuBLASLt runs (b200.yaml; 16% short before, 21% at
    the datasheet peaks), guarded both ways; the predicted X stays a known miss, 1.2-1.6x the
    measured (0.45 s, mostly the bf16 reduce-scatter exposed after the last backward; 0.71 s, 2.2x,
    until 2026-11-30, when each context-parallel rank reduced the whole gradient over its own
    data-parallel ranks instead of one ``dp cp`` group, twice the bytes over the racks' NICs)."""
    rows = frame[frame["set"] == "mlperf_llama31_405b_gb200"].set_index("row")
    tokens = {"3": 896 * 8192, "4": 768 * 8192}         # global batch x sequence
    microbatches = {"3": 112, "4": 48}

    def split(column):
        step = {r: tokens[r] / rows.loc[r, column] / (512 if r == "3" else 1024) for r in tokens}
        w = (step["3"] - step["4"]) / (microbatches["3"] - microbatches["4"])
        return w, step["3"] - microbatches["3"] * w
    (w, fixed), (w_model, fixed_model) = split("measured"), split("predicted")
    assert w == pytest.approx(0.169, abs=0.002) and fixed == pytest.approx(0.33, abs=0.02)
    assert 0.92 < w_model / w < 1.02 and 1.2 < fixed_model / fixed < 1.6


def test_megatron_core_strong_scaling_loses_more_than_measured(frame):
    """The Megatron-LM README's 177B model at batch 1,152: MFU 47% on 96 H100 and 42% on 4,608
    (ratio 0.894, each MFU to a whole percent, so +-0.015). A known miss in one direction (the
    model loses more: 0.815 when scored, mostly the data-parallel reduction it exposes), guarded so
    that a fix or a regression shows: the predicted ratio stays below the measured one and
    within 12% of it."""
    rows = frame[frame["set"] == "megatron_core_scaling"].set_index("row")
    measured = rows.loc["11", "measured"] / rows.loc["10", "measured"]
    predicted = rows.loc["11", "predicted"] / rows.loc["10", "predicted"]
    assert measured == pytest.approx(42 / 47, abs=1e-3)
    assert measured * 0.88 < predicted < measured


def test_selective_recompute_speedup_matches_korthikanti_within_8_percent(frame):
    """Sequence parallelism with selective recompute against full recompute, per model: the
    published speed-up (Korthikanti et al. 2022, Table 4: 1.29-1.32x) and the predicted one
    (1.34-1.38x) agree within 8%: the recompute and sequence-parallel mechanisms, not a level."""
    rows = frame[frame.set == "megatron_selective"].set_index("row")
    for full, selective in (("1", "5"), ("2", "6"), ("3", "7"), ("4", "8")):
        measured = rows.measured[selective] / rows.measured[full]
        predicted = rows.predicted[selective] / rows.predicted[full]
        assert 1.25 < measured < 1.35
        assert predicted == pytest.approx(measured, rel=0.08), (full, predicted, measured)


def test_flagperf_deepspeed_holds_on_a800_and_is_the_hopper_miss_on_h800(frame):
    """FlagPerf's DeepSpeed ZeRO-3 Llama 2 7B, the same code on 8 A800 and 8 H800: the A800 rows
    within 8% (gathers, reduce-scatters, eager kernels as priced), the H800 row fast. Measured,
    the H800 runs the sequence-4,096 setting 2.01x faster (7,151 / 3,564 tokens/s); the model
    says about 2.37x, the same gap as fms-fsdp's eager 7B on H100 against A100 (2.03x measured,
    2.44x predicted): docs/research/stack_facts.md section 49. Guarded both ways so that a fix
    or a regression shows."""
    rows = frame[frame.set == "flagperf_deepspeed"].set_index("row")
    for a800 in ("1", "2", "3"):
        assert abs(rows.predicted[a800] / rows.measured[a800] - 1) < 0.08, a800
    measured = rows.measured["4"] / rows.measured["1"]
    predicted = rows.predicted["4"] / rows.predicted["1"]
    assert measured == pytest.approx(2.006, abs=0.002)
    assert 2.2 < predicted < 2.6


def test_megatron_mi300x_against_its_mi325x_twin_is_the_known_miss(frame):
    """Llama 2 7B, FP8, micro batch 4, data parallel only: the MI325X under Primus v25.9
    (primus_mi325x row 1) runs 1.60x the from-source MI300X build (megatron_mi300x row 1) per GPU
    measured; the model says about 1.2x (the parts' sustained clocks), so the MI300X row reads
    fast while its MI325X twin holds (docs/validation.md)."""
    mi300x = frame[(frame.set == "megatron_mi300x") & (frame.row == "1")].iloc[0]
    mi325x = frame[(frame.set == "primus_mi325x") & (frame.row == "1")].iloc[0]
    assert mi325x.measured / mi300x.measured == pytest.approx(1.604, abs=0.002)
    assert 1.1 < mi325x.predicted / mi300x.predicted < 1.35
    assert mi300x.error > 0.15 and abs(mi325x.error) < 0.08


def test_megatron_bridge_ep_overlap_hides_what_the_runs_measured(frame):
    """Qwen3 30B-A3B on 16 H100 with HybridEP, only the all-to-all overlap toggled (Megatron-Bridge
    PR #5094): the seconds a step the overlap hides lie within the range the published runs span,
    24.7138 s off against 21.0725 s on (the matched window) up to the card's 25.118 s off against
    the independent 20.9920 s on, 5% either side; the miss itself (about 4 s a step) is the same in
    both cases, so it is not the all-to-all (docs/validation.md)."""
    rows = frame[frame["set"] == "megatron_bridge_ep_overlap"].set_index("row")
    tokens = 1024 * 4096 / 16
    measured = tokens / rows.measured
    predicted = tokens / rows.predicted
    assert measured["1"] - measured["2"] == pytest.approx(24.7138 - 21.0725, abs=0.002)
    hidden = predicted["1"] - predicted["2"]
    assert 0.95 * (24.7138 - 21.0725) < hidden < 1.05 * (25.118 - 20.9920)
    rest = (measured - predicted).to_numpy()
    assert abs(rest[0] - rest[1]) < 0.1 * rest.mean()


def test_megatron_bridge_gptoss_pair_fp8_gain_is_the_known_miss(frame):
    """GPT-OSS 120B on 64 GB200, one configuration in BF16 and MXFP8 (Megatron-Bridge PR #3561):
    measured, MXFP8 runs 1.035x BF16 with the alltoall dispatcher and 1.060x with HybridEP; the
    model says more than 1.15x (1.25x and 1.28x when scored). A change that makes the model's fp8
    gain on this model realistic must update this test on purpose (docs/validation.md)."""
    rows = frame[frame["set"] == "megatron_bridge_gptoss_pair"].set_index("row")
    for bf16, fp8, ratio in (("1", "3", 1.035), ("2", "4", 1.060)):     # alltoall, hybridep
        assert rows.measured[fp8] / rows.measured[bf16] == pytest.approx(ratio, abs=0.002)
        assert rows.predicted[fp8] / rows.predicted[bf16] > 1.15


def test_flagperf_megatron_ranks_the_a800_layouts_as_measured(frame):
    """FlagPerf's five Megatron-Core 0.6 layouts of Llama 3 8B on one DGX A800 (tp x pp x dp
    1x2x4, 1x4x2, 2x2x2, 4x2x1, 1x8x1): the model orders them as measured (3,699 to 2,690
    tokens/s) and puts the best over the worst within 5% of the measured 1.375; what `clustersim
    search` ranks on."""
    rows = frame[(frame.set == "flagperf_megatron") & frame.row.isin(["1", "2", "3", "4", "5"])]
    assert list(rows.sort_values("measured").row) == list(rows.sort_values("predicted").row)
    spread = rows.measured.max() / rows.measured.min()
    assert spread == pytest.approx(1.375, abs=0.001)
    assert rows.predicted.max() / rows.predicted.min() == pytest.approx(spread, rel=0.05)


def test_flagperf_megatron_layout_that_ran_out_of_memory_does_not_fit(tmp_path):
    """The same README's 1x1x8 layout (tp 1, pp 1, dp 8) on the DGX A800 ran out of memory
    ('OOM'); the five layouts it reports ran. The model agrees on all six."""
    ran = sorted((SCENARIOS / "flagperf_megatron").glob("llama3-8b-8xa800-*.yaml"))
    assert len(ran) == 5
    for path in ran:
        assert run_scenario(path).fits_in_memory, path
    text = (SCENARIOS / "flagperf_megatron" / "llama3-8b-8xa800-tp1-pp2-dp4-bf16.yaml").read_text()
    oom = tmp_path / "oom.yaml"
    oom.write_text(text.replace("pp: 2", "pp: 1").replace("dp: 4", "dp: 8"))
    assert not run_scenario(oom).fits_in_memory


def test_mlperf_gpt3_scaling_to_11616_gpus_as_measured(frame):
    """NVIDIA's MLPerf v4.0 GPT-3 175B: per-GPU throughput on 11,616 H100 over that on 512 is
    0.662 measured (step times from the result logs, runs within 0.8% of each other) and 0.659
    predicted since the interleaved schedule's sends overlap the next pass (2026-11-29: the
    512-GPU run's 72 microbatches hide them, the 11,616-GPU run's 8 do not); 0.676 before it,
    0.712 when scored (the model lost less at scale). Guarded within 3% both ways; the two
    large runs (10,752 and 11,616 GPUs, the same layout per replica) agree within 0.1%
    measured and 0.2% predicted (NCCL's
    bit-built trees over 448 and 484 servers, which the fp8 amax all-reduces take, cross the
    fabric's pods at different levels)."""
    rows = frame[frame["set"] == "mlperf_gpt3"].set_index("row")
    measured = rows.loc["3", "measured"] / rows.loc["1", "measured"]
    predicted = rows.loc["3", "predicted"] / rows.loc["1", "predicted"]
    assert measured == pytest.approx(0.662, abs=0.002)
    assert predicted == pytest.approx(measured, rel=0.03)
    assert rows.loc["3", "measured"] == pytest.approx(rows.loc["2", "measured"], rel=1e-3)
    assert rows.loc["3", "predicted"] == pytest.approx(rows.loc["2", "predicted"], rel=2e-3)


def test_mlperf_gpt3_v31_scaling_is_a_known_miss(frame):
    """MLPerf v3.1 GPT-3 175B on Eos, one recipe from 512 to 10,752 H100: throughput per GPU at
    10,752 over 512 is 0.727 measured. Predicted 0.793 when scored, 0.752 by 2026-11-29 with the
    interleaved schedule's sends held, 0.693 since they overlap the next pass (the 512-GPU run's
    128 microbatches hide them; at 10,752 GPUs the 8 microbatches of 12 chunks are all fill and
    flush, which expose them): the model now loses more than measured. A known miss, guarded
    within 8% both ways so that a fix or a regression shows."""
    rows = frame[frame["set"] == "mlperf_gpt3_v31"].set_index("row")
    measured = rows.loc["7", "measured"] / rows.loc["1", "measured"]
    predicted = rows.loc["7", "predicted"] / rows.loc["1", "predicted"]
    assert measured == pytest.approx(0.727, abs=0.002)
    assert predicted == pytest.approx(measured, rel=0.08)


def test_mlperf_llama31_405b_scaling_from_512_to_8192_gpus(frame):
    """NVIDIA's MLPerf v5.0 Llama 3.1 405B, one layout per replica from 512 to 8,192 H100 (24 to
    288 microbatches per step): throughput per GPU at 8,192 over 512 is 0.877 measured (runs
    within 0.3% of each other at both ends). 0.879 predicted when scored, while the scenarios
    reduced gradients in fp32; 0.919 with the submissions' bf16 reduction: the model loses less
    than measured (its fixed part per step 0.45 s, the runs' 0.60-0.75 s). A known miss in one
    direction, guarded within 7% so that a fix or a regression shows."""
    rows = frame[frame["set"] == "mlperf_llama31_405b"].set_index("row")
    measured = rows.loc["5", "measured"] / rows.loc["1", "measured"]
    predicted = rows.loc["5", "predicted"] / rows.loc["1", "predicted"]
    assert measured == pytest.approx(0.877, abs=0.002)
    assert measured < predicted < measured * 1.07


def test_mlperf_v51_h200_405b_level_and_scaling(frame):
    """Nebius's MLPerf v5.1 Llama 3.1 405B on 512 and 1,024 H200 (tp 4 x pp 8 x v 8 x cp 2, 144
    and 72 microbatches per step; runs within 0.02% of each other): each row within 5% of the
    logged step, and the throughput per GPU from 512 to 1,024 GPUs (0.986 measured) within 1%.
    An out-of-sample check of the H100-calibrated Hopper constants on the larger-memory GPU
    at a layout no other set has; scored once (-2.5%, -2.7%; ratio 0.984)."""
    rows = frame[frame["set"] == "mlperf_v51_llama31"].set_index("row")
    for row in ("8", "9"):
        assert abs(rows.loc[row, "error"]) < 0.05, row
    measured = rows.loc["9", "measured"] / rows.loc["8", "measured"]
    predicted = rows.loc["9", "predicted"] / rows.loc["8", "predicted"]
    assert measured == pytest.approx(0.986, abs=0.002)
    assert predicted == pytest.approx(measured, rel=0.01)


def test_mlperf_v51_b200_8b_curve_is_a_known_miss(frame):
    """University of Florida's MLPerf v5.1 Llama 3.1 8B at cp 2 and one microbatch of 4,096 tokens
    per GPU per step on 32 to 256 B200 (10 runs per point, within 1% of each other): the step
    grows 17.3% measured and 1.0% predicted, the ring latency of Megatron-Core's 48 bucket
    calls included (0.3% before it, simulator/engine/dp_calls.py; 2.4% until Blackwell's
    sustained-load clock slowed the compute that hides them, b200.yaml); what the runs lose from 128
    to 256 GPUs is not identified (docs/validation.md). Guarded in one direction so that a fix
    or a regression shows."""
    curves = scaling_curves(frame[frame["set"] == "mlperf_v51_llama31"]).set_index("curve")
    curve = curves.loc["llama31-8b-b200-cp2-fp8"]
    assert (curve["first"], curve["last"]) == (32, 256)
    assert curve["measured"] == pytest.approx(0.173, abs=0.002)
    assert 0.005 <= curve["predicted"] < 0.05


def test_llama3_scaling_from_8k_to_16k_gpus(frame):
    """The Llama 3 paper's 405B step from 8,192 to 16,384 H100 at a fixed 16M-token batch
    (Table 4: 430 -> 400 TFLOP/s per GPU, ratio 0.930; each figure rounded to 10 TFLOP/s, so
    0.908-0.953). The ratio does not depend on the FLOP count, so it checks the scaling
    mechanisms (bubble, data-parallel traffic, pipeline sends) apart from the level. Predicted
    0.924 with held sends, 0.905 since the interleaved schedule's sends overlap the next pass
    under the stand-in megatron-core stack: at 16,384 GPUs the 16 microbatches on 16 stages are
    all fill and flush, where Megatron-Core waits for each send, while the paper's own pipeline
    (asynchronous point-to-point, sec. 3.3.2) is not known to. Guarded within 4%."""
    rows = frame[frame["set"] == "llama3_paper"].set_index("row")
    measured = rows.loc["2", "measured"] / rows.loc["1", "measured"]
    predicted = rows.loc["2", "predicted"] / rows.loc["1", "predicted"]
    assert measured == pytest.approx(400 / 430)
    assert predicted / measured == pytest.approx(1.0, abs=0.04)


@pytest.fixture(scope="module")
def curves(frame) -> pd.DataFrame:
    sets = [name for name, spec in SETS.items() if spec.curves]
    return pd.concat([scaling_curves(frame[frame["set"] == name]) for name in sets]).set_index("curve")


@pytest.mark.parametrize("curve", ["nemotron4-15b-bf16", "nemotron4-15b-fp8"])
def test_nemotron_15b_weak_scaling_from_16_to_2048_gpus(curves, curve):
    """NVIDIA's DGX Cloud Nemotron4 15B recipe at a fixed 4 sequences per GPU: the step grows
    by 2.7% (BF16) and 4.0% (FP8) from 16 to 2,048 H100 (dgxc-benchmarking @ 0b71cfda); the
    predicted growth is within 3 points of it (1.4% and 1.9% when first scored: the exposed
    data-parallel reduce-scatter and all-gather of a dp-512 ring, tested within 2.5 points; 1.0%
    and 1.1% since the first weight bucket is gathered in its own dtype, fp8 here, not priced at
    its fp32 gradients' bytes, 2026-11-28). Checks the scaling curve apart from its level; the
    step times are published to 1 ms, so rounding is negligible."""
    found = curves.loc[curve]
    assert (found["first"], found["last"]) == (16, 2048)
    assert found["measured"] > 0.02
    assert found["predicted"] == pytest.approx(found["measured"], abs=0.03)


def test_weak_scaling_curves_are_flatter_than_measured_by_a_bounded_gap(curves):
    """Every DGX Cloud curve (13: Nemotron4 15B and 340B, Llama 3.1 8B, 70B and 405B, GPT-3
    175B, Grok-1 314B) loses 1-10% from its first GPU count to its last, measured; the model predicts a loss
    no larger than measured (+1 point for rounding) and at most 8 points smaller (the 340B FP8
    curve, +10.5% measured against +2.6%, is the widest gap: docs/validation.md). A guard on the
    known miss: it fails if a change makes the curves steeper than measured or flatter still."""
    dgx = curves[curves["first_scenario"].str.contains("/dgxc_")]
    assert len(dgx) == 13
    gap = dgx["measured"] - dgx["predicted"]
    assert (gap > -0.01).all(), gap
    assert (gap < 0.08).all(), gap


def test_megascale_strong_scaling_is_flatter_than_measured(curves):
    """MegaScale's Megatron-LM baseline (GPT 175B, held batch): the step grows 18.5% from 256 to
    1,024 A100 and 18.2% from 3,072 to 12,288, measured (Table 2's throughput); the model gives
    7.1% and 10.5%, its per-step fixed part (the bubble and the unoverlapped data-parallel
    collectives, about 1 s) short of the 1.7-2.6 s a line through the measured steps leaves
    (docs/validation.md). A guard on the known miss in both directions: it fails if a change
    makes a curve flatter still or closes the gap (then update it and the prose)."""
    for curve, measured in (("gpt-175b-batch768", 0.185), ("gpt-175b-batch6144", 0.182)):
        found = curves.loc[curve]
        assert found["measured"] == pytest.approx(measured, abs=0.002)
        assert 0.04 < found["predicted"] < found["measured"] - 0.05, found


def test_fsdp_weak_scaling_curves_are_the_widest_miss(curves):
    """llm-foundry's six MPT curves (PyTorch FSDP1, 128 -> 512 H100, one microbatch per step)
    lose 2.6-10.8% measured; the model predicts under 1.5% for each, as its FSDP exposes only a
    step's first all-gather and last reduce-scatter (docs/validation.md). A guard on the known
    miss: every gap lies between 2 and 12 points, and the predicted growth is not negative."""
    fsdp = curves[curves.index.str.startswith("mpt-")]
    assert len(fsdp) == 6 and (fsdp["first"] == 128).all() and (fsdp["last"] == 512).all()
    assert fsdp["measured"].between(0.025, 0.11).all(), fsdp["measured"]
    assert fsdp["predicted"].between(-0.001, 0.015).all(), fsdp["predicted"]
    gap = fsdp["measured"] - fsdp["predicted"]
    assert gap.between(0.02, 0.12).all(), gap
