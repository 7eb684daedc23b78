"""What ``clustersim regress`` shows and writes: the drift table, JUnit XML, and plots of
each drifted scaling curve against its baseline. Files are written atomically."""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.table import Table

from simulator.errors import UsageError
from simulator.measure.files import write_atomic
from simulator.regress.compare import Drift, value_text
from simulator.regress.runner import Outcome


def drift_table(drifts: list[Drift]) -> Table:
    """One row per drifted metric: scenario, metric, GPUs, baseline, now, change, tolerance."""
    table = Table(title="metrics outside their tolerance")
    for header in ("scenario", "metric", "GPUs", "baseline", "now", "change", "rtol"):
        table.add_column(header, justify="left" if header in ("scenario", "metric") else "right",
                         no_wrap=header != "scenario")
    for d in drifts:
        table.add_row(d.scenario, d.metric, "-" if d.gpus is None else str(d.gpus),
                      value_text(d.baseline), value_text(d.now), d.change, f"{d.rtol:g}")
    return table


def drift_lines(drifts: list[Drift]) -> list[str]:
    """The drift table as plain lines (JUnit failure bodies, logs)."""
    return [f"{d.metric}{'' if d.gpus is None else f' @ {d.gpus} GPUs'}: baseline "
            f"{value_text(d.baseline)}, now {value_text(d.now)} ({d.change}; rtol {d.rtol:g})"
            for d in drifts]


def write_junit(path: Path, outcomes: list[Outcome], seconds: float) -> None:
    """JUnit XML: one test case per scenario, a failure listing its drifted metrics.

    Raises
    ------
    UsageError
        If ``path`` cannot be written.
    """
    failures = sum(o.status == "drifted" for o in outcomes)
    skipped = sum(o.status == "skipped" for o in outcomes)
    suites = ET.Element("testsuites", tests=str(len(outcomes)), failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="clustersim regress", tests=str(len(outcomes)),
                          failures=str(failures), errors="0", skipped=str(skipped),
                          time=f"{seconds:.3f}")
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname="clustersim.regress",
                             name=outcome.stem, file=str(outcome.path), time=f"{outcome.seconds:.3f}")
        if outcome.status == "drifted":
            names = ", ".join(sorted({d.metric for d in outcome.drifts}))
            failure = ET.SubElement(case, "failure", type="drift",
                                    message=f"{len(outcome.drifts)} drifted: {names}")
            failure.text = "\n".join(drift_lines(outcome.drifts))
        elif outcome.status == "skipped":
            ET.SubElement(case, "skipped", message=outcome.note)
    ET.indent(suites)
    try:
        write_atomic(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")
    except OSError as exc:
        raise UsageError(f"--junit: cannot write {path}: {exc.strerror or exc}") from None


def write_curve_pngs(folder: Path, outcomes: list[Outcome]) -> list[Path]:
    """For each scenario whose curve drifted, ``folder/<stem>.png``: tokens/s per GPU and MFU
    against GPU count, baseline dashed and now solid. Returns the files written."""
    written = []
    for outcome in outcomes:
        if not any(d.metric.startswith("scale.") for d in outcome.drifts):
            continue
        path = Path(folder) / f"{outcome.stem}.png"
        _save_atomic(_curve_figure(outcome), path)
        written.append(path)
    return written


def _curve_figure(outcome: Outcome):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 6), layout="constrained")
    FigureCanvasAgg(figure)
    panels = figure.subplots(2, 1, sharex=True)
    stored = [(p.gpus, p.metrics) for p in outcome.baseline.scaling]
    for axes, metric, label in zip(panels, ("tokens_per_s_per_gpu", "mfu"),
                                   ("tokens/s per GPU", "MFU"), strict=True):
        for points, style, name in ((stored, "--", "baseline"), (outcome.measured.scaling, "-", "now")):
            xy = [(g, m[metric]) for g, m in points if isinstance(m.get(metric), int | float)]
            axes.plot([x for x, _ in xy], [y for _, y in xy], style, marker="o", label=name)
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
        axes.legend()
    ticks = sorted({g for g, _ in stored} | {g for g, _ in outcome.measured.scaling})
    panels[1].set_xscale("log", base=2)
    panels[1].minorticks_off()
    panels[1].set_xticks(ticks, [str(g) for g in ticks])
    panels[1].set_xlabel("GPUs")
    figure.suptitle(f"{outcome.stem}: scaling curve, baseline against now")
    return figure


def _save_atomic(figure, path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        figure.savefig(temp, format="png", dpi=110)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise UsageError(f"--png: cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
