"""Every user mistake, in every family (scenario YAML, CLI arguments, output paths, nccl-tests
logs, profiler traces and training logs): exit status 2, exactly one ``error:`` line on
stderr, no traceback, and no output file (whole or partial, temporary files included).
Then what the trusted paths promise: atomic writes, bundled names, init, presets, --json
on every command, untruncated tables in pipes, Ctrl-C."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.presets import MODEL_PRESETS
from simulator.export.atomic import write_atomic
from simulator.pipeline import MAX_STEPS, bundled_scenarios, resolve_scenario

ROOT = Path(__file__).resolve().parent.parent
NCCL_LOG = ROOT / "validation" / "nccl_tests" / "h100_2node_4gpu_per_node_ring_nccl-tests-252.txt"

TINY = {
    "name": "tiny",
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "model": {"preset": "megatron-1.7b"},
    "training": {"global_batch": 16, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 2, "dp": 4},
}
"""16 GPUs, 1.7B parameters: every command on it takes well under a second."""


def _with(**changes) -> dict:
    doc = json.loads(json.dumps(TINY))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return doc


def _setup(tmp: Path) -> dict[str, str]:
    """Input files every case may name: {placeholder: path}."""
    files = {
        "good": yaml.safe_dump(TINY), "empty": "", "notyaml": "cluster: [unclosed\n  - x: : :\n",
        "list": "- 1\n- 2\n", "unknown_key": yaml.safe_dump({**TINY, "clusterr": 1}),
        "tp5": yaml.safe_dump(_with(parallelism__tp=5)),
        "nodes_text": yaml.safe_dump(_with(cluster__nodes="two")),
        "nodes_negative": yaml.safe_dump(_with(cluster__nodes=-2)),
        "algo_bogus": yaml.safe_dump(_with(collectives__algorithm="bogus")),
        "algo_tree_ag": yaml.safe_dump(_with(collectives__algorithm={"all_gather": "tree"})),
        "algo_op_typo": yaml.safe_dump(_with(collectives__algorithm={"allgather": "ring"})),
        "algo_list": yaml.safe_dump(_with(collectives__algorithm=["ring"])),
        "algo_hier_1node": yaml.safe_dump(_with(cluster__nodes=1, parallelism__dp=2,
                                                collectives__algorithm="hierarchical")),
        "algo_nvls_a100": yaml.safe_dump(_with(cluster__node="dgx-a100-80gb",
                                               collectives__algorithm={"all_reduce": "nvls"})),
        "steps_0": yaml.safe_dump(_with(simulate__steps=0)),
        "steps_big": yaml.safe_dump(_with(simulate__steps=MAX_STEPS + 1)),
        "preset_bogus": yaml.safe_dump(_with(model__preset="gpt5")),
        "node_bogus": yaml.safe_dump(_with(cluster__node="dgx-z100")),
        "batch_odd": yaml.safe_dump(_with(training__global_batch=15)),
        "calibration_missing": yaml.safe_dump({**TINY, "calibration": "nowhere.yaml"}),
        "cluster_only": yaml.safe_dump({"cluster": TINY["cluster"]}),
        "huge_int": yaml.safe_dump(TINY).replace("nodes: 2", "nodes: " + "9" * 400),
        "slow_gpu_beyond": yaml.safe_dump(_with(noise__slow_gpus=[{"gpu": 99, "factor": 2.0}])),
        "log_garbage": "this is not a log\nat all\n", "log_empty": "",
        "trace_nojson": "{not json", "trace_noevents": json.dumps({"schemaVersion": 1}),
        "trace_list": "[1, 2, 3]",
    }
    out = {}
    for name, text in files.items():
        path = tmp / f"{name}.yaml" if name not in ("log_garbage", "log_empty") and not \
            name.startswith("trace_") else tmp / f"{name}.txt"
        path.write_text(text)
        out[name] = str(path)
    binary = tmp / "binary.yaml"
    binary.write_bytes(b"\x00\x01\x02PNG\x00" * 50)
    out["binary"] = str(binary)
    truncated = tmp / "truncated.json.gz"
    truncated.write_bytes(gzip.compress(b'{"traceEvents": [' + b"1," * 5000)[:60])
    out["truncated_gz"] = str(truncated)
    (tmp / "adir").mkdir()
    out["adir"] = str(tmp / "adir")
    (tmp / "afile").write_text("x")
    out["afile"] = str(tmp / "afile")
    (tmp / "exists.yaml").write_text("keep me\n")
    out["exists"] = str(tmp / "exists.yaml")
    out["nccl_log"] = str(NCCL_LOG)
    out["missing"] = str(tmp / "missing.yaml")
    out["out"] = str(tmp / "out")          # outputs go here: never created by a failing case
    return out


GOOD = "{good}"
# (id, argv with {placeholders}, fragment the one line must contain, outputs that must not appear)
CASES = [
    # -- scenario YAML --------------------------------------------------------------------------
    ("yaml-empty", ["check", "{empty}"], "empty", []),
    ("yaml-syntax", ["check", "{notyaml}"], "error:", []),
    ("yaml-top-level-list", ["run", "{list}"], "mapping", []),
    ("yaml-unknown-key", ["check", "{unknown_key}"], "clusterr", []),
    ("yaml-tp-not-dividing", ["run", "{tp5}"], "parallelism.tp", []),
    ("yaml-nodes-text", ["check", "{nodes_text}"], "cluster.nodes", []),
    ("yaml-nodes-negative", ["check", "{nodes_negative}"], "cluster.nodes", []),
    ("yaml-algorithm-bogus", ["check", "{algo_bogus}"], "collectives.algorithm", []),
    ("yaml-algorithm-cannot-serve-op", ["check", "{algo_tree_ag}"], "does not implement all_gather", []),
    ("yaml-algorithm-op-typo", ["check", "{algo_op_typo}"], "did you mean 'all_gather'", []),
    ("yaml-algorithm-list", ["check", "{algo_list}"], "collectives.algorithm", []),
    ("yaml-algorithm-hierarchical-one-node", ["run", "{algo_hier_1node}"], "collectives.algorithm", []),
    ("yaml-algorithm-nvls-without-nvswitch", ["run", "{algo_nvls_a100}"], "collectives.algorithm", []),
    ("yaml-algorithm-infeasible-in-check", ["check", "{algo_nvls_a100}"], "collectives.algorithm", []),
    ("yaml-steps-zero", ["check", "{steps_0}"], "simulate.steps", []),
    ("yaml-steps-above-bound", ["check", "{steps_big}"], "simulate.steps", []),
    ("yaml-preset-unknown", ["run", "{preset_bogus}"], "model.preset", []),
    ("yaml-node-unknown", ["run", "{node_bogus}"], "unknown node", []),
    ("yaml-batch-not-multiple", ["run", "{batch_odd}"], "training.global_batch", []),
    ("yaml-calibration-missing", ["run", "{calibration_missing}"], "calibration", []),
    ("yaml-no-model-run", ["run", "{cluster_only}"], "'model' and 'training'", []),
    ("yaml-no-model-scale", ["scale", "{cluster_only}", "--gpus", "16"], "'model' and 'training'", []),
    ("yaml-huge-int", ["check", "{huge_int}"], "cluster.nodes", []),
    ("yaml-slow-gpu-beyond", ["check", "{slow_gpu_beyond}"], "noise.slow_gpus", []),
    ("yaml-binary", ["check", "{binary}"], "error:", []),
    ("yaml-directory", ["run", "{adir}"], "error:", []),
    ("yaml-missing-file", ["run", "{missing}"], "file not found", []),
    ("yaml-unknown-bundled-name", ["run", "gpt3-175b"], "did you mean 'gpt3-175b-1024xA100'", []),
    # -- CLI arguments --------------------------------------------------------------------------
    ("arg-steps-zero", ["run", GOOD, "--engine", "des", "--steps", "0"], "--steps", []),
    ("arg-steps-above-bound", ["run", GOOD, "--engine", "des", "--steps", str(MAX_STEPS + 1)],
     "--steps", []),
    ("arg-steps-text", ["run", GOOD, "--steps", "many"], "--steps", []),
    ("arg-seed-negative", ["run", GOOD, "--engine", "des", "--seed", "-1"], "--seed", []),
    ("arg-engine-unknown", ["run", GOOD, "--engine", "quantum"], "--engine", []),
    ("arg-steps-with-analytical", ["run", GOOD, "--steps", "5"], "--engine des", []),
    ("arg-png-with-analytical", ["run", GOOD, "--png", "{out}/h.png"], "--engine des", ["h.png"]),
    ("arg-seed-with-analytical", ["run", GOOD, "--seed", "3"], "--seed", []),
    ("arg-run-missing-scenario", ["run"], "Missing argument", []),
    ("arg-unknown-option", ["run", GOOD, "--jsn"], "--json", []),
    ("arg-unknown-command", ["simulate", GOOD], "No such command", []),
    ("arg-scale-gpus-text", ["scale", GOOD, "--gpus", "abc"], "not a positive integer", []),
    ("arg-scale-gpus-zero", ["scale", GOOD, "--gpus", "0,16"], "not a positive integer", []),
    ("arg-scale-weak-strong", ["scale", GOOD, "--gpus", "16", "--weak", "--strong"], "exclude", []),
    ("arg-scale-steps-analytical", ["scale", GOOD, "--gpus", "16", "--steps", "3"], "--engine des", []),
    ("arg-scale-engine-unknown", ["scale", GOOD, "--gpus", "16", "--engine", "x"], "--engine", []),
    ("arg-collectives-op", ["collectives", GOOD, "--op", "allreduce"], "allreduce", []),
    ("arg-collectives-algo-op", ["collectives", GOOD, "--op", "all_to_all", "--algo", "tree"],
     "does not implement all_to_all", []),
    ("arg-collectives-sizes", ["collectives", GOOD, "-b", "1G", "-e", "1K"], "larger than", []),
    ("arg-collectives-size-unit", ["collectives", GOOD, "-b", "12Q"], "not a size", []),
    ("arg-collectives-factor", ["collectives", GOOD, "--factor", "1"], "--factor", []),
    ("arg-collectives-json-and-csv", ["collectives", GOOD, "--json", "--csv"], "stdout", []),
    ("arg-specs-unknown", ["specs", "h100-sxn"], "did you mean 'h100-sxm'", []),
    ("arg-specs-presets-with-name", ["specs", "--presets", "gpt3-175b"], "--presets", []),
    ("arg-init-without-output", ["init"], "-o", []),
    ("arg-init-preset", ["init", "-o", "{out}/s.yaml", "--preset", "gpt5"], "--preset", ["s.yaml"]),
    ("arg-init-node", ["init", "-o", "{out}/s.yaml", "--node", "dgx-z100"], "--node", ["s.yaml"]),
    ("arg-init-nodes-zero", ["init", "-o", "{out}/s.yaml", "--nodes", "0"], "--nodes", ["s.yaml"]),
    ("arg-init-existing", ["init", "-o", "{exists}"], "--force", []),
    ("arg-validate-set", ["validate", "--set", "sc22"], "unknown validation set", []),
    ("arg-compare-both", ["compare", GOOD, "--trace", "{trace_nojson}", "--log", "{log_garbage}"],
     "exactly one", []),
    ("arg-compare-neither", ["compare", GOOD], "exactly one", []),
    # -- output paths ---------------------------------------------------------------------------
    ("out-trace-missing-folder", ["run", GOOD, "--trace", "{out}/no/t.json"], "does not exist", []),
    ("out-timeline-is-folder", ["run", GOOD, "--timeline-png", "{adir}"], "--timeline-png", []),
    ("out-png-parent-is-file", ["run", GOOD, "--engine", "des", "--png", "{afile}/h.png"],
     "is a file; cannot write", []),
    ("out-same-file-twice", ["run", GOOD, "--trace", "{out}/x", "--timeline-png", "{out}/x"],
     "same file", ["x"]),
    ("out-overwrites-input", ["run", GOOD, "--trace", GOOD], "input", []),
    ("out-scale-csv-missing-folder", ["scale", GOOD, "--gpus", "16", "--csv", "{out}/no/s.csv"],
     "--csv", []),
    ("out-scale-png-folder", ["scale", GOOD, "--gpus", "16", "--png", "{adir}"], "--png", []),
    ("out-collectives-csv-missing-folder", ["collectives", GOOD, "--csv", "{out}/no/c.csv"], "--csv", []),
    ("out-init-missing-folder", ["init", "-o", "{out}/no/s.yaml"], "does not exist", []),
    ("out-init-folder", ["init", "-o", "{adir}"], "-o", []),
    ("out-validate-missing-folder", ["validate", "--set", "nccl", "--write", "{out}/no/v.md"],
     "--write", []),
    ("out-import-log-missing-folder", ["import-log", "{log_garbage}", "--node", "dgx-h100", "--nodes",
                                       "1", "-o", "{out}/no/d.yaml"], "does not exist", []),
    ("out-import-trace-csv-folder", ["import-trace", "{trace_nojson}", "--csv", "{adir}"], "--csv", []),
    ("out-compare-png-missing-folder", ["compare", GOOD, "--log", "{log_garbage}", "--png",
                                        "{out}/no/c.png"], "--png", []),
    # -- nccl-tests logs ------------------------------------------------------------------------
    ("nccl-empty", ["compare-nccl", "{log_empty}", GOOD], "empty", []),
    ("nccl-garbage", ["compare-nccl", "{log_garbage}", GOOD], "error:", []),
    ("nccl-binary", ["compare-nccl", "{binary}", GOOD], "binary", []),
    ("nccl-missing", ["compare-nccl", "{missing}", GOOD], "error:", []),
    ("nccl-truncated-gzip", ["compare-nccl", "{truncated_gz}", GOOD], "error:", []),
    ("nccl-other-cluster", ["compare-nccl", "{nccl_log}", GOOD], "ranks", []),
    # -- profiler traces and training logs ------------------------------------------------------
    ("trace-not-json", ["import-trace", "{trace_nojson}"], "error:", []),
    ("trace-no-events", ["import-trace", "{trace_noevents}"], "error:", []),
    ("trace-a-list", ["import-trace", "{trace_list}"], "error:", []),
    ("trace-truncated-gzip", ["import-trace", "{truncated_gz}"], "error:", []),
    ("trace-empty", ["import-trace", "{log_empty}"], "empty", []),
    ("trace-missing", ["import-trace", "{missing}"], "error:", []),
    ("trace-compare-garbage", ["compare", GOOD, "--trace", "{trace_nojson}"], "error:", []),
    ("log-garbage", ["import-log", "{log_garbage}", "--node", "dgx-h100", "--nodes", "1"], "error:", []),
    ("log-empty", ["import-log", "{log_empty}", "--node", "dgx-h100", "--nodes", "1"], "empty", []),
    ("log-binary", ["import-log", "{binary}", "--node", "dgx-h100", "--nodes", "1"], "binary", []),
    ("log-node-unknown", ["import-log", "{log_garbage}", "--node", "dgx-z100", "--nodes", "1"],
     "dgx-z100", []),
    ("log-compare-garbage", ["compare", GOOD, "--log", "{log_garbage}"], "error:", []),
]


def test_the_case_table_is_large_unique_and_covers_every_family():
    ids = [c[0] for c in CASES]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)
    families = {i.split("-")[0] for i in ids}
    assert {"yaml", "arg", "out", "nccl", "trace", "log"} <= families


@pytest.mark.parametrize(("argv", "fragment", "outputs"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_mistake_is_one_line_exit_2_no_traceback_no_file(tmp_path, capsys, argv, fragment, outputs):
    files = _setup(tmp_path)
    Path(files["out"]).mkdir()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    code = main([part.format(**files) for part in argv])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 2, text
    assert "Traceback" not in text
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert fragment in lines[0], lines[0]
    assert list(Path(files["out"]).iterdir()) == [], "a failing command left a file behind"
    for name in outputs:
        assert not (Path(files["out"]) / name).exists()
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before, "a failing command changed or added a file"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return path


def test_bundled_scenario_runs_by_name_and_by_path(capsys):
    assert "gpt3-175b-1024xA100" in bundled_scenarios()
    assert resolve_scenario("gpt3-175b-1024xA100") == resolve_scenario(
        ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml").resolve()
    code, by_name, _ = _run(capsys, "run", "gpt3-175b-1024xA100", "--json")
    assert code == 0
    code, by_path, _ = _run(capsys, "run", ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml", "--json")
    assert code == 0 and json.loads(by_name) == json.loads(by_path)


@pytest.mark.parametrize("command", [("check",), ("scale", "--gpus", "32,64"), ("search", "--top", "1")])
def test_every_scenario_command_takes_a_bundled_name(capsys, command):
    """The commands that read one scenario resolve a bundled example's name as ``run`` does
    (``clustersim search`` read it as a file name and failed until 2026-11-29)."""
    code, out, err = _run(capsys, command[0], "sc21-1.7b", *command[1:])
    assert code == 0, err
    assert "sc21-1.7b" in out


def test_unknown_name_lists_the_bundled_names(capsys):
    code, _, err = _run(capsys, "check", "no-such-scenario")
    assert code == 2 and "sc21-1.7b" in err and "gpt3-175b-1024xA100" in err


@pytest.mark.parametrize(("preset", "node", "nodes"), [("llama3-8b", "dgx-h100", 1),
                                                       ("megatron-1.7b", "dgx-a100-80gb", 2),
                                                       ("mixtral-8x7b", "dgx-h100", 2)])
def test_init_writes_a_commented_scenario_that_loads_and_runs(tmp_path, capsys, preset, node, nodes):
    path = tmp_path / "start.yaml"
    code, out, _ = _run(capsys, "init", "-o", path, "--preset", preset, "--node", node,
                        "--nodes", nodes)
    assert code == 0 and f"wrote {path}" in out and "fits" in out
    text = path.read_text()
    assert text.startswith("# Starter scenario") and "# tensor parallel" in text
    assert yaml.safe_load(text)["model"]["preset"] == preset
    code, out, _ = _run(capsys, "run", path, "--json", "--strict")
    result = json.loads(out)
    assert code == 0 and result["fits_in_memory"] and result["gpus"] == nodes * 8


def test_init_reads_back_every_preset_name(tmp_path, capsys):
    """The longest preset names fill the value column: a space must still part the value from
    its ``#`` comment, or YAML reads the comment into the name (nemotron-3-nano-30b-a3b)."""
    for preset in MODEL_PRESETS:
        path = tmp_path / f"{preset}.yaml"
        code, _, err = _run(capsys, "init", "-o", path, "--preset", preset, "--node", "gb300-nvl72")
        assert code == 0, err
        assert yaml.safe_load(path.read_text())["model"]["preset"] == preset


