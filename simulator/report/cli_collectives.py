"""The collective commands of ``clustersim``: ``collectives`` (an nccl-tests-style table of
one collective over the whole cluster) and ``compare-nccl`` (predicted against a measured
nccl-tests log).

Registered by :mod:`simulator.cli`; user mistakes raise
:class:`~simulator.errors.UsageError` (one ``error:`` line, exit status 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np

from simulator.collectives import Algorithm, Op, whole_cluster
from simulator.errors import InfeasibleError, UsageError
from simulator.pipeline import open_scenario
from simulator.report import tables
from simulator.report.cli_types import OUT_FILE, SCENARIO, out, say, warn
from simulator.units import parse_size

ALGO_CHOICES = ["auto", *(a.value for a in Algorithm)]
OP_CHOICES = [o.value for o in Op]


@click.command()
@click.argument("scenario", type=SCENARIO)
@click.option("--op", type=click.Choice(OP_CHOICES), default="all_reduce", show_default=True,
              help="collective operation")
@click.option("--algo", type=click.Choice(ALGO_CHOICES), default=None,
              help="algorithm, or auto (the fastest, as NCCL's tuner); default: the scenario's "
                   "collectives.algorithm")
@click.option("--min-bytes", "-b", default="8", show_default=True, help="smallest size (8, 64K, 1M)")
@click.option("--max-bytes", "-e", default="8G", show_default=True, help="largest size")
@click.option("--factor", "-f", type=int, default=2, show_default=True, help="size step factor")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list")
@click.option("--csv", "csv_path", type=OUT_FILE, is_flag=False, flag_value="-", default=None,
              metavar="[FILE]", help="write CSV to FILE (atomically), or print it with no FILE")
def collectives(scenario: Path, op: str, algo: str | None, min_bytes: str, max_bytes: str,
                factor: int, as_json: bool, csv_path: Path | None) -> None:
    """nccl-tests-style table of one collective over all the cluster's GPUs."""
    from simulator.cost.forced import bound_algorithm

    to_stdout = csv_path is not None and str(csv_path) == "-"
    if as_json and to_stdout:
        raise UsageError("--json and --csv without a FILE both print to stdout; give one, or "
                         "--csv FILE")
    sizes = _sizes(min_bytes, max_bytes, factor)
    session = open_scenario(scenario)
    algorithm = bound_algorithm(session.collectives, Op(op)) if algo is None else \
        None if algo == "auto" else Algorithm(algo)
    group = whole_cluster(session.cluster)
    with _named_algo(algo):
        sweep = session.collectives.sweep(Op(op), algorithm, group, sizes)
    if csv_path is not None and not to_stdout:
        from simulator.export.atomic import write_atomic
        write_atomic(csv_path, tables.sweep_csv(sweep), "--csv")
    if as_json:
        click.echo(json.dumps(sweep.records()))
    elif to_stdout:
        click.echo(tables.sweep_csv(sweep), nl=False)
    else:
        shown = algorithm.value if algorithm is not None else "auto"
        out.print(tables.sweep_table(sweep, f"{op} over {group.size} GPUs "
                                            f"({session.scenario.name}), algo {shown}"))
    if csv_path is not None and not to_stdout:
        say(f"wrote {csv_path}")


@click.command("compare-nccl")
@click.argument("log", type=click.Path(path_type=Path))
@click.argument("scenario", type=SCENARIO)
@click.option("--op", type=click.Choice(OP_CHOICES), default=None,
              help="override the collective named in the log")
@click.option("--algo", type=click.Choice(ALGO_CHOICES), default=None,
              help="override NCCL_ALGO found in the log")
@click.option("--json", "as_json", is_flag=True, help="print JSON records")
def compare_nccl(log: Path, scenario: Path, op: str | None, algo: str | None,
                 as_json: bool) -> None:
    """Predicted against measured time and busbw per size, for a nccl-tests log.

    Result rows that cannot be scored (size 0, a time or bandwidth that is not a positive
    finite number) are left out with one warning line; a log of such rows only is an error.
    """
    from simulator.validation.compare import compare_log
    from simulator.validation.nccl_log import read_nccl_log

    measured = read_nccl_log(log)
    if (note := measured.skipped_note()) is not None:
        warn(f"{log}: {note}; not scored")
    session = open_scenario(scenario)
    algorithm = None if algo in (None, "auto") else Algorithm(algo)
    with _named_algo(algo):
        frame = compare_log(measured, session.collectives, Op(op) if op else None, algorithm)
    if as_json:
        click.echo(frame.to_json(orient="records"))
    else:
        out.print(tables.comparison_table(frame, f"{log} vs {session.scenario.name}"))


@contextmanager
def _named_algo(algo: str | None) -> Iterator[None]:
    """An algorithm the user forced with ``--algo`` that cannot run on this cluster is a usage
    error naming the option (``--algo nvls-tree: ...``); without ``--algo`` the error is the
    scenario's and passes unchanged."""
    try:
        yield
    except InfeasibleError as exc:
        if algo in (None, "auto"):
            raise
        raise UsageError(f"--algo {algo}: {exc}") from None


def _sizes(min_text: str, max_text: str, factor: int) -> np.ndarray:
    try:
        low, high = parse_size(min_text), parse_size(max_text)
    except ValueError as exc:
        raise UsageError(f"--min-bytes/--max-bytes: {exc}") from None
    if low <= 0 or high <= 0:
        raise UsageError("--min-bytes and --max-bytes must be positive")
    if low > high:
        raise UsageError(f"--min-bytes ({low}) is larger than --max-bytes ({high})")
    if factor < 2:
        raise UsageError("--factor must be 2 or more")
    if high > 2**50:
        raise UsageError("--max-bytes must be at most 1P (2**50 bytes)")
    sizes = [low]
    while sizes[-1] * factor <= high:
        sizes.append(sizes[-1] * factor)
    return np.array(sizes, dtype=np.float64)

