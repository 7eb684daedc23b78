"""Baseline files of ``clustersim regress``: one JSON file per scenario, diff-friendly.

A baseline holds what one scenario predicted when it was last accepted: its step
metrics, its strong-scaling curve at a few GPU counts, and the tolerances to compare
with. Keys are sorted and indented and numbers rounded to :data:`DIGITS` significant
digits, so a model change shows in review as a few changed lines. The file names its
format and version (``format: clustersim-regress-baseline``, ``version: 1``); a file of
another format or a newer version is refused rather than misread.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from simulator.config.yaml_io import validate_model
from simulator.errors import ConfigError
from simulator.measure.files import write_atomic

FORMAT = "clustersim-regress-baseline"
VERSION = 1
DIGITS = 12
"""Significant digits kept for every number (float round-off stays out of the diffs)."""
DEFAULT_RTOL = 0.01

Tolerance = Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)]
Value = float | int | bool | str | None


class Tolerances(BaseModel):
    """Relative tolerances: ``rtol`` for every metric unless ``metrics`` names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rtol: Tolerance | None = None
    metrics: dict[str, Tolerance] = Field(default_factory=dict)


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    gpus: Annotated[int, Field(ge=1)]
    metrics: dict[str, Value]


class Baseline(BaseModel):
    """The content of one baseline file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str
    version: int
    scenario: str
    file: str
    engine: str = "analytical"
    tolerances: Tolerances = Tolerances()
    step: dict[str, Value]
    scaling: list[CurvePoint]

    @property
    def gpus(self) -> list[int]:
        """GPU counts of the stored scaling curve, ascending."""
        return [point.gpus for point in self.scaling]


def baseline_path(folder: Path, scenario_file: Path) -> Path:
    """Where the baseline of ``scenario_file`` lives: ``folder/<file stem>.json``."""
    return Path(folder) / f"{Path(scenario_file).stem}.json"


def rounded(value: Any) -> Value:
    """``value`` as a plain JSON value, floats rounded to :data:`DIGITS` significant digits."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        return value if not math.isfinite(value) or value == 0 else float(f"{value:.{DIGITS}g}")
    return value


def read_baseline(path: Path) -> Baseline:
    """Read and check the baseline file at ``path``.

    Raises
    ------
    ConfigError
        If the file is missing, unreadable, not JSON, of another format or version, or
        malformed; the message names the file and the key.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no baseline for this scenario; write one with clustersim regress "
                          "--update", source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the baseline ({getattr(exc, 'strerror', None) or exc})",
                          source) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                          "rewrite it with --update", source) from None
    _check_format(data, source)
    return validate_model(Baseline, data, source)


def _check_format(data: Any, source: str) -> None:
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object (a clustersim regress baseline)", source)
    if data.get("format") != FORMAT:
        raise ConfigError(f"expected format '{FORMAT}', found {data.get('format')!r}", source, "format")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise ConfigError(f"version {version!r} is not one this clustersim reads (1..{VERSION}); "
                          "upgrade clustersim or rewrite the baseline with --update", source, "version")


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` atomically: sorted keys, two-space indent, newline."""
    data = baseline.model_dump(mode="json")
    if data["tolerances"]["rtol"] is None:
        del data["tolerances"]["rtol"]
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def tolerance_for(metric: str, cli: Tolerances, stored: Tolerances) -> float:
    """The relative tolerance of ``metric`` (a step metric, or ``scale.NAME`` on the curve).

    A per-metric tolerance beats a global one, the command line beats the baseline at
    the same level, and :data:`DEFAULT_RTOL` applies when nothing is given. A tolerance
    for ``NAME`` also covers the curve's ``scale.NAME``.
    """
    names = [metric, metric.removeprefix("scale.")]
    for tolerances in (cli, stored):
        for name in names:
            if name in tolerances.metrics:
                return tolerances.metrics[name]
    for tolerances in (cli, stored):
        if tolerances.rtol is not None:
            return tolerances.rtol
    return DEFAULT_RTOL


def merged_tolerances(cli: Tolerances, stored: Tolerances) -> Tolerances:
    """What ``--update`` stores: the baseline's tolerances with the command line's on top."""
    rtol = cli.rtol if cli.rtol is not None else stored.rtol
    return Tolerances(rtol=rtol, metrics={**stored.metrics, **cli.metrics})
