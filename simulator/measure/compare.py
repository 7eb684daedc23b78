"""Predicted against measured: a step's time and its parts, with the error of each.

A profiler trace (:mod:`.kineto`) measures one rank's GPU: per step its wall time,
compute by kernel class, NCCL time (all of it, and the part no compute overlaps) and idle
time; each part here is the median over the trace's steps. A Megatron-LM log
(:mod:`.megatron_log`) measures only the iteration time (steady-state median) and, when
printed, throughput. The prediction is the analytical step of the scenario, split for the
GPU of its busiest pipeline stage (:mod:`.breakdown`).

Rows that a measurement cannot give are marked, never filled in: a trace does not tie NCCL
kernels to a parallel dimension (exposed communication is compared as one total) and
cannot tell a pipeline bubble from idle time or from p2p kernels waiting for a neighbour;
a log gives no parts at all. Relative error: (predicted - measured) / measured.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.config.scenario import Scenario
from simulator.errors import ConfigError
from simulator.measure.breakdown import DIMENSIONS, PredictedParts, predicted_parts
from simulator.measure.draft import logged_cuda_graphs
from simulator.measure.graph_capture import graph_summary
from simulator.results import StepResult
from simulator.workload.layout import Layout

COMPARED = "compared"
NOT_SEPARABLE = "not separable"
NOT_MEASURED = "not in the measurement"
NOT_COMPARED = "not compared"
CSV_COLUMNS = ("part", "unit", "measured", "predicted", "error", "status", "note")
_DIMENSION_NAMES = {"tp": "tensor", "pp": "pipeline", "dp": "data", "cp": "context",
                    "ep": "expert"}


@dataclass(frozen=True)
class Row:
    """One part: measured and predicted values in ``unit`` (SI), or None where absent."""

    part: str
    unit: str
    measured: float | None
    predicted: float | None
    status: str
    note: str = ""

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured when compared and the measurement is positive."""
        if self.status != COMPARED or self.measured is None or self.predicted is None:
            return None
        return (self.predicted - self.measured) / self.measured if self.measured > 0 else None


@dataclass(frozen=True)
class Comparison:
    """What was measured, what was predicted, row by row."""

    measurement: dict[str, Any]
    prediction: dict[str, Any]
    rows: list[Row]
    warnings: list[str] = field(default_factory=list)

    def row(self, part: str) -> Row:
        """The row named ``part``."""
        return next(r for r in self.rows if r.part == part)

    def to_json_dict(self) -> dict[str, Any]:
        """Plain types only; NaN and infinities become None (strict JSON)."""
        rows = [{"part": r.part, "unit": r.unit, "measured": r.measured,
                 "predicted": r.predicted, "error": r.error, "status": r.status,
                 "note": r.note} for r in self.rows]
        return _plain({"measurement": self.measurement, "prediction": self.prediction,
                       "rows": rows, "warnings": self.warnings})

    def csv_text(self) -> str:
        """The rows as CSV (empty cells where a value is absent)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in self.to_json_dict()["rows"]:
            writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
        return buffer.getvalue()


@dataclass(frozen=True)
class Prediction:
    """The scenario's analytical step and its partition for the busiest stage's GPU."""

    source: str
    scenario: Scenario
    result: StepResult
    parts: PredictedParts
    gpu_name: str
    layout: Layout
    notes: list[str]


def predict(path: Path | str) -> Prediction:
    """Load the scenario at ``path`` and predict its step with the analytical engine.

    Raises
    ------
    ConfigError
        The scenario is invalid or has no ``model`` or ``training`` section.
    """
    from simulator.engine.analytical import make_context, simulate_step
    from simulator.pipeline import open_scenario

    session = open_scenario(path)
    scenario = session.scenario
    if scenario.model is None or scenario.training is None:
        raise ConfigError("'model' and 'training' sections are needed to predict a training "
                          "step to compare with", str(path), "model")
    result = simulate_step(scenario, session.collectives)
    ctx = make_context(scenario, session.collectives)
    notes = ["the analytical engine is used (the scenario asks for the discrete-event one)"
             ] if scenario.simulate.engine.value != "analytical" else []
    return Prediction(str(path), scenario, result, predicted_parts(ctx, result),
                      session.hardware.gpu.display_name or session.hardware.gpu.name, ctx.layout, notes)


def compare_trace(scenario: Path | str, trace: Path | str) -> Comparison:
    """Rows of a PyTorch profiler trace (one rank) against the scenario's prediction."""
    from simulator.measure.kineto import read_kineto_trace

    prediction = predict(scenario)
    imported = read_kineto_trace(trace)
    steps, meta = imported.steps, imported.metadata
    measured = {column: float(steps[column].median())
                for column in ("wall_s", "gemm_s", "attention_s", "memory_s", "other_s",
                               "compute_s", "comm_s", "comm_exposed_s", "idle_s",
                               "host_wait_s")}
    rows = [_compared("step time", "s", measured["wall_s"], prediction.result.step_time_s,
                      f"median wall time of steps {_span(meta['steps'])}")]
    rows += _part_rows(prediction.parts, measured)
    measurement = {"kind": "trace", "source": str(trace), "rank": meta.get("rank"),
                   "world_size": meta.get("world_size"), "device": meta.get("device_name"),
                   "steps": meta["steps"], "statistic": "median over steps, part by part"}
    captured = graph_summary(imported.kernels)
    graphs = [] if captured is None else _graph_note(
        str(captured["cuda_graphs"]), prediction,
        f"the trace replays {captured['time_share']:.1%} of its compute's GPU time")
    return Comparison(measurement, _prediction_dict(prediction), rows,
                      prediction.notes + _trace_warnings(meta, prediction) + graphs)


