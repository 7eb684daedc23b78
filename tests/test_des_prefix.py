"""The event replay's contention-free prefix (simulator/engine/des_prefix.py): the steps it
gives equal the full event replay's, and steps pinned before it existed are unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine import des, des_prefix
from simulator.engine.des import simulate_steps_des
from simulator.engine.des_prefix import PrefixCutter
from simulator.pipeline import open_scenario
from simulator.topology import build_cluster

ROOT = Path(__file__).resolve().parent.parent
JITTER = {"straggler": {"distribution": "lognormal", "sigma": 0.05},
          "throttle": {"probability": 0.05, "factor": 1.5}}
FAULTS = {**JITTER, "host_pause": {"probability": 0.3, "duration_s": 0.05},
          "nic_faults": [{"gpu": 2, "fraction": 0.5, "latency_s": 1e-4},
                         {"gpu": 40, "fraction": 0.25, "start_step": 1, "steps": 2}]}

CASES = {   # name: (scenario arguments, 4 steps at seed 7 from the full event replay; re-pinned
            # 2026-11-26 when the tied embedding's gradient all-reduce between the first and
            # last stages was added: megatron-7.5b ties its embedding; re-pinned 2026-11-27 when
            # NCCL's SMs beside the overlapped data-parallel collectives were priced,
            # simulator/engine/dp_overlap_sms.py: +0.05% to +1.7%; re-pinned 2026-11-28 when the
            # loss's traffic followed the stack's cross-entropy kernel, loss.kernel: the
            # megatron-core profile's fused vocab-parallel one moves 40 B per logit, not 36; and
            # when each data-parallel NCCL call paid its latency and the first weight bucket
            # its gather dtype's bytes, simulator/engine/dp_calls.py: -0.25% to +0.01%; and when
            # the overlapped input-gradient collective's NCCL kernels held their SMs beside the
            # weight-gradient GEMM, simulator/cost/tp_exposure.py: 0 to +0.85%; re-pinned
            # 2026-11-29 when a Simple ring all-reduce across servers paid NCCL's 1.4 x its
            # latency, the "plateau effect of ring": +16 us a step; re-pinned 2026-11-30 when a
            # ring across servers paid NCCL's net-overhead floor per step, 2 us (6 us under
            # Simple) on DGX A100's AMD hosts: +20 to +420 ppm on the tp 2 cases, whose
            # data-parallel rings hold four GPUs per server; re-pinned the same day when
            # Megatron-Core's per-step zeroing of its whole fp32 gradient buffer was priced,
            # data_parallel.zero_grad_buffer: 0.6 to 2.4 ms a step, the GPU's parameters x 4 B;
            # re-pinned 2026-12-01 when every GEMM kernel paid its fixed in-kernel time, 5.2 us
            # on the A100, compute.gemm_fixed_us: +0.3% to +1.9%; and when every memory-bound
            # kernel paid its fixed in-kernel time, 2.1 us, compute.memory_fixed_us: +0.16% to
            # +1.0%; and when NCCL's CTAs inside a server followed its topology search, 24 on
            # the A100's 12 NVLink3 (simulator/cost/nccl_sms.py ring_search_channels, 16
            # before): +0.12% to +0.65%; re-pinned 2026-12-01 when the data-parallel rings'
            # HBM draw slowed the memory-bound kernels beside them where it exceeds NCCL's SM
            # share, simulator/cost/hbm_contention.py: +0.003% to +0.13%); re-pinned 2026-12-02
            # when each memory-bound kernel's backward moved the bytes it reads and writes,
            # simulator/workload/backward_bytes.py (twice its forward's before), and the A100's
            # GEMM fraction went from 0.73 to 0.72 with it: +0.02% to +1.07%
    "tp2-pp4-1to1": (dict(tp=2, pp=4),
                     [1.2860287435311146, 1.0585664534688823, 1.1391915561249941, 1.0465109048411259]),
    "tp2-pp4-4to1": (dict(tp=2, pp=4, over=4.0),
                     [1.3661776322726251, 1.1601419460429672, 1.2404187566266456, 1.1459215314112177]),
    "tp8-pp4-2to1-no-overlap": (
        dict(tp=8, pp=4, over=2.0, overlap=False),
        [1.5981734559517922, 1.4972639403075705, 1.6496380621768547, 1.4025915825492872]),
    "tp1-pp8-4to1": (dict(tp=1, pp=8, over=4.0, gb=128),
                     [2.4904709367217044, 2.1800099080443287, 2.402626576821499, 2.1818412473862274]),
    "tp2-pp4-pauses-nic": (
        dict(tp=2, pp=4, over=2.0, noise=FAULTS),
        [1.3966091081016727, 1.253452908606251, 1.2970385396515578, 1.195697239205388]),
}


def _scenario(nodes=8, tp=2, pp=4, over=1.0, gb=64, overlap=True, noise=None,
              fidelity="tp-collapsed", schedule="1f1b", virtual=1, stack=None):
    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": nodes, "gpus_per_node": 8,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr",
                                                "oversubscription": over, "switch_radix": 16}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1, **({"stack": stack} if stack else {})},
            "parallelism": {"tp": tp, "pp": pp, "overlap_grad_reduce": overlap,
                            "schedule": schedule, "virtual_stages": virtual},
            "simulate": {"engine": "des", "steps": 1, "seed": 0, "fidelity": fidelity},
            "noise": JITTER if noise is None else noise}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


@pytest.mark.parametrize("name", sorted(CASES))
def test_contention_steps_as_before_the_prefix(name):
    """Steps of the full event replay as pinned in CASES, to 1e-9 relative (oversubscribed
    fabrics where flows meet, no overlap of the gradient reduction, host pauses and faulty
    NICs)."""
    arguments, pinned = CASES[name]
    scenario, collectives = _scenario(**arguments)
    times = simulate_steps_des(scenario, collectives, steps=4, seed=7, contention=True,
                               path="event").step_times_s
    np.testing.assert_allclose(times, pinned, rtol=1e-9, atol=0)


def test_gpt3_noisy_steps_as_before_the_prefix():
    """The benchmark's scenario (benchmarks/bench_stragglers_fast.py): 3 steps pinned from the
    full replay, one of them with a throttled GPU (re-pinned 2026-11-26: GPT-3's tied
    embedding's all-reduce, 13 ms a step; 2026-11-27: NCCL's SMs beside the overlapped
    data-parallel collectives, 27 ms a step; 2026-11-28: the fused vocab-parallel loss's
    40 B per logit, about 3 ms a step; then a latency per data-parallel NCCL call and the
    first weight bucket in the gather dtype, simulator/engine/dp_calls.py; then the SMs the
    overlapped input-gradient collective holds beside the weight-gradient GEMM, +0.7%; 2026-11-29:
    NCCL's 1.4 x latency of a Simple ring all-reduce across servers, +16 us; 2026-11-30:
    Megatron-Core's per-step zeroing of its whole fp32 gradient buffer, 2.7e9 parameters x 4 B,
    +6.5 ms; 2026-12-01: each GEMM kernel's fixed in-kernel time, 5.2 us, +0.37%; then each
    memory-bound kernel's, 2.1 us, +0.19%; then NCCL's 24 CTAs inside an A100 server, 16
    before, +0.37%; 2026-12-01, later: the data-parallel rings' HBM draw beside the memory-bound
    kernels, +0.01%; 2026-12-02: each memory-bound kernel's backward bytes as it reads and
    writes them, simulator/workload/backward_bytes.py, and the A100's GEMM fraction 0.72, +0.67%)."""
    session = open_scenario(ROOT / "scenarios" / "gpt3-175b-1024xA100.yaml")
    noise = session.scenario.noise.model_validate(
        {"straggler": {"distribution": "lognormal", "sigma": 0.02},
         "throttle": {"probability": 2e-4, "factor": 1.5}})
    scenario = session.scenario.model_copy(update={"noise": noise})
    times = simulate_steps_des(scenario, session.collectives, steps=3, contention=True,
                               path="event").step_times_s
    np.testing.assert_allclose(times, [22.17572456781492, 22.39974565547187, 30.102448905795303],
                               rtol=1e-9, atol=0)


def _both(scenario, collectives, steps=3, seed=5):
    """(steps with the prefix, steps replayed in full, share of tasks the prefix skipped)."""
    base, ctx, plan, routes, source = des._prepare(scenario, collectives, seed, True)
    assert des_prefix.applies(plan, routes)
    cutter = PrefixCutter(ctx, plan, routes)
    block = next(source.blocks(steps))
    cut, full, skipped = [], [], []
    for i, resume in enumerate(cutter.resumes(block)):
        cut.append(des._one_step(ctx, plan, routes, block.step(i), True, resume=resume))
        full.append(des._one_step(ctx, plan, routes, block.step(i), True))
        skipped.append(resume.first.sum() / (cutter.n * cutter.p * cutter.dp))
    return np.array(cut), np.array(full), np.array(skipped)


HELD_SENDS = {"base": "megatron-core", "pipeline": {"overlap_p2p": False}}
"""Megatron-Core's interleaved schedule with its sends held (``batch_p2p_comm``): the prefix
applies only where a send holds its stage (overlapped sends are replayed in full)."""

VARIANTS = {
    "interleaved, 4:1": dict(tp=2, pp=4, over=4.0, schedule="interleaved-1f1b", virtual=2,
                             stack=HELD_SENDS),
    "gpipe, 2:1": dict(tp=2, pp=4, over=2.0, schedule="gpipe"),
    "pp 2, 4:1, no overlap": dict(tp=4, pp=2, over=4.0, overlap=False),
    "faults, 4:1": dict(tp=1, pp=8, over=4.0, gb=128, noise=FAULTS),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_prefix_equals_full_replay(name):
    """Step by step, the replay from the prefix's cut equals the replay of every task, and the
    prefix skips some tasks."""
    cut, full, skipped = _both(*_scenario(**VARIANTS[name]))
    np.testing.assert_allclose(cut, full, rtol=1e-9, atol=0)
    assert skipped.max() > 0


@pytest.mark.parametrize(("arguments", "skips"), [
    (dict(tp=2, pp=4, over=4.0, schedule="interleaved-1f1b", virtual=2), True),
    (dict(tp=1, pp=4, over=2.0, schedule="interleaved-1f1b", virtual=4, gb=64, noise=FAULTS), False),
    (dict(tp=2, pp=8, nodes=8, over=1.0, schedule="interleaved-1f1b", virtual=2, gb=32), True)])
def test_prefix_with_overlapped_sends_equals_full_replay(arguments, skips):
    """Sends that overlap the next pass (Megatron-Core's interleaved default): a task is
    replayed unless its send has arrived before the cut, an entity's two directions may meet
    on its own NIC, a skipped send still in flight delays the next pass its way. Step by step
    the same as the full replay, with some tasks skipped where flows do not meet at once (with
    faulty NICs and 4 microbatches on 4 stages they do), and never faster than without
    contention."""
    scenario, collectives = _scenario(**arguments)
    _, _, plan, routes, _ = des._prepare(scenario, collectives, 5, True)
    assert plan.sends_overlap
    cut, full, skipped = _both(scenario, collectives)
    np.testing.assert_allclose(cut, full, rtol=1e-9, atol=0)
    assert bool(skipped.max() > 0) == skips
    off = simulate_steps_des(scenario, collectives, steps=3, seed=5, contention=False).step_times_s
    assert np.all(full >= np.asarray(off) * (1 - 1e-12))


def test_prefix_with_documents_and_slow_workers():
    """Packed documents (per-microbatch work), a slow GPU, fail-slow episodes and host pauses
    (scenarios/llama3-8b-stragglers-32xH100.yaml) with contention."""
    session = open_scenario(ROOT / "scenarios" / "llama3-8b-stragglers-32xH100.yaml")
    cut, full, skipped = _both(session.scenario, session.collectives, steps=4)
    np.testing.assert_allclose(cut, full, rtol=1e-9, atol=0)
    assert skipped.max() > 0


def test_prefix_needs_one_flow_per_send():
    """At ``per-rank`` every tensor-parallel rank sends its own flow: the full replay runs."""
    scenario, collectives = _scenario(fidelity="per-rank")
    _, _, plan, routes, _ = des._prepare(scenario, collectives, 0, True)
    assert not des_prefix.applies(plan, routes)


def test_first_meeting_of_overlapping_sends():
    """Two streams on one link: the first instant two of their intervals overlap."""
    cutter = PrefixCutter.__new__(PrefixCutter)
    cutter.groups = np.array([[[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [-1, -1, -1]]])
    starts = np.array([[[[0.0]], [[5.0]]], [[[2.0]], [[4.5]]]])       # (pp 2, n 2, k 1, dp 1)
    ends = np.array([[[[1.0]], [[6.0]]], [[[3.0]], [[7.0]]]])
    assert cutter._first_meeting(ends, starts).tolist() == [5.0]
    ends[1, 1, 0, 0] = 5.0                                              # touching: no meeting
    assert cutter._first_meeting(ends, starts).tolist() == [np.inf]


def test_gpipe_on_pcie_servers_with_no_shared_send_tasks():
    """Found by fuzzing (2026-11-28): GPipe on PCIe A100 servers has links shared by send
    streams on which no task of the schedule sends (the wrap-around from the last stage to the
    first); the prefix cutter once failed to build its empty groups. It runs and agrees with
    the full event replay."""
    data = {"name": "gpipe-pcie", "cluster": {"node": "pcie-a100x8", "nodes": 2,
                                              "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "qwen3-4b", "seq_len": 4096},
            "training": {"global_batch": 128, "micro_batch": 4, "stack": "deepspeed"},
            "parallelism": {"tp": 1, "pp": 4, "dp": 4, "zero_stage": 0, "schedule": "gpipe",
                            "recompute": "full"}}
    scenario = scenario_from_mapping(data, "<test>")
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    auto = simulate_steps_des(scenario, collectives, steps=1, contention=True)
    event = simulate_steps_des(scenario, collectives, steps=1, contention=True, path="event")
    assert auto.step_time_s == pytest.approx(event.step_time_s, rel=1e-12)
