"""``clustersim compare``: the predicted partition of a step (busiest stage's GPU) adds up to
the predicted step and covers every second of the cost model; a trace's measured parts are
the importer's per-step medians; a log gives the step time and throughput only; JSON is
strict; errors exit 2 with one line; CSV and PNG are written.

The trace is rank 0 of a 2-rank A100 job whose model is unknown (validation/traces), so the
scenario below is a small model on 2 A100 GPUs: the test checks the pipeline and the
consistency of the numbers, not that the model matches the run."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.engine.analytical import make_context, simulate_step
from simulator.measure.breakdown import DIMENSIONS, predicted_parts
from simulator.measure.compare import (
    COMPARED,
    NOT_COMPARED,
    NOT_MEASURED,
    NOT_SEPARABLE,
    compare_log,
    compare_trace,
)
from simulator.measure.draft import draft_from_log
from simulator.measure.kineto import read_kineto_trace
from simulator.measure.megatron_log import read_megatron_log
from simulator.measure.scenario_text import render_draft
from simulator.pipeline import session_from_scenario
from simulator.workload.transformer import layer_forward

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "validation" / "traces" / "nccl_parser_config__nccl_data.json.gz"
LOG = ROOT / "validation" / "training_logs" / "primus-megatron_llama2-7b_8x8-mi325x.log.gz"
SMALL_A100 = {
    "name": "small-2xA100", "cluster": {"node": "dgx-a100-80gb", "nodes": 1, "gpus_per_node": 2},
    "model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_len": 1024, "vocab": 32000},
    "training": {"global_batch": 16, "micro_batch": 2, "dtype": "bf16"},
    "parallelism": {"dp": 2},
}
PARTS = ("GEMM", "attention", "memory-bound", "other kernels", "exposed communication",
         "pipeline bubble", "idle")
"""Rows whose predicted values partition the predicted step."""
MEASURED_COLUMNS = {"step time": "wall_s", "GEMM": "gemm_s", "attention": "attention_s",
                    "memory-bound": "memory_s", "other kernels": "other_s",
                    "compute": "compute_s", "communication": "comm_s",
                    "exposed communication": "comm_exposed_s", "idle": "idle_s"}


@pytest.fixture(scope="module")
def trace_scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compare") / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL_A100))
    return path


@pytest.fixture(scope="module")
def log_scenario(tmp_path_factory) -> Path:
    """The draft ``clustersim import-log LOG --node mi325x-platform --nodes 8`` writes."""
    path = tmp_path_factory.mktemp("compare") / "llama2.yaml"
    path.write_text(render_draft(draft_from_log(read_megatron_log(LOG), "mi325x-platform", 8),
                                 LOG.name))
    return path


@pytest.fixture(scope="module")
def by_trace(trace_scenario):
    return compare_trace(trace_scenario, TRACE)


@pytest.fixture(scope="module")
def by_log(log_scenario):
    return compare_log(log_scenario, LOG)


# --- the predicted partition -------------------------------------------------------------

BASE = {
    "cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
    "model": {"layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn_hidden": 5632,
              "mlp": "swiglu", "seq_len": 2048, "vocab": 32000},
    "training": {"global_batch": 64, "micro_batch": 2, "dtype": "bf16"},
    "parallelism": {"tp": 2, "pp": 2, "sequence_parallel": True},
}
VARIANTS = {
    "1f1b": {},
    "full-recompute": {"parallelism": {"recompute": "full"}},
    "selective-flash": {"parallelism": {"recompute": "selective"}},
    "selective-unfused": {"parallelism": {"recompute": "selective"},
                          "training": {"attention": "unfused"}},
    "fp8-delayed": {"training": {"dtype": "fp8"}},
    "fp8-dynamic-full": {"training": {"dtype": "fp8", "stack": {
        "base": "megatron-core", "kernels": {"fp8_scaling": "dynamic"}}},
        "parallelism": {"recompute": "full"}},
    "dgrad-overlap-lm2021": {"training": {"stack": "megatron-lm-2021"},
                             "parallelism": {"recompute": "full", "zero_stage": 0}},
    "torchtitan-op-sac": {"training": {"stack": "torchtitan"},
                          "parallelism": {"pp": 1, "recompute": "selective"}},
    "torchtitan-op-sac-fp8": {"training": {"stack": "torchtitan", "dtype": "fp8"},
                              "parallelism": {"pp": 1, "recompute": "selective"}},
    "torchtitan-async-tp": {"training": {"stack": {"base": "torchtitan", "tensor_parallel": {
        "comm_overlap": True}}}, "parallelism": {"pp": 1, "recompute": "full"}},
    "fsdp2-zero3": {"training": {"stack": "fsdp2"},
                    "parallelism": {"tp": 1, "pp": 1, "sequence_parallel": False}},
    "eager": {"training": {"stack": {"base": "megatron-core",
                                     "kernels": {"fused_elementwise": False}}}},
    "moe-ep": {"model": {"experts": 8, "top_k": 2}, "parallelism": {"ep": 2}},
    "context-parallel": {"parallelism": {"cp": 2}},
    "interleaved": {"parallelism": {"schedule": "interleaved-1f1b", "virtual_stages": 2}},
    "gpipe-uneven": {"model": {"layers": 9}, "parallelism": {"schedule": "gpipe"}},
    "hybrid-mamba-moe": {"model": {"layers": 8, "hybrid_pattern": "ME*EMEM-", "experts": 8, "top_k": 2,
                                   "mamba": {"heads": 32, "groups": 4}, "moe_latent": 512}},
    "hybrid-fp8-modules": {"model": {"layers": 8, "hybrid_pattern": "M*M*M*M*", "mamba": {"heads": 32}},
                           "training": {"dtype": "fp8", "stack": {"base": "megatron-core",
                                                                  "kernels": {"fp8_scaling": "dynamic"}}},
                           "parallelism": {"recompute": "selective",
                                           "recompute_modules": ["core_attn", "layernorm"]}},
}


def _merged(base: dict, change: dict) -> dict:
    out = dict(base)
    for key, value in change.items():
        out[key] = _merged(base[key], value) if isinstance(value, dict) and key in base \
            and isinstance(base[key], dict) and "base" not in value else value
    return out


def _predicted(change: dict, with_context: bool = False):
    library = HardwareLibrary()
    scenario = scenario_from_mapping(_merged(BASE, change), "<test>", library)
    session = session_from_scenario(scenario, library)
    result = simulate_step(scenario, session.collectives)
    ctx = make_context(scenario, session.collectives)
    parts = predicted_parts(ctx, result)
    return (result, parts, ctx) if with_context else (result, parts)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_partition_adds_up_to_the_step_and_classes_cover_the_cost_model(name):
    """gemm + attention + memory + other + exposed (per dimension) + bubble + idle = step,
    and the class split re-prices every compute second of the cost model: the unattributed
    remainder ('other') is rounding only."""
    result, parts = _predicted(VARIANTS[name])
    total = sum(parts.partition().values())
    assert total == pytest.approx(result.step_time_s, rel=1e-6)
    assert abs(parts.other_s) <= 1e-9 * result.step_time_s
    assert parts.bubble_s == pytest.approx(result.bubble_s, abs=1e-9 * result.step_time_s)
    assert min(parts.compute.gemm, parts.compute.memory) > 0
    assert all(v >= -1e-12 for v in parts.partition().values())
    for d in DIMENSIONS:   # hidden or not, a dimension's traffic is at least its exposed part
        assert parts.comm[d] >= parts.exposed[d] * (1 - 1e-9) - 1e-15


def test_recompute_adds_the_forward_of_each_class():
    """Full recompute reruns every layer's forward: each class grows by m x layers x that
    class's forward seconds, priced here straight from the compute model; Megatron's
    selective recompute reruns only the flash-attention core (Korthikanti et al. 2022)."""
    _, none, ctx = _predicted({}, with_context=True)
    _, full = _predicted(VARIANTS["full-recompute"])
    _, selective = _predicted(VARIANTS["selective-flash"])
    forward = layer_forward(ctx.shape)
    g = forward.gemms
    gemm = float(ctx.compute.gemm_time(g[:, 0], g[:, 1], g[:, 2], g[:, 3], forward.linear_mask).sum())
    attention = ctx.compute.kernels_attention_time(forward)
    memory = float(ctx.compute.memory_time(forward.memory_bytes).sum())
    scale = none.microbatches * BASE["model"]["layers"] // BASE["parallelism"]["pp"]
    assert full.stage == none.stage == selective.stage
    assert full.compute.gemm - none.compute.gemm == pytest.approx(scale * gemm, rel=1e-9)
    assert full.compute.attention - none.compute.attention == pytest.approx(scale * attention,
                                                                            rel=1e-9)
    assert full.compute.memory - none.compute.memory == pytest.approx(scale * memory, rel=1e-9)
    assert selective.compute.attention - none.compute.attention == pytest.approx(
        scale * attention, rel=1e-9)
    assert selective.compute.gemm == none.compute.gemm
    assert selective.compute.memory == none.compute.memory


def test_busiest_stage_is_the_one_with_more_layers():
    """9 layers on 2 stages split 5/4 (or 4/5 with the logits): the busiest stage is the one
    whose busy time is largest, and the partition describes it."""
    result, parts = _predicted(VARIANTS["gpipe-uneven"])
    busy = [parts.microbatches * (s.forward_s + s.backward_s) for s in result.stages]
    assert parts.stage == max(range(len(busy)), key=busy.__getitem__)


# --- trace --------------------------------------------------------------------------------

def test_trace_rows_are_the_importers_medians(by_trace):
    steps = read_kineto_trace(TRACE).steps
    for part, column in MEASURED_COLUMNS.items():
        assert by_trace.row(part).measured == float(steps[column].median()), part
    m = by_trace.measurement
    assert (m["rank"], m["world_size"], m["steps"]) == (0, 2, [4, 5, 6])
    assert by_trace.prediction["described"].startswith("the GPU of pipeline stage 0 of 1")


def test_trace_predicted_parts_add_up_to_the_predicted_step(by_trace):
    step = by_trace.row("step time").predicted
    assert sum(by_trace.row(p).predicted for p in PARTS) == pytest.approx(step, rel=1e-6)
    exposed = by_trace.prediction["exposed_by_dimension"]
    assert by_trace.row("exposed communication").predicted == pytest.approx(sum(exposed.values()))
    assert sum(by_trace.prediction["parts"].values()) == pytest.approx(step, rel=1e-6)


def test_trace_marks_what_it_cannot_separate(by_trace):
    for d in DIMENSIONS:
        row = by_trace.row(f"exposed {d}")
        assert row.status == NOT_SEPARABLE and row.measured is None and row.error is None
        assert row.predicted == by_trace.prediction["exposed_by_dimension"][d]
    assert by_trace.row("pipeline bubble").status == NOT_SEPARABLE
    idle = by_trace.row("idle")      # pp = 1: no bubble in the trace's idle, so compared
    assert idle.status == COMPARED and "bubble" not in idle.note
    assert "0.1596 s of it with nothing queued" in idle.note   # the trace's median host wait
    step = by_trace.row("step time")
    assert step.error == pytest.approx((step.predicted - step.measured) / step.measured)
    assert by_trace.row("attention").error is None     # the trace has no attention kernel
    assert by_trace.warnings == []                     # 2 GPUs, as the trace's world


def test_trace_against_two_pipeline_stages(tmp_path):
    """pp = 2 on the trace's 2 GPUs: the idle row is not compared (the trace's idle holds
    part of the bubble), and the note says that rank 0 is not the stage predicted."""
    path = tmp_path / "pp2.yaml"
    path.write_text(yaml.safe_dump({**SMALL_A100, "parallelism": {"pp": 2, "dp": 1}}))
    found = compare_trace(path, TRACE)
    idle = found.row("idle")
    assert idle.status == NOT_COMPARED and idle.error is None and "bubble" in idle.note
    assert found.prediction["stages"] == 2 and found.prediction["stage"] == 1
    assert any("rank 0 is on pipeline stage 0" in w for w in found.warnings)
    step = found.row("step time").predicted
    assert sum(found.row(p).predicted for p in PARTS) == pytest.approx(step, rel=1e-6)
    assert found.row("pipeline bubble").predicted > 0
    assert found.row("exposed pp").predicted > 0


def test_trace_that_replays_graphs_notes_the_scenarios_capture(tmp_path):
    """The 16-rank A100 trace replays 58.5% of its compute from CUDA graphs (partial): a
    scenario saying none gets a note, one saying partial does not; the prediction is the same."""
    graphed = ROOT / "validation" / "traces" / "negative_queue_length_values_check__rank0.json.gz"
    plain, stated = tmp_path / "none.yaml", tmp_path / "partial.yaml"
    plain.write_text(yaml.safe_dump(SMALL_A100))
    stack = {"base": "megatron-core", "kernels": {"cuda_graphs": "partial"}}
    training = {**SMALL_A100["training"], "stack": stack}
    stated.write_text(yaml.safe_dump({**SMALL_A100, "training": training}))
    eager, partial = compare_trace(plain, graphed), compare_trace(stated, graphed)
    note = ("the trace replays 58.5% of its compute's GPU time from CUDA graphs as kernels.cuda_graphs "
            "partial; the scenario says none")
    assert any(w.startswith(note) for w in eager.warnings)
    assert not any("CUDA graphs" in w for w in partial.warnings)
    assert eager.row("step time").predicted == partial.row("step time").predicted


# --- log ----------------------------------------------------------------------------------

def test_log_gives_step_time_and_throughput_only(by_log, log_scenario):
    """Measured: 6.391 s, 945.1 TFLOP/s and 20,508 tokens/s per GPU (docs/measurements.md)."""
    steady = draft_from_log(read_megatron_log(LOG), "mi325x-platform", 8).measured
    assert by_log.row("step time").measured == steady.step_time_s
    assert by_log.row("step time").measured == pytest.approx(6.391, abs=5e-4)
    assert by_log.measurement["iterations"] == steady.iterations == list(range(6, 51))
    assert by_log.row("model FLOP/s per GPU").measured == pytest.approx(945.1e12)
    assert by_log.row("tokens/s per GPU").measured == pytest.approx(20508, abs=1)
    for part in ("step time", "model FLOP/s per GPU", "tokens/s per GPU"):
        assert by_log.row(part).status == COMPARED and by_log.row(part).error is not None
    rest = [r for r in by_log.rows if r.part not in ("step time", "model FLOP/s per GPU",
                                                     "tokens/s per GPU")]
    assert len(rest) == 14 and all(r.status == NOT_MEASURED and r.measured is None
                                           for r in rest)
    step = by_log.row("step time").predicted
    assert sum(by_log.row(p).predicted for p in PARTS) == pytest.approx(step, rel=1e-6)
    tokens = by_log.row("tokens/s per GPU")   # both sides: global batch x sequence / (t GPUs)
    assert tokens.predicted == pytest.approx(2048 * 4096 / (step * 64), rel=1e-12)


# --- command line -------------------------------------------------------------------------

def _run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _finite_numbers(value) -> bool:
    if isinstance(value, dict):
        return all(_finite_numbers(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite_numbers(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def _reject(constant):
    raise ValueError(f"non-strict JSON constant {constant}")


@pytest.mark.parametrize("kind", ["trace", "log"])
def test_json_is_strict_with_nulls(capsys, kind, trace_scenario, log_scenario):
    args = (trace_scenario, "--trace", TRACE) if kind == "trace" else (log_scenario, "--log", LOG)
    code, out, _ = _run(capsys, "compare", *args, "--json")
    data = json.loads(out, parse_constant=_reject)
    assert code == 0 and _finite_numbers(data)
    assert {"measurement", "prediction", "rows", "warnings"} <= set(data)
    assert any(r["measured"] is None and r["error"] is None for r in data["rows"])


def test_csv_and_png_are_written(capsys, tmp_path, trace_scenario, by_trace):
    csv_path, png_path = tmp_path / "rows.csv", tmp_path / "bars.png"
    code, out, _ = _run(capsys, "compare", trace_scenario, "--trace", TRACE,
                        "--csv", csv_path, "--png", png_path)
    assert code == 0 and "rank 0 of 2" in out and "not separable" in out
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["part"] for r in rows] == [r.part for r in by_trace.rows]
    assert float(rows[0]["measured"]) == by_trace.row("step time").measured
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.fixture
def cluster_only(tmp_path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"cluster": SMALL_A100["cluster"]}))
    return path


@pytest.mark.parametrize("case,fragment", [
    ("no-model", "'model' and 'training'"),
    ("missing-trace", "not found"),
    ("text-as-trace", "expected"),
    ("trace-as-log", "expected"),
    ("both", "exactly one of"),
    ("neither", "exactly one of"),
    ("csv-folder", "--csv: folder"),
    ("png-folder", "--png: folder"),
])
def test_errors_exit_2_with_one_line(capsys, tmp_path, trace_scenario, cluster_only, case, fragment):
    text = tmp_path / "notes.json"
    text.write_text("this is a README, not a trace\n")
    missing = tmp_path / "absent.json.gz"
    args = {
        "no-model": (cluster_only, "--trace", TRACE),
        "missing-trace": (trace_scenario, "--trace", missing),
        "text-as-trace": (trace_scenario, "--trace", text),
        "trace-as-log": (trace_scenario, "--log", TRACE),
        "both": (trace_scenario, "--trace", TRACE, "--log", LOG),
        "neither": (trace_scenario,),
        # output folders are checked before the (missing) trace is read
        "csv-folder": (trace_scenario, "--trace", missing, "--csv", tmp_path / "no" / "a.csv"),
        "png-folder": (trace_scenario, "--trace", missing, "--png", tmp_path / "no" / "a.png"),
    }[case]
    code, out, err = _run(capsys, "compare", *args)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert fragment in lines[0] and "Traceback" not in out + err
