"""Calibration: overlays on the hardware library, ``--calibration``, and ``clustersim calibrate``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from simulator.calibrate.fit import F_SCALE, calibrate_rows
from simulator.calibrate.params import parse_parameters
from simulator.calibrate.predict import Predictor
from simulator.calibrate.rows import SETS, Measurement, csv_rows, set_rows
from simulator.cli import main
from simulator.config import HardwareLibrary
from simulator.config.overlay import CalibratedLibrary, Overlay
from simulator.errors import ConfigError, UsageError
from simulator.pipeline import run_scenario
from simulator.validation import suite
from simulator.validation.suite import run_validation

ROOT = Path(__file__).resolve().parent.parent
SC21_SMALL = ROOT / "scenarios" / "sc21-1.7b.yaml"
A100_GEMM = "gpu:a100-sxm-80gb.compute.gemm_peak_fraction"
LIBRARY = HardwareLibrary()


def _run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _overlay_file(tmp_path: Path, text: str, name: str = "cal.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the overlay ------------------------------------------------------------------------------

def test_overlay_merges_and_a_derived_gpu_inherits_its_base():
    overlay = Overlay.from_mapping({"gpus": {"h100-sxm": {"compute": {"gemm_peak_fraction": 0.6}}},
                                    "links": {"ib-ndr": {"latency_us": 2.5}}}, "cal.yaml")
    library = CalibratedLibrary(LIBRARY, overlay)
    base, derived = library.gpu("h100-sxm"), library.gpu("h100-sxm-96gb-500w")
    assert base.compute.gemm_peak_fraction == derived.compute.gemm_peak_fraction == 0.6
    assert derived.sustained_clock_fraction == 0.85 and derived.hbm_capacity_GiB == 96  # its own file
    assert derived.compute.fp8_gemm_peak_fraction == LIBRARY.gpu("h100-sxm").compute.fp8_gemm_peak_fraction
    assert library.link("ib-ndr").latency_us == 2.5
    assert library.link("ib-ndr").efficiency == LIBRARY.link("ib-ndr").efficiency
    assert library.gpu("a100-sxm-80gb") is LIBRARY.gpu("a100-sxm-80gb")   # untouched: the same spec
    assert base.sources["compute.gemm_peak_fraction"] == "calibrated: cal.yaml"


def test_overlays_stack_and_the_derived_gpus_own_entry_wins():
    first = CalibratedLibrary(LIBRARY, Overlay.from_mapping(
        {"gpus": {"h100-sxm": {"sustained_clock_fraction": 0.9}}}, "a.yaml"))
    second = CalibratedLibrary(first, Overlay.from_mapping(
        {"gpus": {"h100-sxm-96gb-500w": {"compute": {"gemm_peak_fraction": 0.5}}}}, "b.yaml"))
    gpu = second.gpu("h100-sxm-96gb-500w")
    assert gpu.compute.gemm_peak_fraction == 0.5 and gpu.sustained_clock_fraction == 0.85
    assert second.gpu("h100-sxm").sustained_clock_fraction == 0.9 and second.sources == ["a.yaml", "b.yaml"]


def test_a_stack_overlay_reaches_the_scenario():
    overlay = Overlay.from_mapping({"stacks": {"megatron-lm-2021": {"step_overhead_ms": 100}}}, "s.yaml")
    plain = run_scenario(SC21_SMALL)
    calibrated = run_scenario(SC21_SMALL, library=CalibratedLibrary(LIBRARY, overlay))
    assert calibrated.step_time_s == pytest.approx(plain.step_time_s + 0.1, rel=1e-9)


@pytest.mark.parametrize("data,key,fragment", [
    ({"gpus": {"h100-sxn": {}}}, "gpus.h100-sxn", "did you mean 'h100-sxm'"),
    ({"gpus": {"h100-sxm": {"compute": {"gemm_peak_fractoin": 0.5}}}},
     "gpus.h100-sxm.compute.gemm_peak_fractoin", "unknown key"),
    ({"gpus": {"a100-sxm-80gb": {"compute": {"gemm_peak_fraction": 1.5}}}},
     "gpus.a100-sxm-80gb.compute.gemm_peak_fraction", "1.5"),
    ({"links": {"ib-ndr": {"efficiency": 0.0}}}, "links.ib-ndr.efficiency", "0.0"),
    ({"gpu": {}}, "gpu", "did you mean 'gpus'"),
    ({"nodes": {"dgx-h100": {"nics": 4}}}, "nodes", "allowed keys"),
    ({"gpus": {"h100-sxm": {"base": "a100-sxm-80gb"}}}, "gpus.h100-sxm.base", "cannot set"),
    ({"gpus": ["h100-sxm"]}, "gpus", "mapping"),
])
def test_a_bad_overlay_names_the_file_and_the_key(tmp_path, data, key, fragment):
    path = _overlay_file(tmp_path, json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        CalibratedLibrary(LIBRARY, Overlay.read(path))
    assert caught.value.source == str(path) and caught.value.key == key
    assert fragment in caught.value.message


# --- applying it ------------------------------------------------------------------------------

def test_run_with_calibration_lowers_the_prediction_and_says_so(capsys, tmp_path):
    """A lower GEMM fraction must lower achieved FLOP/s (compute-bound 1.7B row: by ~5-7%)."""
    path = _overlay_file(tmp_path, "gpus: {a100-sxm-80gb: {compute: {gemm_peak_fraction: 0.70}}}\n")
    _, plain, _ = _run(capsys, "run", SC21_SMALL, "--json")
    code, calibrated, _ = _run(capsys, "run", SC21_SMALL, "--calibration", path, "--json")
    plain, calibrated = json.loads(plain), json.loads(calibrated)
    ratio = calibrated["hardware_flops_per_gpu"] / plain["hardware_flops_per_gpu"]
    assert code == 0 and 0.70 / 0.73 <= ratio < 0.99
    assert plain["calibration"] == "" and calibrated["calibration"] == str(path)
    code, text, _ = _run(capsys, "run", SC21_SMALL, "--calibration", path)
    assert code == 0 and "calibration in force" in text


def test_the_scenario_key_applies_the_overlay_next_to_it(capsys, tmp_path):
    _overlay_file(tmp_path, "gpus: {a100-sxm-80gb: {compute: {gemm_peak_fraction: 0.70}}}\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SC21_SMALL.read_text() + "\ncalibration: cal.yaml\n")
    result = run_scenario(scenario)
    assert result.calibration == str(tmp_path / "cal.yaml")
    flag = run_scenario(SC21_SMALL, library=CalibratedLibrary(LIBRARY, Overlay.read(tmp_path / "cal.yaml")))
    assert result.hardware_flops_per_gpu == flag.hardware_flops_per_gpu
    scenario.write_text(SC21_SMALL.read_text() + "\ncalibration: missing.yaml\n")
    code, _, err = _run(capsys, "run", scenario)
    assert code == 2 and "calibration: no calibration file" in err


def test_scale_with_calibration(capsys, tmp_path):
    path = _overlay_file(tmp_path, "gpus: {a100-sxm-80gb: {compute: {gemm_peak_fraction: 0.70}}}\n")
    _, plain, _ = _run(capsys, "scale", SC21_SMALL, "--gpus", "32", "--json")
    code, calibrated, _ = _run(capsys, "scale", SC21_SMALL, "--gpus", "32", "--json",
                               "--calibration", path)
    assert code == 0
    assert json.loads(calibrated)[0]["tokens_per_s"] < json.loads(plain)[0]["tokens_per_s"]
    code, text, _ = _run(capsys, "scale", SC21_SMALL, "--gpus", "32", "--calibration", path)
    assert code == 0 and "calibration in force" in text


def test_the_fast_gpu_swap_predicts_what_a_full_rebuild_does():
    """The predictor reuses a scenario's cluster and swaps the GPU spec; it must agree with
    building everything again through the calibrated library."""
    rows = set_rows("megatron_sc21:1.7B,39B") + set_rows("torchtitan:1,11")
    overlay = {"gpus": {"a100-sxm-80gb": {"compute": {"gemm_peak_fraction": 0.7}},
                        "h100-sxm": {"compute": {"memory_bandwidth_fraction": 0.6}}}}
    fast = Predictor(rows, LIBRARY).predict(overlay, range(len(rows)))
    library = CalibratedLibrary(LIBRARY, Overlay.from_mapping(overlay))
    results = [run_scenario(r.scenario, library=library) for r in rows]
    full = [r.hardware_flops_per_gpu for r in results[:2]] + [r.tokens_per_s / r.gpus for r in results[2:]]
    np.testing.assert_allclose(fast, full, rtol=1e-12)


# --- fitting ------------------------------------------------------------------------------------

def _soft_l1(errors) -> float:
    """The fit's objective over rows with relative errors ``errors``: least squares'
    ``soft_l1`` of the log errors at :data:`simulator.calibrate.fit.F_SCALE` (its minimum is
    the fit; MAPE is not what it minimises, so MAPE may move by a hair either way)."""
    z = (np.log1p(np.asarray(errors)) / F_SCALE) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


@pytest.fixture(scope="module")
def sc21_fit():
    return calibrate_rows(set_rows("megatron_sc21"), parse_parameters([A100_GEMM], LIBRARY), LIBRARY)


def test_sc21_fit_of_the_a100_gemm_fraction(sc21_fit):
    """SC21 Table 1 with only the A100 GEMM fraction free recovers the library's value (0.72)
    within its uncertainty: the library's constant is this fit, rounded (0.75 under an early
    model; 0.73 from a fit of 0.729 +- 0.007 until 2026-12-02, when each memory-bound kernel's
    backward came to move the bytes it reads and writes and the fit became 0.716 +- 0.008). The
    fit is unbiased and generalises (leave-one-out between the fitted and the unfitted error)."""
    fitted, sd = sc21_fit.fitted[0], sc21_fit.uncertainty[0]
    assert abs(fitted - 0.72) <= sd and 0.001 < sd < 0.02
    assert abs(np.mean(sc21_fit.errors("after"))) < 0.005
    assert _soft_l1(sc21_fit.errors("after")) <= _soft_l1(sc21_fit.errors("before")) + 1e-12
    assert sc21_fit.mape("after") <= sc21_fit.mape("before") + 0.001
    assert sc21_fit.cross_validation == "leave-one-out"
    assert sc21_fit.mape("after") <= sc21_fit.mape("held_out")


@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_a_known_constant_is_recovered_within_its_uncertainty(noise):
    """Synthetic rows: the SC21 scenarios' predictions at gemm_peak_fraction 0.70, times
    (1 +- noise) alternately; the fit starts at the library's 0.73."""
    rows = set_rows("megatron_sc21:1.7B,3.6B,7.5B,18B")
    truth = Predictor(rows, LIBRARY).predict(
        {"gpus": {"a100-sxm-80gb": {"compute": {"gemm_peak_fraction": 0.70}}}}, range(len(rows)))
    signs = np.array([1.0, -1.0, 1.0, -1.0])
    synthetic = [Measurement("synthetic", r.row, r.scenario, r.metric, v * (1 + noise * s))
                 for r, v, s in zip(rows, truth, signs, strict=True)]
    cal = calibrate_rows(synthetic, parse_parameters([A100_GEMM], LIBRARY), LIBRARY)
    if noise == 0.0:
        assert cal.fitted[0] == pytest.approx(0.70, abs=1e-4) and cal.uncertainty[0] < 1e-4
    else:
        assert abs(cal.fitted[0] - 0.70) <= cal.uncertainty[0] and cal.uncertainty[0] < 0.02


