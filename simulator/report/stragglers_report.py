"""``clustersim run --engine des --attribute``: the slowdown of a noisy job, each cause's share
and the mitigation what-ifs (:mod:`simulator.engine.attribution`), as result fields and tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.table import Table

from simulator.results import StepResult

LABELS = {"stage_imbalance": "stage imbalance", "sequences": "sequence imbalance",
          "slow_workers": "slow workers and episodes", "jitter": "jitter and throttling",
          "host_pauses": "host pauses", "network": "network faults",
          "spares": "drop the slowest servers for spares", "rebalance_stages": "rebalance stages",
          "synchronized_gc": "synchronised GC", "balance_sequences": "redistribute sequences"}


def with_attribution(path: Path, result: StepResult, library, steps: int | None, seed: int | None,
                     spares: int) -> StepResult:
    """``result`` with its ``stragglers`` field: the scenario at ``path`` attributed over the
    run's steps and seed."""
    from simulator.engine.attribution import attribute
    from simulator.pipeline import open_scenario

    session = open_scenario(path, library)
    sim = session.scenario.simulate
    found = attribute(session.scenario, session.collectives, steps or sim.steps,
                      sim.seed if seed is None else seed, spares)
    return replace(result, stragglers=found)


def stragglers_tables(r: StepResult) -> list[Table]:
    """The attribution table and the what-if table (empty without ``r.stragglers``)."""
    s = r.stragglers
    if not s:
        return []
    causes = Table(title=f"slowdown x{s['slowdown']:.3f} over the same job with noise off "
                         f"({s['noise_off_step_s']:.3f} s): mean {s['mean_step_s']:.3f} s, p50 / p95 / "
                         f"p99 {s['p50_s']:.3f} / {s['p95_s']:.3f} / {s['p99_s']:.3f} s")
    for name, justify in (("cause", "left"), ("share (s)", "right"), ("share", "right"),
                          ("alone (s)", "right"), ("leave-one-out (s)", "right")):
        causes.add_column(name, justify=justify)
    for cause, c in s["causes"].items():
        causes.add_row(LABELS[cause], f"{c['share_s']:.4f}", f"{c['share']:.1%}", f"{c['alone_s']:.4f}",
                       f"{c['leave_one_out_s']:.4f}")
    causes.caption = (f"over the ideal step {s['ideal_step_s']:.3f} s (no cause): {s['total_s']:.4f} s; "
                      f"{s['method']}; {s['steps']} steps, seed {s['seed']}")
    tables = [causes]
    if s["what_ifs"]:
        what = Table(title="what-ifs (the same noisy run with one change)")
        for name, justify in (("mitigation", "left"), ("mean step (s)", "right"), ("p99 (s)", "right"),
                              ("speedup", "right"), ("change", "left")):
            what.add_column(name, justify=justify)
        for name, w in s["what_ifs"].items():
            what.add_row(LABELS[name], f"{w['mean_step_s']:.4f}", f"{w['p99_s']:.4f}",
                         f"x{w['speedup']:.3f}", w["detail"])
        tables.append(what)
    return tables
