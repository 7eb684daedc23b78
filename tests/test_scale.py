"""clustersim scale: strong and weak scaling sweeps, infeasible points, outputs and bad arguments."""

from __future__ import annotations

import csv
import json
from itertools import pairwise
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, load_scenario, scenario_from_mapping
from simulator.errors import ConfigError, UsageError
from simulator.sweep.scale import COLUMNS, OK, parse_gpu_list, plan_points, scale_records, scale_sweep

ROOT = Path(__file__).resolve().parent.parent
GPT3 = ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml"
GPT3_GPUS = [512, 1024, 2048]

TINY = {
    "name": "tiny",
    "cluster": {"node": "dgx-h100", "nodes": 2, "gpus_per_node": 4,
                "fabric": {"topology": "fat-tree", "link": "ib-ndr"}},
    "model": {"layers": 8, "hidden": 1024, "heads": 8, "seq_len": 1024, "vocab": 32000},
    "training": {"global_batch": 32, "micro_batch": 1, "dtype": "bf16"},
    "parallelism": {"tp": 2, "pp": 2, "dp": 2, "schedule": "interleaved-1f1b",
                    "virtual_stages": 2, "zero_stage": 1},
}
"""8 GPUs in 2 nodes of 4 (of the node's 8), tp 2 x pp 2 x dp 2, 16 microbatches."""


def _run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _tiny(**parallelism):
    data = {**TINY, "parallelism": {**TINY["parallelism"], **parallelism}}
    return scenario_from_mapping(data, "<tiny>")


@pytest.fixture(scope="module")
def library():
    return HardwareLibrary()


@pytest.fixture(scope="module")
def gpt3(library):
    return load_scenario(GPT3, library)


@pytest.fixture(scope="module")
def strong(gpt3, library):
    return scale_sweep(gpt3, GPT3_GPUS, weak=False, library=library)


@pytest.fixture(scope="module")
def weak(gpt3, library):
    return scale_sweep(gpt3, GPT3_GPUS, weak=True, library=library)


def test_strong_scaling_keeps_the_batch_and_the_layout(strong):
    assert list(strong.columns) == COLUMNS
    assert list(strong["gpus"]) == GPT3_GPUS and (strong["status"] == OK).all()
    assert list(strong["nodes"]) == [64, 128, 256]
    assert list(strong["dp"]) == [8, 16, 32]
    assert (strong["global_batch"] == 1536).all()
    assert strong["scaling_efficiency"].iloc[0] == 1.0
    assert (strong["tokens_per_s_per_gpu"] * strong["gpus"]).tolist() == \
        pytest.approx(strong["tokens_per_s"].tolist())


def test_strong_scaling_matches_a_plain_run_at_the_scenario_size(strong, gpt3, library):
    from simulator.engine.analytical import simulate_step
    from simulator.sweep.scale import session_from_scenario

    direct = simulate_step(gpt3, session_from_scenario(gpt3, library).collectives)
    row = strong[strong["gpus"] == 1024].iloc[0]
    assert row["step_time_s"] == pytest.approx(direct.step_time_s, rel=1e-12)
    assert row["memory_per_gpu_bytes"] == direct.memory_per_gpu_bytes