def compare_log(scenario: Path | str, log: Path | str) -> Comparison:
    """Rows of a Megatron-LM training log against the scenario's prediction."""
    from simulator.measure.megatron_log import read_megatron_log
    from simulator.measure.steady import measure_log

    prediction = predict(scenario)
    parsed = read_megatron_log(log)
    sc, args = prediction.scenario, parsed.arguments
    world = _int_arg(args, "world_size", prediction.result.gpus)
    m = measure_log(parsed.iterations, _int_arg(args, "global_batch_size", sc.training.global_batch),
                    _int_arg(args, "seq_length", sc.model.seq_len), world)
    rows = [_compared("step time", "s", m.step_time_s, prediction.result.step_time_s,
                      f"median of iterations {_span(m.iterations)} (warm-up rule)")]
    rows += _throughput_rows(m, prediction.result)
    rows += _part_rows(prediction.parts, None)
    measurement = {"kind": "log", "source": str(log), "world_size": world,
                   "iterations": m.iterations, "logged": m.logged, "spread": m.spread,
                   "statistic": "median of the steady-state iterations"}
    graphs = _graph_note(logged_cuda_graphs(args) or "none", prediction, "the log's arguments replay")
    return Comparison(measurement, _prediction_dict(prediction), rows,
                      prediction.notes + _log_warnings(args, prediction) + graphs)


def _compared(part: str, unit: str, measured: float, predicted: float, note: str = "") -> Row:
    if not measured > 0:
        note = "; ".join(filter(None, [note, "measured 0: no relative error"]))
    return Row(part, unit, measured, predicted, COMPARED, note)


def _part_rows(parts: PredictedParts, measured: dict[str, float] | None) -> list[Row]:
    """Compute classes, communication, bubble and idle; ``measured`` None: from a log."""
    c = parts.compute

    def row(part: str, key: str | None, predicted: float, note: str = "") -> Row:
        if measured is None:
            return Row(part, "s", None, predicted, NOT_MEASURED,
                       "a training log gives only iteration time and throughput")
        if key is None:
            return Row(part, "s", None, predicted, NOT_SEPARABLE, note)
        return _compared(part, "s", measured[key], predicted, note)

    rows = [row("GEMM", "gemm_s", c.gemm),
            row("attention", "attention_s", c.attention, "fused attention kernels"),
            row("memory-bound", "memory_s", c.memory,
                f"predicted includes the optimizer update, {parts.optimizer_s * 1e3:.3g} ms"),
            row("other kernels", "other_s", parts.other_s,
                "the cost model prices no kernel outside GEMM, attention and memory-bound"),
            row("compute", "compute_s", c.total + parts.other_s, "all classes"),
            row("communication", "comm_s", sum(parts.comm.values()),
                "measured: NCCL kernels' busy time, waits for peers included; predicted: "
                "each collective's uncontended time, hidden or not"),
            row("exposed communication", "comm_exposed_s", sum(parts.exposed.values()),
                "communication no compute overlaps")]
    rows += [row(f"exposed {d}", None, parts.exposed[d],
                 "the trace does not tie NCCL kernels to a parallel dimension (tensor, "
                 "pipeline, data, context, expert); compared as the total") for d in DIMENSIONS]
    rows.append(row("pipeline bubble", None, parts.bubble_s,
                    "in a trace a bubble is idle time or p2p kernels waiting for the "
                    "neighbouring stage; they cannot be told apart"))
    rows.append(_idle_row(parts, measured))
    return rows