def test_init_refuses_to_overwrite_without_force(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("my work\n")
    code, _, err = _run(capsys, "init", "-o", path)
    assert code == 2 and "--force" in err and path.read_text() == "my work\n"
    code, _, _ = _run(capsys, "init", "-o", path, "--force")
    assert code == 0 and path.read_text().startswith("# Starter scenario")


def test_presets_table_and_json_agree(capsys):
    code, out, _ = _run(capsys, "presets", "--json")
    records = json.loads(out)
    by_name = {r["name"]: r for r in records}
    assert code == 0 and by_name["gpt3-175b"]["layers"] == 96 and by_name["gpt3-175b"]["hidden"] == 12288
    assert by_name["mixtral-8x7b"]["active_parameters"] < by_name["mixtral-8x7b"]["parameters"]
    code, table, _ = _run(capsys, "specs", "--presets")
    assert code == 0 and all(name in table for name in by_name) and "12,288" in table


@pytest.mark.parametrize("argv", [
    ["check", "{s}"], ["run", "{s}"], ["specs"], ["specs", "h100-sxm"], ["presets"],
    ["collectives", "{s}", "-b", "1K", "-e", "1M"], ["scale", "{s}", "--gpus", "16,32"],
    ["compare-nccl", str(NCCL_LOG), str(NCCL_LOG.parent / "scenarios" / f"{NCCL_LOG.stem}.yaml")],
])
def test_json_is_one_document_on_stdout(capsys, tiny, argv):
    code, out, err = _run(capsys, *[a.format(s=tiny) for a in argv], "--json")
    assert code == 0, err
    json.loads(out)


def test_specs_prints_values_not_python_reprs(capsys):
    code, out, _ = _run(capsys, "specs", "nccl")
    assert code == 0 and "<Protocol" not in out and "{'" not in out and "LL128: " in out
    code, out, _ = _run(capsys, "specs", "h100-sxm")
    assert code == 0 and "None" not in out and "{}" not in out


def test_tables_are_not_cut_in_a_pipe(capsys, tiny):
    code, out, _ = _run(capsys, "run", tiny)
    assert code == 0 and "…" not in out
    assert "allocator fragmentation" in out and "data-parallel sync, exposed" in out


def test_of_which_rows_sit_under_the_pipeline_row(capsys, tiny):
    code, out, _ = _run(capsys, "run", tiny)
    rows = [line for line in out.splitlines() if "│" in line]
    names = [r.split("│")[1].strip() for r in rows]
    start = names.index("pipeline (compute + in-line comm)")
    assert names[start + 1].startswith("of which tp") and names[start + 2].startswith("of which pp")
    assert names[start + 3] == "pipeline bubble"


def test_files_are_written_atomically_and_said_where(tmp_path, capsys, tiny):
    files = {name: tmp_path / name for name in ("h.png", "t.json", "g.png")}
    code, out, err = _run(capsys, "run", tiny, "--engine", "des", "--steps", "3", "--json",
                          "--png", files["h.png"], "--trace", files["t.json"],
                          "--timeline-png", files["g.png"])
    assert code == 0 and json.loads(out)["engine"].startswith("des")
    for path in files.values():
        assert f"wrote {path}" in err
        assert path.stat().st_size > 0
    assert files["h.png"].read_bytes()[:4] == b"\x89PNG" and files["g.png"].read_bytes()[:4] == b"\x89PNG"
    trace = json.loads(files["t.json"].read_text())
    assert "simulated step 1" in trace["otherData"]["step"]
    assert any(e.get("cat") == "in-layer" for e in trace["traceEvents"])     # tp 2: in-line comm rows
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["tiny.yaml", *files])


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "report.csv"
    path.write_text("old\n")

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    from simulator.errors import UsageError

    with pytest.raises(UsageError, match="No space left"):
        write_atomic(path, "new\n", "--csv")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["report.csv"]


