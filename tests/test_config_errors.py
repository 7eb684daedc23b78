"""Every user mistake in a scenario file: one line ``error: <file>: <key.path>: <expected>``, exit 2.

Each case of the table is written to ``tmp_path`` and run through the CLI in-process
(``simulator.cli.main(["check", path])``); the loader API must raise the same
:class:`ConfigError`. See ``SCENARIO_FORMAT.md`` (the user-facing contract).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.cli import main
from simulator.config import load_scenario
from simulator.config.yaml_io import MAX_FILE_BYTES, parse_yaml_mapping
from simulator.errors import ConfigError

BASE: dict[str, Any] = {
    "cluster": {"node": "dgx-a100-80gb", "nodes": 2, "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
    "model": {"preset": "gpt3-175b"},
    "training": {"global_batch": 64, "micro_batch": 1},
    "parallelism": {"tp": 8, "pp": 2, "dp": 1},
}
BASE_TEXT = yaml.safe_dump(BASE, sort_keys=False)
DELETE = object()
HUGE_HEX = "0x" + "f" * 5000  # YAML hex ints skip Python's 4300-digit str() limit: a 20000-bit int


def mutate(*changes: tuple[str, Any]) -> dict[str, Any]:
    """A copy of BASE with ``(dotted.path, value)`` changes applied (``DELETE`` removes the key)."""
    doc = copy.deepcopy(BASE)
    for path, value in changes:
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node.setdefault(part, {})
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return doc


def rename(path: str, new_key: str) -> dict[str, Any]:
    """A copy of BASE with the key at ``path`` renamed to ``new_key`` (a misspelling)."""
    doc = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node[part]
    node[new_key] = node.pop(last)
    return doc


INLINE_NODE = {
    "name": "my-h100", "gpu": "h100-sxm", "gpus": 8, "fabric": {"kind": "nvswitch", "link": "nvlink4"},
    "pcie": {"link": "pcie5-x16"}, "nics": 8, "nic_link": "ib-ndr",
}

# (id, file content: dict -> YAML, str -> text, bytes -> raw; key path or None for the whole file;
#  a distinctive fragment of the message)
CASES: list[tuple[str, Any, str | None, str]] = [
    # wrong types
    ("nodes-string", mutate(("cluster.nodes", "two")), "cluster.nodes",
     "'two': input should be a valid integer"),
    ("nodes-quoted-number", mutate(("cluster.nodes", "2")), "cluster.nodes",
     "'2': input should be a valid integer"),
    ("tp-list", mutate(("parallelism.tp", [8])), "parallelism.tp", "a list: input should be a valid integer"),
    ("layers-float", mutate(("model.layers", 96.5)), "model.layers", "96.5: input should be a valid integer"),
    ("layers-whole-float", mutate(("model.layers", 96.0)), "model.layers",
     "96.0: input should be a valid integer"),
    ("tp-bool", mutate(("parallelism.tp", True)), "parallelism.tp", "True: input should be a valid integer"),
    ("sequence-parallel-int", mutate(("parallelism.sequence_parallel", 1)), "parallelism.sequence_parallel",
     "1: input should be a valid boolean"),
    ("model-list", mutate(("model", [1, 2])), "model", "a list: input should be a valid dictionary"),
    ("cluster-string", mutate(("cluster", "dgx")), "cluster", "input should be a valid dictionary"),
    ("name-list", mutate(("name", ["a"])), "name", "a list: input should be a valid string"),
    ("node-int", mutate(("cluster.node", 5)), "cluster.node", "5: input should be a valid string"),
    ("algorithm-per-op-int", mutate(("collectives.algorithm", {"all_reduce": 5})),
     "collectives.algorithm.all_reduce", "5: input should be a valid string"),
    # unknown keys, with did-you-mean
    ("unknown-top-level-key", rename("parallelism", "paralelism"), "paralelism",
     "unknown key (did you mean 'parallelism'?); allowed keys: calibration, cluster, collectives"),
    ("unknown-nested-key", mutate(("parallelism.tpp", 8)), "parallelism.tpp",
     "unknown key (did you mean 'tp'?)"),
    ("misspelt-required-top-level-key", rename("cluster", "clusterr"), "clusterr",
     "unknown key (did you mean 'cluster'?)"),
    ("misspelt-required-nested-key", rename("training.global_batch", "globl_batch"),
     "training.globl_batch", "unknown key (did you mean 'global_batch'?)"),
    ("misspelt-model-key", mutate(("model.hiden", 4096)), "model.hiden", "did you mean 'hidden'?"),
    ("non-string-key", BASE_TEXT + "5: 1\n", "5", "keys should be strings"),
    ("key-with-line-break", BASE_TEXT + '"a\\nb": 1\n', "'a\\nb'", "unknown key"),
    # zero, negative and absurd sizes
    ("nodes-zero", mutate(("cluster.nodes", 0)), "cluster.nodes",
     "0: input should be greater than or equal to 1"),
    ("global-batch-negative", mutate(("training.global_batch", -1)), "training.global_batch",
     "-1: input should be greater than or equal to 1"),
    ("micro-batch-zero", mutate(("training.micro_batch", 0)), "training.micro_batch",
     "greater than or equal to 1"),
    ("zero-stage-4", mutate(("parallelism.zero_stage", 4)), "parallelism.zero_stage",
     "4: input should be less than or equal to 3"),
    ("seed-negative", mutate(("simulate.seed", -1)), "simulate.seed", "greater than or equal to 0"),
    ("nodes-10e30", mutate(("cluster.nodes", 10**30)), "cluster.nodes",
     "1000000000000000000000000000000: input should be less than or equal to 1000000"),
    ("layers-1.0e+400-is-inf",
     BASE_TEXT.replace("preset: gpt3-175b", "preset: gpt3-175b\n  layers: 1.0e+400"), "model.layers",
     "inf: input should be a valid integer"),
    ("layers-1e400-is-a-string-in-yaml-1.1",
     BASE_TEXT.replace("preset: gpt3-175b", "preset: gpt3-175b\n  layers: 1e400"),
     "model.layers", "'1e400': input should be a valid integer"),
    ("nodes-20000-bit-hex", BASE_TEXT.replace("nodes: 2", f"nodes: {HUGE_HEX}"), "cluster.nodes",
     "a 20000-bit integer: input should be less than or equal to 1000000"),
    ("name-20000-bit-hex", BASE_TEXT + f"name: {HUGE_HEX}\n", "name",
     "a 20000-bit integer: input should be a valid string"),
    ("preset-20000-bit-hex", BASE_TEXT.replace("preset: gpt3-175b", f"preset: {HUGE_HEX}"), "model.preset",
     "unknown preset a 20000-bit integer"),
    ("schedule-20000-bit-hex", BASE_TEXT + f"  schedule: {HUGE_HEX}\n", "parallelism.schedule",
     "a 20000-bit integer is not one of 'gpipe', '1f1b' or 'interleaved-1f1b'"),
    ("decimal-int-over-4300-digits", BASE_TEXT.replace("nodes: 2", "nodes: 1" + "0" * 5000), None,
     "invalid YAML: a number has more than 4300 digits"),
    ("oversubscription-below-1", mutate(("cluster.fabric.oversubscription", 0.5)),
     "cluster.fabric.oversubscription", "0.5: input should be greater than or equal to 1"),
    ("oversubscription-nan", mutate(("cluster.fabric.oversubscription", float("nan"))),
     "cluster.fabric.oversubscription", "nan: input should be a finite number"),
    ("sigma-inf", mutate(("noise.straggler.sigma", float("inf"))), "noise.straggler.sigma",
     "inf: input should be a finite number"),
    # cross-field rules
    ("tp-not-dividing-heads", mutate(("parallelism.tp", 5)), "parallelism.tp",
     "5 does not divide model.heads (96)"),
    ("dp-gives-wrong-gpu-count", mutate(("parallelism.dp", 2)), "parallelism.dp",
     "tp*pp*dp*cp = 8*2*2*1 = 32 but the cluster has 16 GPUs; use dp = 1"),
    ("tp-3-gives-wrong-gpu-count", mutate(("parallelism.tp", 3)), "parallelism.dp",
     "tp*pp*dp*cp = 3*2*1*1 = 6 but the cluster has 16 GPUs; choose tp*pp*cp dividing the GPU count"),
    ("implied-dp-gives-wrong-gpu-count", mutate(("parallelism.tp", 3), ("parallelism.dp", DELETE)),
     "parallelism", "tp*pp*dp*cp = 3*2*2*1 = 12 but the cluster has 16 GPUs"),
    ("cp-not-dividing-seq-len", mutate(("parallelism.cp", 3)), "parallelism.cp",
     "3 does not divide model.seq_len (2048)"),
    ("global-batch-not-multiple-of-micro-dp",
     mutate(("parallelism.pp", 1), ("parallelism.dp", 2), ("training.global_batch", 63)),
     "training.global_batch", "63 is not a multiple of micro_batch*dp = 1*2 = 2"),
    ("pp-more-than-layers", mutate(("model.layers", 1)), "parallelism.pp",
     "2 stages is more than model.layers (1)"),
    ("kv-heads-not-dividing-heads", mutate(("model.kv_heads", 7)), "model.kv_heads",
     "7 does not divide model.heads (96)"),
    ("heads-not-dividing-hidden", mutate(("model.hidden", 1000)), "model.heads",
     "96 does not divide model.hidden (1000)"),
    ("top-k-more-than-experts", mutate(("model.top_k", 2)), "model.top_k",
     "2 is more than model.experts (1)"),
    ("experts-not-divisible-by-ep", mutate(("model.experts", 8), ("parallelism.ep", 3)), "parallelism.ep",
     "3 does not divide model.experts (8)"),
    ("virtual-stages-without-interleaved", mutate(("parallelism.virtual_stages", 2)),
     "parallelism.virtual_stages", "2 needs schedule: interleaved-1f1b (got 1f1b)"),
    ("interleaved-microbatches-not-multiple-of-pp",
     mutate(("parallelism.schedule", "interleaved-1f1b"), ("parallelism.virtual_stages", 2),
            ("training.global_batch", 63)),
     "training.global_batch", "interleaved-1f1b needs the microbatch count (63"),
    ("pipeline-flushes-not-dividing", mutate(("parallelism.pipeline_flushes", 5)),
     "parallelism.pipeline_flushes", "5 does not divide the step's 64 microbatches"),
    ("pipeline-flushes-with-a-what-if",
     mutate(("parallelism.pipeline_flushes", 2), ("training.sync_every", 4)),
     "parallelism.pipeline_flushes", "not priced together with training.sync_every"),
    ("gpus-per-node-more-than-node", mutate(("cluster.gpus_per_node", 16)), "cluster.gpus_per_node",
     "16 is more than the 8 GPUs of node 'dgx-a100-80gb'"),
    ("no-nics-for-several-nodes", mutate(("cluster.fabric.nics_per_node", 0)), "cluster.nodes",
     "2 nodes need NICs but node 'dgx-a100-80gb' has none"),
    ("torus-dims-count",
     mutate(("cluster.fabric.topology", "torus"), ("cluster.fabric.torus_dims", [1, 1, 2, 1])),
     "cluster.fabric.torus_dims", "expected 2 or 3 dimensions"),
    ("torus-dims-product",
     mutate(("cluster.fabric.topology", "torus"), ("cluster.fabric.torus_dims", [2, 3])),
     "cluster.fabric.torus_dims", "[2, 3] holds 6 nodes, not cluster.nodes (2)"),
    # unknown names, with did-you-mean
    ("unknown-node", mutate(("cluster.node", "dgx-h10")), "cluster.node",
     "unknown node 'dgx-h10' (did you mean 'dgx-h100'?); known: dgx-a100-40gb"),
    ("node-with-trailing-newline", BASE_TEXT.replace("node: dgx-a100-80gb", "node: |\n    dgx-a100-80gb\n"),
     "cluster.node", "'dgx-a100-80gb\\n' is not a plain name"),
    ("unknown-link", mutate(("cluster.fabric.link", "ib-hdrr")), "cluster.fabric.link",
     "unknown link 'ib-hdrr' (did you mean 'ib-hdr'?)"),
    ("unknown-topology", mutate(("cluster.fabric.topology", "fat-tre")), "cluster.fabric.topology",
     "'fat-tre' is not one of 'fat-tree', 'rail-optimized', 'single-switch' or 'torus' "
     "(did you mean 'fat-tree'?)"),
    ("unknown-dtype", mutate(("training.dtype", "bf61")), "training.dtype",
     "'bf61' is not one of 'fp32', 'tf32', 'bf16', 'fp16', 'fp8' or 'fp4' (did you mean 'bf16'?)"),
    ("tf32-is-not-a-training-dtype", mutate(("training.dtype", "tf32")), "training.dtype",
     "tf32 is a GPU math mode, not a training dtype"),
    ("unknown-schedule", mutate(("parallelism.schedule", "1f1")), "parallelism.schedule",
     "'1f1' is not one of 'gpipe', '1f1b' or 'interleaved-1f1b' (did you mean '1f1b'?)"),
    ("schedule-list", mutate(("parallelism.schedule", ["1f1b"])), "parallelism.schedule",
     "a list is not one of 'gpipe', '1f1b' or 'interleaved-1f1b'"),
    ("unknown-recompute", mutate(("parallelism.recompute", "partial")), "parallelism.recompute",
     "'partial' is not one of 'none', 'selective' or 'full'"),
    ("unknown-engine", mutate(("simulate.engine", "dse")), "simulate.engine", "(did you mean 'des'?)"),
    ("unknown-preset", mutate(("model.preset", "gpt3-175")), "model.preset",
     "unknown preset 'gpt3-175' (did you mean 'gpt3-175b'?); known: gpt3-175b"),
    ("preset-list", mutate(("model.preset", ["gpt3-175b"])), "model.preset", "unknown preset a list"),
    ("inline-node-misspelt-key", mutate(("cluster.node", {**INLINE_NODE, "gpuz": 8})), "cluster.node.gpuz",
     "unknown key (did you mean 'gpu'?)"),
    ("inline-node-missing-key", mutate(("cluster.node", {"name": "x"})), "cluster.node.gpu",
     "required key is missing"),
    ("inline-node-unknown-gpu", mutate(("cluster.node", {**INLINE_NODE, "gpu": "h100-sxmm"})),
     "cluster.node.gpu", "unknown gpu 'h100-sxmm' (did you mean 'h100-sxm'?)"),
    # number formats the GPU cannot run
    ("fp8-on-ampere", mutate(("training.dtype", "fp8")), "training.dtype",
     "the a100-sxm-80gb has no fp8 tensor cores"),
    ("mxfp8-on-hopper", mutate(("cluster.node", "dgx-h100"), ("training.dtype", "fp8"),
                               ("training.stack", {"base": "megatron-core",
                                                   "kernels": {"fp8_scaling": "mxfp8"}})),
     "training.stack.kernels.fp8_scaling",
     "MXFP8 needs block-scaled tensor cores (NVIDIA Blackwell, AMD CDNA 4"),
    ("mxfp8-fp8-weight-gather", mutate(("cluster.node", "dgx-b200"), ("training.dtype", "fp8"),
                                       ("training.stack", {"base": "megatron-core",
                                                           "kernels": {"fp8_scaling": "mxfp8"},
                                                           "data_parallel": {"param_gather_dtype": "fp8"}})),
     "training.stack.kernels.fp8_scaling", "set training.stack.data_parallel.param_gather_dtype: bf16"),
    # missing keys
    ("missing-cluster", {k: v for k, v in BASE.items() if k != "cluster"}, "cluster",
     "required key is missing"),
    ("missing-global-batch", mutate(("training.global_batch", DELETE)), "training.global_batch",
     "required key is missing"),
    # the file itself
    ("yaml-syntax-error", "cluster:\n  node: [dgx-a100-80gb\n  nodes: 2\n", None,
     "invalid YAML: expected ',' or ']', but got ':' at line 3, column 8"),
    ("tab-indentation", "cluster:\n\tnode: dgx-a100-80gb\n", None, "at line 2, column 1"),
    ("empty-file", "", None, "file is empty; expected a YAML mapping"),
    ("only-comments", "# nothing here\n---\n", None, "file is empty; expected a YAML mapping"),
    ("document-is-a-list", "- cluster\n- model\n", None, "top level is a list; expected a mapping of keys"),
    ("document-is-a-string", "just some words\n", None, "top level is a str; expected a mapping of keys"),
    ("several-documents", BASE_TEXT + "---\n" + BASE_TEXT, None, "several YAML documents"),
    ("binary-garbage", b"\x7fELF\x02\x01\x01\x00\x00\x00garbage", None,
     "not a text file (binary data found)"),
    ("invalid-utf8", b"cluster:\n  node: dgx-\xff\xfe\n", None, "not UTF-8 text; expected a YAML mapping"),
    ("control-character", "cluster:\n  node: dgx\x07\n", None, "unacceptable character #x0007"),
    ("python-tag", "cluster: !!python/object/apply:os.system [ls]\n", None,
     "could not determine a constructor for the tag"),
    ("bad-explicit-bool-tag", BASE_TEXT + "name: !!bool maybe\n", None,
     "a value does not match its explicit tag"),
    ("bad-explicit-timestamp-tag", BASE_TEXT + "name: !!timestamp soon\n", None,
     "a value does not match its explicit tag"),
    ("empty-explicit-int-tag", BASE_TEXT + "name: !!int\n", None, "a value does not match its explicit tag"),
    ("bad-date", BASE_TEXT + "name: 2024-13-45\n", None, "invalid YAML: month must be in 1..12"),
    ("nested-too-deeply", "cluster: " + "[" * 500 + "]" * 500 + "\n", None,
     "invalid YAML: lists or mappings nested too deeply"),
    ("undefined-alias", "cluster: *nowhere\n", None, "found undefined alias 'nowhere'"),
]


def _write(path: Path, content: Any) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")


def _run_check(path: Path | str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("content", "key", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_scenario_is_one_clear_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    content: Any, key: str | None, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    _write(path, content)
    code, out, err = _run_check(path, capsys)
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    prefix = f"error: {path}: " + (f"{key}: " if key is not None else "")
    assert lines[0].startswith(prefix), lines[0]
    assert fragment in lines[0]
    # the loader API raises the same ConfigError the CLI printed
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert lines[0] == f"error: {info.value}"
    assert info.value.key == key


def test_case_table_is_large_and_ids_unique() -> None:
    ids = [c[0] for c in CASES]
    assert len(ids) >= 24
    assert len(set(ids)) == len(ids)


def test_valid_scenario_exits_0_and_prints_gpu_count(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.yaml"
    _write(path, BASE)
    code, out, err = _run_check(path, capsys)
    assert code == 0, err
    assert err == ""
    assert "GPUs" in out
    assert "16 x" in out  # 2 nodes x 8 GPUs
    assert load_scenario(path).parallelism.tp == 8


def test_documented_message_format_holds_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SCENARIO_FORMAT.md: ``<file>: parallelism.tp: <tp> does not divide model.heads (96)``.

    The document's own example uses tp: 3, but 3 divides 96 (96 = 3 * 32), so a real file
    with tp: 3 fails the GPU-count rule instead (case ``tp-3-gives-wrong-gpu-count``); tp: 5
    is the smallest tp above 1 that does not divide 96.
    """
    path = tmp_path / "bad.yaml"
    _write(path, mutate(("parallelism.tp", 5)))
    code, _, err = _run_check(path, capsys)
    assert code == 2
    assert " ".join(err.split()) == f"error: {path}: parallelism.tp: 5 does not divide model.heads (96)"


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nowhere.yaml"
    code, out, err = _run_check(path, capsys)
    assert code == 2
    assert err.strip() == f"error: {path}: file not found"
    assert "Traceback" not in out + err


