"""clustersim scale: strong and weak scaling curves, infeasible points, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config import load_scenario
from simulator.sweep.scale import scale_sweep

ROOT = Path(__file__).resolve().parent.parent
GPT3 = ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml"


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(GPT3)


def test_strong_scaling_keeps_the_batch_and_starts_at_efficiency_one(scenario):
    frame = scale_sweep(scenario, [512, 1024, 2048])
    assert list(frame.global_batch) == [1536] * 3 and list(frame.dp) == [8, 16, 32]
    assert frame.scaling_efficiency.iloc[0] == 1.0
    assert (frame.scaling_efficiency.diff().dropna() <= 1e-12).all()


def test_weak_scaling_grows_the_batch_with_dp_and_never_gains_per_gpu(scenario):
    frame = scale_sweep(scenario, [512, 1024, 2048], weak=True)
    assert list(frame.global_batch) == [768, 1536, 3072]
    per_gpu = frame.tokens_per_s_per_gpu.to_numpy()
    assert (per_gpu[1:] <= per_gpu[:-1] * (1 + 1e-9)).all()


def test_an_infeasible_point_is_reported_not_raised(scenario):
    frame = scale_sweep(scenario, [100, 1024])
    bad = frame[frame.gpus == 100].iloc[0]
    assert "not a multiple of 8" in bad.status
    assert (frame[frame.gpus == 1024].status == "ok").all()


def test_cli_outputs(tmp_path, capsys):
    csv, png = tmp_path / "s.csv", tmp_path / "s.png"
    code = main(["scale", str(GPT3), "--gpus", "512,1024", "--csv", str(csv), "--png", str(png),
                 "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["gpus"] for r in rows] == [512, 1024]
    assert csv.read_text().startswith("gpus,") and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args", [["--gpus", "0,512"], ["--gpus", "abc"], ["--gpus", ""],
                                  ["--gpus", "512", "--weak", "--strong"]])
def test_bad_arguments_exit_2(capsys, args):
    code = main(["scale", str(GPT3), *args])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
