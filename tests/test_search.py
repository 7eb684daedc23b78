"""clustersim search: layouts ranked, identical to single-scenario runs, files and errors."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_text
from simulator.config.optimizer import OptimizerConfig
from simulator.errors import UsageError
from simulator.pipeline import run_scenario
from simulator.sweep.cli_search import pareto_front
from simulator.sweep.layouts import default_axes, layouts, parse_axis
from simulator.sweep.search import parse_sets, search, why_best

SCENARIO = """\
name: tiny-search
cluster: {node: dgx-a100-80gb, nodes: 2, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
"""
AXES = ["--tp", "1,2,4", "--pp", "1,2,4", "--micro-batch", "1,2,8", "--zero-stage", "1,3"]


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def scenario():
    return scenario_from_text(SCENARIO)


@pytest.fixture(scope="module")
def result(scenario):
    return search(scenario, flags={"tp": "1,2,4", "pp": "1,2,4", "micro_batch": "1,2,8",
                                   "zero_stage": "1,3"})


def test_rows_equal_the_single_scenario_path(result, tmp_path):
    """Every feasible layout's numbers are exactly those of a scenario file with it."""
    base = yaml.safe_load(SCENARIO)
    sample = result.ranked.iloc[:: max(1, len(result.ranked) // 12)]
    assert len(sample) >= 6
    for row in sample.to_dict(orient="records"):
        par = {k: getattr(row[k], "value", row[k]) for k in
               ("tp", "pp", "dp", "cp", "ep", "schedule", "virtual_stages", "recompute",
                "zero_stage", "sequence_parallel")}
        data = {**base, "parallelism": par, "training": {**base["training"],
                                                         "micro_batch": row["micro_batch"]}}
        path = tmp_path / "layout.yaml"
        path.write_text(yaml.safe_dump(data))
        single = run_scenario(path)
        assert (single.step_time_s, single.tokens_per_s, single.mfu, single.memory_per_gpu_bytes) == (
            row["step_time_s"], row["tokens_per_s"], row["mfu"], row["memory_per_gpu_bytes"])


def test_ranking_keeps_only_feasible_layouts_best_first(result):
    ranked = result.ranked
    assert ranked["feasible"].all() and ranked["tokens_per_s"].is_monotonic_decreasing
    infeasible = result.frame[~result.frame["feasible"]]
    assert len(infeasible) and (infeasible["status"] != "ok").all()
    assert len(result.frame) == len(ranked) + len(infeasible)
    assert "against" in why_best(result)


def test_layouts_are_distinct_and_divide_the_gpus(scenario):
    axes = default_axes(scenario, 8)
    found = list(layouts(axes, 16))
    keys = {tuple(sorted((k, str(v)) for k, v in layout.items())) for layout in found}
    assert len(keys) == len(found)
    assert all(f["tp"] * f["pp"] * f["cp"] * f["dp"] == 16 for f in found)
    assert all(f["virtual_stages"] == 1 or f["schedule"].value == "interleaved-1f1b" for f in found)
    assert not any(f["sequence_parallel"] and f["tp"] == 1 for f in found)


def test_muon_searches_only_the_sharding_it_runs_with(scenario):
    """Muon shards its state no more than ZeRO-1 (Megatron-Core's layer-wise optimizer), so
    its default axes leave out the ZeRO stages a check would refuse."""
    training = scenario.training.model_copy(update={"optimizer": OptimizerConfig(name="muon")})
    muon = scenario.model_copy(update={"training": training})
    assert default_axes(muon, 8)["zero_stage"] == [1]
    assert default_axes(scenario, 8)["zero_stage"] == [1, 2, 3]


@pytest.mark.parametrize(("objective", "column", "ascending"), [
    ("step_time", "step_time_s", True), ("mfu", "mfu", False),
    ("memory_headroom", "memory_headroom_bytes", False), ("cost", "usd_per_million_tokens", True)])
def test_objectives(scenario, objective, column, ascending):
    found = search(scenario, flags={"tp": "1,2", "pp": "1,2", "micro_batch": "1"},
                   objective=objective, prices={"dgx-a100-80gb": 2.0})
    values = found.ranked[column]
    assert (values.is_monotonic_increasing if ascending else values.is_monotonic_decreasing)


def test_hardware_axes_search_the_product(scenario):
    sets = parse_sets(["cluster.node=dgx-a100-80gb,dgx-h100", "cluster.fabric.oversubscription=1,2"])
    found = search(scenario, flags={"tp": "2", "pp": "2", "micro_batch": "1", "zero_stage": "1"},
                   sets=sets)
    frame = found.frame
    assert set(zip(frame["cluster.node"], frame["cluster.fabric.oversubscription"], strict=True)) == {
        ("dgx-a100-80gb", 1), ("dgx-a100-80gb", 2), ("dgx-h100", 1), ("dgx-h100", 2)}
    assert found.best["cluster.node"] == "dgx-h100"


def test_pareto_front_is_not_dominated(result):
    front = pareto_front(result.frame)
    ok = result.frame[result.frame["feasible"]]
    for row in front.itertuples():
        better = ok[(ok.tokens_per_s > row.tokens_per_s)
                    & (ok.memory_per_gpu_bytes <= row.memory_per_gpu_bytes)]
        assert better.empty


def test_cli_prints_the_top_and_writes_every_layout(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    formats = ("csv", "json", "png") + (("parquet",) if importlib.util.find_spec("pyarrow") else ())
    files = {ext: tmp_path / f"all.{ext}" for ext in formats}   # parquet needs the extra
    code, out, err = _run(capsys, "search", path, *AXES, "--top", "3", "--price", "2.5",
                          *[a for ext, f in files.items() for a in (f"--{ext}", f)])
    assert code == 0, err
    assert "best layouts by tokens_per_s" in out and "why the best" in out and "$/Mtok" in out
    frame = pd.read_csv(files["csv"])
    assert len(frame) == len(json.loads(files["json"].read_text()))
    if "parquet" in files:
        assert len(pd.read_parquet(files["parquet"])) == len(frame)
    assert (~frame["feasible"]).any() and frame.loc[~frame["feasible"], "status"].str.len().min() > 3
    assert files["png"].stat().st_size > 0


def test_search_section_in_the_scenario(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + "search:\n  tp: [2]\n  pp: [2]\n  micro_batch: [1]\n  zero_stage: [1]\n"
                    "  recompute: [none]\n  sequence_parallel: [false]\n  schedule: [1f1b]\n"
                    "  set: {cluster.fabric.oversubscription: [1, 2]}\n  objective: step_time\n")
    out_json = tmp_path / "all.json"
    code, out, err = _run(capsys, "search", path, "--json", out_json)
    assert code == 0, err
    rows = json.loads(out_json.read_text())
    assert len(rows) == 2 and {r["cluster.fabric.oversubscription"] for r in rows} == {1, 2}
    assert "by step_time" in out


@pytest.mark.parametrize(("args", "fragment"), [
    (["--tp", "x"], "--tp"), (["--schedule", "zigzag"], "schedule"),
    (["--set", "cluster.node"], "--set"), (["--set", "cluster.node=no-such-node"], "no-such-node"),
    (["--objective", "cost"], "price"), (["--price", "-1"], "positive"),
    (["--csv", "/no/such/dir/x.csv"], "does not exist")])
def test_cli_user_errors_exit_2_with_one_line(capsys, tmp_path, args, fragment):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    code, _, err = _run(capsys, "search", path, *args)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_unknown_search_key_is_a_config_error(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + "search: {tpp: [1]}\n")
    code, _, err = _run(capsys, "search", path)
    assert code == 2 and "search.tpp" in err


def test_a_cluster_only_scenario_names_its_file(capsys, tmp_path):
    """A file with no model was refused without naming it ("error: model: ..."), unlike run,
    scale and latency."""
    path = tmp_path / "cluster.yaml"
    path.write_text("cluster:\n  node: dgx-h100\n  nodes: 2\n")
    code, _, err = _run(capsys, "search", path)
    (line,) = err.strip().splitlines()
    assert code == 2 and line == (f"error: {path}: model: 'model' and 'training' sections are "
                                  "needed to search layouts")


def test_parse_axis_validates_with_the_schema():
    assert parse_axis("tp", "1,2,2") == [1, 2]
    assert parse_axis("dp", "auto") == [None]
    assert [s.value for s in parse_axis("schedule", ["1f1b", "gpipe"])] == ["1f1b", "gpipe"]
    with pytest.raises(UsageError):
        parse_axis("tp", "0")
    with pytest.raises(UsageError):
        parse_axis("bogus", "1")


@pytest.mark.parametrize(("name", "text", "source", "message"), [
    ("tp", "0", "--tp", "--tp: 0: input should be greater than or equal to 1"),
    ("tp", "0", "search", "search.tp: 0: input should be greater than or equal to 1"),
    ("schedule", "zigzag", "--schedule", "--schedule: 'zigzag' is not one of")])
def test_an_axis_error_names_the_flag_or_key_and_the_value_once(name, text, source, message):
    """A flag names its axis itself (``--tp``, not ``--tp.tp``) and the value shows once."""
    with pytest.raises(UsageError) as caught:
        parse_axis(name, text, source)
    assert str(caught.value).startswith(message), str(caught.value)


def test_library_argument_is_used(scenario):
    found = search(scenario, flags={"tp": "2", "pp": "2", "micro_batch": "1"}, library=HardwareLibrary())
    assert len(found.frame)


def test_a_session_cache_is_the_callers_and_changes_no_number(scenario, result):
    """A cache passed to two searches keeps the scenario point's built cluster and prices
    for the second (no module state does: a search without one builds its own), and the
    frames are identical either way."""
    from simulator.sweep.session_cache import SessionCache

    cache = SessionCache()
    flags = {"tp": "1,2,4", "pp": "1,2,4", "micro_batch": "1,2,8", "zero_stage": "1,3"}
    first = search(scenario, flags=flags, cache=cache)
    assert len(cache) == 1
    kept = cache.get(scenario, HardwareLibrary())
    second = search(scenario, flags=flags, cache=cache)
    assert cache.get(scenario, HardwareLibrary()) is kept
    for frame in (first.frame, second.frame):
        pd.testing.assert_frame_equal(frame, result.frame)


def test_offloading_is_searched_where_megatron_core_allows_it(scenario, tmp_path):
    """``--cpu-offload-layers 0,8``: offloading only with pp 1 and recompute none; each offloaded
    row is the scenario file with that layout, byte for byte, and lighter than its twin."""
    found = search(scenario, flags={"tp": "1,2", "pp": "1,2", "micro_batch": "1", "zero_stage": "1",
                                    "recompute": "none,full", "cpu_offload_layers": "0,8"})
    rows = found.ranked.to_dict(orient="records")
    offloaded = [r for r in rows if r["cpu_offload_layers"]]
    assert offloaded and all(r["pp"] == 1 and getattr(r["recompute"], "value", r["recompute"]) == "none"
                             for r in offloaded)
    base = yaml.safe_load(SCENARIO)
    for row in offloaded:
        twin = next(r for r in rows if not r["cpu_offload_layers"] and
                    all(r[k] == row[k] for k in ("tp", "pp", "recompute", "sequence_parallel")))
        assert row["memory_per_gpu_bytes"] < twin["memory_per_gpu_bytes"]
        par = {k: getattr(row[k], "value", row[k]) for k in
               ("tp", "pp", "dp", "recompute", "zero_stage", "sequence_parallel", "cpu_offload_layers")}
        path = tmp_path / "offload.yaml"
        path.write_text(yaml.safe_dump({**base, "parallelism": par}))
        single = run_scenario(path)
        assert (single.step_time_s, single.memory_per_gpu_bytes) == (row["step_time_s"],
                                                                      row["memory_per_gpu_bytes"])


def test_infeasible_reasons_group_by_pattern_and_quote_a_real_example():
    """Reasons that differ only in their numbers are one pattern; each is counted and quoted as
    the first layout gave it, most common first (not with its numbers blanked out)."""
    import pandas as pd

    from simulator.sweep.cli_search import infeasible_reasons
    statuses = pd.Series(["does not fit in memory: 90.1 GiB per GPU > 80.0 GiB",
                          "tp 3 does not divide 32 heads",
                          "does not fit in memory: 120.5 GiB per GPU > 80.0 GiB",
                          "does not fit in memory: 81.0 GiB per GPU > 80.0 GiB"])
    assert infeasible_reasons(statuses) == [
        (3, "does not fit in memory: 90.1 GiB per GPU > 80.0 GiB"),
        (1, "tp 3 does not divide 32 heads")]
    assert infeasible_reasons(statuses, shown=1) == [
        (3, "does not fit in memory: 90.1 GiB per GPU > 80.0 GiB")]
