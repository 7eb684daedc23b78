"""Megatron-LM log import on the real Primus log of Llama 2 7B on 8 x 8 MI325X
(validation/training_logs, see validation/README.md): arguments, iteration times, the
warm-up rule, the draft scenario (it loads and runs), and clear errors for bad files."""

from __future__ import annotations

import gzip
import re
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulator.cli import main
from simulator.errors import ClusterSimError, ConfigError, UsageError
from simulator.measure.draft import draft_from_log
from simulator.measure.megatron_log import read_megatron_log
from simulator.measure.scenario_text import render_draft
from simulator.measure.steady import steady_state
from simulator.pipeline import open_scenario, run_scenario

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "validation" / "training_logs" / "primus-megatron_llama2-7b_8x8-mi325x.log.gz"
NODE = "mi325x-platform"


@pytest.fixture(scope="module")
def log():
    return read_megatron_log(LOG)


@pytest.fixture(scope="module")
def draft(log):
    return draft_from_log(log, NODE, 8)


def _logged_times_ms() -> dict[int, float]:
    """The oracle: elapsed ms per iteration, read from the raw text with one regex."""
    text = gzip.decompress(LOG.read_bytes()).decode("utf-8", "replace")
    found = re.findall(r"iteration\s+(\d+)/\s*50 \|.*?elapsed time per iteration \(ms\): ([\d.]+)",
                       text)
    return {int(i): float(ms) for i, ms in found}


def test_arguments_are_llama2_7b_on_64_gpus(log):
    """Llama 2 7B (Touvron et al. 2023, arXiv:2307.09288; HF config): 32 layers, hidden 4096,
    32 heads, FFN 11008, 4096 tokens; the run (validation/README.md): 64 GPUs, batch 2048."""
    a = log.arguments
    assert (a["num_layers"], a["hidden_size"], a["num_attention_heads"]) == (32, 4096, 32)
    assert (a["ffn_hidden_size"], a["seq_length"], a["swiglu"]) == (11008, 4096, True)
    assert (a["tensor_model_parallel_size"], a["pipeline_model_parallel_size"]) == (1, 1)
    assert (a["data_parallel_size"], a["world_size"]) == (64, 64)
    assert (a["global_batch_size"], a["micro_batch_size"]) == (2048, 4)
    assert a["fp8"] == "hybrid" and a["bf16"] is True and a["recompute_granularity"] is None
    assert a["inference_dynamic_batching_buffer_guaranteed_fraction"] == 0.2   # no dots printed
    assert log.padded_vocab == 32000


def test_iteration_lines_match_the_raw_text(log):
    oracle = _logged_times_ms()
    frame = log.iterations
    assert frame["iteration"].tolist() == list(range(1, 51)) == sorted(oracle)
    np.testing.assert_allclose(frame["elapsed_s"], [oracle[i] / 1e3 for i in range(1, 51)])
    assert frame["elapsed_s"].iloc[0] == pytest.approx(306.1305)   # warm-up iteration
    assert frame["global_batch"].eq(2048).all()


def test_steady_state_step_time_is_the_median_after_warm_up(draft):
    """The rule drops the first 10% (iterations 1-5); iteration 6 is within 5% of the median,
    so iterations 6-50 remain. README: about 6.40 s, 943 TFLOP/s, 20,470 tokens/s per GPU."""
    oracle = _logged_times_ms()
    m = draft.measured
    assert m.iterations == list(range(6, 51)) and m.logged == 50
    assert m.step_time_s == pytest.approx(statistics.median(oracle[i] for i in range(6, 51)) / 1e3)
    assert m.step_time_s == pytest.approx(6.40, rel=0.01)
    assert m.tflops_per_gpu == pytest.approx(943, rel=0.01)
    assert m.tokens_logged and m.tokens_per_gpu_s == pytest.approx(20470, rel=0.01)
    # tokens/s per GPU is global batch x sequence / (step time x GPUs)
    assert m.tokens_per_gpu_s == pytest.approx(2048 * 4096 / (m.step_time_s * 64), rel=0.01)


@pytest.mark.parametrize(("times", "kept_from"), [
    ([300.0] + [6.4] * 9, 1),                       # one warm-up iteration of ten
    ([300.0, 9.0, 7.2, 6.4, 6.41, 6.39, 6.4, 6.42, 6.4, 6.38], 3),  # settles at the 4th
    ([300.0, 6.4, 6.4, 6.4, 9.0, 6.4, 6.4, 6.4, 6.4, 6.4], 1),      # a later outlier stays
    ([5.0], 0),
])
def test_warm_up_rule(times, kept_from):
    steady = steady_state(np.array(times))
    assert steady.kept.tolist() == [i >= kept_from for i in range(len(times))]
    assert steady.step_time_s == pytest.approx(float(np.median(times[kept_from:])))