def _idle_row(parts: PredictedParts, measured: dict[str, float] | None) -> Row:
    """Measured idle (no kernel on the GPU) against the predicted host time per step."""
    note = "predicted: the stack's fixed host cost per step; measured: no kernel running"
    if measured is None:
        return Row("idle", "s", None, parts.idle_s, NOT_MEASURED,
                   "a training log gives only iteration time and throughput")
    if "host_wait_s" in measured:
        note += (f", {measured['host_wait_s']:.4g} s of it with nothing queued (the GPU waiting "
                 "for the host, which the model does not price)")
    if parts.stages > 1:
        return Row("idle", "s", measured["idle_s"], parts.idle_s, NOT_COMPARED,
                   "with pipeline stages the measured idle also holds part of the bubble; "
                   + note)
    return _compared("idle", "s", measured["idle_s"], parts.idle_s, note)


def _throughput_rows(m, result: StepResult) -> list[Row]:
    """TFLOP/s and tokens/s per GPU, as the log printed them or derived from its step."""
    per_gpu_tokens = result.tokens_per_s / result.gpus
    if m.tflops_per_gpu is None:
        flops = Row("model FLOP/s per GPU", "FLOP/s", None, result.model_flops_per_gpu,
                    NOT_MEASURED, "the log prints no throughput (Megatron's --log-throughput)")
    else:
        logged = m.tflops_per_gpu * 1e12
        ratio = logged * m.step_time_s / (result.model_flops_per_gpu * result.step_time_s)
        flops = _compared("model FLOP/s per GPU", "FLOP/s", logged, result.model_flops_per_gpu,
                          f"FLOPs per step: log / clustersim = {ratio:.3f}")
    how = "as logged" if m.tokens_logged else "global batch x sequence / (step x GPUs)"
    return [flops, _compared("tokens/s per GPU", "tokens/s", m.tokens_per_gpu_s, per_gpu_tokens,
                             f"measured: {how}")]


def _prediction_dict(p: Prediction) -> dict[str, Any]:
    parts = p.parts
    return {"scenario": p.result.name, "source": p.source, "engine": "analytical",
            "gpus": p.result.gpus, "device": p.gpu_name, "stage": parts.stage,
            "stages": parts.stages, "microbatches": parts.microbatches,
            "described": f"the GPU of pipeline stage {parts.stage} of {parts.stages} "
                         "(the busiest)",
            "step_time_s": parts.step_s, "parts": parts.partition(),
            "exposed_by_dimension": parts.exposed, "comm_by_dimension": parts.comm}


def _trace_warnings(meta: dict[str, Any], p: Prediction) -> list[str]:
    out = []
    world, rank = meta.get("world_size"), meta.get("rank")
    if isinstance(world, int) and world != p.result.gpus:
        out.append(f"the trace's job ran on {world} GPUs, the scenario has {p.result.gpus}")
    if isinstance(rank, int) and 0 <= rank < p.layout.gpus:
        stage = p.layout.stage_of(rank)
        if stage != p.parts.stage:
            out.append(f"rank {rank} is on pipeline stage {stage} in the scenario's layout; "
                       f"the prediction describes stage {p.parts.stage}")
    return out


def _graph_note(measured: str, p: Prediction, said: str) -> list[str]:
    """A note when the run's CUDA graph capture (:mod:`simulator.measure.graph_capture`, or a
    log's arguments) is not the scenario's ``kernels.cuda_graphs``: the prediction is the same,
    the published runs ``clustersim run`` quotes are not."""
    stated = str(p.scenario.training.stack.kernels.cuda_graphs)
    if measured == stated:
        return []
    return [f"{said} from CUDA graphs as kernels.cuda_graphs {measured}; the scenario says {stated} "
            "(no prediction changes: the field selects the published runs quoted)"]


def _log_warnings(args: dict[str, Any], p: Prediction) -> list[str]:
    sc = p.scenario
    pairs = (("world_size", p.result.gpus), ("global_batch_size", sc.training.global_batch),
             ("seq_length", sc.model.seq_len))
    return [f"the log's {key} is {args[key]}, the scenario's {value}"
            for key, value in pairs if isinstance(args.get(key), int) and args[key] != value]


def _int_arg(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "(none)"
    return str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"


def _plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars as Python numbers, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
