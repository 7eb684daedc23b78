"""What a calibration hands back: the overlay file, the report tables, the JSON document.

The overlay file holds the fitted values (sections ``gpus``/``links``/``protocols``/``stacks``,
see :mod:`simulator.config.overlay`) and a ``sources`` block recording the fit: method,
inputs, every constant (before, fitted, uncertainty, bounds) and the errors. It holds no
date, so the same inputs give the same file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.console import Group
from rich.markup import escape
from rich.table import Table

from simulator.calibrate.fit import DIFF_STEP, F_SCALE, Calibration
from simulator.config import HardwareLibrary
from simulator.errors import UsageError

METHOD = (f"clustersim calibrate: scipy.optimize.least_squares (trf, bounds from the spec schema, "
          f"soft_l1 loss with f_scale {F_SCALE}, forward differences with relative step {DIFF_STEP}) "
          "on sqrt(weight) * ln(predicted / measured); uncertainty = one standard deviation, "
          "sqrt(diag(s^2 (J^T J)^-1)) with s^2 = sum r^2 / (rows - constants); see docs/calibration.md")


def _number(value: float, digits: int = 6) -> float | None:
    """``value`` rounded to ``digits`` significant digits; None for NaN/inf (YAML/JSON-safe)."""
    return float(f"{value:.{digits}g}") if value is not None and math.isfinite(value) else None


def constants_records(cal: Calibration) -> list[dict[str, Any]]:
    """Per constant: name, before (library), fitted, uncertainty, lower, upper."""
    return [{"name": p.name, "before": _number(p.initial), "fitted": _number(x),
             "uncertainty": _number(u, 3), "lower": _number(p.lower), "upper": _number(p.upper)}
            for p, x, u in zip(cal.parameters, cal.fitted, cal.uncertainty, strict=True)]


def row_records(cal: Calibration) -> list[dict[str, Any]]:
    """Per row: label, scenario, metric, measured, predictions and errors before/after/held-out."""
    records = []
    before, after, held = cal.errors("before"), cal.errors("after"), cal.errors("held_out")
    for i, row in enumerate([*cal.rows, *cal.checks]):
        fitted = i < cal.fit_count
        records.append({
            "row": row.label, "scenario": row.scenario.as_posix(), "metric": row.metric,
            "role": "fit" if fitted else "check", "weight": row.weight,
            "measured": _number(row.measured), "before": _number(cal.before[i]),
            "after": _number(cal.after[i]), "held_out": _number(cal.held_out[i]) if fitted else None,
            "error_before": _number(before[i], 4), "error_after": _number(after[i], 4),
            "error_held_out": _number(held[i], 4) if fitted else None})
    return records


def summary(cal: Calibration) -> dict[str, Any]:
    """Row counts and MAPE before/after/held-out (fit rows) and before/after (check rows)."""
    out = {"rows": cal.fit_count, "mape_before": _number(cal.mape("before"), 4),
           "mape_after": _number(cal.mape("after"), 4),
           "held_out": {"method": cal.cross_validation, "mape": _number(cal.mape("held_out"), 4)},
           "evaluations": cal.evaluations}
    if cal.checks:
        out["check_rows"] = {"rows": len(cal.checks), "mape_before": _number(cal.mape("before", "check"), 4),
                             "mape_after": _number(cal.mape("after", "check"), 4)}
    return out


def overlay_document(cal: Calibration, library: HardwareLibrary, inputs: list[str]) -> dict[str, Any]:
    """The overlay mapping with its ``sources`` block (see the module docstring)."""
    constants = {c["name"]: {k: v for k, v in c.items() if k != "name"} for c in constants_records(cal)}
    return {**cal.overlay(library),
            "sources": {"method": METHOD, "inputs": list(inputs), "constants": constants,
                        **summary(cal)}}


def write_overlay(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` as YAML with a header saying how to apply it."""
    header = (f"# Calibration overlay written by clustersim calibrate. Apply it with\n"
              f"#   clustersim run SCENARIO --calibration {path.name}\n"
              f"# or the scenario key 'calibration: {path.name}'. docs/calibration.md explains it.\n")
    text = header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=100)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o: cannot write {path}: {exc.strerror or exc}") from None


def json_document(cal: Calibration, library: HardwareLibrary, inputs: list[str]) -> dict[str, Any]:
    """``--json``: constants, rows, summary, inputs and the overlay (without ``sources``)."""
    return {"constants": constants_records(cal), "rows": row_records(cal), "summary": summary(cal),
            "inputs": list(inputs), "overlay": cal.overlay(library)}


def report(cal: Calibration, written: Path | None = None) -> Group:
    """Rich tables: the constants, every row, and the summary lines."""
    return Group(_constants_table(cal), _rows_table(cal), *_summary_lines(cal, written))


def _constants_table(cal: Calibration) -> Table:
    table = Table(title=f"fitted constants ({cal.fit_count} rows)")
    table.add_column("constant", overflow="fold")
    for name in ("before", "fitted", "± 1 sd", "bounds"):
        table.add_column(name, justify="right", no_wrap=True)
    for c, sd_value in zip(constants_records(cal), cal.uncertainty, strict=True):
        sd = f"{sd_value:.2g}" if math.isfinite(sd_value) else "n/a" if math.isnan(sd_value) else "none"
        table.add_row(escape(c["name"]), f"{c['before']:.6g}", f"{c['fitted']:.6g}", sd,
                      f"[{_bound(c['lower'])}, {_bound(c['upper'])}]")
    return table


def _bound(value: float | None) -> str:
    return "inf" if value is None else f"{value:.6g}"


def _rows_table(cal: Calibration) -> Table:
    records = row_records(cal)
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    title = "predicted / measured - 1" + (f" ({metrics[0]})" if len(metrics) == 1 else "")
    table = Table(title=title)
    table.add_column("row", no_wrap=True)
    if len(metrics) > 1:
        table.add_column("metric")
    for name in ("measured", "before", "after", "held-out"):
        table.add_column(name, justify="right")
    for r in records:
        held = "check" if r["role"] == "check" else _percent(r["error_held_out"])
        metric = [r["metric"]] if len(metrics) > 1 else []
        table.add_row(escape(r["row"]), *metric, f"{r['measured']:.4g}", _percent(r["error_before"]),
                      _percent(r["error_after"]), held)
    return table


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _summary_lines(cal: Calibration, written: Path | None) -> list[str]:
    lines = [f"fit rows: {cal.fit_count}; MAPE before {_mape(cal.mape('before'))}, after "
             f"{_mape(cal.mape('after'))}; {cal.cross_validation} held-out MAPE "
             f"{_mape(cal.mape('held_out'))} ({cal.evaluations} evaluations)"]
    if cal.checks:
        lines.append(f"check rows (not fitted): {len(cal.checks)}; MAPE before "
                     f"{_mape(cal.mape('before', 'check'))}, after {_mape(cal.mape('after', 'check'))}")
    if np.any(np.isnan(cal.uncertainty)):
        lines.append("[yellow]note:[/] uncertainty n/a: as many rows as constants leave no "
                     "residual to estimate it from")
    for param, sd in zip(cal.parameters, cal.uncertainty, strict=True):
        if np.isposinf(sd):
            lines.append(f"[yellow]note:[/] no row depends on {escape(param.name)} at the fitted "
                         "values (uncertainty none): its fitted value is arbitrary")
    if written is not None:
        lines.append(f"overlay written to {escape(str(written))}; apply it with "
                     f"clustersim run SCENARIO --calibration {escape(str(written))}")
    return lines


def _mape(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.1%}"
