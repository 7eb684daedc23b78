"""``clustersim latency``: micro batch against throughput, sample latency and the step's
percentiles (simulator/sweep/latency.py), against closed forms and independent runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, load_scenario, scenario_from_mapping
from simulator.engine.analytical import simulate_step
from simulator.errors import UsageError
from simulator.pipeline import session_from_scenario
from simulator.sweep.latency import latency_sweep, parse_micro_batches, sample_latency

ROOT = Path(__file__).resolve().parents[1]
NOISY = ROOT / "scenarios" / "llama3-8b-microbatch-64xH100.yaml"
SIZES = [1, 2, 4, 8]


@pytest.fixture(scope="module")
def noisy():
    return load_scenario(NOISY)


@pytest.fixture(scope="module")
def quiet(noisy):
    """The same job without noise."""
    return noisy.model_copy(update={"noise": type(noisy.noise)()})


@pytest.fixture(scope="module")
def sweeps(noisy):
    return {fixed: latency_sweep(noisy, SIZES, fixed, steps=100) for fixed in (False, True)}


def _step_at(scenario, micro_batch: int, global_batch: int):
    data = scenario.model_dump(mode="json")
    data["training"].update(micro_batch=micro_batch, global_batch=global_batch)
    library = HardwareLibrary()
    changed = scenario_from_mapping(data, "<test>", library)
    return simulate_step(changed, session_from_scenario(changed, library).collectives)


def test_batches_follow_the_two_modes(sweeps):
    """dp 8, 32 microbatches of 1 in the scenario: by default m stays 32 and G = 8 b m;
    with the global batch fixed G stays 256 and m = 256 / (8 b)."""
    free, fixed = sweeps[False], sweeps[True]
    assert list(free["global_batch"]) == [8 * b * 32 for b in SIZES]
    assert list(free["microbatches"]) == [32] * 4
    assert list(fixed["global_batch"]) == [256] * 4
    assert list(fixed["microbatches"]) == [256 // (8 * b) for b in SIZES]


@pytest.mark.parametrize("fixed", [False, True])
def test_step_throughput_and_latency_match_independent_runs(noisy, sweeps, fixed):
    """Each row's step is the analytical step of the scenario at that micro batch;
    samples/s = G / T; sample latency = sum_stages (t_f + t_b) + 2 (pp - 1) t_p2p."""
    for row in sweeps[fixed].itertuples():
        result = _step_at(noisy, row.micro_batch, int(row.global_batch))
        assert row.step_time_s == pytest.approx(result.step_time_s, rel=1e-9)
        assert row.samples_per_s == pytest.approx(row.global_batch / result.step_time_s, rel=1e-9)
        assert row.tokens_per_s == pytest.approx(row.samples_per_s * 4096, rel=1e-9)
        stages = result.stages
        expected = sum(s.forward_s + s.backward_s for s in stages) + 6 * stages[0].p2p_s
        assert row.sample_latency_s == pytest.approx(expected, rel=1e-9)
        assert sample_latency(result) == pytest.approx(expected, rel=1e-12)
        assert row.memory_per_gpu_bytes == pytest.approx(result.memory_per_gpu_bytes, rel=1e-9)
        assert row.sample_latency_s < row.step_time_s


def test_the_trade_off(sweeps):
    """More microbatches per step: bigger micro batches run faster per sample (fuller
    GEMMs) but each sample waits longer. Fixed global batch: fewer microbatches, a bigger
    bubble, so micro batch 1 is both the fastest and the most responsive here."""
    free, fixed = sweeps[False], sweeps[True]
    assert free["samples_per_s"].is_monotonic_increasing
    assert free["sample_latency_s"].is_monotonic_increasing
    assert fixed["samples_per_s"].is_monotonic_decreasing
    assert fixed["step_time_s"].is_monotonic_increasing


def test_noise_spreads_the_step_and_quiet_runs_equal_the_analytical_step(sweeps, quiet):
    for row in sweeps[True].itertuples():
        assert row.step_time_s < row.step_time_p50_s <= row.step_time_p95_s < row.step_time_p99_s
    calm = latency_sweep(quiet, SIZES, True, steps=20)
    for row in calm.itertuples():
        assert row.step_time_p50_s == pytest.approx(row.step_time_s, rel=1e-9)
        assert row.step_time_p99_s == pytest.approx(row.step_time_s, rel=1e-9)


def test_same_seed_same_numbers(noisy, sweeps):
    again = latency_sweep(noisy, SIZES, True, steps=100)
    assert again.equals(sweeps[True])
    other = latency_sweep(noisy, SIZES, True, steps=100, seed=11)
    assert not other["step_time_p99_s"].equals(sweeps[True]["step_time_p99_s"])


def test_a_size_that_does_not_divide_the_global_batch_is_reported(noisy):
    frame = latency_sweep(noisy, [3], True, steps=5)
    assert frame.loc[0, "status"].startswith("training.global_batch: 256 is not a multiple")


@pytest.mark.parametrize("text", ["0", "1,x", "", " , ", "-2", "1.5"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(UsageError, match="--micro-batch"):
        parse_micro_batches(text)


def test_sizes_are_sorted_and_distinct():
    assert parse_micro_batches("8, 2,2,1") == [1, 2, 8]


def test_cli_table_json_csv_png(tmp_path, capsys):
    csv, png = tmp_path / "l.csv", tmp_path / "l.png"
    args = ["latency", str(NOISY), "--micro-batch", "1,2", "--steps", "20", "-q"]
    assert main([*args, "--csv", str(csv), "--png", str(png)]) == 0
    text = capsys.readouterr().out
    assert "micro batch vs latency" in text and "lowest sample latency at micro batch 1" in text
    assert csv.read_text().splitlines()[0].startswith("micro_batch,microbatches,global_batch")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["micro_batch"] for r in rows] == [1, 2] and rows[0]["status"] == "ok"


@pytest.mark.parametrize("args, fragment", [
    (["--micro-batch", "0"], "error: --micro-batch: '0' is not a positive integer"),
    (["--micro-batch", "1", "--steps", "0"], "--steps"),
])
def test_cli_usage_errors_exit_2(capsys, args, fragment):
    assert main(["latency", str(NOISY), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err


def test_cli_scenario_without_training_exits_2(tmp_path, capsys):
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump({"cluster": {"node": "dgx-h100", "nodes": 1}}))
    assert main(["latency", str(path), "--micro-batch", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: model: ") and len(err.splitlines()) == 1