def test_the_sc21_fit_holds_on_korthikanti_a_set_it_did_not_see(sc21_fit):
    """Every tokens/s set of ``clustersim validate`` is a calibration set too. The A100 GEMM
    fraction fitted on SC21 Table 1 (Megatron-LM 2021) checked on Korthikanti et al. 2022's
    eight runs (same Selene A100s, sequence parallelism and selective recompute): measured
    4.7% MAPE before and after; the fit (0.733 +- 0.007 against the library's 0.73 then) moves the
    held-out rows by under half a point, less than its own one-sd uncertainty (1% of the
    fraction) would."""
    checks = set_rows("megatron_selective")
    assert [r.row for r in checks] == [str(i) for i in range(1, 9)]
    assert {r.metric for r in checks} == {"tokens_per_s_per_gpu"}
    assert checks[0].measured == pytest.approx(4 * 2048 / 1.42 / 8, rel=1e-3)
    cal = calibrate_rows(set_rows("megatron_sc21"), parse_parameters([A100_GEMM], LIBRARY), LIBRARY,
                         checks=checks)
    assert cal.mape("before", "check") < 0.06
    assert abs(cal.mape("after", "check") - cal.mape("before", "check")) < 0.005


THROUGHPUT_METRICS = {suite.TOKENS, suite.NEMO_TFLOPS, suite.PALM_TFLOPS, suite.MEGATRON_TFLOPS,
                      suite.MEGATRON_2026_TFLOPS}


