"""clustersim regress: baselines written then compared, drift named, user errors exit 2."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.regress.baseline import DEFAULT_RTOL, Tolerances, tolerance_for
from simulator.regress.compare import within

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "scenarios" / "sc21-1.7b.yaml"
SCENARIO = """\
name: tiny-regress
cluster: {node: dgx-a100-80gb, nodes: 4, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
"""


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def scenario(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture()
def baseline(tmp_path, scenario, capsys) -> Path:
    folder = tmp_path / "baseline"
    code, out, _ = _run(capsys, "regress", scenario, "--baseline", folder, "--update")
    assert code == 0, out
    return folder


def test_baseline_written_then_compared_equal(baseline, scenario, capsys, tmp_path):
    data = json.loads((baseline / "tiny.json").read_text())
    assert data["format"] == "clustersim-regress-baseline" and data["version"] == 1
    assert [p["gpus"] for p in data["scaling"]] == [8, 16, 32]      # own count and two halvings
    assert data["step"]["step_time_s"] > 0 and data["scaling"][-1]["metrics"]["status"] == "ok"
    junit = tmp_path / "junit.xml"
    code, out, err = _run(capsys, "regress", scenario, "--baseline", baseline, "--junit", junit,
                          "--rtol", "1e-9")
    assert code == 0, out + err
    assert "passed" in out and "within tolerance" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"


def test_baseline_text_is_stable(baseline, scenario, capsys):
    before = (baseline / "tiny.json").read_text()
    assert _run(capsys, "regress", scenario, "--baseline", baseline, "--update")[0] == 0
    assert (baseline / "tiny.json").read_text() == before
    assert before.endswith("\n") and '\n  "format"' in before


def test_perturbed_scenario_exits_1_and_names_the_metric(baseline, scenario, capsys, tmp_path):
    scenario.write_text(SCENARIO.replace("global_batch: 64", "global_batch: 128"))
    junit = tmp_path / "junit.xml"
    png = tmp_path / "png"
    png.mkdir()
    code, out, err = _run(capsys, "regress", scenario, "--baseline", baseline, "--junit", junit,
                          "--png", png)
    assert code == 1
    assert "drifted" in err and "step_time_s" in out and "scale.step_time_s" in out
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure is not None and "step_time_s" in failure.get("message")
    assert (png / "tiny.png").stat().st_size > 0


def test_perturbed_hardware_spec_exits_1(baseline, scenario, capsys, tmp_path, monkeypatch):
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "hardware_specs", specs)
    gpu = specs / "gpus" / "a100-sxm-80gb.yaml"
    text = gpu.read_text()
    assert "  gemm_peak_fraction: 0.72\n" in text
    gpu.write_text(text.replace("  gemm_peak_fraction: 0.72\n", "  gemm_peak_fraction: 0.6\n"))
    monkeypatch.setenv("CLUSTERSIM_HARDWARE_SPECS", str(specs))
    code, out, _ = _run(capsys, "regress", scenario, "--baseline", baseline)
    assert code == 1
    assert "step_time_s" in out


def test_tolerance_from_the_command_line_and_the_baseline(baseline, scenario, capsys):
    scenario.write_text(SCENARIO.replace("global_batch: 64", "global_batch: 128"))
    code, _, _ = _run(capsys, "regress", scenario, "--baseline", baseline, "--rtol", "5")
    assert code == 0
    assert _run(capsys, "regress", scenario, "--baseline", baseline, "--update", "--rtol", "5")[0] == 0
    assert json.loads((baseline / "tiny.json").read_text())["tolerances"]["rtol"] == 5
    scenario.write_text(SCENARIO.replace("global_batch: 64", "global_batch: 256"))
    assert _run(capsys, "regress", scenario, "--baseline", baseline)[0] == 0     # stored 500%
    code, out, _ = _run(capsys, "regress", scenario, "--baseline", baseline,
                        "--rtol-metric", "step_time_s=0.01")
    assert code == 1 and "step_time_s" in out


def test_corrupted_baseline_exits_2(baseline, scenario, capsys):
    (baseline / "tiny.json").write_text('{"format": "clustersim-regress-baseline", "version": 1,')
    code, _, err = _run(capsys, "regress", scenario, "--baseline", baseline)
    assert code == 2 and "tiny.json" in err and "not valid JSON" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("edit", "fragment"), [
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d.update(format="other"), "format"),
    (lambda d: d["step"].update(step_time_s=[1]), "step"),
    (lambda d: d.pop("scaling"), "scaling"),
])
def test_malformed_baseline_exits_2(baseline, scenario, capsys, edit, fragment):
    path = baseline / "tiny.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    code, _, err = _run(capsys, "regress", scenario, "--baseline", baseline)
    assert code == 2 and fragment in err


def test_missing_baseline_exits_2(tmp_path, scenario, capsys):
    code, _, err = _run(capsys, "regress", scenario, "--baseline", tmp_path / "none")
    assert code == 2 and "does not exist" in err
    (tmp_path / "empty").mkdir()
    code, _, err = _run(capsys, "regress", scenario, "--baseline", tmp_path / "empty")
    assert code == 2 and "tiny.json" in err and "--update" in err


@pytest.mark.parametrize("args", [["--rtol", "x"], ["--rtol", "-1"], ["--rtol-metric", "mfu"],
                                  ["--gpus", "8,x"], ["--gpus", "64"]])
def test_bad_options_exit_2(baseline, scenario, capsys, args):
    code, _, err = _run(capsys, "regress", scenario, "--baseline", baseline, *args)
    assert code == 2 and err.startswith("error:")


@pytest.mark.parametrize(("entry", "hint"), [("step_time=0.05", "(did you mean 'step_time_s'?)"),
                                           ("scale.status=1", "known: step_time_s")])
def test_a_tolerance_for_no_metric_is_refused(baseline, scenario, capsys, entry, hint):
    """A misspelt ``--rtol-metric`` name was ignored without a word: the default tolerance applied
    and the run passed (or drifted) as if the option had not been given."""
    code, _, err = _run(capsys, "regress", scenario, "--baseline", baseline, "--rtol-metric", entry)
    (line,) = err.strip().splitlines()
    assert code == 2 and line.startswith(f"error: --rtol-metric: no metric named '{entry.split('=')[0]}'")
    assert hint in line


@pytest.mark.parametrize("entry", ["mfu=0.5", "scale.mfu=0.5", "exposed_tp_s=0.5", "fits_in_memory=0"])
def test_every_stored_metric_takes_a_tolerance(baseline, scenario, capsys, entry):
    assert _run(capsys, "regress", scenario, "--baseline", baseline, "--rtol-metric", entry)[0] == 0


def test_update_touches_only_the_scenarios_named(tmp_path, scenario, capsys):
    folder = tmp_path / "baseline"
    other = tmp_path / "other.yaml"
    other.write_text(SCENARIO.replace("tp: 2", "tp: 4"))
    assert _run(capsys, "regress", scenario, other, "--baseline", folder, "--update")[0] == 0
    before = (folder / "other.json").read_text()
    scenario.write_text(SCENARIO.replace("global_batch: 64", "global_batch: 128"))
    other.write_text(SCENARIO.replace("global_batch: 64", "global_batch: 128"))
    assert _run(capsys, "regress", scenario, "--baseline", folder, "--update")[0] == 0
    assert (folder / "other.json").read_text() == before
    assert _run(capsys, "regress", scenario, "--baseline", folder)[0] == 0
    assert _run(capsys, "regress", other, "--baseline", folder)[0] == 1


def test_cluster_only_scenario_is_skipped(tmp_path, capsys):
    path = tmp_path / "cluster.yaml"
    path.write_text("cluster: {node: dgx-h100, nodes: 2}\n")
    code, out, _ = _run(capsys, "regress", path, "--baseline", tmp_path / "b", "--update")
    assert code == 0 and "skipped" in out
    assert not (tmp_path / "b" / "cluster.json").exists()


def test_gpus_option_chooses_the_curve(tmp_path, capsys):
    folder = tmp_path / "b"
    assert _run(capsys, "regress", SMALL, "--baseline", folder, "--update", "--gpus", "16,32")[0] == 0
    data = json.loads((folder / f"{SMALL.stem}.json").read_text())
    assert [p["gpus"] for p in data["scaling"]] == [16, 32]
    assert _run(capsys, "regress", SMALL, "--baseline", folder, "--gpus", "32")[0] == 0


def test_tolerance_rules():
    cli, stored = Tolerances(rtol=0.2), Tolerances(rtol=0.05, metrics={"mfu": 0.3})
    assert tolerance_for("mfu", cli, stored) == 0.3
    assert tolerance_for("scale.mfu", cli, stored) == 0.3
    assert tolerance_for("step_time_s", cli, stored) == 0.2
    assert tolerance_for("step_time_s", Tolerances(), Tolerances()) == DEFAULT_RTOL
    assert within(0.0, 0.0, 0.0) and within(1.0, 1.005, 0.01) and not within(1.0, 1.02, 0.01)
    assert not within("ok", "infeasible", 1.0) and not within(None, 1.0, 1.0)
    assert not within(True, False, 1.0)
