"""Stragglers as published (issue 15, validation): ByteDance's injection and traces
(Lin et al., OSDI'25; ByteDance-Seed/StragglerAnalysis @ 8efcd7f3) and the shapes of
Alibaba's FALCON injections (Wu et al., arXiv:2410.12588)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.des import simulate_steps_des
from simulator.topology import build_cluster
from simulator.validation.stragglers import (
    TRACES,
    derive_inputs,
    derive_microbatch_work,
    trace_steps,
    validation_rows,
)


@pytest.fixture(scope="module")
def rows():
    return validation_rows().set_index("row")


def test_bytedance_injection_slowdown_within_five_percent(rows):
    """One TP group of DP4 x PP4 x TP4 (32 microbatches) slowed 2.35x, the factor of its own
    compute in trace AR: measured job slowdown 2.03."""
    row = rows.loc["AR slowdown"]
    assert row["measured"] == 2.03 and abs(row["error"]) <= 0.05


def test_trace_steps_and_spreads_within_target(rows):
    """Median steps within 5%, p99/p50 within 10% (every row scored; SE's sequence-length
    imbalance through its per-microbatch work, -13.4% on the median before it was modelled)."""
    assert rows["scored"].all()
    for name, row in rows.iterrows():
        limit = 0.10 if "p99/p50" in name else 0.05
        assert abs(row["error"]) <= limit, (name, row["error"])


def test_se_microbatch_work_from_its_trace():
    """One latent factor per microbatch explains SE's chunks; without it (every microbatch the
    median one, the trace's residual jitter only) the median step falls short by over 10%."""
    from dataclasses import replace

    se = TRACES["SE"]
    flat = float(np.median(trace_steps(replace(se, work_quantiles=(), work_slopes=()), 200)))
    varied = float(np.median(trace_steps(se, 200)))
    assert flat < 0.9 * se.step_p50_s < varied
    q = np.asarray(se.work_quantiles)
    assert np.all(np.diff(q) >= 0) and q[len(q) // 2] == 1.0
    assert all(b > f > 0 for b, f in se.work_slopes)       # backward carries more attention


def test_straggler_free_replay_has_no_spread_and_the_straggler_is_the_critical_path():
    """Without jitter every step is the same. With the straggler, its own work (m chunks of
    forward and backward, times its factor), its stage's synchronisation and the fixed
    seconds are on the critical path; at most the other stages' fill and drain, (p - 1)
    chunk pairs, and the sends come on top."""
    ar = TRACES["AR"]
    ideal = trace_steps(ar, 5, factor=1.0, sigma=0.0)
    slowed = trace_steps(ar, 5, sigma=0.0)
    assert np.ptp(ideal) == 0.0 and np.ptp(slowed) == 0.0
    own = ar.microbatches * (ar.forward[0] + ar.backward[0]) * ar.factor + ar.sync_s[0] + ar.fixed_s
    fill = (ar.pp - 1) * max(f + b for f, b in zip(ar.forward, ar.backward, strict=True))
    assert own <= slowed[0] <= own + fill + 2 * ar.microbatches * ar.p2p_s


def test_derive_inputs_recovers_a_synthetic_trace():
    """dp 2 x pp 2, 2 microbatches, worker (1, 0) 3x slower: derive_inputs finds it, its
    factor, the healthy chunk times, the sync and fixed seconds."""
    records = []
    for step in range(3):
        for r in range(2):
            for s in range(2):
                slow = 3.0 if (r, s) == (1, 0) else 1.0
                for mb in range(2):
                    records.append((r, s, step, "forward-compute", 1.0 + mb, 0.1 * (s + 1) * slow, mb))
                    records.append((r, s, step, "backward-compute", 2.0 + mb, 0.2 * (s + 1) * slow, mb))
                    records.append((r, s, step, "forward-send", 1.5 + mb, 0.001 + 0.01 * mb, -1))
                records.append((r, s, step, "grads-reduce-scatter", 5.0, 0.05 + 0.1 * r, -1))
                records.append((r, s, step, "optimizer", 6.0, 0.02, -1))
    frame = pd.DataFrame(records, columns=["dp_rank", "stage", "step", "optype", "start_ts", "duration",
                                           "mb_id"])
    got = derive_inputs(frame, "synthetic", 2, 2, 1)
    assert got.slowed == (1, 0) and got.factor == pytest.approx(3.0)
    assert got.forward == pytest.approx((0.1, 0.2)) and got.backward == pytest.approx((0.2, 0.4))
    assert got.sync_s == pytest.approx((0.05, 0.05)) and got.fixed_s == pytest.approx(0.02)
    assert got.microbatches == 2 and got.sigma == pytest.approx(0.0)


def test_derive_microbatch_work_recovers_a_synthetic_trace():
    """Chunks F + A (x - 1) for a known per-microbatch x: the slopes A per stage and pass come
    back, and no jitter is left."""
    rng = np.random.default_rng(0)
    slopes = {(0, "backward-compute"): 0.4, (0, "forward-compute"): 0.1,
              (1, "backward-compute"): 0.5, (1, "forward-compute"): 0.2}
    records = []
    for step in range(4):
        for r in range(3):
            for mb in range(5):
                x = float(rng.lognormal(0.0, 0.3))
                for (s, op), a in slopes.items():
                    records.append((r, s, step, op, 0.0, 1.0 + s + a * (x - 1.0), mb))
    frame = pd.DataFrame(records, columns=["dp_rank", "stage", "step", "optype", "start_ts", "duration",
                                           "mb_id"])
    quantiles, got, sigma = derive_microbatch_work(frame, 2)
    assert quantiles[len(quantiles) // 2] == pytest.approx(1.0)
    ratio = got[0][0] / 0.4        # x is the microbatch's total over the median's: a common scale
    assert ratio > 0
    for s in range(2):
        assert got[s] == pytest.approx((slopes[s, "backward-compute"] * ratio,
                                        slopes[s, "forward-compute"] * ratio), rel=1e-6)
    assert sigma == pytest.approx(0.0, abs=1e-9)


def _job(dp: int, pp: int = 2, noise: dict | None = None):
    """Megatron 7.5B, tp 8, on dp x pp servers, 8 microbatches per replica (weak scaling)."""
    data = {"name": "falcon", "cluster": {"node": "dgx-a100-80gb", "nodes": dp * pp,
                                          "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"}, "training": {"global_batch": 8 * dp, "micro_batch": 1},
            "parallelism": {"tp": 8, "pp": pp}, "simulate": {"engine": "des"}, "noise": noise or {}}
    scenario = scenario_from_mapping(data, "falcon.yaml")
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    return simulate_steps_des(scenario, collectives, contention=False).step_time_s


def test_one_slowed_gpu_costs_the_same_whatever_the_dp_degree():
    """FALCON: a computation fail-slow on one GPU slows the job about equally at DP 2, 4 and
    8 (its replica gates every step's gradient synchronisation): the same delay at DP 4 and 8,
    8.1% more at DP 2 (whose shorter gradient ring hides less of it; 6% before the overlapped
    input-gradient collective held its NCCL SMs beside the weight-gradient GEMM, 7.5% before
    NCCL's CTAs inside a server followed its topology search, 24 on an A100, 2026-12-01), so
    "about equally" is held to 10%; slowdown ratios 1.29-1.33, within 4% of each other (3.05%
    since GEMM kernels pay their fixed time, 2026-12-01; 2.95% before)."""
    healthy = [_job(dp) for dp in (2, 4, 8)]
    slowed = [_job(dp, noise={"slow_gpus": [{"gpu": 3, "factor": 1.5}]}) for dp in (2, 4, 8)]
    delay = [b - a for a, b in zip(healthy, slowed, strict=True)]
    ratios = [b / a for a, b in zip(healthy, slowed, strict=True)]
    assert min(ratios) > 1.2 and max(ratios) - min(ratios) <= 0.04 * min(ratios)
    assert delay[1] == pytest.approx(delay[2], rel=1e-9) and delay[0] == pytest.approx(delay[1], rel=0.10)


def test_slowing_one_to_four_of_four_dp_groups_costs_the_same_as_one():
    """FALCON: the slowest replica sets the step, however many replicas are that slow."""
    steps = [_job(4, noise={"slow_gpus": [{"gpu": 8 * r, "factor": 1.5} for r in range(k)]})
             for k in (1, 2, 3, 4)]
    assert steps == pytest.approx([steps[0]] * 4, rel=1e-12)


def test_more_congested_pipeline_links_cost_monotonically_more():
    """FALCON: congesting 0, 1, 2, 3 of the 3 pipeline links of replica 0 (pp 4, each at a
    tenth of its bandwidth plus 5 ms per message) slows the job step by step."""
    def links(k):
        return [{"gpu": 8 * s, "peer": 8 * (s + 1), "fraction": 0.1, "latency_s": 0.005} for s in range(k)]
    steps = [_job(1, pp=4, noise={"nic_faults": links(k)}) for k in range(4)]
    assert all(b > a for a, b in zip(steps, steps[1:], strict=False))


def test_latency_on_one_link_costs_at_least_one_message_per_microbatch():
    """PipeMorph-style injection: 30 ms more per message on one pipeline link of a 1F1B
    job slows the step by at least m x 30 ms (the bottleneck stage sends once per
    microbatch over it) and at most 2 (m + p) x 30 ms (every message over it)."""
    base = _job(1, pp=4)
    slow = _job(1, pp=4, noise={"nic_faults": [{"gpu": 8, "peer": 16, "latency_s": 0.03}]})
    m, p = 8, 4
    assert m * 0.03 <= slow - base <= 2 * (m + p) * 0.03


def test_synchronised_gc_costs_less_than_the_same_pauses_unsynchronised():
    """ByteDance: unsynchronised GC pauses stall the pipeline at different moments; paused
    together at a step boundary they cost one pause per paused step."""
    unsync = {"host_pause": {"probability": 0.1, "duration_s": 0.2}}
    sync = {"host_pause": {"probability": 0.1, "duration_s": 0.2, "synchronized": True}}
    data = {"name": "gc", "cluster": {"node": "dgx-a100-80gb", "nodes": 8,
                                      "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"}, "training": {"global_batch": 32, "micro_batch": 1},
            "parallelism": {"tp": 8, "pp": 4}, "simulate": {"engine": "des", "steps": 400}}
    means = []
    for noise in (unsync, sync):
        scenario = scenario_from_mapping({**data, "noise": noise}, "gc.yaml")
        collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
        means.append(np.mean(simulate_steps_des(scenario, collectives, contention=False).step_times_s))
    assert means[1] < means[0]