def test_every_throughput_set_of_validate_is_a_calibration_set():
    """A set ``clustersim validate`` compares in tokens/s or model FLOP/s per GPU reads as
    calibration rows; the hardware-FLOP, busbw, memory and straggler sets are the others."""
    throughput = {name for name, entry in suite.SETS.items() if entry.metric in THROUGHPUT_METRICS}
    assert throughput == {name for name, entry in suite.SETS.items() if entry.token_rows}
    assert throughput | {"megatron_sc21", "nccl"} == set(SETS)


@pytest.mark.parametrize("name", ["nemo_long_context", "megatron_core_scaling", "llama3_paper",
                                  "megatron_moe_recipes"])
def test_a_set_published_in_model_flops_calibrates_with_the_same_errors(name):
    """Sets published in model TFLOP/s per GPU become tokens/s rows by their own FLOP count per
    token, the count their comparison multiplies the predicted tokens/s by: each row's error
    before any fit is the one ``clustersim validate`` reports."""
    rows = set_rows(name)
    frame = run_validation(names=[name])
    predicted = Predictor(rows, LIBRARY).predict({}, range(len(rows)))
    errors = np.asarray(predicted) / np.array([r.measured for r in rows]) - 1.0
    assert [r.row for r in rows] == list(frame["row"])
    np.testing.assert_allclose(errors, frame["error"].to_numpy(), rtol=1e-9, atol=1e-12)


