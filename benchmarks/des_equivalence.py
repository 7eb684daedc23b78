"""Issue 8's check "DES = analytical with contention off, on every scenario", over every shipped
scenario and every validation scenario, as tests/test_des.py checks the shipped ones but replayed
event by event (the discrete-event engine's ``event`` path, not the max-plus fast path) against
the analytical step.

Prints one line per scenario that differs by more than ``--rtol`` (default 1e-9) or fails, then
the count, the largest relative difference and the wall time. Exit status 1 when any differs.

Usage: python benchmarks/des_equivalence.py [--rtol 1e-9] [GLOB ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from simulator.config.scenario import NoiseConfig
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.pipeline import open_scenario

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GLOBS = ("scenarios/*.yaml", "validation/scenarios/*/*.yaml")


def relative_difference(path: Path) -> float:
    """|DES / analytical - 1| of the scenario at ``path``, contention off, as
    tests/test_des.py compares them: noise and per-microbatch work (documents) left out (the
    DES's oracle is the noise-free step), over one period of ``training.sync_every``."""
    session = open_scenario(path)
    training = session.scenario.training.model_copy(update={"documents": None})
    scenario = session.scenario.model_copy(update={"noise": NoiseConfig(), "training": training})
    analytical = simulate_step(scenario, session.collectives).step_time_s
    des = simulate_steps_des(scenario, session.collectives, steps=training.sync_every,
                             contention=False, path="event").step_time_s
    return abs(des / analytical - 1.0)


def training_scenarios(globs) -> list[Path]:
    """The scenarios matched by ``globs`` that describe a training step."""
    paths = sorted({p for g in globs for p in ROOT.glob(g)})
    return [p for p in paths if open_scenario(p).scenario.training is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("globs", nargs="*", default=list(DEFAULT_GLOBS))
    args = parser.parse_args(argv)
    start, worst, failures = time.perf_counter(), 0.0, 0
    paths = training_scenarios(args.globs)
    for path in paths:
        try:
            difference = relative_difference(path)
        except Exception as exc:   # report and go on: a benchmark surveys every scenario
            failures += 1
            print(f"{path.relative_to(ROOT)}: {type(exc).__name__}: {exc}")
            continue
        worst = max(worst, difference)
        if difference > args.rtol:
            failures += 1
            print(f"{path.relative_to(ROOT)}: relative difference {difference:.3e}")
    print(f"{len(paths)} scenarios, {failures} differing or failing; largest relative difference "
          f"{worst:.1e}; {time.perf_counter() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
