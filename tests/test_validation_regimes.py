"""Where the validation errors fall (simulator/validation/regimes.py): the regime tags, the
matching of a scenario to the rows most like it, and the note ``clustersim run`` prints.
That the committed row table equals the suite's results is checked in
tests/test_validation_suite.py, where the suite's frame is at hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, load_scenario, scenario_from_mapping
from simulator.pipeline import quick_step, session_from_scenario
from simulator.validation.regimes import (
    REGIME_KEYS,
    TAGS,
    batch_grows,
    curve_excess,
    read_row_errors,
    regime_summary,
    regime_tags,
    root_gpu,
    scaling_note,
    similar_rows,
    validation_notes,
)

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = HardwareLibrary()


def _table(groups: list[tuple[dict, list[float]]]) -> pd.DataFrame:
    """Rows whose tags are ``dense ... 16-bit`` but for the keys each group names."""
    base = {**dict.fromkeys(TAGS, "x"), "kind": "throughput"}
    rows = [{**base, **tags, "error": e} for tags, errors in groups for e in errors]
    return pd.DataFrame(rows)


def test_tags_follow_the_scenario_and_the_gpu_base_chain():
    tags = regime_tags(load_scenario(ROOT / "scenarios" / "llama31-405b-256xGB300.yaml", LIBRARY), LIBRARY)
    assert tags == {"experts": "dense", "graphs": "none", "sequence": "< 32K", "stack": "megatron",
                    "profile": "megatron-core", "gpu": "b200", "sharding": "replicated", "dtype": "fp8",
                    "pipeline": "pp > 1"}
    moe = regime_tags(load_scenario(ROOT / "scenarios" / "mixtral-8x7b-64xH100.yaml", LIBRARY), LIBRARY)
    assert moe["experts"] == "moe" and moe["gpu"] == "h100-sxm"
    assert root_gpu("h100-sxm-96gb-500w", LIBRARY) == "h100-sxm"
    assert root_gpu("h200-sxm", LIBRARY) == "h200-sxm"


def test_the_graph_tag_is_the_stacks_cuda_graph_mode_and_moves_no_prediction():
    """``kernels.cuda_graphs`` tags the run (what it replays from CUDA graphs) and nothing else:
    the model prices no host time, so the same scenario with each mode has one step time."""
    recipes = ROOT / "validation" / "scenarios" / "megatron_moe_recipes"
    path = recipes / "qwen3-235b-a22b-128gpu-gb200-mxfp8-full-cg.yaml"
    data = yaml.safe_load(path.read_text())
    steps = set()
    for mode in ("none", "partial", "full"):
        data["training"]["stack"]["kernels"]["cuda_graphs"] = mode
        scenario = scenario_from_mapping(data, str(path), LIBRARY)
        assert regime_tags(scenario, LIBRARY)["graphs"] == mode
        steps.add(quick_step(session_from_scenario(scenario, LIBRARY), "test").step_time_s)
    assert len(steps) == 1


def test_the_longest_prefix_with_enough_rows_is_matched():
    """Eight rows share the first two keys, five of them the third: the match stops at the
    second key, reports the quartiles of its eight rows and names the key that had too few."""
    table = _table([({"experts": "moe", "sequence": "long"}, [0.1, 0.2, 0.3, 0.4, 0.5]),
                    ({"experts": "moe"}, [0.0, 0.0, 0.0]), ({}, [-0.5] * 10)])
    tags = {**dict.fromkeys(TAGS, "x"), "experts": "moe", "sequence": "long"}
    found = similar_rows(tags, table, minimum=8)
    assert found.match == {"experts": "moe", "graphs": "x"} and found.rows == 8
    assert found.median == pytest.approx(pd.Series([0.1, 0.2, 0.3, 0.4, 0.5, 0, 0, 0]).median())
    assert found.short == ("sequence", "long", 5, pytest.approx(0.3))
    assert "8 published runs like this one (moe, x)" in found.sentence()
    assert "5 with sequence long (median +30.0%), too few" in found.sentence()
    assert similar_rows(tags, table, kind="memory", minimum=8) is None      # no memory rows
    every = similar_rows(dict.fromkeys(TAGS, "x"), table, minimum=8)
    assert every.match == dict.fromkeys(REGIME_KEYS, "x") and every.rows == 10 and every.short is None
    assert every.median == -0.5 and "below the measured" in every.sentence()
    assert similar_rows(tags, table, minimum=19) is None


def test_summary_counts_every_row_once():
    table = read_row_errors()
    for keys in (["kind", "experts", "sequence", "stack"], ["gpu"], ["dtype", "pipeline"]):
        summary = regime_summary(table, keys)
        assert summary["rows"].sum() == len(table)
        assert (summary["low"] <= summary["median"]).all() and (summary["median"] <= summary["high"]).all()


@pytest.mark.parametrize("scenario", [str(ROOT / "scenarios" / "sc21-530b.yaml"), "sc21-530b"])
def test_run_prints_the_note_and_async_training_gets_none(capsys, scenario):
    """The notes follow the report, for a file and for a bundled example's name alike: the
    throughput rows like it, and the memory rows, of which only the MI325X logs' four device
    figures (``megatron_memory``) are a Megatron run's: too few, so the note names them."""
    assert main(["run", scenario]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if s.startswith("validation: ")]
    assert len(line) == 2 and "published runs like this one (dense, none, < 32K, megatron" in line[0]
    assert line[1].startswith("validation: for 22 published peak-memory measurements of any regime")
    table = read_row_errors()
    megatron = table[(table["kind"] == "memory") & (table["stack"] == "megatron")]["error"]
    assert f"4 with stack megatron (median {megatron.median():+.1%}), too few to narrow further" in line[1]
    scenario = load_scenario(ROOT / "scenarios" / "llama3-8b-async-ps-64xH100.yaml", LIBRARY)
    assert validation_notes(scenario, LIBRARY) == []