def test_ctrl_c_during_a_simulation_is_one_line_exit_130(capsys, tiny, monkeypatch):
    import simulator.engine.analytical as analytical

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(analytical, "simulate_step", interrupted)
    code, out, err = _run(capsys, "run", tiny)
    assert code == 130 and err.strip() == "aborted" and "Traceback" not in out + err


def test_collectives_csv_file_is_written_and_csv_alone_prints(tmp_path, capsys, tiny):
    path = tmp_path / "c.csv"
    code, out, err = _run(capsys, "collectives", tiny, "-b", "1K", "-e", "1M", "--csv", path)
    assert code == 0 and path.read_text().startswith("size_bytes,") and f"wrote {path}" in err
    code, out, _ = _run(capsys, "collectives", tiny, "-b", "1K", "-e", "1M", "--csv")
    assert code == 0 and out.startswith("size_bytes,")


def test_scale_runs_the_des_engine(capsys, tiny):
    code, out, _ = _run(capsys, "scale", tiny, "--gpus", "16,32", "--engine", "des", "--steps", "2",
                        "--json")
    rows = json.loads(out)
    assert code == 0 and [r["status"] for r in rows] == ["ok", "ok"]
    code, analytical, _ = _run(capsys, "scale", tiny, "--gpus", "16,32", "--json")
    for des_row, row in zip(rows, json.loads(analytical), strict=True):   # no noise: DES = analytical
        assert des_row["step_time_s"] == pytest.approx(row["step_time_s"], rel=1e-6)
