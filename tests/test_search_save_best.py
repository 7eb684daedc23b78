"""``clustersim search --save-best FILE``: the best layout written back as a scenario file."""

from __future__ import annotations

import pytest
import yaml

from simulator.cli import main
from simulator.pipeline import run_scenario

SCENARIO = """\
name: tiny-search
description: a small search
cluster: {node: dgx-a100-80gb, nodes: 2, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
search: {tp: [1, 2, 4], pp: [1, 2]}
"""


def _search(capsys, tmp_path, *args) -> tuple[int, str, str]:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    code = main(["search", str(path), "--json", str(tmp_path / "all.json"), *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _best_row(tmp_path) -> dict:
    import json
    rows = [r for r in json.loads((tmp_path / "all.json").read_text()) if r["feasible"]]
    return max(rows, key=lambda r: r["tokens_per_s"])


def test_the_saved_scenario_runs_to_the_best_rows_numbers(capsys, tmp_path):
    """The file loads as a scenario and gives exactly the step the search ranked first; the
    rest of the scenario is kept and the search section dropped."""
    best_path = tmp_path / "best.yaml"
    code, out, _ = _search(capsys, tmp_path, "--micro-batch", "1,2,4", "--save-best", best_path)
    assert code == 0 and str(best_path) in out.replace("\n", "")    # rich wraps a long path
    best, saved = _best_row(tmp_path), yaml.safe_load(best_path.read_text())
    assert "search" not in saved and saved["description"] == "a small search"
    assert (saved["parallelism"]["tp"], saved["parallelism"]["pp"], saved["training"]["micro_batch"]) \
        == (best["tp"], best["pp"], best["micro_batch"])
    assert run_scenario(best_path).tokens_per_s == pytest.approx(best["tokens_per_s"], rel=1e-12)


def test_set_values_are_written_at_their_dotted_keys(capsys, tmp_path):
    best_path = tmp_path / "best.yaml"
    code, _, _ = _search(capsys, tmp_path, "--set", "cluster.fabric.oversubscription=1,4",
                         "--save-best", best_path)
    assert code == 0
    saved = yaml.safe_load(best_path.read_text())
    chosen = _best_row(tmp_path)["cluster.fabric.oversubscription"]
    assert saved["cluster"]["fabric"]["oversubscription"] == chosen
    assert saved["cluster"]["fabric"]["link"] == "ib-hdr"


def test_nothing_feasible_writes_nothing_and_says_so(capsys, tmp_path):
    """Every layout over memory (micro batch 64 without recompute): no file, one message."""
    best_path = tmp_path / "best.yaml"
    code, _, err = _search(capsys, tmp_path, "--micro-batch", "64", "--recompute", "none",
                           "--save-best", best_path)
    assert code == 0 and not best_path.exists()
    assert "no layout is feasible" in err


def test_an_unwritable_path_is_refused_before_the_search(capsys, tmp_path):
    code, out, err = _search(capsys, tmp_path, "--save-best", "/no/such/dir/best.yaml")
    assert code == 2 and "--save-best" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "all.json").exists()


def test_a_calibration_flag_is_named_in_the_saved_scenario(capsys, tmp_path):
    """Searched under ``--calibration F``: the file names F, so it runs to the row's numbers."""
    overlay = tmp_path / "cal.yaml"
    overlay.write_text("gpus: {a100-sxm-80gb: {compute: {gemm_peak_fraction: 0.70}}}\n")
    best_path = tmp_path / "best.yaml"
    code, _, _ = _search(capsys, tmp_path, "--calibration", overlay, "--save-best", best_path)
    assert code == 0
    assert yaml.safe_load(best_path.read_text())["calibration"] == str(overlay.resolve())
    assert run_scenario(best_path).tokens_per_s == pytest.approx(_best_row(tmp_path)["tokens_per_s"],
                                                                 rel=1e-12)


def test_a_preset_set_loads_the_whole_preset_as_the_search_did(capsys, tmp_path):
    """``--set model.preset=P`` replaces the model section with preset P (as the search built
    the point), so the saved file runs to the row's numbers."""
    best_path = tmp_path / "best.yaml"
    code, _, _ = _search(capsys, tmp_path, "--set", "model.preset=megatron-1.7b,megatron-3.6b",
                         "--save-best", best_path)
    assert code == 0
    best, saved = _best_row(tmp_path), yaml.safe_load(best_path.read_text())
    assert saved["model"]["preset"] == best["model.preset"]
    assert run_scenario(best_path).tokens_per_s == pytest.approx(best["tokens_per_s"], rel=1e-12)
