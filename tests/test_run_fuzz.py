"""Mutated shipped scenarios through the whole ``clustersim run --json`` path: whatever a user's
edit does to a key, the run exits 0 with a physically possible result (finite positive step,
MFU in (0, 1], strict JSON) or 2 with one message; never 3 (an internal error) or a traceback.
tests/test_config_fuzz.py covers the loader alone; this reaches the cost model and engines."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import random
from pathlib import Path

import pytest
import yaml
from scenario_maps import key_paths, value_at

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(ROOT.glob("scenarios/*.yaml")) + sorted(ROOT.glob("validation/scenarios/*/*.yaml"))
CASES = 300
SEED = 20261201


def _mutation(value, rng: random.Random):
    """A user's likely slip for ``value``: zero, negative, huge, fractional, NaN, a word, a list."""
    if isinstance(value, bool):
        return rng.choice([not value, 0, 2, "yes", None])
    if isinstance(value, (int, float)):
        return rng.choice([0, -1, value * 1000003, value * 0.37, 1e-9, 1e308, math.nan, "x", None,
                           [value], value + 1, 3, 7])
    if isinstance(value, str):
        return rng.choice(["", "zzz", 0, None, value.upper(), value + "x"])
    return None


def _mutated(doc: dict, rng: random.Random) -> dict:
    out = copy.deepcopy(doc)
    paths = [p for p in key_paths(doc) if p[0] not in ("name", "description")
             and not isinstance(value_at(doc, p), (dict, list))]
    for path in rng.sample(paths, min(len(paths), rng.choice([1, 1, 2]))):
        parent = value_at(out, path[:-1])
        parent[path[-1]] = _mutation(parent[path[-1]], rng)
    return out


def _run(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(path), "--json", "-q"])
    return code, out.getvalue(), err.getvalue()


def test_mutated_scenarios_give_a_possible_result_or_one_message(tmp_path, monkeypatch):
    monkeypatch.delenv("CLUSTERSIM_DEBUG", raising=False)
    rng = random.Random(SEED)
    codes = {0: 0, 2: 0}
    for case in range(CASES):
        source = rng.choice(SCENARIOS)
        path = tmp_path / f"case{case}.yaml"
        path.write_text(yaml.safe_dump(_mutated(yaml.safe_load(source.read_text()), rng)))
        code, out, err = _run(path)
        assert code in (0, 2), f"{source.name}: exit {code}: {err[-400:]}"
        assert "Traceback" not in out + err, f"{source.name}: {err[-400:]}"
        codes[code] += 1
        if code == 2:
            assert err.strip(), f"{source.name}: exit 2 without a message"
            continue
        result = json.loads(out, parse_constant=lambda token: pytest.fail(f"non-strict JSON {token}"))
        assert math.isfinite(result["step_time_s"]) and result["step_time_s"] > 0, source.name
        assert 0.0 < result["mfu"] <= 1.0, f"{source.name}: MFU {result['mfu']}"
    assert codes[0] >= 3 and codes[2] >= 3, codes      # both outcomes exercised