def test_memory_note_names_the_pipelined_rows_it_could_not_narrow_to(capsys):
    """A pipelined torchtitan run: its peak-memory line matches torchtitan's 18 measurements
    and names the median of the 6 pipelined ones (too few for the match): the prediction sits
    below the measured peak there, the headroom a user would plan with."""
    scenario = ROOT / "validation" / "scenarios" / "torchtitan" / "405b-fsdp8-tp8-pp8-1f1b-compile-fp8.yaml"
    notes = validation_notes(load_scenario(scenario, LIBRARY), LIBRARY)
    assert len(notes) == 2 and "peak-memory measurements like this one (pytorch-fsdp, torchtitan)" in notes[1]
    assert "6 with pipeline pp > 1 (median -" in notes[1] and "below the measured peak" in notes[1]


def test_row_errors_need_every_set(capsys, tmp_path):
    assert main(["validate", "--set", "nemo", "--write-row-errors", str(tmp_path / "rows.csv")]) == 2
    err = capsys.readouterr().err
    assert "--write-row-errors" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "rows.csv").exists()


def test_curve_excess_is_the_measured_growth_beyond_the_predicted_per_doubling():
    """Errors +10% at 8 GPUs and -10% at 32 (two doublings): the prediction fell from above the
    measurement to below it, so the measured step grew 0.9 / 1.1 of the predicted growth,
    (0.9 / 1.1)^(1/2) - 1 per doubling; a one-point curve and rows off any curve are left out."""
    table = pd.DataFrame({"curve": ["a", "a", "a", "b", ""], "gpus": [8, 16, 32, 8, 0],
                          "batch": [64, 128, 256, 64, 8], "error": [0.1, 0.0, -0.1, 0.2, 0.3]})
    curves = curve_excess(table)
    assert curves["curve"].tolist() == ["a"] and (curves["first"][0], curves["last"][0]) == (8, 32)
    assert (curves["first_batch"][0], curves["last_batch"][0], curves["weak"][0]) == (64, 256, True)
    assert curves["per_doubling"][0] == pytest.approx((0.9 / 1.1) ** 0.5 - 1)


@pytest.mark.parametrize(("first", "last", "weak"), [
    ((8, 64), (32, 256), True),            # batch x4 over GPUs x4: weak scaling
    ((512, 2304), (11616, 2904), False),   # MLPerf GPT-3: x1.26 over x22.7, held
    ((1536, 3072), (3072, 3072), False),   # the same batch
    ((16, 64), (64, 128), True),           # x2 over x4: log ratio exactly 1/2, growing
    ((16, 64), (64, 127), False),          # just under it
])
def test_a_curves_batch_grows_when_it_keeps_at_least_half_the_log_gpu_ratio(first, last, weak):
    """``log(b_last / b_first) >= 0.5 log(g_last / g_first)``: a weak curve scales its batch
    with its GPUs (ratio 1), a strong one holds it (MLPerf's curves stay within 1.3x)."""
    assert batch_grows(first, last) is weak


def test_scaling_note_reads_the_curves_of_its_own_kind():
    """Two weak curves (+1% and +3% per doubling beyond the predicted fall) and one strong one
    (-2%): the weak note's median is +2%, the strong note's -2% ("slower than predicted")."""
    table = pd.DataFrame({
        "curve": ["w1", "w1", "w2", "w2", "s", "s"], "gpus": [8, 16, 8, 16, 512, 1024],
        "batch": [16, 32, 16, 32, 1152, 1152],
        "error": [0.0, 0.01, 0.0, 0.03, 0.0, -0.02]})
    weak, strong = scaling_note(table, weak=True), scaling_note(table, weak=False)
    assert "on 2 published scaling curves at a batch growing with the GPUs (8 to 16 GPUs)" in weak
    assert "a median +2.0% per doubling" in weak and "fell faster than predicted" in weak
    assert "on 1 published scaling curves at a held global batch (512 to 1,024 GPUs)" in strong
    assert "a median -2.0% per doubling" in strong and "fell slower than predicted" in strong
    assert scaling_note(table[table["curve"] == "s"], weak=True) is None


def test_scale_prints_the_note_of_its_own_kind_of_curves(capsys):
    """``--weak`` quotes the published weak curves, a strong sweep (the default) those at a
    held global batch: the line each reads from the committed rows."""
    scenario = str(ROOT / "scenarios" / "llama3-8b-64xH100.yaml")
    table = read_row_errors()
    for flags, weak in ((["--weak"], True), ([], False)):
        assert main(["scale", scenario, "--gpus", "64,128", *flags]) == 0
        lines = [s for s in capsys.readouterr().out.splitlines() if s.startswith("validation: ")]
        assert len(lines) == 1 and lines[0] == "validation: " + scaling_note(table, weak)