def test_directory_path_via_loader(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file") as info:
        load_scenario(tmp_path)
    assert info.value.source == str(tmp_path)


def test_directory_path_via_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run_check(tmp_path, capsys)
    assert code == 2
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {tmp_path}: ")


def test_file_larger_than_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(BASE_TEXT.encode() + b"#" * MAX_FILE_BYTES)
    code, _, err = _run_check(path, capsys)
    assert code == 2
    assert err.strip() == f"error: {path}: file is larger than 16 MiB"


def test_fabric_too_small_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "radix.yaml"
    _write(path, {"cluster": {"node": "dgx-a100-80gb", "nodes": 3, "fabric": {"switch_radix": 4}}})
    code, _, err = _run_check(path, capsys)
    assert code == 2
    assert err.startswith(f"error: {path}: cluster.fabric.switch_radix: 12 leaves exceed")


def test_message_text_is_printed_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "emoji.yaml"
    _write(path, mutate(("cluster.node", "a:smile:b")))
    code, _, err = _run_check(path, capsys)
    assert code == 2
    assert "unknown node 'a:smile:b'" in err


def test_boolean_oversubscription_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bool.yaml"
    _write(path, mutate(("cluster.fabric.oversubscription", True)))
    with pytest.raises(ConfigError, match="cluster.fabric.oversubscription"):
        load_scenario(path)


@pytest.mark.parametrize(("text", "expected"), [
    ("name: a\nname: b\n", "key 'name' given twice (first at line 1) at line 2"),
    ("parallelism: {tp: 4, tp: 8}\n", "key 'tp' given twice"),
    ("parallelism:\n  tp: 010\n", "ambiguous number '010'"),
    ("simulate:\n  seed: 1:30\n", "ambiguous number '1:30'"),
])
def test_yaml_ambiguities_are_refused_with_their_line(text: str, expected: str) -> None:
    """A duplicated key is not "last wins", and YAML 1.1's octal and base-60 integers are not
    read silently as something other than what the user typed."""
    with pytest.raises(ConfigError, match=re.escape(expected)):
        parse_yaml_mapping(text, "s.yaml")


def test_special_files_are_refused_before_reading() -> None:
    """A character device would read forever; a FIFO would block."""
    with pytest.raises(ConfigError, match="not a regular file"):
        load_scenario("/dev/zero")


def test_utf16_text_is_named(tmp_path: Path) -> None:
    path = tmp_path / "u16.yaml"
    path.write_text("name: x\n", encoding="utf-16")
    with pytest.raises(ConfigError, match="UTF-16"):
        load_scenario(path)


@pytest.mark.parametrize(("fabric", "key", "expected"), [
    ({"oversubscription": 1000.0}, "cluster.fabric.oversubscription", "leaves no uplink"),
    ({"nics_per_node": 40}, "cluster.fabric.nics_per_node", "at most 4 NICs per GPU"),
])
def test_physically_impossible_fabrics_are_refused(fabric, key, expected) -> None:
    from simulator.config import scenario_from_mapping

    data = {"name": "x", "cluster": {"node": "dgx-h100", "nodes": 2, "fabric": fabric}}
    with pytest.raises(ConfigError, match=expected) as info:
        scenario_from_mapping(data, "f.yaml")
    assert info.value.key == key


@pytest.mark.parametrize(("cluster", "expected"), [
    ({"node": "dgx-h100", "nodes": 125_000, "fabric": {"topology": "single-switch"}},
     "125,000 nodes x 8 GPUs = 1,000,000 GPUs is more than clustersim simulates (at most 131,072 "
     "GPUs, 16,384 of these nodes)"),
    ({"node": "gb200-nvl72", "nodes": 1_821, "fabric": {"topology": "torus"}},
     "1,821 nodes x 72 GPUs = 131,112 GPUs"),
    ({"node": "dgx-h100", "nodes": 131_072, "fabric": {"switch_radix": 1024}}, "1,048,576 GPUs"),
], ids=["single-switch", "torus-nvl72", "fat-tree-radix-1024"])
def test_a_cluster_beyond_the_gpu_bound_is_refused_before_its_graph_is_built(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster, expected) -> None:
    """A million GPUs on a fabric without a radix bound took 90 s and 9 GB to run and was killed
    for lack of memory by ``clustersim collectives`` (exit -9, no message): one line, at once."""
    import time

    path = tmp_path / "huge.yaml"
    _write(path, {"cluster": cluster})
    start = time.perf_counter()
    for command in ("check", "collectives"):
        code = main([command, str(path)])
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and line.startswith(f"error: {path}: cluster.nodes: ") and expected in line
    assert time.perf_counter() - start < 20


def test_the_largest_cluster_allowed_loads() -> None:
    """Exactly :data:`MAX_GPUS` GPUs is accepted (16,384 DGX H100, a two-tier radix-128 fabric is
    too small, three tiers hold it); one node more is not."""
    from simulator.config import scenario_from_mapping
    from simulator.config.fabric_size import MAX_GPUS

    cluster = {"node": "dgx-h100", "nodes": MAX_GPUS // 8, "fabric": {"switch_radix": 128}}
    assert scenario_from_mapping({"cluster": cluster}, "max.yaml").cluster.nodes == 16_384
    with pytest.raises(ConfigError, match="131,080 GPUs is more than") as info:
        scenario_from_mapping({"cluster": {**cluster, "nodes": 16_385}}, "max.yaml")
    assert info.value.key == "cluster.nodes"