def test_draft_maps_the_arguments(draft):
    s = draft.scenario
    assert s["cluster"] == {"node": NODE, "nodes": 8}
    assert s["model"] == {"layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 11008,
                          "mlp": "swiglu", "seq_len": 4096, "vocab": 32000, "tied_embeddings": False}
    # Primus's fork logs align_param_gather False: the stack says so (pp 1 here, so no effect),
    # TE's fused cross entropy (cross_entropy_fusion_impl te), and gradient_accumulation_fusion
    # False (ROCm: the DDP hook adds each microbatch's gradient into the fp32 main gradient)
    assert s["training"] == {"stack": {"base": "megatron-core",
                                       "data_parallel": {"param_gather_launch": "bucket",
                                                         "grad_accumulation": "add"},
                                       "loss": {"kernel": "te"}},
                             "global_batch": 2048, "micro_batch": 4, "dtype": "fp8", "attention": "flash"}
    p = s["parallelism"]
    assert (p["tp"], p["pp"], p["dp"], p["cp"], p["ep"]) == (1, 1, 64, 1, 1)
    assert (p["zero_stage"], p["recompute"], p["overlap_grad_reduce"]) == (1, "none", True)
    assert any("fabric" in note for note in draft.not_inferred)


@pytest.mark.parametrize(("arguments", "graphs"), [
    ({}, None),                                                                  # the log: no graphs
    ({"cuda_graph_impl": "transformer_engine",
      "cuda_graph_scope": "['attn', 'moe_router', 'moe_preprocess']"}, "partial"),  # TE-scoped modules
    ({"external_cuda_graph": True}, "full"),                                     # whole layers, older flag
    ({"cuda_graph_impl": "local", "cuda_graph_scope": "full_iteration"}, "full"),
    ({"cuda_graph_impl": "transformer_engine",
      "cuda_graph_modules": "[<CudaGraphModule.attn: 2>, <CudaGraphModule.mlp: 3>]"}, "full"),
])
def test_draft_reads_the_cuda_graph_capture(log, arguments, graphs):
    """``kernels.cuda_graphs`` from the log's CUDA graph arguments (a tag the validation note
    uses; the shipped log sets enable_cuda_graph and external_cuda_graph False)."""
    drafted = draft_from_log(replace(log, arguments={**log.arguments, **arguments}), NODE, 8)
    stack = drafted.scenario["training"]["stack"]
    assert stack.get("kernels", {}).get("cuda_graphs") == graphs


@pytest.mark.parametrize(("arguments", "optimizer", "zero_stage", "data_parallel"), [
    ({}, None, 1, {}),                                                    # the log: Adam, distributed
    ({"optimizer": "muon", "use_distributed_optimizer": False,          # Muon as argument validation
      "use_layer_wise_distributed_optimizer": True, "muon_nesterov": True,    # rewrites it
      "overlap_param_gather": False},
     {"name": "muon", "nesterov": True}, 1, {"sharded_reduce": "all_reduce", "overlap_param_gather": False}),
    ({"optimizer": "dist_muon", "use_distributed_optimizer": False, "muon_num_ns_steps": 6},  # the log's
     {"name": "muon", "ns_steps": 6}, 1, {"sharded_reduce": "all_reduce", "overlap_param_gather": True}),
    ({"optimizer": "muon", "use_distributed_optimizer": False, "muon_split_qkv": False},
     {"name": "muon", "split_qkv": False}, 0, {}),                      # Muon, every rank the whole state
])
def test_draft_reads_the_optimizer(log, arguments, optimizer, zero_stage, data_parallel):
    """``training.optimizer`` and the layer-wise distributed optimizer's collectives from the
    log's optimizer arguments (Megatron-LM prints them after its validation)."""
    drafted = draft_from_log(replace(log, arguments={**log.arguments, **arguments}), NODE, 8)
    training = drafted.scenario["training"]
    assert training.get("optimizer") == optimizer
    assert drafted.scenario["parallelism"]["zero_stage"] == zero_stage
    dp = training["stack"].get("data_parallel", {})
    assert {key: dp[key] for key in ("sharded_reduce", "overlap_param_gather") if key in dp} == data_parallel


def test_draft_notes_an_optimizer_it_does_not_price(log):
    drafted = draft_from_log(replace(log, arguments={**log.arguments, "optimizer": "lion"}), NODE, 8)
    assert "optimizer" not in drafted.scenario["training"]
    assert any("optimizer lion" in note for note in drafted.not_modelled)


def test_import_log_writes_a_scenario_that_loads_and_runs(tmp_path, capsys):
    out = tmp_path / "llama2.yaml"
    code = main(["import-log", str(LOG), "--node", NODE, "--nodes", "8", "-o", str(out)])
    assert code == 0 and "6.39" in capsys.readouterr().out
    text = out.read_text()
    assert "# Not inferred from the log" in text and "fabric" in text
    assert not list(tmp_path.glob(".*.tmp")), "temporary file left behind"
    session = open_scenario(out)
    assert session.scenario.model.layers == 32 and session.hardware.gpus == 64
    result = run_scenario(out)
    assert result.step_time_s > 0
    assert main(["run", str(out), "--json"]) == 0


