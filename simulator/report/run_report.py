"""The readable report of ``clustersim run``: headline numbers, time and memory breakdowns."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from simulator.report.what_if_report import stall_seconds, what_if_table
from simulator.results import StepResult
from simulator.units import format_bytes


def run_report(result: StepResult, with_warnings: bool = True) -> Group:
    """Headline numbers, the time and memory breakdowns, then (``with_warnings``) one line
    per warning (:func:`warning_lines`; the CLI prints those unwrapped itself)."""
    from simulator.report.stragglers_report import stragglers_tables

    parts = [_headline(result), _time_table(result), _memory_table(result), *stragglers_tables(result)]
    if (extra := what_if_table(result)) is not None:
        parts.append(extra)
    if result.parameter_server:
        parts.append(parameter_server_table(result))
    return Group(*parts, *(warning_lines(result) if with_warnings else []))


def _headline(r: StepResult) -> Table:
    table = Table(title=f"{r.name}: {r.gpus} GPUs", show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("engine", r.engine),
        *([("calibration in force", r.calibration)] if r.calibration else []),
        ("step time", f"{r.step_time_s:.3f} s"),
        *([("step time p50 / p95 / p99", f"{r.step_time_p50_s:.3f} / {r.step_time_p95_s:.3f} / "
                                           f"{r.step_time_p99_s:.3f} s "
                                     f"over {len(r.step_times_s)} "
                                     f"{'worker iterations' if r.parameter_server else 'steps'}")]
          if len(r.step_times_s) > 1 else []),
        ("tokens/s", f"{r.tokens_per_s:,.0f}"),
        ("model TFLOP/s per GPU", f"{r.model_flops_per_gpu / 1e12:.1f}"),
        ("hardware TFLOP/s per GPU", f"{r.hardware_flops_per_gpu / 1e12:.1f}"),
        ("MFU", f"{r.mfu:.1%}"),
        ("pipeline bubble", f"{r.bubble_fraction:.1%}"),
        ("exposed communication", f"{r.comm_exposed_s:.3f} s"),
        ("memory per GPU", f"{format_bytes(r.memory_per_gpu_bytes)} of "
                           f"{format_bytes(r.memory_capacity_bytes)}"
                           + ("" if r.fits_in_memory else " (does not fit)")),
        ("microbatches", _microbatches_text(r)),
        ("layers per stage", _split_text(r.layer_split)),
        *([("documents", f"{r.sequences['distribution']}{', packed' if r.sequences['packing'] else ''}: "
                         f"mean work x{r.sequences['mean_tokens_factor']:.3f} tokens, "
                         f"x{r.sequences['mean_attention_factor']:.3f} attention"
                         + (" (analytical: the mean micro-batch)" if not r.step_times_s else ""))]
          if r.sequences else []),
        *([("bottleneck stage", f"stage {r.bottleneck_stage}: {r.bottleneck_excess:+.1%} busy time "
                                "over the mean stage")] if len(r.layer_split) > 1 else []),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _split_text(split: list[int]) -> str:
    if len(set(split)) == 1:
        return f"{split[0]} x {len(split)} stages"
    return ", ".join(str(n) for n in split)


def _time_table(r: StepResult) -> Table:
    """Parts of the step; the in-line communication of the pipeline sits under its row."""
    table = Table(title="time per step")
    table.add_column("part")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")

    def row(name: str, seconds: float) -> None:
        seconds = seconds if abs(seconds) >= 5e-5 else 0.0    # no "-0.0000" from round-off
        table.add_row(name, f"{seconds:.4f}", f"{seconds / r.step_time_s:.1%}")

    row("pipeline (compute + in-line comm)", r.pipeline_s - r.bubble_s)
    for dim, seconds in r.exposed_by_dimension.items():
        seconds -= r.pp_in_bubble_s if dim == "pp" else 0.0
        if seconds > 0 and dim != "dp":
            row(f"  of which {dim} communication", seconds)
    if r.stages and r.stages[0].amax_comm_s > 0:
        row("  of which fp8 amax all-reduces", r.microbatches * r.stages[0].amax_comm_s)
    if r.stages and r.stages[0].offload_wait_s > 0:
        row("  of which waits for activation copies to host", r.microbatches * r.stages[0].offload_wait_s)
    if r.dp_in_pipeline_s > 0:
        row("  of which ZeRO-3/FSDP gathers and reductions", r.dp_in_pipeline_s)
    row("pipeline bubble", r.bubble_s)
    if r.pp_in_bubble_s > 0:
        row("  of which pipeline sends in fill and drain", r.pp_in_bubble_s)
    row("data-parallel sync, exposed (reductions, weight gathers)", r.dp_comm_exposed_s - r.dp_in_pipeline_s)
    if r.dp_sm_slowdown_s > 0:
        row("  of which compute slowed by NCCL's SMs and HBM", r.dp_sm_slowdown_s)
    row("optimizer step (and gradient-buffer zeroing)", r.optimizer_s)
    if stall_seconds(r) > 0:
        row("waiting for input (data loader)", stall_seconds(r))
    if r.step_times_s:
        row("contention and noise (DES median - analytical)", r.contention_and_noise_s)
    return table


def parameter_server_table(r: StepResult) -> Table:
    """``training.sync: async``: what bounds the round, and (DES) the staleness seen and the
    synchronous alternatives under the same noise."""
    ps = r.parameter_server
    table = Table(title="asynchronous parameter servers", show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [("workers x servers, staleness bound",
             f"{ps['workers']} x {ps['servers']}, s = {ps['staleness_bound']}"),
            ("worker period (compute + pull + push)",
             f"{ps['worker_period_s']:.4f} s ({ps['compute_s']:.4f} + {ps['pull_s']:.4f} + "
             f"{ps['push_s']:.4f})"),
            ("server period (every worker's push)", f"{ps['server_period_s']:.4f} s"),
            ("bound by", ps["bound"]),
            ("synchronous all-reduce step (analytical)", f"{ps['sync_step_s']:.4f} s")]
    if "staleness_mean" in ps:
        rows += [("staleness seen: mean / p50 / p99 / max",
                  f"{ps['staleness_mean']:.2f} / {ps['staleness_p50']:.0f} / "
                  f"{ps['staleness_p99']:.0f} / {ps['staleness_max']}"),
                 ("waited at the staleness gate, per worker", f"{ps['gated_s']:.3f} s"),
                 ("round, asynchronous (DES mean)", f"{r.step_time_s:.4f} s"),
                 ("round, s = 0 on the same servers (DES mean)",
                  f"{ps['bulk_synchronous_round_s']:.4f} s"),
                 ("step, synchronous all-reduce (DES mean)", f"{ps['sync_allreduce_step_s']:.4f} s")]
    for name, value in rows:
        table.add_row(name, value)
    return table


MEMORY_LABELS = {"cuda_context": "CUDA context", "nccl_buffers": "NCCL buffers",
                 "fragmentation": "allocator fragmentation",
                 "pipeline_buffers": "pipeline buffers", "fp8_weight_cache": "fp8 weight cache",
                 "ep_buffers": "dispatcher buffers"}


def _memory_table(r: StepResult) -> Table:
    worst = max(r.stages, key=lambda s: s.memory_bytes)
    table = Table(title=f"memory of the most loaded GPU (stage {worst.stage})")
    table.add_column("part")
    table.add_column("bytes", justify="right")
    for name, value in worst.memory.items():
        table.add_row(MEMORY_LABELS.get(name, name), format_bytes(value))
    table.add_row("total", f"{format_bytes(worst.memory_bytes)} of "
                           f"{format_bytes(r.memory_capacity_bytes)}")
    return table


def warning_lines(r: StepResult) -> list[Text]:
    """One ``warning: ...`` line per warning of ``r`` ("does not fit" first if not fitting)."""
    from simulator.results.warnings import memory_warnings

    found = list(r.warnings)
    if not r.fits_in_memory and not any(w.startswith("does not fit") for w in found):
        found = memory_warnings(r) + found
    return [Text.assemble(("warning: ", "bold yellow"), w) for w in found]


def _microbatches_text(r: StepResult) -> str:
    """The step's microbatches, and with several pipeline schedules a step how they split."""
    if r.pipeline_flushes == 1:
        return str(r.microbatches)
    each = r.microbatches // r.pipeline_flushes
    return f"{r.microbatches} ({r.pipeline_flushes} pipeline schedules of {each})"