def test_the_long_sequence_rows_read_as_one_attention_rate():
    """NeMo 24.03's long-sequence table runs Llama 2 7B from 4K to 1M tokens, attention from a
    fifth to nearly all of the step; the library's errors grow with that share (+4.9% to
    +22.2%). Freeing only the H100's cuDNN backward fraction on the odd rows predicts the even
    rows it never saw: measured today, fitted 0.283 +- 0.004 (library 0.363, from kernel
    benchmarks), check rows MAPE 13.0% -> 0.6%. The errors are one rate, not scatter; the
    library keeps its sourced value (docs/calibration.md)."""
    cal = calibrate_rows(set_rows("nemo_long_context:odd"),
                         parse_parameters(["gpu:h100-sxm.compute.attention_kernels.cudnn.1"], LIBRARY),
                         LIBRARY, checks=set_rows("nemo_long_context:even"))
    assert cal.mape("before", "check") > 0.10
    assert cal.mape("after", "check") < 0.02 and cal.mape("held_out") < 0.03
    assert 0.25 < cal.fitted[0] < 0.32 and cal.uncertainty[0] < 0.01


@pytest.mark.parametrize(("rows", "folds", "message"), [
    ("megatron_sc21:1.7B", None, "1 measured row to fit"),     # was "--folds ... (got None)"
    ("megatron_sc21", 0, "--folds must be at least 2 \\(got 0\\)"),   # 0 was the default
])
def test_fits_that_cannot_hold_rows_out_say_why(rows, folds, message):
    params = parse_parameters(["gpu:a100-sxm-80gb.compute.gemm_peak_fraction"], LIBRARY)
    with pytest.raises(UsageError, match=message):
        calibrate_rows(set_rows(rows), params, LIBRARY, folds=folds)