def test_weak_scaling_grows_the_batch_with_dp(weak):
    assert (weak["status"] == OK).all()
    assert (weak["global_batch"] == 1536 * weak["dp"] // 16).all()
    assert list(weak["global_batch"]) == [768, 1536, 3072]
    assert weak["scaling_efficiency"].iloc[0] == 1.0


def _assert_non_increasing(values):
    for before, after in pairwise(values):
        assert after <= before * (1 + 1e-9), values


def test_weak_scaling_tokens_per_gpu_never_increase(weak):
    _assert_non_increasing(list(weak["tokens_per_s_per_gpu"]))


def test_weak_scaling_without_zero_sharding_never_gains_per_gpu(library):
    # zero_stage 0 keeps each GPU's work identical at every size (ZeRO >= 1 shards the
    # optimizer step over dp, which can legitimately make a larger cluster faster per GPU).
    frame = scale_sweep(_tiny(zero_stage=0), [8, 16, 32, 64, 128], weak=True, library=library)
    assert (frame["status"] == OK).all()
    _assert_non_increasing(list(frame["tokens_per_s_per_gpu"]))


def test_infeasible_points_report_a_reason_and_the_others_still_run(gpt3, library):
    frame = scale_sweep(gpt3, [1024, 100, 320, 512], library=library)
    status = dict(zip(frame["gpus"], frame["status"], strict=True))
    assert list(frame["gpus"]) == [100, 320, 512, 1024]
    assert status[100] == "100 GPUs is not a multiple of 8 GPUs per node"
    assert status[320].startswith("training.global_batch: 1536 is not a multiple of")
    assert status[512] == status[1024] == OK
    assert frame.loc[frame["gpus"] == 320, "dp"].item() == 5
    assert frame.loc[frame["gpus"] == 100, "step_time_s"].isna().all()
    assert frame.loc[frame["gpus"] == 512, "scaling_efficiency"].item() == 1.0


def test_tiny_scenario_uses_gpus_per_node_and_reports_schedule_rules(library):
    frame = scale_sweep(_tiny(), [4, 6, 12, 128, 256], library=library)
    rows = {r["gpus"]: r for r in scale_records(frame)}
    assert rows[4]["nodes"] == 1 and rows[4]["status"] == OK
    assert rows[6]["status"] == "6 GPUs is not a multiple of 4 GPUs per node"
    assert rows[12]["nodes"] == 3 and rows[12]["dp"] == 3
    assert rows[12]["status"].startswith("training.global_batch: 32 is not a multiple")
    assert rows[128]["status"].startswith("training.global_batch: interleaved-1f1b needs")
    assert rows[256]["status"].startswith("training.global_batch: 32 is not a multiple")
    assert rows[4]["scaling_efficiency"] == 1.0


def test_all_infeasible_gives_missing_efficiency(library):
    frame = scale_sweep(_tiny(), [6, 10], library=library)
    assert (frame["status"] != OK).all() and frame["scaling_efficiency"].isna().all()


def test_records_are_plain_json(library):
    records = scale_records(scale_sweep(_tiny(), [6, 8], library=library))
    text = json.dumps(records, allow_nan=False)
    assert json.loads(text)[0]["step_time_s"] is None
    assert isinstance(records[1]["fits_in_memory"], bool) and isinstance(records[1]["dp"], int)


@pytest.mark.parametrize("text,expected", [("512", [512]), ("2048, 512,1024,512", [512, 1024, 2048])])
def test_parse_gpu_list(text, expected):
    assert parse_gpu_list(text) == expected


@pytest.mark.parametrize("text", ["", " ", "abc", "0", "-8", "1.5", "64,,128", "64,128,...,1024",
                                  "١٢٨", "1000000001", "9" * 40])
def test_parse_gpu_list_rejects(text):
    with pytest.raises(UsageError):
        parse_gpu_list(text)


def test_scenario_without_training_is_a_config_error(library):
    cluster_only = scenario_from_mapping({"cluster": TINY["cluster"]}, "<c>", library)
    with pytest.raises(ConfigError, match="'model' and 'training'"):
        scale_sweep(cluster_only, [8], library=library)


def test_cli_json_and_files(capsys, tmp_path):
    csv_path, png_path = tmp_path / "s.csv", tmp_path / "s.png"
    code, out, err = _run(capsys, "scale", GPT3, "--gpus", "512,1024,2048,100", "--weak",
                          "--json", "--csv", csv_path, "--png", png_path)
    assert code == 0, err
    rows = json.loads(out)
    assert [r["gpus"] for r in rows] == [100, 512, 1024, 2048]
    assert [r["global_batch"] for r in rows[1:]] == [768, 1536, 3072]
    assert rows[0]["status"] != OK and rows[0]["tokens_per_s"] is None
    with csv_path.open() as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == COLUMNS and [r["gpus"] for r in table] == ["100", "512", "1024", "2048"]
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_table(capsys, tmp_path, monkeypatch):
    import simulator.cli

    monkeypatch.setattr(simulator.cli.out, "width", 200)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    code, out, _ = _run(capsys, "scale", path, "--gpus", "8,16,6", "--strong")
    assert code == 0
    assert "tiny: strong scaling" in out and "100.0%" in out and "infeasible" in out
    assert "6 GPUs infeasible: 6 GPUs is not a multiple of 4 GPUs per node" in out


@pytest.mark.parametrize("args,fragment", [
    (["--gpus", "abc"], "'abc' is not a positive integer"),
    (["--gpus", "0,512"], "'0' is not a positive integer"),
    (["--gpus", "-512"], "is not a positive integer"),
    (["--gpus", ""], "expected a comma-separated list"),
    (["--gpus", "512", "--weak", "--strong"], "exclude each other"),
    (["--gpus", "512", "--csv", "/nonexistent-dir/x.csv"], "--csv: folder '/nonexistent-dir' does not exist"),
])
def test_cli_bad_arguments_exit_2_with_one_line(capsys, args, fragment):
    code, out, err = _run(capsys, "scale", GPT3, *args)
    assert code == 2 and fragment in err and "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_cli_missing_gpus_is_clicks_usage_error(capsys):
    code, out, err = _run(capsys, "scale", GPT3)
    assert code == 2 and "Missing option '--gpus'" in err and "Traceback" not in out + err


def test_cli_bad_scenario_exit_2(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**TINY, "parallelism": {**TINY["parallelism"], "tp": 3}}))
    code, _, err = _run(capsys, "scale", path, "--gpus", "8")
    assert code == 2 and "parallelism.tp" in err


