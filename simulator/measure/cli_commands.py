"""``clustersim import-trace`` and ``clustersim import-log``: measured runs in, tables and
draft scenarios out.

Both raise :class:`~simulator.errors.ClusterSimError` subclasses for every user mistake;
``simulator.cli.main`` prints them as one ``error: ...`` line and exits with status 2.
Output files are checked before any work and written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

out = Console()
_PATH = click.Path(path_type=Path)
_SUMMARY_COLUMNS = (("wall", "wall_s"), ("compute", "compute_s"), ("comm", "comm_s"),
                    ("exposed", "comm_exposed_s"), ("overlap", "comm_overlapped_s"),
                    ("idle", "idle_s"), ("host", "host_wait_s"), ("gemm", "gemm_s"),
                    ("attn", "attention_s"), ("mem", "memory_s"), ("other", "other_s"))

_LEGEND = ("exposed: communication no compute overlaps; overlap: communication under compute\n"
           "host: the part of idle with nothing queued, the GPU waiting for the host to launch\n"
           "gemm + attn + mem + other = compute; compute + exposed + idle = wall")


@click.command("import-trace")
@click.argument("trace", type=_PATH)
@click.option("--json", "as_json", is_flag=True,
              help="print metadata, per-step summary and collectives as one JSON object")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="also write the per-step summary as CSV")
def import_trace(trace: Path, as_json: bool, csv_path: Path | None) -> None:
    """Per-step breakdown of a PyTorch profiler (Kineto) trace: compute, communication
    (exposed and overlapped), idle time and kernel classes, from JSON or JSON.gz."""
    from simulator.measure.files import check_output_path, write_atomic
    from simulator.measure.graph_capture import graph_summary
    from simulator.measure.kernel_floor import floor_summary
    from simulator.measure.kernel_gaps import gap_summary
    from simulator.measure.kineto import nccl_table, read_kineto_trace

    if csv_path is not None:
        check_output_path(csv_path, "--csv")
    imported = read_kineto_trace(trace)
    collectives = nccl_table(imported.kernels)
    gap, graphs = gap_summary(imported.kernels), graph_summary(imported.kernels)
    floor = floor_summary(imported.kernels)
    if csv_path is not None:
        write_atomic(csv_path, imported.steps.to_csv(index=False))
    if as_json:
        click.echo(json.dumps({"metadata": imported.metadata, "kernel_gap": gap, "kernel_floor": floor,
                               "cuda_graphs": graphs,
                               "steps": json.loads(imported.steps.to_json(orient="records")),
                               "collectives": json.loads(collectives.to_json(orient="records"))}))
        return
    out.print(_steps_table(imported.steps, _title(trace, imported.metadata)))
    out.print(_LEGEND, highlight=False)
    out.print(_gap_line(gap), highlight=False)
    out.print(_floor_line(floor), highlight=False)
    if graphs is not None:
        out.print(_graphs_line(graphs), highlight=False)
    if len(collectives):
        out.print(_collectives_table(collectives))


def _gap_line(gap: dict | None) -> str:
    """The trace's back-to-back kernel gap (:mod:`simulator.measure.kernel_gaps`), next to
    what the GPU specs charge per kernel."""
    if gap is None:
        return "kernel gap: too few back-to-back kernels the host had queued to measure it"
    return (f"kernel gap: median {gap['median_us']:.2f} us (middle half {gap['p25_us']:.2f}-"
            f"{gap['p75_us']:.2f}) over {gap['pairs']:,} back-to-back kernels the host had "
            "queued; the GPU specs charge compute.kernel_overhead_us per kernel")


def _floor_line(floor: dict | None) -> str:
    """The trace's memory-bound kernel floor (:mod:`simulator.measure.kernel_floor`), next to
    what the GPU specs charge per memory-bound kernel."""
    if floor is None:
        return "kernel floor: too few one-block memory-bound kernels (or no grid sizes) to measure it"
    return (f"kernel floor: median {floor['median_us']:.2f} us (middle half {floor['p25_us']:.2f}-"
            f"{floor['p75_us']:.2f}) over {floor['kernels']:,} one-block memory-bound kernels; the "
            "GPU specs charge compute.memory_fixed_us per memory-bound kernel")


def _graphs_line(graphs: dict) -> str:
    """How much of the compute the trace replays from CUDA graphs
    (:mod:`simulator.measure.graph_capture`) and the stack field that says so."""
    return (f"CUDA graphs: {graphs['replayed']:,} of {graphs['kernels']:,} compute kernels replayed "
            f"({graphs['time_share']:.1%} of their GPU time): training.stack.kernels.cuda_graphs "
            f"{graphs['cuda_graphs']}")


def _title(trace: Path, metadata: dict) -> str:
    who = [f"rank {metadata['rank']} of {metadata['world_size']}"] if metadata.get("rank") is not None else []
    who += [metadata["device_name"]] if metadata.get("device_name") else []
    return f"{trace.name}" + (f"\n{', '.join(who)}" if who else "") + "\nmilliseconds per step"


def _steps_table(steps, title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0),
                  pad_edge=False, collapse_padding=True)
    table.add_column("step", justify="right")
    for label, _ in _SUMMARY_COLUMNS:
        table.add_column(label, justify="right", min_width=len(label))
    for row in steps.to_dict(orient="records"):
        table.add_row(str(row["step"]), *(f"{1e3 * row[key]:.1f}" for _, key in _SUMMARY_COLUMNS))
    return table


def _collectives_table(collectives) -> Table:
    table = Table(title="NCCL kernels by collective",
                  caption="CTAs: the most thread blocks (NCCL channels) one kernel ran, the SMs it "
                          "takes from compute beside it")
    for name in ("collective", "calls", "busy (ms)", "bytes", "CTAs"):
        table.add_column(name, justify="left" if name == "collective" else "right")
    for row in collectives.to_dict(orient="records"):
        size = "" if row["bytes"] != row["bytes"] else f"{row['bytes']:,.0f}"
        ctas = "" if row["max_ctas"] != row["max_ctas"] else f"{row['max_ctas']:.0f}"
        table.add_row(row["op"], str(row["calls"]), f"{1e3 * row['busy_s']:.3f}", size, ctas)
    return table


@click.command("import-log")
@click.argument("log", type=_PATH)
@click.option("--node", required=True, help="node spec the run used (see 'clustersim specs')")
@click.option("--nodes", type=int, required=True, help="number of nodes the run used")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="write the draft scenario here (default: print it)")
@click.option("--json", "as_json", is_flag=True,
              help="print the draft scenario, the measured steady state and what was not inferred "
                   "as one JSON object")
def import_log(log: Path, node: str, nodes: int, output: Path | None, as_json: bool) -> None:
    """Draft scenario from a Megatron-LM training log (also Megatron-Core, NeMo, Primus):
    the arguments block becomes the scenario, the iteration lines the measured step time.
    A draft 'clustersim check' would refuse (a logged value outside the scenario's range) is
    an error naming the log's argument, and nothing is written."""
    from simulator.config import HardwareLibrary
    from simulator.measure.draft import check_node, draft_from_log
    from simulator.measure.draft_limits import check_draft
    from simulator.measure.files import check_output_path, write_atomic
    from simulator.measure.megatron_log import read_megatron_log
    from simulator.measure.scenario_text import render_draft

    library = HardwareLibrary()
    if output is not None:
        check_output_path(output)
    check_node(node, nodes, library)
    megatron = read_megatron_log(log)
    draft = draft_from_log(megatron, node, nodes, library)
    check_draft(draft.scenario, megatron.arguments, megatron.source, library)
    text = render_draft(draft, log.name)
    if as_json:
        click.echo(json.dumps(_draft_json(draft, output)))
    if output is None:
        if not as_json:
            click.echo(text, nl=False)
        return
    write_atomic(output, text)
    if as_json:
        return
    m = draft.measured
    click.echo(f"wrote {output}: measured {m.step_time_s:.3f} s per iteration (median of "
               f"{len(m.iterations)} steady-state iterations of {m.logged}); "
               f"{len(draft.not_inferred)} item(s) not inferred, listed at the top of the file")


def _draft_json(draft, output: Path | None) -> dict:
    """The draft as plain types: scenario mapping, measured figures, open items."""
    m = draft.measured
    return {"scenario": draft.scenario, "written_to": str(output) if output is not None else None,
            "measured": {"step_time_s": m.step_time_s, "iterations": [int(i) for i in m.iterations],
                         "logged": m.logged, "spread": m.spread, "tflops_per_gpu": m.tflops_per_gpu,
                         "tokens_per_gpu_s": m.tokens_per_gpu_s, "tokens_logged": m.tokens_logged},
            "not_inferred": list(draft.not_inferred), "not_modelled": list(draft.not_modelled)}
