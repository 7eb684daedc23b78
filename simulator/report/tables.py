"""Rich tables for the CLI: collective sweeps, nccl-tests comparisons, specs, scenario checks."""

from __future__ import annotations

import math
from enum import Enum

from pydantic import BaseModel
from rich.table import Table

from simulator.cost import CollectiveSweep
from simulator.units import format_bytes


def sweep_table(sweep: CollectiveSweep, title: str) -> Table:
    """nccl-tests-style rows: size, time (us), algbw, busbw (GB/s), algorithm."""
    table = Table(title=title)
    for name in ("size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm"):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for row in sweep.records():
        table.add_row(str(row["size_bytes"]), f"{row['time_s'] * 1e6:.2f}",
                      f"{row['algbw_GBps']:.2f}", f"{row['busbw_GBps']:.2f}",
                      f"{row['algorithm']}/{row['protocol']}")
    return table


def sweep_csv(sweep: CollectiveSweep) -> str:
    import pandas as pd  # imported here: pandas costs ~0.3 s of every CLI start

    return pd.DataFrame(sweep.records()).to_csv(index=False)


def comparison_table(frame, title: str) -> Table:
    """Measured against predicted per size, with the busbw error and time ratio."""
    table = Table(title=title)
    for name in ("size", "measured (us)", "predicted (us)", "time ratio", "measured busbw",
                 "predicted busbw", "busbw error", "algorithm"):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for row in frame.itertuples():
        error = "" if math.isnan(row.busbw_error) else f"{row.busbw_error:+.1%}"
        table.add_row(format_bytes(row.size_bytes), f"{row.measured_time_s * 1e6:.1f}",
                      f"{row.predicted_time_s * 1e6:.1f}", f"{row.time_ratio:.2f}",
                      f"{row.measured_busbw_GBps:.2f}", f"{row.predicted_busbw_GBps:.2f}",
                      error, f"{row.algorithm}/{row.protocol}")
    return table


def spec_table(spec: BaseModel, title: str) -> Table:
    """Every field of a hardware spec with its source, values as plain text."""
    table = Table(title=title, show_lines=False)
    table.add_column("key")
    table.add_column("value")
    table.add_column("source")
    sources = getattr(spec, "sources", {})
    for key, value in spec:
        if key == "sources":
            continue
        table.add_row(key, plain(value), sources.get(key, ""))
    return table


def plain(value, depth: int = 0) -> str:
    """``value`` as a reader writes it: enums by their value, numbers without trailing zeros,
    mappings as ``key: value`` (one per line at the top level), lists comma-separated,
    nothing as ``-``."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Enum):
        return str(value.value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3g}"
    if isinstance(value, dict):
        if not value:
            return "none"
        items = [f"{plain(k, depth + 1)}: {plain(v, depth + 1)}" for k, v in value.items()]
        if depth >= 2:
            return "(" + ", ".join(items) + ")"
        return ("\n" if depth == 0 else ", ").join(items)
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(plain(v, depth + 1) for v in value) if value else "none"
    return str(value)


def spec_record(spec: BaseModel) -> dict:
    """A spec as JSON types (``clustersim specs NAME --json``)."""
    return spec.model_dump(mode="json")


def names_table(names: dict[str, list[str]]) -> Table:
    table = Table(title="hardware_specs")
    table.add_column("category")
    table.add_column("names")
    for category, items in names.items():
        table.add_row(category, ", ".join(items))
    return table


PRESET_COLUMNS = ("layers", "hidden", "heads", "kv_heads", "d_head", "ffn_hidden", "mlp", "seq_len",
                  "vocab", "experts", "top_k", "shared_expert_ffn")


def preset_records() -> list[dict]:
    """Every model preset with its full shape and parameter counts (JSON types)."""
    from simulator.config.presets import MODEL_PRESETS
    from simulator.config.scenario import ModelConfig
    from simulator.workload.params import active_parameter_count, parameter_count

    records = []
    for name, shape in MODEL_PRESETS.items():
        model = ModelConfig(preset=name, **shape)
        record = {"name": name, **{key: plain(getattr(model, key)) if key == "mlp"
                                   else getattr(model, key) for key in PRESET_COLUMNS}}
        record["parameters"] = parameter_count(model)
        record["active_parameters"] = active_parameter_count(model)
        records.append(record)
    return records


def presets_table(records: list[dict]) -> Table:
    """One row per model preset: its shape and parameter count."""
    table = Table(title="model presets (model.preset)")
    table.add_column("preset", no_wrap=True)
    for key in PRESET_COLUMNS:
        table.add_column(key.replace("_expert", "").replace("_", " "),
                         justify="left" if key == "mlp" else "right")
    table.add_column("params", justify="right")
    for r in records:
        params = f"{r['parameters'] / 1e9:.1f} B"
        if r["active_parameters"] != r["parameters"]:
            params += f" ({r['active_parameters'] / 1e9:.1f} B active)"
        table.add_row(r["name"], *(f"{r[k]:,}" if isinstance(r[k], int) else str(r[k])
                                   for k in PRESET_COLUMNS), params)
    return table


def preset_names() -> list[str]:
    """Names of the model presets, in their table order."""
    from simulator.config.presets import MODEL_PRESETS

    return list(MODEL_PRESETS)