def test_several_schedules_a_step_keep_their_microbatches(library, capsys, tmp_path):
    """With ``pipeline_flushes`` 2 the tiny pipeline runs 2 schedules of 8 microbatches on dp 2;
    at a held batch dp 4 runs 1 schedule of 8 and dp 1 runs 4 (torchtitan's gradient accumulation
    from a held local batch): every point's schedule holds 8 microbatches."""
    flushed = _tiny(schedule="1f1b", virtual_stages=1, pipeline_flushes=2)
    frame = scale_sweep(flushed, [4, 8, 16], library=library)
    assert (frame["status"] == OK).all()
    assert list(frame["pipeline_flushes"]) == [4, 2, 1]
    for point in plan_points(flushed, [4, 8, 16], False, library):
        par, training = point.mapping["parallelism"], point.mapping["training"]
        rank = training["global_batch"] // (training["micro_batch"] * par["dp"])
        assert rank // par["pipeline_flushes"] == 8
    path = tmp_path / "flushed.yaml"
    path.write_text(yaml.safe_dump({**TINY, "parallelism": {**TINY["parallelism"], "schedule": "1f1b",
                                                            "virtual_stages": 1, "pipeline_flushes": 2}}))
    code, out, _ = _run(capsys, "scale", path, "--gpus", "4,8,16", "-q")
    assert code == 0 and "4 at 4 GPUs, 2 at 8 GPUs, 1 at 16 GPUs" in " ".join(out.split())


def test_a_point_that_splits_a_schedule_is_infeasible(library):
    """dp 8 leaves 4 microbatches a rank, half of one schedule of 8: refused with the reason."""
    flushed = _tiny(schedule="1f1b", virtual_stages=1, pipeline_flushes=2)
    frame = scale_sweep(flushed, [8, 32], library=library)
    assert list(frame["status"])[0] == OK
    reason = list(frame["status"])[1]
    assert "4 microbatches per data-parallel rank" in reason and "schedules of 8" in reason


def test_one_schedule_a_step_is_kept(strong):
    assert (strong["pipeline_flushes"] == 1).all()