def test_import_log_prints_the_draft_without_output_file(capsys):
    assert main(["import-log", str(LOG), "--node", NODE, "--nodes", "8"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# Draft scenario") and "base: megatron-core" in printed


def test_import_log_json_is_the_draft_and_the_measured_steady_state(capsys, tmp_path):
    """--json: strict JSON with the scenario mapping, the median step (6.39 s) and the open
    items; with -o the YAML is written as well."""
    import json

    out = tmp_path / "draft.yaml"
    assert main(["import-log", str(LOG), "--node", NODE, "--nodes", "8", "--json", "-o", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"]["model"]["layers"] == 32 and data["written_to"] == str(out)
    assert abs(data["measured"]["step_time_s"] - 6.391) < 0.01 and data["not_inferred"]
    assert out.read_text().startswith("# Draft scenario")


def test_render_is_valid_yaml_for_the_loader(draft, tmp_path):
    path = tmp_path / "draft.yaml"
    path.write_text(render_draft(draft, LOG.name))
    assert open_scenario(path).scenario.training.global_batch == 2048


def _upstream_log(folder: Path) -> Path:
    """A log in upstream Megatron-LM's own format (training.py training_log; arguments.py
    _print_args), with GQA, interleaved pipeline, full recompute, no distributed optimizer."""
    args = {"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "group_query_attention": True, "num_query_groups": 8, "ffn_hidden_size": 14336,
            "seq_length": 8192, "padded_vocab_size": 128256, "swiglu": True,
            "tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2,
            "num_layers_per_virtual_pipeline_stage": 4, "context_parallel_size": 1,
            "sequence_parallel": True, "global_batch_size": 128, "micro_batch_size": 1,
            "recompute_granularity": "full", "recompute_method": "uniform",
            "recompute_num_layers": 1, "bf16": True, "fp8": None,
            "use_distributed_optimizer": False, "overlap_grad_reduce": False, "world_size": 16}
    lines = ["------------------------ arguments ------------------------"]
    lines += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in sorted(args.items())]
    lines += ["-------------------- end of arguments ---------------------"]
    for i, ms in enumerate([9000.0, 2300.0, 2000.5, 2001.0, 1999.0, 2002.0], start=1):
        lines.append(f" [2024-05-01 10:00:0{i}] iteration {i:8d}/{100:8d} | consumed samples: "
                     f"{128 * i:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate:"
                     f" 1.0E-05 | global batch size:   128 | lm loss: 1.0E+01 | loss scale: 1.0 |"
                     " number of skipped iterations:   0 | number of nan iterations:   0 |")
    path = folder / "megatron.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_upstream_format_maps_gqa_interleaving_and_recompute(tmp_path):
    draft = draft_from_log(read_megatron_log(_upstream_log(tmp_path)), "dgx-h100", 2)
    s = draft.scenario
    assert s["model"]["kv_heads"] == 8 and s["model"]["vocab"] == 128256
    p = s["parallelism"]
    assert (p["tp"], p["pp"], p["dp"], p["virtual_stages"]) == (4, 2, 2, 4)
    assert (p["schedule"], p["recompute"], p["zero_stage"]) == ("interleaved-1f1b", "full", 0)
    assert s["training"]["dtype"] == "bf16"
    assert draft.measured.step_time_s == pytest.approx(2.00075)   # 1: warm-up; 2: not settled
    assert draft.measured.iterations == [3, 4, 5, 6]
    assert draft.measured.tflops_per_gpu is None and not draft.measured.tokens_logged
    assert any("recompute_num_layers 1" in item for item in draft.not_modelled)


def test_block_recompute_drafts_the_recomputed_share(tmp_path):
    """--recompute-method block --recompute-num-layers 2 on 32 layers over pp 2 x 4 virtual
    stages (4 layers a chunk): half of each chunk's layers, parallelism.recompute_fraction 0.5,
    and no "not modelled" note; the drafted scenario loads."""
    path = _upstream_log(tmp_path)

    def line(key: str, value) -> str:       # as _upstream_log prints an argument
        return f"  {key} {'.' * (48 - len(key))} {value}\n"

    text = path.read_text().replace(line("recompute_method", "uniform"), line("recompute_method", "block"))
    path.write_text(text.replace(line("recompute_num_layers", 1), line("recompute_num_layers", 2)))
    draft = draft_from_log(read_megatron_log(path), "dgx-h100", 2)
    p = draft.scenario["parallelism"]
    assert (p["recompute"], p["recompute_fraction"]) == ("full", 0.5)
    assert not any("recompute_num_layers" in item for item in draft.not_modelled)
    out = tmp_path / "draft.yaml"
    out.write_text(render_draft(draft, path.name))
    assert open_scenario(out).scenario.parallelism.full_recompute_share == 0.5


def test_activation_offloading_drafts_the_offloaded_layers(tmp_path):
    """--cpu-offloading --cpu-offloading-num-layers 8 (activations; pp 1, no recompute, as
    Megatron-Core requires): parallelism.cpu_offload_layers 8, and the draft loads."""
    path = _upstream_log(tmp_path)

    def line(key: str, value) -> str:
        return f"  {key} {'.' * (48 - len(key))} {value}\n"

    text = path.read_text()
    for key, old, new in (("pipeline_model_parallel_size", 2, 1),
                          ("num_layers_per_virtual_pipeline_stage", 4, None),
                          ("recompute_granularity", "full", None), ("world_size", 16, 8)):
        text = text.replace(line(key, old), line(key, new))
    text = text.replace(line("bf16", True), line("bf16", True) + line("cpu_offloading", True)
                        + line("cpu_offloading_num_layers", 8))
    path.write_text(text)
    draft = draft_from_log(read_megatron_log(path), "dgx-h100", 1)
    p = draft.scenario["parallelism"]
    assert (p["pp"], p["recompute"], p["cpu_offload_layers"]) == (1, "none", 8)
    out = tmp_path / "draft.yaml"
    out.write_text(render_draft(draft, path.name))
    assert open_scenario(out).scenario.parallelism.cpu_offload_layers == 8


def test_upstream_uneven_pipeline_split_maps_to_stage_layer_counts(tmp_path):
    """--decoder-first/last-pipeline-num-layers become parallelism.first/last_stage_layers."""
    path = _upstream_log(tmp_path)
    text = path.read_text().replace(
        "-------------------- end of arguments",
        f"  decoder_first_pipeline_num_layers {'.' * 15} 12\n"
        f"  decoder_last_pipeline_num_layers {'.' * 16} 20\n-------------------- end of arguments")
    path.write_text(text)
    p = draft_from_log(read_megatron_log(path), "dgx-h100", 2).scenario["parallelism"]
    assert (p["first_stage_layers"], p["last_stage_layers"]) == (12, 20)


@pytest.mark.parametrize(("key", "old", "new", "fragment"), [
    ("seq_length", 8192, 10**14, "seq_length: 100000000000000 is outside what a scenario takes for "
                                 "model.seq_len (int 1..100,000,000); no draft written"),
    ("num_layers", 32, 10**9, "num_layers: 1000000000 is outside what a scenario takes for "
                              "model.layers (int 1..10,000)"),
    ("micro_batch_size", 1, 10**12, "the draft would not load (training.global_batch: 128 is not a "
                                    "multiple of micro_batch*dp"),
], ids=["seq_length", "num_layers", "micro_batch_size"])
def test_import_log_refuses_a_draft_check_would_refuse_and_writes_nothing(tmp_path, capsys, key, old,
                                                                         new, fragment):
    """The draft must pass ``clustersim check``: a logged value outside the scenario's range is
    one error naming the log, the argument and the schema's range; no file, nothing printed."""
    path = _upstream_log(tmp_path)
    dots = "." * (48 - len(key))
    path.write_text(path.read_text().replace(f"  {key} {dots} {old}\n", f"  {key} {dots} {new}\n"))
    out = tmp_path / "draft.yaml"
    for extra in (["-o", str(out)], []):
        code = main(["import-log", str(path), "--node", "dgx-h100", "--nodes", "2", *extra])
        captured = capsys.readouterr()
        (line,) = captured.err.strip().splitlines()
        assert code == 2 and captured.out == "" and line.startswith(f"error: {path}: ")
        assert fragment in line and "Traceback" not in captured.err
    assert not list(tmp_path.glob("*.yaml")) and not list(tmp_path.glob(".*"))

def _cut(folder: Path, name: str, marker: str) -> Path:
    """The real log cut just before the first line containing ``marker``."""
    text = gzip.decompress(LOG.read_bytes()).decode("utf-8", "replace")
    path = folder / name
    path.write_text(text[: text.index(marker)])
    return path


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda d: _write(d, "empty.log", b""), "empty"),
    (lambda d: _write(d, "bin.log", bytes(range(256)) * 16), "binary"),
    (lambda d: _write(d, "cut.log.gz", LOG.read_bytes()[:20_000]), "truncated"),
    (lambda d: _cut(d, "in-args.log", "  num_layers ....."), "never ends"),
    (lambda d: _cut(d, "before-training.log", "iteration        1/"), "no iteration lines"),
    (lambda d: _write(d, "readme.md", b"# a README\n\nnot a log\n"), "no Megatron arguments block"),
    (lambda d: d / "absent.log", "not found"),
])
def test_bad_logs_raise_one_config_error_naming_the_file(tmp_path, make, fragment):
    path = make(tmp_path)
    with pytest.raises(ConfigError) as caught:
        read_megatron_log(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and fragment in message and "\n" not in message


@pytest.mark.parametrize(("args", "fragment", "kind"), [
    (["--node", NODE, "--nodes", "4"], "world size 64 is not --nodes 4 x 8", ConfigError),
    (["--node", "mi325x-platfrom", "--nodes", "8"], "did you mean 'mi325x-platform'", UsageError),
    (["--node", NODE, "--nodes", "0"], "--nodes", UsageError),
])
def test_cluster_must_match_the_log(log, capsys, args, fragment, kind):
    with pytest.raises(kind) as caught:
        draft_from_log(log, args[1], int(args[3]))
    assert fragment in str(caught.value)
    code = main(["import-log", str(LOG), *args])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]


