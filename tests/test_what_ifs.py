"""Training what-ifs (issue 11, sections 1, 2, 4; docs/what_ifs.md): gradient compression,
local SGD / DiLoCo across sites, the input pipeline; each against its closed form, in
both engines, with bad values refused and, absent, nothing changed."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.collectives import Op
from simulator.config import scenario_from_mapping
from simulator.config.whatif_training import CompressionMethod, DataLoaderConfig, GradientCompressionConfig
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.engine.des import simulate_steps_des, timeline
from simulator.engine.gradient_sync import all_gradient_collectives, replica_gradient_bytes
from simulator.pipeline import open_scenario, run_scenario, session_from_scenario
from simulator.topology.multisite import MSS_BYTES, effective_bandwidth, wan_seconds
from simulator.workload.compression import compression, powersgd_split, wire_bytes
from simulator.workload.data_loader import LoaderQueue, load_seconds
from simulator.workload.memory import stage_parameters

ROOT = Path(__file__).resolve().parent.parent
POWERSGD = ROOT / "scenarios" / "whatif-powersgd-64xA100.yaml"
DILOCO = ROOT / "scenarios" / "whatif-diloco-2sites-64xH100.yaml"
LOADER = ROOT / "scenarios" / "whatif-dataloader-64xH100.yaml"


def _data(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _session(data: dict):
    return session_from_scenario(scenario_from_mapping(data, "<test>"))


def _step(data: dict):
    session = _session(data)
    return simulate_step(session.scenario, session.collectives)


def _without(data: dict, *keys: str) -> dict:
    out = copy.deepcopy(data)
    for key in keys:
        section, name = key.split(".")
        out[section].pop(name, None)
    return out


# --- 1. gradient compression -----------------------------------------------------------------

def test_topk_moves_k_times_value_plus_index_bytes():
    """Top-K at ratio k: each rank contributes ceil(k n) (g + 4) bytes, all-gathered."""
    n, g, p, k = 1_000_003.0, 4.0, 8, 0.01
    plan = compression(GradientCompressionConfig(method=CompressionMethod.TOPK, ratio=k), n, [], g, p)
    contribution = math.ceil(k * n) * (g + 4)
    assert plan.collectives == ((Op.ALL_GATHER, p * contribution),)
    assert wire_bytes(plan.collectives, p) == pytest.approx((p - 1) * contribution, rel=1e-15)


def test_topk_in_the_step_is_an_all_gather_of_the_compressed_bytes():
    data = _data(POWERSGD)
    data["training"]["gradient_compression"] = {"method": "topk", "ratio": 0.05}
    session = _session(data)
    ctx = make_context(session.scenario, session.collectives)
    (stage,) = all_gradient_collectives(ctx)
    n = sum(stage_parameters(ctx.scenario.model, ctx.scenario.parallelism, 32, True, True))
    assert [c.op for c in stage] == [Op.ALL_GATHER]
    assert stage[0].size_bytes == 8 * math.ceil(0.05 * n) * (4 + 4)   # dp 8, fp32 main grads


def test_powersgd_sends_p_and_q_and_leaves_what_the_hook_leaves():
    """Matrices with (a + b) r 2 < a b are compressed (PyTorch's _should_compress); the rest
    and the vectors are all-reduced uncompressed, then P (sum a r) and Q (sum b r)."""
    cfg = GradientCompressionConfig(method=CompressionMethod.POWERSGD, rank=4)
    matrices = [(1024.0, 4096.0, 3.0), (16.0, 16.0, 1.0)]          # 16x16: 32*4*2 > 256, kept dense
    vectors = 5000.0
    n = 3 * 1024 * 4096 + 256 + vectors
    kept, dense = powersgd_split(cfg, matrices)
    assert kept == [(1024.0, 4096.0, 3.0)] and dense == 3 * 1024 * 4096
    plan = compression(cfg, n, matrices, 2.0, 8)
    assert plan.collectives == ((Op.ALL_REDUCE, (256 + vectors) * 2.0), (Op.ALL_REDUCE, 3 * 1024 * 4 * 2.0),
                                (Op.ALL_REDUCE, 3 * 4096 * 4 * 2.0))
    assert [gemm[:3] for gemm in plan.gemms] == [(1024, 4, 4096), (4096, 4, 1024), (1024, 4096, 4)]


@pytest.mark.parametrize("method, q", [("int8", 1.0), ("1bit", 1.0 / 8.0)])
def test_quantisation_sends_q_bytes_per_element_each_way(method, q):
    n, g, p = 2.0**30, 4.0, 16
    plan = compression(GradientCompressionConfig(method=CompressionMethod(method)), n, [], g, p)
    wire = n * q + 4 * p
    assert plan.collectives == ((Op.ALL_TO_ALL, wire), (Op.ALL_GATHER, wire))
    with_ef = plan.buffer_bytes
    without = compression(GradientCompressionConfig(method=CompressionMethod(method), error_feedback=False),
                          n, [], g, p).buffer_bytes
    assert with_ef - without == pytest.approx(g * n + g * n / p)      # worker and server errors


def test_memory_breakdown_holds_the_compression_buffers():
    data = _data(POWERSGD)
    with_it, without = _step(data), _step(_without(data, "training.gradient_compression"))
    part = with_it.stages[0].memory["compression buffers"]
    assert part > 0 and "compression buffers" not in without.stages[0].memory
    assert with_it.memory_per_gpu_bytes == pytest.approx(without.memory_per_gpu_bytes + part, rel=1e-12)


def test_compressor_compute_adds_in_series_and_powersgd_saves_time_at_200g():
    data = _data(POWERSGD)
    result, base = _step(data), _step(_without(data, "training.gradient_compression"))
    w = result.what_if
    assert result.dp_comm_exposed_s >= w["compression_compute_s"] > 0
    parts = result.pipeline_s + result.dp_comm_exposed_s + result.optimizer_s
    assert result.step_time_s == pytest.approx(parts, rel=1e-12)
    assert w["dp_bytes_saved_per_gpu"] == w["dp_bytes_uncompressed_per_gpu"] - w["dp_bytes_sent_per_gpu"]
    assert w["dp_bytes_sent_per_gpu"] < 0.01 * w["dp_bytes_uncompressed_per_gpu"]
    assert result.step_time_s < 0.7 * base.step_time_s
    assert result.pipeline_s == base.pipeline_s


@pytest.mark.parametrize("method", ["powersgd", "topk", "int8", "1bit"])
def test_compression_des_equals_analytical_with_contention(method):
    """Noise-free and with the links to itself, the DES replays the compressed collectives
    as flows and lands on the analytical step."""
    data = _data(POWERSGD)
    data["training"]["gradient_compression"] = {"method": method}
    session = _session(data)
    analytical = simulate_step(session.scenario, session.collectives).step_time_s
    for contention in (False, True):
        des = simulate_steps_des(session.scenario, session.collectives, steps=1, contention=contention)
        assert des.step_time_s == pytest.approx(analytical, rel=1e-6)


# --- 2. local SGD / DiLoCo across sites -------------------------------------------------------

@pytest.mark.parametrize("k", [2, 16, 128])
def test_sync_every_k_divides_dp_bytes_and_time_per_step_by_k(k):
    data = _data(DILOCO)
    data["training"]["sync_every"] = k
    one = copy.deepcopy(data)
    one["training"]["sync_every"] = 1
    every, once = _step(data), _step(one)
    w = every.what_if
    session = _session(one)
    syncs = all_gradient_collectives(make_context(session.scenario, session.collectives))
    sent = max(wire_bytes([(c.op, c.size_bytes) for c in stage], 4) for stage in syncs)
    assert w["dp_bytes_per_sync_per_gpu"] == sent
    assert w["dp_bytes_per_step_per_gpu"] == sent / k
    assert w["wan_bytes_per_step"] == w["wan_bytes_per_sync"] / k
    assert every.dp_comm_s == pytest.approx(once.dp_comm_s / k, rel=1e-12)
    local, sync = w["local_step_time_s"], w["sync_step_time_s"]
    assert every.step_time_s == pytest.approx(local + (sync - local) / k, rel=1e-12)


def test_des_shows_the_periodic_sync_spike_and_its_mean_is_the_analytical_step():
    data = _data(DILOCO)
    data["training"]["sync_every"] = 4
    data["cluster"]["sites"]["wan"]["jitter_sigma"] = 0.0
    session = _session(data)
    analytical = simulate_step(session.scenario, session.collectives)
    for path in ("fast", "event"):
        des = simulate_steps_des(session.scenario, session.collectives, steps=12, contention=False, path=path)
        times = np.array(des.step_times_s)
        spikes = np.flatnonzero(times > 2 * times.min())
        assert spikes.tolist() == [3, 7, 11]
        assert times[3] == pytest.approx(analytical.what_if["sync_step_time_s"], rel=1e-9)
        assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
    shown = timeline(session.scenario, session.collectives, contention=False)
    assert shown.end_s.max() == pytest.approx(analytical.what_if["sync_step_time_s"], rel=1e-9)


def test_wan_jitter_stretches_only_sync_steps_seeded_and_alike_on_both_paths():
    data = _data(DILOCO)
    data["training"]["sync_every"] = 4
    data["cluster"]["sites"]["wan"]["jitter_sigma"] = 0.3
    session = _session(data)
    runs = {path: simulate_steps_des(session.scenario, session.collectives, steps=16, contention=False,
                                     path=path).step_times_s for path in ("fast", "event")}
    data["cluster"]["sites"]["wan"]["jitter_sigma"] = 0.0
    quiet = _session(data)
    calm = simulate_steps_des(quiet.scenario, quiet.collectives, steps=16, contention=False).step_times_s
    assert runs["fast"] == pytest.approx(runs["event"], rel=1e-9)
    sync = [i for i in range(16) if (i + 1) % 4 == 0]
    assert all(runs["fast"][i] == calm[i] for i in range(16) if i not in sync)
    assert len({round(runs["fast"][i], 9) for i in sync}) == 4
    assert all(runs["fast"][i] != calm[i] for i in sync)
    assert simulate_steps_des(session.scenario, session.collectives, steps=16).step_times_s == runs["fast"]



def test_wan_jitter_only_delays_the_transfer():
    """The WAN ring is priced at the link's full rate, a ceiling: with jitter no sync step
    is faster than without (a two-sided factor made half of them faster)."""
    data = _data(DILOCO)
    data["training"]["sync_every"] = 2
    data["cluster"]["sites"]["wan"]["jitter_sigma"] = 0.3
    noisy = _session(data)
    jittered = simulate_steps_des(noisy.scenario, noisy.collectives, steps=40, contention=False).step_times_s
    data["cluster"]["sites"]["wan"]["jitter_sigma"] = 0.0
    quiet = _session(data)
    calm = simulate_steps_des(quiet.scenario, quiet.collectives, steps=40, contention=False).step_times_s
    assert all(j >= c for j, c in zip(jittered, calm, strict=True))
    assert sum(j > c for j, c in zip(jittered, calm, strict=True)) == 20

def test_wan_ring_and_loss_bound_tcp_closed_forms():
    data = _data(DILOCO)
    sites = scenario_from_mapping(data, "<test>").cluster.sites
    tcp = 64 * MSS_BYTES * math.sqrt(1.5) / (2 * 0.04 * math.sqrt(1e-6))
    assert effective_bandwidth(sites.wan) == pytest.approx(tcp, rel=1e-12) and tcp < 1.25e10
    g = 3.0e10
    assert wan_seconds(sites, g) == pytest.approx(2 * 1 / 2 * g / tcp + 2 * 1 * 0.04, rel=1e-12)
    lossless = sites.wan.model_copy(update={"loss": 0.0})
    assert effective_bandwidth(lossless) == 1.25e10


def test_sites_reduce_inside_each_site_then_over_the_wan():
    data = _data(DILOCO)
    data["training"]["sync_every"] = 1
    session = _session(data)
    ctx = make_context(session.scenario, session.collectives)
    result = simulate_step(session.scenario, session.collectives)
    assert result.what_if["wan_s"] == pytest.approx(wan_seconds(session.scenario.cluster.sites,
                                                                replica_gradient_bytes(ctx)), rel=1e-12)
    assert replica_gradient_bytes(ctx) == pytest.approx(8.03e9 * 4, rel=0.01)   # Llama 3 8B, fp32 grads
    one_site = _step(_without(data, "cluster.sites"))
    assert result.step_time_s > one_site.step_time_s + result.what_if["wan_s"] * 0.99


def test_context_parallel_copies_cross_the_wan_once():
    """tp 4 x cp 2 in place of tp 8: the context-parallel ranks' gradients are summed inside
    each site (one dp x cp group), so the WAN carries the replica's gradient once, the same
    bytes as tp 8 (Llama 3 8B in fp32: tp shards of 8.03e9 x 4 B in all)."""
    data = _data(DILOCO)
    data["training"]["sync_every"] = 1
    data["parallelism"].update({"tp": 4, "cp": 2})
    session = _session(data)
    ctx = make_context(session.scenario, session.collectives)
    assert ctx.layout.gradient_ranks == 16
    assert replica_gradient_bytes(ctx) == pytest.approx(8.03e9 * 4, rel=0.01)


def test_diloco_makes_the_cross_continent_job_feasible():
    """The seeds' claim: syncing every K steps cuts communication K-fold; with K = 128 the
    two-continent job runs within 10% of one site, while syncing every step is 5x slower."""
    data = _data(DILOCO)
    every_step = copy.deepcopy(data)
    every_step["training"]["sync_every"] = 1
    diloco, plain = _step(data), _step(every_step)
    one_site = _step(_without(every_step, "cluster.sites"))
    assert diloco.dp_comm_s == pytest.approx(plain.dp_comm_s / 128, rel=1e-12)
    assert diloco.step_time_s < 1.1 * one_site.step_time_s
    assert plain.step_time_s > 5 * one_site.step_time_s


# --- 4. input pipeline ------------------------------------------------------------------------

def test_loader_time_is_the_slower_of_workers_and_storage():
    cfg = DataLoaderConfig(sample_bytes=4e6, storage_Bps=2e9, request_latency_s=0.005, cpu_s_per_sample=1.5,
                           workers=4)
    assert load_seconds(cfg, 16, 4) == 16 * (0.005 + 1.5) / 4
    fast_cpu = cfg.model_copy(update={"cpu_s_per_sample": 0.0, "request_latency_s": 0.0})
    assert load_seconds(fast_cpu, 16, 4) == 16 * 4e6 * 4 / 2e9


def test_prefetch_queue_recurrence_by_hand():
    """D = 1, steps of 1 s, batches of 1.5 s: batch i >= 1 is ready at 1.5 i (the loader
    starts batch i when step i-1 starts), so every step from the second waits 0.5 s."""
    queue = LoaderQueue(depth=1, replicas=1)
    stalls = queue.advance(np.ones(4), np.full((4, 1), 1.5))
    assert stalls.tolist() == [0.0, 0.5, 0.5, 0.5]
    deep = LoaderQueue(depth=3, replicas=1).advance(np.ones(8), np.full((8, 1), 1.5))
    assert deep[:3].tolist() == [0.0, 0.0, 0.0] and deep[-1] == pytest.approx(0.5)
    again = LoaderQueue(depth=3, replicas=1)
    split = np.concatenate([again.advance(np.ones(5), np.full((5, 1), 1.5)),
                            again.advance(np.ones(3), np.full((3, 1), 1.5))])
    assert split.tolist() == deep.tolist()


def test_a_stall_free_loader_changes_nothing_exactly():
    data = _data(LOADER)
    data["training"]["data_loader"]["jitter_sigma"] = 0.0
    data["training"]["data_loader"]["cpu_s_per_sample"] = 0.1
    data["noise"] = {"straggler": {"distribution": "lognormal", "sigma": 0.05}}
    plain = _without(data, "training.data_loader")
    with_it, without = _step(data), _step(plain)
    assert with_it.what_if["input_stall_s"] == 0.0
    got = with_it.to_json_dict()
    del got["what_if"]
    assert got == without.to_json_dict()
    a, b = _session(data), _session(plain)
    des_a = simulate_steps_des(a.scenario, a.collectives, steps=30)
    des_b = simulate_steps_des(b.scenario, b.collectives, steps=30)
    assert des_a.step_times_s == des_b.step_times_s


def test_a_slow_loader_sets_the_step_and_the_report_says_so(capsys, tmp_path):
    data = _data(LOADER)
    data["training"]["data_loader"].update({"workers": 3, "jitter_sigma": 0.0})
    data["simulate"]["engine"] = "analytical"
    result, base = _step(data), _step(_without(data, "training.data_loader"))
    load = 16 * (0.005 + 1.5) / 3
    assert result.step_time_s == pytest.approx(load, rel=1e-12)
    assert result.what_if["input_stall_s"] == pytest.approx(load - base.step_time_s, rel=1e-9)
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 0
    assert "yes: steps wait" in capsys.readouterr().out
    data["training"]["data_loader"]["jitter_sigma"] = 0.3
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 0
    assert "training.data_loader.jitter_sigma (0.3): only the discrete-event" in capsys.readouterr().out


def test_loader_jitter_shows_in_the_p99_only_and_is_seeded():
    session = open_scenario(LOADER)
    jittered = simulate_steps_des(session.scenario, session.collectives, steps=200)
    again = simulate_steps_des(session.scenario, session.collectives, steps=200)
    calm = session.scenario.model_copy(update={"training": session.scenario.training.model_copy(
        update={"data_loader": None})})
    plain = simulate_steps_des(calm, session.collectives, steps=200)
    assert jittered.step_times_s == again.step_times_s
    assert jittered.what_if["input_stalled_steps"] > 0
    assert jittered.step_time_p50_s == plain.step_time_p50_s          # the median step never waits
    assert jittered.step_time_p99_s > 1.1 * plain.step_time_p99_s
    assert all(a >= b for a, b in zip(jittered.step_times_s, plain.step_times_s, strict=True))



def test_loader_jitter_never_loads_a_batch_faster_than_the_loader_allows(monkeypatch):
    """``T_load`` is the storage's and the workers' full rate: every jittered batch takes
    at least that long."""
    seen = []

    class Recording(LoaderQueue):
        def advance(self, steps, loads):
            seen.append(loads.copy())
            return super().advance(steps, loads)

    monkeypatch.setattr("simulator.engine.des_what_ifs.LoaderQueue", Recording)
    session = open_scenario(LOADER)
    des = simulate_steps_des(session.scenario, session.collectives, steps=200)
    load = simulate_step(session.scenario, session.collectives).what_if["input_load_s"]
    loads = np.concatenate(seen)
    assert loads.shape == (200, 32) and des.what_if["input_stalled_steps"] > 0
    assert loads.min() >= load

# --- everything -----------------------------------------------------------------------------

@pytest.mark.parametrize("path, edit, key", [
    (POWERSGD, {"training": {"gradient_compression": {"method": "dgc"}}},
     "training.gradient_compression.method"),
    (POWERSGD, {"training": {"gradient_compression": {"method": "topk", "ratio": 1.5}}},
     "training.gradient_compression.ratio"),
    (POWERSGD, {"parallelism": {"zero_stage": 3}}, "training.gradient_compression"),
    (DILOCO, {"training": {"sync_every": 0}}, "training.sync_every"),
    (DILOCO, {"parallelism": {"zero_stage": 1}}, "training.sync_every"),
    (DILOCO, {"cluster": {"sites": {"count": 3}}}, "cluster.sites.count"),
    (DILOCO, {"cluster": {"sites": {"wan": {"loss": -0.1}}}}, "cluster.sites.wan.loss"),
    (LOADER, {"training": {"data_loader": {"workers": 0}}}, "training.data_loader.workers"),
    (LOADER, {"training": {"data_loader": {"storage_Bps": "fast"}}}, "training.data_loader.storage_Bps"),
    (LOADER, {"training": {"data_loader": {"storage_Bps": 1e-300}}}, "training.data_loader.storage_Bps"),
    (DILOCO, {"cluster": {"sites": {"wan": {"bandwidth_Bps": 1e-300}}}}, "cluster.sites.wan.bandwidth_Bps"),
])
def test_bad_values_are_one_line_and_exit_2(capsys, tmp_path, path, edit, key):
    data = _data(path)
    _merge(data, edit)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    code = main(["run", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"error: {bad}: {key}: "), err


def _merge(data: dict, edit: dict) -> None:
    for k, v in edit.items():
        if isinstance(v, dict) and isinstance(data.get(k), dict):
            _merge(data[k], v)
        else:
            data[k] = v


def test_without_what_ifs_results_have_no_what_if_key(capsys):
    assert main(["run", str(ROOT / "scenarios" / "llama3-8b-64xH100.yaml"), "--json"]) == 0
    assert "what_if" not in json.loads(capsys.readouterr().out)
    result = run_scenario(POWERSGD)
    assert result.what_if["step_time_change_s"] == pytest.approx(
        result.step_time_s - result.what_if["baseline_step_time_s"], rel=1e-12)
