"""The readable report of ``clustersim run``: headline numbers, time and memory breakdowns."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from simulator.results import StepResult
from simulator.units import format_bytes


def run_report(result: StepResult) -> Group:
    return Group(_headline(result), _time_table(result), _memory_table(result), *_warnings(result))


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
                                     f"over {len(r.step_times_s)} steps")]
          if len(r.step_times_s) > 1 else []),
        ("tokens/s", f"{r.tokens_per_s:,.0f}"),
        ("model TFLOP/s per GPU", f"{r.model_flops_per_gpu / 1e12:.1f}"),
        ("hardware TFLOP/s per GPU", f"{r.hardware_flops_per_gpu / 1e12:.1f}"),
        ("MFU", f"{r.mfu:.1%}"),
        ("pipeline bubble", f"{r.bubble_fraction:.1%}"),
        ("exposed communication", f"{r.comm_exposed_s:.3f} s"),
        ("memory per GPU", f"{format_bytes(r.memory_per_gpu_bytes)} of "
                           f"{format_bytes(r.memory_capacity_bytes)}"),
        ("microbatches", str(r.microbatches)),
        ("layers per stage", _split_text(r.layer_split)),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _split_text(split: list[int]) -> str:
    if len(set(split)) == 1:
        return f"{split[0]} x {len(split)} stages"
    return ", ".join(str(n) for n in split)


def _time_table(r: StepResult) -> Table:
    table = Table(title="time per step")
    table.add_column("part")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    parts = [("pipeline (compute + in-line comm)", r.pipeline_s - r.bubble_s),
             ("pipeline bubble", r.bubble_s),
             ("data-parallel reduction, exposed", r.dp_comm_exposed_s),
             ("optimizer", r.optimizer_s)]
    if r.step_times_s:
        parts.append(("contention and noise (DES median - analytical)", r.contention_and_noise_s))
    for name, seconds in parts:
        table.add_row(name, f"{seconds:.4f}", f"{seconds / r.step_time_s:.1%}")
    for dim, seconds in r.exposed_by_dimension.items():
        if seconds > 0 and dim != "dp":
            table.add_row(f"  of which {dim} communication", f"{seconds:.4f}",
                          f"{seconds / r.step_time_s:.1%}")
    return table


def _memory_table(r: StepResult) -> Table:
    worst = max(r.stages, key=lambda s: s.memory_bytes)
    table = Table(title=f"memory of the most loaded GPU (stage {worst.stage})")
    table.add_column("part")
    table.add_column("bytes", justify="right")
    for name, value in worst.memory.items():
        table.add_row(name, format_bytes(value))
    return table


def _warnings(r: StepResult) -> list[str]:
    notes = []
    if not r.fits_in_memory:
        worst = max(r.stages, key=lambda s: s.memory_bytes)
        dominant = max(worst.memory, key=worst.memory.get)
        over = r.memory_per_gpu_bytes - r.memory_capacity_bytes
        notes.append(f"[bold red]does not fit:[/] stage {worst.stage} needs "
                     f"{format_bytes(over)} more than the GPU has; {dominant} dominate")
    return notes + [f"[yellow]warning:[/] {w}" for w in r.warnings]