def test_an_unknown_set_lists_the_step_sets_too():
    with pytest.raises(UsageError, match="megatron_selective"):
        set_rows("no_such_set")


def test_half_of_torchtitan_fits_without_hurting_the_other_half():
    """Fit the 500 W H100's sustained_clock_fraction (the spec's own 'estimate 0.85, range
    0.80-0.90') on the even CSV rows, check on the odd rows.

    Measured today (24 rows, 12 fitted on H100, 12 checked): fitted 0.817 +- 0.024; fitted
    rows MAPE 6.1% -> 5.4% (leave-one-out 6.0%); held-out odd rows 4.87% -> 4.88%. As the
    issue-8 mechanisms (async TP with its chunked GEMMs, context parallel) took out what a
    clock constant could absorb, the held-out rows stopped improving (5.1% -> 4.8% before the
    chunked GEMMs); the check asks that the fit helps the rows it saw and costs the rows it
    did not see at most half a percentage point.
    """
    cal = calibrate_rows(set_rows("torchtitan:even"),
                         parse_parameters(["gpu:h100-sxm-96gb-500w.sustained_clock_fraction"], LIBRARY),
                         LIBRARY, checks=set_rows("torchtitan:odd"))
    assert len(cal.rows) == 12 and len(cal.checks) == 12
    assert cal.mape("after", "check") < cal.mape("before", "check") + 0.005
    assert cal.mape("after") < cal.mape("before") and np.isfinite(cal.mape("held_out"))
    assert 0.6 < cal.fitted[0] < 0.85


# --- the command --------------------------------------------------------------------------------

def test_calibrate_writes_an_overlay_that_run_applies(capsys, tmp_path):
    out = tmp_path / "calibration.yaml"
    code, text, _ = _run(capsys, "calibrate", "--set", "megatron_sc21:1.7B,3.6B,7.5B", "-o", out, "--json")
    data = json.loads(text)
    assert code == 0 and [c["name"] for c in data["constants"]] == [A100_GEMM]
    assert len(data["rows"]) == 3 and data["summary"]["held_out"]["method"] == "leave-one-out"
    assert {"measured", "before", "after", "held_out", "error_held_out"} <= set(data["rows"][0])
    written = Overlay.read(out)
    fitted = written.sections["gpus"]["a100-sxm-80gb"]["compute"]["gemm_peak_fraction"]
    assert fitted == pytest.approx(data["constants"][0]["fitted"])
    assert written.provenance["inputs"] == ["--set megatron_sc21:1.7B,3.6B,7.5B (3 rows)"]
    assert "mape_after" in written.provenance
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", out.read_text())   # no date: same inputs, same file
    result = run_scenario(SC21_SMALL, library=CalibratedLibrary(LIBRARY, written))
    assert result.hardware_flops_per_gpu == pytest.approx(
        data["rows"][0]["after"], rel=1e-5)


