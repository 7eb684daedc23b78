"""Compare a benchmark between two commits on a noisy machine: run it alternately, side by side.

The speed targets ("within 10% of today's", "10,000 layouts/s") are measured on shared
machines whose speed drifts by tens of percent from one minute to the next, so a figure
taken now and compared with one taken an hour ago says little. This script checks the
base commit out into a temporary git worktree, then runs the same benchmark script
alternately from the base and from the working tree (``PYTHONPATH`` points each run at its
own ``simulator``), ``--runs`` times each, and prints every numeric figure the script
emits as JSON lines: best and median per side and the ratio of the bests (working tree over
base; for a figure in seconds lower is better, for a rate higher).

Usage (from the repository root)::

    python benchmarks/ab_compare.py --base HEAD~1 --bench bench_search.py --runs 3 -- --no-dask
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def figures(lines: str) -> dict[str, float]:
    """Every numeric leaf of the JSON objects printed one per line, by dotted name."""
    out: dict[str, float] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else key, inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix] = float(value)

    for line in lines.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                walk("", json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def run_once(tree: Path, bench: str, extra: list[str]) -> dict[str, float]:
    """One run of ``benchmarks/<bench>`` with ``tree``'s package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(tree / "benchmarks" / bench), *extra], cwd=tree,
                          env=env, capture_output=True, text=True, check=True)
    return figures(done.stdout)


def compare(base: str, bench: str, runs: int, extra: list[str]) -> list[tuple]:
    """Rows ``(figure, base best, base median, new best, new median, ratio of bests)``."""
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(worktree), base],
                       cwd=ROOT, check=True)
        try:
            sides: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
            for _ in range(runs):
                sides["base"].append(run_once(worktree, bench, extra))
                sides["new"].append(run_once(ROOT, bench, extra))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    return _rows(sides)


def _rows(sides: dict[str, list[dict[str, float]]]) -> list[tuple]:
    names = sorted(set().union(*sides["base"]) & set().union(*sides["new"]))
    rows = []
    for name in names:
        base = [run[name] for run in sides["base"] if name in run]
        new = [run[name] for run in sides["new"] if name in run]
        rate = name.endswith(("_per_s", "_per_cpu_s", "per_worker_cpu_s"))
        lower_better = not rate and (name.endswith(("seconds", "_s")) or "seconds_per" in name)
        pick = min if lower_better else max
        ratio = pick(new) / pick(base) if pick(base) else float("nan")
        rows.append((name, pick(base), statistics.median(base), pick(new), statistics.median(new), ratio))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare against (e.g. HEAD~1)")
    parser.add_argument("--bench", default="bench_training.py", help="a script in benchmarks/")
    parser.add_argument("--runs", type=int, default=3, help="runs per side, alternating")
    parser.add_argument("extra", nargs="*", help="arguments for the benchmark script (after --)")
    args = parser.parse_args()
    heads = ("base best", "base med", "new best", "new med")
    print(f"{'figure':55s} " + " ".join(f"{h:>12s}" for h in heads) + f" {'new/base':>9s}")
    for name, b_best, b_med, n_best, n_med, ratio in compare(args.base, args.bench, args.runs, args.extra):
        print(f"{name:55s} {b_best:12.4g} {b_med:12.4g} {n_best:12.4g} {n_med:12.4g} {ratio:9.3f}")


if __name__ == "__main__":
    main()
