"""``clustersim search``: the best layouts of a scenario's model on its cluster.

Ranges come from flags, else the scenario's ``search:`` section, else defaults
(:func:`simulator.sweep.layouts.default_axes`); ``--set`` adds scenario axes (hardware
or anything else). Prints the top layouts with why the best beats the next; writes every
layout evaluated (``--csv/--parquet/--json``) and a throughput-memory plot (``--png``).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import click
import pandas as pd
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from simulator.config import HardwareLibrary, Scenario, scenario_from_mapping
from simulator.config.overlay import CalibratedLibrary, calibrated_library
from simulator.config.yaml_io import read_yaml_mapping
from simulator.errors import ConfigError, UsageError
from simulator.measure.files import check_output_path, write_atomic
from simulator.pipeline import resolve_scenario
from simulator.sweep.best_scenario import best_scenario_text
from simulator.sweep.layouts import LAYOUT_AXES, plain_value
from simulator.sweep.search import OBJECTIVES, SearchResult, parse_sets, search, why_best
from simulator.units import format_bytes

out = Console()
err = Console(stderr=True)
SECTION_KEYS = {"set", "objective", "top", "prices"}


def read_search_scenario(path: Path, library: HardwareLibrary) -> tuple[Scenario, dict, HardwareLibrary]:
    """The scenario at ``path`` without its ``search:`` section, the section, and the
    library (the scenario's ``calibration:`` overlay applied unless one is already).

    Raises
    ------
    ConfigError
        For an invalid scenario or a ``search:`` section that is not a mapping of known keys.
    """
    raw = read_yaml_mapping(path)
    section = raw.pop("search", None) or {}
    if not isinstance(section, dict):
        raise ConfigError("expected a mapping of axis: [values]", str(path), "search")
    for key in section:
        if key not in SECTION_KEYS and key not in LAYOUT_AXES:
            raise ConfigError(f"unknown key; known: {', '.join([*LAYOUT_AXES, *sorted(SECTION_KEYS)])}",
                              str(path), f"search.{key}")
    if raw.get("calibration") and not isinstance(library, CalibratedLibrary):
        overlay = Path(path).parent / str(raw["calibration"])
        if not overlay.is_file():
            raise ConfigError(f"no calibration file at {overlay}", str(path), "calibration")
        library = calibrated_library(overlay, library)
    return scenario_from_mapping(raw, str(path), library), section, library


def parse_prices(entries: list[str] | tuple[str, ...], section: Any = None) -> dict[str, float]:
    """Dollars per GPU-hour by node name from ``--price USD`` / ``--price NODE=USD`` (and a
    ``prices:`` entry: a number or a mapping); ``"*"`` stands for any node."""
    prices: dict[str, float] = {}
    if isinstance(section, int | float) and not isinstance(section, bool):
        prices["*"] = float(section)
    elif isinstance(section, dict):
        prices.update({str(k): _dollars(v, f"search.prices.{k}") for k, v in section.items()})
    elif section is not None:
        raise UsageError("search.prices: expected dollars per GPU-hour, or a mapping node: dollars")
    for entry in entries:
        node, sep, value = entry.rpartition("=")
        prices[node.strip() if sep else "*"] = _dollars(value, f"--price {entry}")
    return prices


def _dollars(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{where}: '{value}' is not a number of dollars per GPU-hour") from None
    if not (math.isfinite(number) and number > 0):
        raise UsageError(f"{where}: the price must be positive")
    return number


class LazyProgress:
    """A rich progress bar on stderr that appears only once the work has taken a second."""

    def __init__(self, label: str, delay_s: float = 1.0):
        self.label, self.delay_s, self.start = label, delay_s, time.perf_counter()
        self.bar: Progress | None = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None and time.perf_counter() - self.start < self.delay_s:
            return
        if self.bar is None:
            self.bar = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn(), console=err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def top_table(result: SearchResult, top: int, title: str) -> Table:
    """The ``top`` best layouts: the ``--set`` values, the layout, and the headline numbers."""
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    costs = bool(len(result.ranked)) and bool(result.ranked["usd_per_million_tokens"].notna().any())
    table.add_column("#", justify="right")
    for key in result.set_keys:
        table.add_column(key.rsplit(".", 1)[-1], justify="right")
    for header in ["layout", "sched", "recomp", "Z", "tok/s", "MFU", "mem/GPU", *(["$/Mtok"] * costs)]:
        table.add_column(header, justify="left" if header in ("layout", "sched", "recomp") else "right",
                         no_wrap=header != "layout", min_width=16 if header == "layout" else None)
    for rank, row in enumerate(result.ranked.head(top).to_dict(orient="records"), start=1):
        recompute = _text(row["recompute"]).replace("selective", "sel")
        cells = [str(rank), *[_text(row[k]) for k in result.set_keys], layout_text(row),
                 _schedule(row), recompute, _zero(row), f"{row['tokens_per_s']:,.0f}",
                 f"{row['mfu']:.1%}", format_bytes(row["memory_per_gpu_bytes"])]
        table.add_row(*cells, *([f"{row['usd_per_million_tokens']:.3f}"] if costs else []))
    return table


def layout_text(row: dict[str, Any]) -> str:
    """``tp4+sp pp8 dp32 mb1`` (cp and ep shown when above 1, etp when set, ``off20`` when 20
    layers' activations are offloaded)."""
    parts = [f"tp{row['tp']}" + ("+sp" if row["sequence_parallel"] else ""), f"pp{row['pp']}",
             f"dp{row['dp']}"]
    parts += [f"{k}{row[k]}" for k in ("cp", "ep") if row[k] > 1]
    if plain_value(row.get("etp")) is not None:
        parts.append(f"etp{int(row['etp'])}")
    offloaded = plain_value(row.get("cpu_offload_layers")) or 0
    return " ".join([*parts, f"mb{row['micro_batch']}", *([f"off{int(offloaded)}"] if offloaded else [])])


def _schedule(row: dict[str, Any]) -> str:
    v = row["virtual_stages"]
    return f"int v{v}" if v > 1 else _text(row["schedule"])


def _zero(row: dict[str, Any]) -> str:
    return str(row["zero_stage"]) + (f"/{row['shard_size']}" if _present(row["shard_size"]) else "")


def _text(value: Any) -> str:
    return str(getattr(value, "value", value))


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def plain_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with enums as their names and object columns as text (for CSV, Parquet, JSON)."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            values = frame[column].map(lambda v: None if v is None else _text(v))
            frame[column] = values
    return frame


def write_outputs(result: SearchResult, csv_path: Path | None, parquet: Path | None,
                  json_path: Path | None, png: Path | None, title: str) -> None:
    """Every layout evaluated to the files asked for, and the plot (atomically)."""
    frame = plain_frame(result.frame)
    if csv_path is not None:
        write_atomic(csv_path, frame.to_csv(index=False))
    if json_path is not None:
        records = json.loads(frame.to_json(orient="records"))
        write_atomic(json_path, json.dumps(records, indent=1) + "\n")
    if parquet is not None:
        _write_parquet(frame, parquet)
    if png is not None:
        write_pareto_png(result, png, title)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise UsageError("--parquet needs pyarrow: pip install 'clustersim[parquet]'") from None
    temp = path.with_name(f".{path.name}.tmp")
    try:
        frame.to_parquet(temp, index=False)
        temp.replace(path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise UsageError(f"--parquet: cannot write {path}: {exc.strerror or exc}") from None


def pareto_front(frame: pd.DataFrame) -> pd.DataFrame:
    """Feasible rows no other feasible row beats on both tokens/s (higher) and memory per
    GPU (lower), by memory ascending."""
    ok = frame[frame["feasible"]].sort_values(["memory_per_gpu_bytes", "tokens_per_s"],
                                              ascending=[True, False], kind="mergesort")
    best, keep = -math.inf, []
    for index, tokens in zip(ok.index, ok["tokens_per_s"], strict=True):
        if tokens > best:
            best = tokens
            keep.append(index)
    return ok.loc[keep]


def write_pareto_png(result: SearchResult, path: Path, title: str) -> None:
    """Tokens/s against memory per GPU for every layout simulated (feasible, and over
    capacity in grey), the Pareto front marked and the best layout starred; atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    frame, gib = result.frame, 2**30
    figure = Figure(figsize=(8, 5.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    over = frame[frame["status"].str.startswith("does not fit")]
    ok, front = frame[frame["feasible"]], pareto_front(frame)
    axes.scatter(over["memory_per_gpu_bytes"] / gib, over["tokens_per_s"], s=8, c="0.75",
                 marker="x", label="does not fit")
    axes.scatter(ok["memory_per_gpu_bytes"] / gib, ok["tokens_per_s"], s=10, c="tab:blue",
                 alpha=0.6, label="fits")
    axes.plot(front["memory_per_gpu_bytes"] / gib, front["tokens_per_s"], "o-", c="tab:red",
              ms=5, drawstyle="steps-post", label="Pareto front")
    if result.best is not None and result.objective == "tokens_per_s":
        axes.scatter([result.best["memory_per_gpu_bytes"] / gib], [result.best["tokens_per_s"]],
                     marker="*", s=220, c="gold", edgecolors="k", zorder=5, label="best")
    for capacity in frame["memory_capacity_bytes"].dropna().unique():
        axes.axvline(capacity / gib, ls="--", c="0.4", lw=1)
    axes.set_xlabel("memory per GPU (GiB)")
    axes.set_ylabel("tokens/s")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right")
    figure.suptitle(title)
    temp = path.with_name(f".{path.name}.tmp")
    try:
        figure.savefig(temp, format="png", dpi=110)
        temp.replace(path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise UsageError(f"--png: cannot write {path}: {exc.strerror or exc}") from None


def _axis_option(name: str):
    return click.option(f"--{name.replace('_', '-')}", name, default=None, metavar="V1,V2",
                        help=f"values of {name} to search")


_AXIS_OPTIONS = [_axis_option(name) for name in LAYOUT_AXES]
_FILE = click.Path(path_type=Path, dir_okay=False)


def _with_axis_options(command):
    for option in reversed(_AXIS_OPTIONS):
        command = option(command)
    return command


@click.command("search")
@click.argument("scenario", type=click.Path(path_type=Path))
@_with_axis_options
@click.option("--set", "sets", multiple=True, metavar="KEY=V1,V2",
              help="also search a scenario key over these values (repeatable; the product)")
@click.option("--objective", default=None, type=click.Choice(list(OBJECTIVES)),
              help="rank by this (default tokens_per_s)")
@click.option("--price", "price", multiple=True, metavar="[NODE=]USD",
              help="dollars per GPU-hour (of NODE), for the cost column and --objective cost")
@click.option("--top", type=click.IntRange(1, 10_000), default=None, help="rows shown (default 10)")
@click.option("--csv", "csv_path", type=_FILE, default=None, help="every layout evaluated, as CSV")
@click.option("--parquet", type=_FILE, default=None, help="every layout evaluated, as Parquet")
@click.option("--json", "json_path", type=_FILE, default=None, help="every layout evaluated, as JSON")
@click.option("--png", type=_FILE, default=None, help="tokens/s against memory per GPU, Pareto front")
@click.option("--save-best", type=_FILE, default=None, metavar="FILE",
              help="the best layout as a scenario file (this scenario with that layout and --set values)")
@click.option("--dask", "use_dask", is_flag=True, help="evaluate on Dask (a LocalCluster by default)")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT", help="an existing Dask scheduler")
@click.option("--workers", type=int, default=None, help="LocalCluster workers (default: one per core)")
@click.option("--calibration", type=_FILE, default=None,
              help="apply this calibration overlay (clustersim calibrate -o) to the hardware library")
def search_command(scenario: Path, sets: tuple[str, ...], objective: str | None, price: tuple[str, ...],
                   top: int | None, csv_path: Path | None, parquet: Path | None, json_path: Path | None,
                   png: Path | None, save_best: Path | None, use_dask: bool, scheduler: str | None,
                   workers: int | None, calibration: Path | None, **axes: str | None) -> None:
    """Search the layouts of the scenario's model on its cluster and rank them."""
    scenario = resolve_scenario(scenario)
    for path, option in ((csv_path, "--csv"), (parquet, "--parquet"), (json_path, "--json"), (png, "--png"),
                         (save_best, "--save-best")):
        if path is not None:
            check_output_path(path, option)
    loaded, section, library = read_search_scenario(scenario, calibrated_library(calibration))
    flags = {k: v for k, v in axes.items() if v is not None}
    set_entries = [f"{k}={','.join(map(str, v if isinstance(v, list) else [v]))}"
                   for k, v in (section.get("set") or {}).items()]
    kwargs = dict(section={k: v for k, v in section.items() if k in LAYOUT_AXES}, flags=flags,
                  sets=parse_sets([*set_entries, *sets]), library=library,
                  objective=objective or section.get("objective", "tokens_per_s"),
                  prices=parse_prices(price, section.get("prices")))
    progress, start = LazyProgress("evaluating layouts"), time.perf_counter()
    try:
        if use_dask or scheduler:
            from simulator.sweep.dask_runner import dask_client
            with dask_client(scheduler, workers) as client:
                result = search(loaded, client=client, progress=progress, **kwargs)
        else:
            result = search(loaded, progress=progress, **kwargs)
    except ConfigError as exc:       # the scenario's own mistake (no model): name its file
        raise exc.with_source(str(scenario)) from None
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    write_outputs(result, csv_path, parquet, json_path, png, f"{loaded.name}: layouts searched")
    _print(result, top or int(section.get("top", 10)), loaded.name, seconds)
    if save_best is not None:
        _save_best(scenario, result, save_best, library, calibration)


def _save_best(scenario: Path, result: SearchResult, path: Path, library: HardwareLibrary,
               calibration: Path | None) -> None:
    """Write the best layout as a scenario file (:mod:`simulator.sweep.best_scenario`); a
    ``--calibration`` overlay is named in it (absolute path) so that it runs as searched."""
    raw = read_yaml_mapping(scenario)
    if calibration is not None:
        raw["calibration"] = str(calibration.resolve())
    text = best_scenario_text(raw, result, scenario, library)
    if text is None:
        err.print(f"--save-best: no layout is feasible; {path} not written", highlight=False)
        return
    write_atomic(path, text, "--save-best")
    out.print(f"best layout written to {path} (clustersim run {path})", highlight=False)


def _print(result: SearchResult, top: int, name: str, seconds: float) -> None:
    frame = result.frame
    out.print(top_table(result, top, f"{name}: best layouts by {result.objective}"))
    out.print(f"[bold]why the best:[/] {escape(why_best(result))}", highlight=False)
    rate = len(frame) / max(seconds, 1e-9)
    infeasible = int((~frame["feasible"]).sum())
    out.print(f"{len(frame):,} layouts evaluated in {seconds:.1f} s ({rate:,.0f}/s): "
              f"{int(frame['feasible'].sum()):,} feasible" + (f", {infeasible:,} not:" if infeasible else ""),
              highlight=False)
    for count, example in infeasible_reasons(frame.loc[~frame["feasible"], "status"]):
        out.print(f"  {count:,} like: {escape(example)}", highlight=False)


def infeasible_reasons(statuses: pd.Series, shown: int = 3) -> list[tuple[int, str]]:
    """The ``shown`` most common reasons layouts were refused, each as (how many layouts gave a
    reason of that pattern, the first such reason as it reads): reasons are one pattern when they
    differ only in their numbers."""
    patterns = statuses.str.replace(r"(?<![\w-])\d+(?:\.\d+)?(?!\w)", "N", regex=True)
    return [(int(n), str(statuses[patterns == pattern].iloc[0]))
            for pattern, n in patterns.value_counts().head(shown).items()]