def test_missing_output_folder_is_refused_before_reading(tmp_path, capsys):
    """The log does not even exist: the folder check comes first."""
    code = main(["import-log", str(tmp_path / "absent.log"), "--node", NODE, "--nodes", "8",
                 "-o", str(tmp_path / "no" / "such" / "x.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and "absent.log" not in err


def test_cli_bad_log_one_line(tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": []}')
    code = main(["import-log", str(path), "--node", NODE, "--nodes", "8"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and str(path) in lines[0]
    assert issubclass(ConfigError, ClusterSimError)


def test_torch_fsdp2_log_drafts_zero_stage_3():
    """Megatron-Core's ``use_torch_fsdp2`` shards weights, gradients and optimizer state over the
    data-parallel group (``TorchFullyShardedDataParallel``): the Llama 2 70B Primus log's draft
    is ZeRO 3 with its 16 GPUs as data parallel."""
    log = read_megatron_log(LOG.parent / "primus-megatron_llama2-70b_2x8-mi325x.log.gz")
    draft = draft_from_log(log, NODE, 2)
    parallelism = draft.scenario["parallelism"]
    assert parallelism["zero_stage"] == 3 and parallelism["dp"] == 16
    assert draft.scenario["training"]["micro_batch"] == 10
    stack = draft.scenario["training"]["stack"]
    assert stack["sharding"] == {"grad_reduce_dtype": "param", "reduce_every_microbatch": True}
    # Primus's no_fp8_weight_transpose_cache (printed "true", lower case): no transposed fp8 weight kept
    assert stack["kernels"] == {"fp8_weight_cast": "per_forward", "fp8_weight_cache": "rowwise"}
    assert stack["loss"] == {"kernel": "te"}        # cross_entropy_fusion_impl te in the log


@pytest.mark.parametrize(("channels", "head_dim"), [(128, None), (64, 64)])
def test_kv_channels_becomes_head_dim_only_when_it_differs(tmp_path, channels, head_dim):
    """Megatron's --kv-channels is the head width (hidden / heads unless given): a log whose value
    differs from 4096 / 32 = 128 maps it to model.head_dim; an equal value adds no key."""
    path = _upstream_log(tmp_path)
    path.write_text(path.read_text().replace(
        "-------------------- end of arguments",
        f"  kv_channels {'.' * 37} {channels}\n-------------------- end of arguments"))
    model = draft_from_log(read_megatron_log(path), "dgx-h100", 2).scenario["model"]
    assert model.get("head_dim") == head_dim


@pytest.mark.parametrize("fusion", [False, True])
def test_moe_permute_fusion_reaches_the_drafts_stack(fusion):
    """The Primus Mixtral log runs ``moe_permute_fusion False`` (Megatron-Core's default: the
    stack profile's, no override); set to True, the draft turns on the fused permutations."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    if fusion:
        log = replace(log, arguments={**log.arguments, "moe_permute_fusion": True})
    stack = draft_from_log(log, NODE, 8).scenario["training"]["stack"]
    kernels = stack.get("kernels", {})
    assert kernels.get("moe_permute_fusion", False) is fusion


def test_expert_all_to_all_overlap_reaches_the_drafts_stack():
    """``overlap_moe_expert_parallel_comm`` and ``delay_wgrad_compute`` in a mixture of experts'
    log become ``expert_parallel.a2a_overlap`` and ``delay_wgrad``, a flex dispatcher's HybridEP
    backend ``expert_parallel.dispatcher``."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "overlap_moe_expert_parallel_comm": True,
                                  "delay_wgrad_compute": True, "moe_token_dispatcher_type": "flex",
                                  "moe_flex_dispatcher_backend": "hybridep"})
    draft = draft_from_log(log, NODE, 8)
    stack = draft.scenario["training"]["stack"]
    assert stack["expert_parallel"] == {"a2a_overlap": True, "delay_wgrad": True, "dispatcher": "hybridep"}
    assert not any("hybridep" in item for item in draft.not_modelled)


def test_the_dispatchers_sm_count_and_fp8_attention_reach_the_draft():
    """A HybridEP log's ``moe_hybridep_num_sms`` becomes ``expert_parallel.dispatcher_sms``;
    ``fp8_dot_product_attention`` is listed (its recipe is an environment variable the log
    omits), the key not set."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "moe_token_dispatcher_type": "flex",
                                  "moe_flex_dispatcher_backend": "hybridep", "moe_hybridep_num_sms": 32,
                                  "fp8_dot_product_attention": True})
    draft = draft_from_log(log, NODE, 8)
    stack = draft.scenario["training"]["stack"]
    assert stack["expert_parallel"] == {"dispatcher": "hybridep", "dispatcher_sms": 32}
    assert "fp8_attention" not in stack.get("kernels", {})
    assert any("NVTE_DPA_FP8_RECIPE" in item for item in draft.not_modelled)


def test_hybridep_permute_fusion_reaches_the_draft():
    """``moe_permute_fusion_into_hybridep`` becomes ``expert_parallel.permute_in_dispatch`` under
    HybridEP and is ignored under DeepEP (the flag is HybridEP's)."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    flags = {"moe_token_dispatcher_type": "flex", "moe_permute_fusion_into_hybridep": True}
    for backend, expected in (("hybridep", True), ("deepep", None)):
        drafted = draft_from_log(replace(log, arguments={**log.arguments, **flags,
                                                          "moe_flex_dispatcher_backend": backend}), NODE, 8)
        assert drafted.scenario["training"]["stack"]["expert_parallel"].get("permute_in_dispatch") is expected


def test_ncclep_dispatcher_is_listed_as_not_modelled():
    """The flex dispatcher's NCCL-EP backend has no pricing of its own: listed, priced as alltoall."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "moe_token_dispatcher_type": "flex",
                                  "moe_flex_dispatcher_backend": "ncclep"})
    draft = draft_from_log(log, NODE, 8)
    assert "dispatcher" not in draft.scenario["training"]["stack"].get("expert_parallel", {})
    assert any("ncclep" in item for item in draft.not_modelled)


def test_te_op_fuser_is_listed_not_guessed():
    """``use_transformer_engine_op_fuser`` alone does not say TE ran its fused grouped MLP (that
    also needs an environment variable the log omits): listed for the user, the key not set."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "use_transformer_engine_op_fuser": True})
    draft = draft_from_log(log, NODE, 8)
    assert "grouped_mlp_fusion" not in draft.scenario["training"]["stack"].get("kernels", {})
    assert any("NVTE_CUTEDSL_FUSED_GROUPED_MLP" in item for item in draft.not_modelled)


@pytest.mark.parametrize(("fusion", "impl", "kernel"), [
    (False, "te", "vocab_parallel"), (True, "te", "te"), (True, "native", "vocab_parallel_fused"),
    (True, None, "vocab_parallel_fused")])
def test_cross_entropy_fusion_reaches_the_drafts_loss_kernel(fusion, impl, kernel):
    """``cross_entropy_loss_fusion`` with ``cross_entropy_fusion_impl`` chooses the loss kernel;
    without the fusion Megatron runs its unfused vocab-parallel loss, written as such (the
    megatron-core profile's own is the fused one its recipes turn on)."""
    log = read_megatron_log(LOG.parent / "primus-megatron_llama2-7b_8x8-mi325x.log.gz")
    arguments = {**log.arguments, "cross_entropy_loss_fusion": fusion}
    arguments.pop("cross_entropy_fusion_impl", None)
    if impl is not None:
        arguments["cross_entropy_fusion_impl"] = impl
    stack = draft_from_log(replace(log, arguments=arguments), NODE, 8).scenario["training"]["stack"]
    found = stack["loss"]["kernel"]
    assert found == kernel


@pytest.mark.parametrize(("etp", "tp", "expected"), [(1, 2, 1), (2, 2, None), (None, 2, None)])
def test_expert_tensor_parallel_size_reaches_the_draft(etp, tp, expected):
    """``expert_tensor_parallel_size`` other than tp becomes ``parallelism.etp`` (with tp it is
    Megatron-Core's default and left out)."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    arguments = {**log.arguments, "tensor_model_parallel_size": tp, "sequence_parallel": True,
                 "expert_tensor_parallel_size": etp}
    parallelism = draft_from_log(replace(log, arguments=arguments), NODE, 8).scenario["parallelism"]
    assert parallelism.get("etp") == expected


@pytest.mark.parametrize(("bucket", "fp32", "megabytes"), [(None, None, None), (40_000_000, None, 160.0),
                                                           (134_217_728, False, 268.435456)])
def test_ddp_bucket_size_reaches_the_drafts_bucket(bucket, fp32, megabytes):
    """``ddp_bucket_size`` (parameters) becomes ``data_parallel.bucket_MB`` in the reduce dtype
    (fp32 unless ``grad_reduce_in_fp32`` is off), a stated size the loader uses as given;
    unset, the profile's default bucket of max(40M, 1M x dp cp) parameters stays."""
    log = read_megatron_log(LOG)
    arguments = {**log.arguments, "ddp_bucket_size": bucket}
    if fp32 is not None:
        arguments["grad_reduce_in_fp32"] = fp32
    stack = draft_from_log(replace(log, arguments=arguments), NODE, 8).scenario["training"]["stack"]
    assert stack.get("data_parallel", {}).get("bucket_MB") == (
        pytest.approx(megabytes) if megabytes is not None else None)


@pytest.mark.parametrize("flag", [False, True])
def test_param_gather_with_optimizer_step_reaches_the_draft(flag):
    """``overlap_param_gather_with_optimizer_step`` turns Megatron-Core's bucketing off: the
    draft says so (``data_parallel.param_gather_with_optimizer``), and only when it is set."""
    log = read_megatron_log(LOG)
    arguments = {**log.arguments, "overlap_param_gather_with_optimizer_step": flag}
    stack = draft_from_log(replace(log, arguments=arguments), NODE, 8).scenario["training"]["stack"]
    assert stack.get("data_parallel", {}).get("param_gather_with_optimizer", False) is flag


@pytest.mark.parametrize(("flag", "held"), [(False, True), (True, False), (None, False)])
def test_p2p_overlap_flag_reaches_the_drafts_pipeline(flag, held):
    """``--no-overlap-p2p-communication`` (``overlap_p2p_comm`` false) holds the interleaved
    schedule's sends on their stage: the draft says ``pipeline.overlap_p2p: false``; set or
    absent, the profile's overlap stands (the shipped log, without virtual stages, logs it
    false and drafts no such field: test_draft_maps_the_arguments)."""
    log = read_megatron_log(LOG)
    arguments = {k: v for k, v in log.arguments.items() if k != "overlap_p2p_comm"}
    arguments["virtual_pipeline_model_parallel_size"] = 2
    if flag is not None:
        arguments["overlap_p2p_comm"] = flag
    stack = draft_from_log(replace(log, arguments=arguments), NODE, 8).scenario["training"]["stack"]
    assert ("pipeline" in stack and stack["pipeline"] == {"overlap_p2p": False}) is held


@pytest.mark.parametrize(("swiglu", "hidden_dropout", "expected"), [
    (False, 0.0, 0.0), (False, 0.1, None), (True, 0.0, None), (True, 0.1, 0.1)])
def test_hidden_dropout_reaches_the_draft_where_it_differs_from_the_default(swiglu, hidden_dropout, expected):
    """``hidden_dropout`` becomes ``model.dropout`` only where it is not the mlp's default (GPT
    0.1, Llama-style 0): the Nemotron configs' GELU-shaped models at 0 keep no masks."""
    log = read_megatron_log(LOG.parent / "primus-megatron_llama2-7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "swiglu": swiglu, "hidden_dropout": hidden_dropout})
    assert draft_from_log(log, NODE, 8).scenario["model"].get("dropout") == expected


@pytest.mark.parametrize(("recipe", "scaling", "gather"), [
    ("tensorwise", "dynamic", "fp8"), ("mxfp8", "mxfp8", None), ("delayed", None, "fp8"),
    ("blockwise", "blockwise", "fp8")])
def test_fp8_recipe_reaches_the_drafts_kernels(recipe, scaling, gather):
    """``fp8_recipe`` tensorwise, mxfp8 and blockwise set ``kernels.fp8_scaling``; ``fp8_param_gather``
    becomes an fp8 weight gather except under MXFP8, whose weights Megatron-Core gathers in the
    gradient buffer's dtype (core_v0.15 ``reuse_grad_buf_for_mxfp8_param_ag``) and still keeps
    as MXFP8 parameters (``kernels.fp8_params``)."""
    log = read_megatron_log(LOG.parent / "primus-megatron_llama2-7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "fp8": "e4m3", "fp8_recipe": recipe,
                                  "fp8_param_gather": True})
    stack = draft_from_log(log, NODE, 8).scenario["training"]["stack"]
    assert stack.get("kernels", {}).get("fp8_scaling") == scaling
    assert stack.get("data_parallel", {}).get("param_gather_dtype") == gather
    assert stack.get("kernels", {}).get("fp8_params") == (True if recipe == "mxfp8" else None)


MI325X_SET = pd.read_csv(ROOT / "validation" / "primus_mi325x.csv")


@pytest.mark.parametrize("row", range(len(MI325X_SET)))
def test_mi325x_set_measurements_are_their_logs_steady_state(row):
    """Each row of validation/primus_mi325x.csv is the steady state ``clustersim import-log``
    reads from the log the row's source names (the CSV is typed from the logs; this ties them):
    tokens/s per GPU = global batch x sequence / (step x GPUs), to the CSV's rounding."""
    entry = MI325X_SET.iloc[row]
    name = re.search(r"validation/training_logs/(\S+?\.log\.gz)", entry.source).group(1)
    log = read_megatron_log(LOG.parent / name)
    measured = draft_from_log(log, NODE, int(entry.nodes)).measured
    tokens = entry.global_batch * entry.seq_len / (measured.step_time_s * entry.gpus)
    assert tokens == pytest.approx(entry.measured, rel=1e-3)


def test_megatron_lm_fsdp2_log_drafts_its_layout():
    """The Megatron-LM (ROCm image) log of Llama 3.1 70B on 8 x 8 MI325X: torch FSDP2 over all 64
    GPUs, full recompute, sequence 8192, Llama 3.1's vocabulary, 10 iterations of which the
    warm-up rule keeps 2-10 (iteration 1 takes 302 s)."""
    log = read_megatron_log(LOG.parent / "megatron-lm_llama31-70b_8x8-mi325x.log.gz")
    draft = draft_from_log(log, NODE, 8)
    parallelism, model = draft.scenario["parallelism"], draft.scenario["model"]
    assert parallelism["zero_stage"] == 3 and parallelism["dp"] == 64 and parallelism["tp"] == 1
    assert parallelism["recompute"] == "full"
    assert model["seq_len"] == 8192 and model["vocab"] == 128256 and model["layers"] == 80
    assert draft.measured.iterations == list(range(2, 11)) and draft.measured.logged == 10
    assert draft.measured.step_time_s == pytest.approx(19.019)


def test_group_limited_routing_reaches_the_drafts_model():
    """``moe_router_num_groups`` 8 and ``moe_router_group_topk`` 4 (DeepSeek-V3's) become
    ``model.router_groups`` and ``router_group_topk``; without a limit the keys stay out."""
    log = read_megatron_log(LOG.parent / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    grouped = replace(log, arguments={**log.arguments, "moe_router_num_groups": 4,
                                      "moe_router_group_topk": 2})
    model = draft_from_log(grouped, NODE, 8).scenario["model"]
    assert (model["router_groups"], model["router_group_topk"]) == (4, 2)
    assert "router_groups" not in draft_from_log(log, NODE, 8).scenario["model"]


def test_a_log_whose_step_times_are_all_zero_is_a_user_error(tmp_path, capsys):
    """Every 'elapsed time per iteration (ms)' 0.0: no step time to compare with, one line and
    exit 2 (a division by the zero median before)."""
    path = _upstream_log(tmp_path)
    path.write_text(re.sub(r"\(ms\): [0-9.]+", "(ms): 0.0", path.read_text()))
    with pytest.raises(ConfigError, match="every 'elapsed time per iteration"):
        read_megatron_log(path)
    assert main(["import-log", str(path), "--node", "dgx-h100", "--nodes", "2"]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("value", ["1.2.3", ".", "1e400", "1e-300", "-5", "2000.5e3"])
def test_a_malformed_step_time_is_no_step_time(tmp_path, capsys, value):
    """'1.2.3' or '.' after 'elapsed time per iteration (ms):' ended in an internal error
    (ValueError, exit 3); '1e400' and '1e-300' were read as the 1 ms their digits start with, a
    measured step of 0.001 s with exit 0. A malformed time is no time: with no other, one error."""
    path = _upstream_log(tmp_path)
    path.write_text(re.sub(r"(elapsed time per iteration \(ms\): )[\d.]+", rf"\g<1>{value}",
                           path.read_text()))
    code = main(["import-log", str(path), "--node", "dgx-h100", "--nodes", "2"])
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert code == 2 and captured.out == "" and line.startswith(f"error: {path}: no iteration lines")
    assert "malformed" in line


def test_a_malformed_field_drops_its_row_only(tmp_path):
    """One iteration's unreadable time drops that iteration; Primus's 'this/average' pairs and
    a trailing separator still read."""
    path = _upstream_log(tmp_path)
    text = path.read_text().replace("(ms): 2001.0 |", "(ms): 2.001.0 |")
    path.write_text(text.replace("(ms): 1999.0 |", "(ms): 1999.0/2100.0 |"))
    frame = read_megatron_log(path).iterations
    assert frame["iteration"].tolist() == [1, 2, 3, 5, 6]
    assert frame["elapsed_s"].tolist() == pytest.approx([9.0, 2.3, 2.0005, 1.999, 2.002])


@pytest.mark.parametrize(("value", "shown"), [(0, "'0'"), (-2, "'-2'"), ("nan", "'nan'"), ("auto", "'auto'")])
def test_a_logged_parallel_size_that_is_no_size_is_an_error(tmp_path, capsys, value, shown):
    """tensor_model_parallel_size 0 (or -2, nan, text) was drafted as tp 1 without a word, and
    the draft's dp followed from it; None (Megatron's unset) still means 1."""
    path = _upstream_log(tmp_path)
    key, dots = "tensor_model_parallel_size", "." * (48 - len("tensor_model_parallel_size"))
    path.write_text(path.read_text().replace(f"  {key} {dots} 4\n", f"  {key} {dots} {value}\n"))
    code = main(["import-log", str(path), "--node", "dgx-h100", "--nodes", "2"])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and line == (f"error: {path}: {key}: argument {shown}; expected a positive "
                                  "integer in the arguments block")
    path.write_text(path.read_text().replace(f"  {key} {dots} {value}\n", f"  {key} {dots} None\n"))
    assert draft_from_log(read_megatron_log(path), "dgx-h100", 2).scenario["parallelism"]["tp"] == 1
