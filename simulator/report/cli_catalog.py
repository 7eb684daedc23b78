"""The catalog commands of ``clustersim``: ``specs`` (the hardware library), ``presets`` (the
model presets) and ``init`` (a commented starter scenario, :mod:`simulator.export.starter`).

Registered by :mod:`simulator.cli`; user mistakes raise
:class:`~simulator.errors.UsageError` (one ``error:`` line, exit status 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from simulator.config import HardwareLibrary
from simulator.config.library import CATEGORIES
from simulator.config.yaml_io import did_you_mean
from simulator.errors import UsageError
from simulator.report import tables
from simulator.report.console import console

out = console()
_OUT_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command()
@click.argument("name", required=False)
@click.option("--presets", "show_presets", is_flag=True, help="list the model presets instead")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def specs(name: str | None, show_presets: bool, as_json: bool) -> None:
    """List the hardware library, or show one spec (GPU, link, node) with its sources."""
    if show_presets:
        if name is not None:
            raise UsageError("--presets lists every preset; give no NAME")
        _print_presets(as_json)
        return
    library = HardwareLibrary()
    if name is None:
        names = {c: library.names(c) for c in CATEGORIES}
        if as_json:
            click.echo(json.dumps(names))
        else:
            out.print(tables.names_table(names))
        return
    categories = library.find(name)
    if not categories:
        every = [n for c in CATEGORIES for n in library.names(c)]
        raise UsageError(f"no spec named '{name}'{did_you_mean(name, every)}; "
                         "run 'clustersim specs' for the list")
    if as_json:
        click.echo(json.dumps({c: tables.spec_record(library.load_any(c, name)) for c in categories}))
        return
    for category in categories:
        spec = library.load_any(category, name)
        out.print(tables.spec_table(spec, f"{category}/{name}: {spec.display_name}"))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="print a JSON list")
def presets(as_json: bool) -> None:
    """List the model presets (model.preset) with their shapes and parameter counts."""
    _print_presets(as_json)


def _print_presets(as_json: bool) -> None:
    records = tables.preset_records()
    if as_json:
        click.echo(json.dumps(records))
    else:
        out.print(tables.presets_table(records))


@click.command()
@click.option("-o", "--output", type=_OUT_FILE, required=True, help="the scenario file to write")
@click.option("--preset", type=click.Choice(list(tables.preset_names())), default="llama3-8b",
              show_default=True, help="model preset (clustersim presets)")
@click.option("--node", default="dgx-h100", show_default=True, help="node spec (clustersim specs)")
@click.option("--nodes", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="number of nodes")
@click.option("--force", is_flag=True, help="overwrite FILE if it exists")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def init(output: Path, preset: str, node: str, nodes: int, force: bool, as_json: bool) -> None:
    """Write a commented starter scenario that loads and runs."""
    from simulator.export.atomic import write_atomic
    from simulator.export.starter import starter_scenario

    if output.exists() and not force:
        raise UsageError(f"-o: '{output}' exists; give --force to overwrite it")
    text, layout, capacity = starter_scenario(preset, node, nodes)
    write_atomic(output, text, "-o")
    if as_json:
        click.echo(json.dumps({"path": str(output), "preset": preset, "node": node, "nodes": nodes,
                               "tp": layout.tp, "pp": layout.pp, "dp": layout.dp,
                               "recompute": layout.recompute.value,
                               "memory_per_gpu_bytes": layout.memory, "memory_capacity_bytes": capacity,
                               "fits_in_memory": layout.memory <= capacity}))
        return
    fits = "fits" if layout.memory <= capacity else "does NOT fit; more nodes needed"
    click.echo(f"wrote {output}: {preset} on {nodes} x {node}, tp {layout.tp} x pp {layout.pp} x "
               f"dp {layout.dp}, recompute {layout.recompute.value}, about "
               f"{layout.memory / 2**30:.1f} GiB per GPU of {capacity / 2**30:.1f} GiB ({fits}); "
               f"next: clustersim run {output}")
