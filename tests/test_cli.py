"""The clustersim command: collectives table contract, specs, compare-nccl, bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "scenarios" / "dgx-h100-2node.yaml")


def _run(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_collectives_json_has_the_documented_keys_and_doubling_sizes(capsys):
    code, out, _ = _run(capsys, "collectives", SCENARIO, "--op", "all_reduce",
                        "--min-bytes", "8", "--max-bytes", "8G", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 31
    assert set(rows[0]) >= {"size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm"}
    assert [r["size_bytes"] for r in rows[:3]] == [8, 16, 32]
    for r in rows:
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 2 * 15 / 16)
        assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / r["time_s"] / 1e9)


@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                "reduce", "all_to_all", "sendrecv"])
def test_every_operation_runs_with_auto(capsys, op):
    code, out, _ = _run(capsys, "collectives", SCENARIO, "--op", op, "-b", "1K", "-e", "1M", "--csv")
    assert code == 0 and out.splitlines()[0].startswith("size_bytes,time_s")


@pytest.mark.parametrize("args,fragment", [
    (["--op", "allreduce"], "allreduce"),
    (["--algo", "butterfly"], "butterfly"),
    (["-b", "1G", "-e", "1K"], "larger than --max-bytes"),
    (["-b", "0"], "must be positive"),
    (["-b", "12Q"], "not a size"),
    (["--algo", "nvls"], "nvls"),
    (["--op", "all_to_all", "--algo", "tree"], "does not implement all_to_all"),
])
def test_bad_arguments_exit_2_with_a_clear_message(capsys, args, fragment):
    code, out, err = _run(capsys, "collectives", SCENARIO, *args)
    assert code == 2 and fragment in (out + err) and "Traceback" not in out + err


def test_specs_lists_and_shows_with_sources(capsys):
    code, out, _ = _run(capsys, "specs")
    assert code == 0 and "dgx-h100" in out and "ib-ndr" in out
    code, out, _ = _run(capsys, "specs", "h100-sxm")
    assert code == 0 and "989.4" in out
    code, _, err = _run(capsys, "specs", "h100-sxn")
    assert code == 2 and "did you mean 'h100-sxm'" in err


def test_compare_nccl_reports_each_size(capsys):
    folder = ROOT / "validation" / "nccl_tests"
    stem = "h100_2node_4gpu_per_node_ring_nccl-tests-252"
    code, out, _ = _run(capsys, "compare-nccl", str(folder / f"{stem}.txt"),
                        str(folder / "scenarios" / f"{stem}.yaml"), "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 5 and all(r["algorithm"] == "ring" for r in rows)


def test_compare_nccl_rejects_a_cluster_of_another_size(capsys):
    folder = ROOT / "validation" / "nccl_tests"
    code, _, err = _run(capsys, "compare-nccl",
                        str(folder / "h100_2node_4gpu_per_node_ring_nccl-tests-252.txt"), SCENARIO)
    assert code == 2 and "8 ranks" in err


NCCL_ROWS = {
    "size0": "       0        0  float  sum  -1   0.10    0.00    0.00  0   0.10    0.00    0.00  0",
    "nan": " 1048576   262144  float  sum  -1    nan    0.00    0.00  0   10.0    0.00    0.00  0",
    "zero": " 2097152   524288  float  sum  -1   0.00     inf     inf  0   10.0    0.00    0.00  0",
    "negative": " 4194304  1048576  float  sum  -1   -5.0    0.00    0.00  0   10.0    0.00    0.00  0",
    "good": " 8388608  2097152  float  sum  -1  100.0   83.89  157.29  0  100.0   83.89  157.29  0",
}


def test_compare_nccl_skips_unusable_rows_with_one_warning(capsys, tmp_path):
    """Rows of size 0 or with a NaN, zero or negative time are not scored, and one stderr
    line says how many and why; --json stays the usable rows only."""
    log = tmp_path / "all_reduce.txt"
    log.write_text("\n".join(NCCL_ROWS.values()) + "\n")
    code, out, err = _run(capsys, "compare-nccl", str(log), SCENARIO, "--json")
    assert code == 0
    assert [r["size_bytes"] for r in json.loads(out)] == [8388608]
    assert err.strip().splitlines() == [
        f"warning: {log}: 4 result rows skipped (1 of size 0, 3 with a NaN, infinite, zero or "
        "negative time); not scored"]


def test_compare_nccl_refuses_a_log_of_unusable_rows_only(capsys, tmp_path):
    log = tmp_path / "all_reduce.txt"
    log.write_text("\n".join(row for name, row in NCCL_ROWS.items() if name != "good") + "\n")
    code, out, err = _run(capsys, "compare-nccl", str(log), SCENARIO)
    assert code == 2 and out == "" and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {log}: none of its 4 nccl-tests result rows can be scored")

GPT3 = str(ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml")


def test_run_json_has_every_documented_key(capsys):
    code, out, _ = _run(capsys, "run", GPT3, "--json")
    data = json.loads(out)
    assert code == 0
    for key in ("step_time_s", "step_time_p50_s", "step_time_p99_s", "tokens_per_s",
                "model_flops_per_gpu", "hardware_flops_per_gpu", "mfu", "bubble_fraction",
                "comm_exposed_s", "memory_per_gpu_bytes", "fits_in_memory", "gpus"):
        assert key in data
    assert data["gpus"] == 1024 and data["tokens_per_s"] == pytest.approx(
        1536 * 2048 / data["step_time_s"])
    # the report's closing validation: lines, as sentences (throughput, then peak memory)
    assert len(data["validation"]) == 2 and "published runs like this one" in data["validation"][0]


def test_run_report_has_the_breakdowns(capsys):
    code, out, _ = _run(capsys, "run", GPT3)
    assert code == 0
    for fragment in ("step time", "MFU", "pipeline bubble", "time per step", "activations"):
        assert fragment in out


def _time_table_rows(out: str) -> dict[str, float]:
    """The "time per step" table's rows of ``clustersim run``'s report: name -> seconds."""
    table = out.split("time per step", 1)[1].split("└", 1)[0]
    cells = [line.split("│")[1:3] for line in table.splitlines() if line.startswith("│")]
    return {name.rstrip(): float(seconds) for name, seconds in cells}


@pytest.mark.parametrize("scenario", [GPT3, str(ROOT / "validation" / "scenarios" / "fms_fsdp"
                                                    / "llama2-7b-96gpu-h100-hsdp-eager.yaml")])
def test_time_table_parts_add_up_to_the_step(capsys, scenario):
    """The top-level rows of the step's breakdown sum to the step (the "of which" rows are
    inside their parent): under ZeRO-3/FSDP the gathers' exposed time is inside the pipeline
    row, not a second time under data-parallel sync."""
    code, out, _ = _run(capsys, "run", scenario, "--json")
    assert code == 0
    step = json.loads(out)["step_time_s"]
    code, out, _ = _run(capsys, "run", scenario)
    assert code == 0
    rows = _time_table_rows(out)
    top = [seconds for name, seconds in rows.items() if not name.startswith("   ")]
    assert sum(top) == pytest.approx(step, abs=5e-4 * len(top))   # each printed to 0.1 ms


def test_infeasible_layout_says_what_would_satisfy_it(capsys, tmp_path):
    text = Path(GPT3).read_text().replace("global_batch: 1536", "global_batch: 1500")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code, _, err = _run(capsys, "run", str(bad))
    assert code == 2 and "training.global_batch" in err and "use a multiple such as 1488" in err


def test_model_that_does_not_fit_is_reported(capsys, tmp_path):
    text = Path(GPT3).read_text().replace("nodes: 128", "nodes: 2").replace("dp: 16", "dp: 1")
    text = text.replace("pp: 8", "pp: 2").replace("global_batch: 1536", "global_batch: 16")
    small = tmp_path / "small.yaml"
    small.write_text(text)
    code, out, _ = _run(capsys, "run", str(small))
    assert code == 0 and "does not fit" in out