def test_calibrate_reads_a_measurements_csv_and_reports_check_rows(capsys, tmp_path):
    step = run_scenario(SC21_SMALL).step_time_s
    csv = tmp_path / "m.csv"
    csv.write_text(f"scenario,metric,measured,weight\n{SC21_SMALL},step_time_s,{step * 1.05},2\n"
                   f"{SC21_SMALL},tokens_per_s,{1536 * 2048 / step},1\n")
    assert [r.weight for r in csv_rows(csv)] == [2.0, 1.0]
    code, text, _ = _run(capsys, "calibrate", csv, "--check-set", "megatron_sc21:3.6B")
    assert code == 0 and "check rows (not fitted): 1" in text and "leave-one-out" in text


def test_calibrate_fits_a_link_to_an_nccl_log(capsys):
    folder = ROOT / "validation" / "nccl_tests"
    stem = "h100_2node_4gpu_per_node_ring_nccl-tests-252"
    code, text, _ = _run(capsys, "calibrate", "--nccl", folder / f"{stem}.txt",
                         folder / "scenarios" / f"{stem}.yaml", "--json")
    data = json.loads(text)
    assert code == 0 and data["constants"][0]["name"].startswith("link:")
    assert data["constants"][0]["name"].endswith(".efficiency")
    assert data["summary"]["mape_after"] <= data["summary"]["mape_before"]


def test_calibrate_names_the_nccl_rows_it_leaves_out(capsys, tmp_path):
    """A log row of size 0 or with a zero time is not fitted, and the report's inputs say so
    (as compare-nccl warns), instead of dropping it silently."""
    folder = ROOT / "validation" / "nccl_tests"
    stem = "h100_2node_4gpu_per_node_ring_nccl-tests-252"
    rows = (folder / f"{stem}.txt").read_text().splitlines()
    first = next(i for i, line in enumerate(rows) if line.split()[:1] and line.split()[0].isdigit()
                 and int(line.split()[0]) > 0)
    fields = rows[first].split()
    rows.insert(first, "  ".join(["0", "0", *fields[2:]]))
    log = tmp_path / "log.txt"
    log.write_text("\n".join(rows) + "\n")
    code, text, _ = _run(capsys, "calibrate", "--nccl", log, folder / "scenarios" / f"{stem}.yaml", "--json")
    inputs = json.loads(text)["inputs"]
    assert code == 0 and any("1 result row skipped (1 of size 0)" in line for line in inputs)


@pytest.mark.parametrize("args,fragments", [
    (["--set", "megatron_sc21:1.7B", "--fit", A100_GEMM,
      "--fit", "gpu:a100-sxm-80gb.compute.memory_bandwidth_fraction"],
     ["2 constants need at least 2", A100_GEMM, "memory_bandwidth_fraction"]),
    (["--set", "megatron_sc21:1.7B,3.6B", "--fit", A100_GEMM,
      "--fit", "gpu:a100-sxm-80gb.compute.fp8_gemm_peak_fraction"],
     ["cannot determine gpu:a100-sxm-80gb.compute.fp8_gemm_peak_fraction", "barely depend"]),
    (["--set", "megatron_sc21:1.7B,3.6B,7.5B", "--fit", A100_GEMM,
      "--fit", "gpu:a100-sxm-80gb.sustained_clock_fraction"],
     ["cannot determine", A100_GEMM, "sustained_clock_fraction", "together"]),
    (["--set", "megatron_sc21:2T"], ["no row '2T'"]),
    (["--set", "megatron", "--fit", A100_GEMM], ["did you mean 'megatron_sc21'"]),
    (["--set", "megatron_sc21:1.7B", "--fit", "gpu:a100-sxm-80gb.compute.gemm_tile.0"], ["integer"]),
    ([], ["no measurements"]),
])
def test_calibrate_refuses_what_the_data_cannot_determine(capsys, args, fragments):
    """Too many constants for the rows, a constant no row depends on (fp8 on fp16 rows), two
    that move every prediction together (SC21's unfused attention makes every compute-bound
    kernel a GEMM, so the GEMM fraction and the sustained clock are interchangeable)."""
    code, out, err = _run(capsys, "calibrate", *args)
    assert code == 2 and "Traceback" not in out + err
    for fragment in fragments:
        assert fragment in err
