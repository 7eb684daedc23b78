"""``clustersim calibrate``: fit constants to measurements, report them, write an overlay."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from simulator.config import HardwareLibrary, load_cluster
from simulator.errors import UsageError

_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("calibrate")
@click.argument("measurements", nargs=-1, type=_FILE)
@click.option("--set", "sets", multiple=True, metavar="NAME[:ROWS]",
              help="a shipped validation set: megatron_sc21, nccl, or any throughput set of "
                   "clustersim validate (e.g. torchtitan, dgxc_gpt3, nemo_long_context; model "
                   "TFLOP/s sets as tokens/s); ROWS: even, odd or ID,ID (repeatable)")
@click.option("--nccl", "nccl", nargs=2, multiple=True, type=click.Path(path_type=Path),
              metavar="LOG SCENARIO", help="an nccl-tests log and the scenario of its cluster "
                                           "(repeatable)")
@click.option("--check", "check_files", multiple=True, type=_FILE, metavar="CSV",
              help="measurements predicted before and after but not fitted (repeatable)")
@click.option("--check-set", "check_sets", multiple=True, metavar="NAME[:ROWS]",
              help="a validation set's rows predicted before and after but not fitted")
@click.option("--fit", "fits", multiple=True, metavar="KIND:SPEC.FIELD[=LO:HI]",
              help="a constant to fit, e.g. gpu:a100-sxm-80gb.compute.gemm_peak_fraction "
                   "(repeatable; default: gemm_peak_fraction of each GPU the training rows use, "
                   "efficiency of each collective row's bottleneck link)")
@click.option("-o", "--output", type=_FILE, default=None,
              help="write the overlay YAML (apply with --calibration)")
@click.option("--folds", type=int, default=None,
              help="cross-validation folds (default: leave-one-out up to 12 rows, else 5)")
@click.option("--json", "as_json", is_flag=True, help="print constants, rows and summary as JSON")
def calibrate(measurements: tuple[Path, ...], sets: tuple[str, ...], nccl: tuple[tuple[Path, Path], ...],
              check_files: tuple[Path, ...], check_sets: tuple[str, ...], fits: tuple[str, ...],
              output: Path | None, folds: int | None, as_json: bool) -> None:
    """Fit hardware and stack constants to measurements; report them and write an overlay."""
    from simulator.calibrate.fit import calibrate_rows  # scipy.optimize: only when calibrating
    from simulator.calibrate.output import json_document, overlay_document, report, write_overlay
    from simulator.calibrate.params import parse_parameters

    library = HardwareLibrary()
    inputs: list[str] = []
    rows = _gather(measurements, sets, nccl, inputs)
    checks = _gather(check_files, check_sets, (), inputs, "check ")
    if not rows:
        raise UsageError("no measurements: give a CSV, --set NAME or --nccl LOG SCENARIO")
    params = parse_parameters(fits or default_parameters(rows), library)
    result = calibrate_rows(rows, params, library, checks, folds)
    if output is not None:
        write_overlay(output, overlay_document(result, library, inputs))
    if as_json:
        click.echo(json.dumps(json_document(result, library, inputs), allow_nan=False))
    else:
        Console().print(report(result, output))


def _gather(files, sets, logs, inputs: list[str], prefix: str = "") -> list:
    """Rows of every input, appending a one-line description of each to ``inputs``."""
    from simulator.calibrate.rows import csv_rows, nccl_rows, set_rows

    rows = []
    for path in files:
        found = csv_rows(path)
        inputs.append(f"{prefix}{path.as_posix()} ({len(found)} rows)")
        rows += found
    for name in sets:
        found = set_rows(name)
        inputs.append(f"{prefix}--set {name} ({len(found)} rows)")
        rows += found
    for log, scenario in logs:
        notes: list[str] = []
        found = nccl_rows(log, scenario, notes=notes)
        skipped = "".join(f"; {note}" for note in notes)
        inputs.append(f"{prefix}--nccl {log.as_posix()} {scenario.as_posix()} ({len(found)} rows{skipped})")
        rows += found
    return rows


def default_parameters(rows: list) -> list[str]:
    """``gpu:G.compute.gemm_peak_fraction`` for each GPU of a training row and
    ``link:L.efficiency`` for each collective row's bottleneck link (the NIC link across
    nodes, else the intra-node link, else PCIe), in order of first use."""
    from simulator.calibrate.rows import BUSBW

    names: dict[str, None] = {}
    for path in dict.fromkeys(r.scenario for r in rows):
        hardware = load_cluster(path)
        metrics = {r.metric for r in rows if r.scenario == path}
        if metrics - {BUSBW}:
            names[f"gpu:{hardware.gpu.name}.compute.gemm_peak_fraction"] = None
        if BUSBW in metrics:
            link = hardware.nic_link if hardware.nodes > 1 else hardware.intra_link or hardware.pcie_link
            names[f"link:{link.name}.efficiency"] = None
    return list(names)
