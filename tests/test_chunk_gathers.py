"""The weight all-gathers launched a model chunk ahead under the interleaved schedule
(simulator/workload/chunk_gathers.py): closed forms of the delay they add, and the engines'
use of it (Megatron-LM schedules.py, ``param_sync_func``)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.scenario import Schedule
from simulator.workload.chunk_gathers import _batch_finish, gather_delay, gathered_finish
from simulator.workload.taskgraph import exact_clocks


def _uniform(p: int, f: float, b: float):
    return np.full(p, f), np.full(p, b)


def test_no_gather_walk_is_the_task_graph():
    """With zero-second gathers the walk is exact_clocks' longest path, bit for bit."""
    forward, backward = np.array([3.0, 2.5, 2.0, 3.5]), np.array([6.0, 5.0, 4.5, 7.0])
    for m in (4, 8, 12):
        walked = gathered_finish(forward, backward, m, 3, 0.1, np.zeros(4))
        assert np.array_equal(walked, exact_clocks(Schedule.INTERLEAVED, forward, backward, m, 3, 0.1)[0])


@pytest.mark.parametrize("p,m,v", [(2, 4, 3), (4, 8, 2), (4, 4, 5), (3, 9, 4)])
def test_levels_equal_the_walk(p, m, v):
    """The level-by-level evaluation of many rows gives the task-by-task walk's finish times,
    bit for bit, for stages that differ and gathers that bind on some stages only."""
    rng = np.random.default_rng(p * 100 + m * 10 + v)
    forward, backward = rng.uniform(1, 3, (5, p)), rng.uniform(2, 6, (5, p))
    p2p, gather = rng.uniform(0, 0.2, 5), rng.uniform(0, 4, (5, p))
    levels = _batch_finish(forward, backward, m, v, p2p, gather)
    for row in range(5):
        walked = gathered_finish(forward[row], backward[row], m, v, float(p2p[row]), gather[row])
        assert np.array_equal(levels[row], walked)


@pytest.mark.parametrize("p,m,v", [(2, 4, 3), (4, 8, 2), (3, 9, 4)])
def test_levels_equal_the_walk_with_nccl_sms(p, m, v):
    """With NCCL's SM share beside the gathers (each task slowed while a gather runs), the
    levels still give the walk's finish times bit for bit, and never earlier than without."""
    rng = np.random.default_rng(p * 1000 + m * 10 + v)
    forward, backward = rng.uniform(1, 3, (5, p)), rng.uniform(2, 6, (5, p))
    p2p, gather, share = rng.uniform(0, 0.2, 5), rng.uniform(0, 4, (5, p)), rng.uniform(0, 0.3, (5, p))
    levels = _batch_finish(forward, backward, m, v, p2p, gather, share)
    assert np.all(levels >= _batch_finish(forward, backward, m, v, p2p, gather))
    for row in range(5):
        walked = gathered_finish(forward[row], backward[row], m, v, float(p2p[row]), gather[row], share[row])
        assert np.array_equal(levels[row], walked)


@pytest.mark.parametrize("share", [0.0, 0.1, 0.25])
def test_one_stage_closed_form_with_nccl_sms(share):
    """One stage, gathers shorter than a chunk forward (G <= f): the first forward waits G,
    and each of the v - 1 chunk forwards that run beside a gather (chunk 1's, then each
    launched by the chunk before) loses f_s G to NCCL's SMs: G (1 + (v - 1) f_s)."""
    v, f, gather = 4, 0.5, 0.2
    forward, backward = _uniform(1, f * v, 2 * f * v)
    delay = gather_delay(forward, backward, 3, v, 0.0, [gather], [share])
    assert delay == pytest.approx(gather * (1 + (v - 1) * share), rel=1e-12)


@pytest.mark.parametrize("gather", [0.2, 0.5, 1.0])
def test_one_stage_closed_form(gather):
    """One stage, chunk forwards of f: chunk c is launched when chunk c-1 starts, so the
    first microbatch's chunks start at G, then every max(f, G): delay G when G <= f, else
    v G - (v - 1) f."""
    v, f = 4, 0.5
    forward, backward = _uniform(1, f * v, 2 * f * v)
    expected = gather if gather <= f else v * gather - (v - 1) * f
    assert gather_delay(forward, backward, 3, v, 0.0, [gather]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("m", [4, 8, 16])
@pytest.mark.parametrize("gather", [1.0, 3.9, 6.0, 9.0])
def test_uniform_pipeline_closed_form(m, gather):
    """p uniform stages, no send time: a chunk's gather hides behind p chunk forwards of
    rank 0's warm-up whatever m, so the step waits for chunk 0's gather alone while
    G <= p f, and the warm-up is paced by the gathers above it: max(G, v G - (v - 1) p f)."""
    p, v, f = 4, 3, 1.0
    forward, backward = _uniform(p, f * v, 2 * f * v)
    expected = max(gather, v * gather - (v - 1) * p * f)
    delay = gather_delay(forward, backward, m, v, 0.0, np.full(p, gather))
    assert delay == pytest.approx(expected, rel=1e-12)


def test_delay_grows_with_the_gather():
    """Slower gathers never shorten the step (monotone in every stage's gather)."""
    forward, backward = np.array([3.0, 2.5, 2.0, 3.5]), np.array([6.0, 5.0, 4.5, 7.0])
    delays = [gather_delay(forward, backward, 8, 3, 0.05, np.full(4, g)) for g in np.linspace(0, 8, 17)]
    assert all(later >= earlier for earlier, later in zip(delays, delays[1:], strict=False))
    assert delays[0] == 0.0


def _interleaved(launch: str, zero_stage: int = 1, dtype: str = "param"):
    from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
    from simulator.cost import CollectiveModel
    from simulator.topology import build_cluster

    data = {"name": "t", "cluster": {"node": "dgx-a100-80gb", "nodes": 8, "gpus_per_node": 8,
                                     "fabric": {"topology": "fat-tree", "link": "ib-hdr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": 64, "micro_batch": 1,
                         "stack": {"base": "megatron-core",
                                   "data_parallel": {"param_gather_launch": launch,
                                                     "param_gather_dtype": dtype}}},
            "parallelism": {"tp": 2, "pp": 4, "schedule": "interleaved-1f1b", "virtual_stages": 2,
                            "zero_stage": zero_stage}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def test_engines_add_the_chunk_gathers_and_agree():
    """The analytical step under ``param_gather_launch: chunk`` exceeds the ``bucket`` one by
    the walk's delay minus the first bucket's gather; the discrete-event engine (contention
    off) gives the same step."""
    from des_checks import assert_des_brackets_analytical

    from simulator.engine.analytical import simulate_step, stage_step
    from simulator.engine.dp_beside import stage_gather_shares
    from simulator.engine.dp_overlap_sms import gather_slowdown
    from simulator.engine.gradient_sync import first_param_bucket_time, param_gather_exposed

    chunk, collectives = _interleaved("chunk")
    bucket, _ = _interleaved("bucket")
    staged, plain = stage_step(chunk, collectives), stage_step(bucket, collectives)
    delay = param_gather_exposed(staged.ctx, staged.forward, staged.backward, staged.p2p,
                                 stage_gather_shares(staged.ctx))
    first = first_param_bucket_time(plain.ctx)
    assert delay > first > 0
    # what the gathers beside the forwards take from them differs with the launch too
    sms = gather_slowdown(staged.ctx, staged.forward) - gather_slowdown(plain.ctx, plain.forward)
    assert (simulate_step(chunk, collectives).step_time_s - simulate_step(bucket, collectives).step_time_s
            == pytest.approx(delay - first + sms, rel=1e-9))
    assert_des_brackets_analytical(chunk, collectives)


def test_fp8_weight_gathers_move_half_the_bytes():
    """``param_gather_dtype: fp8`` halves each chunk's gathered bytes (bf16 -> 1 byte), so
    the exposed chunk-0 gather shrinks; ZeRO 0 gathers nothing."""
    from simulator.engine.analytical import stage_step
    from simulator.engine.dp_beside import stage_gather_shares
    from simulator.engine.gradient_sync import param_gather_exposed

    def exposed(scenario_and_model):
        staged = stage_step(*scenario_and_model)
        return param_gather_exposed(staged.ctx, staged.forward, staged.backward, staged.p2p,
                                    stage_gather_shares(staged.ctx))

    bf16, fp8 = exposed(_interleaved("chunk")), exposed(_interleaved("chunk", dtype="fp8"))
    assert 0 < fp8 < bf16
    assert exposed(_interleaved("chunk", zero_stage=0)) == 0.0


def test_given_plain_finish_gives_the_same_delay():
    """The search passes its clocks' finish (the graph without gathers) instead of walking it
    again: the delay is the same, bit for bit."""
    from simulator.workload.chunk_gathers import batch_gather_delay
    from simulator.workload.wavefront import batch_stage_clocks

    rng = np.random.default_rng(11)
    forward, backward = rng.uniform(1, 3, (4, 4)), rng.uniform(2, 6, (4, 4))
    p2p, gather = rng.uniform(0, 0.2, 4), rng.uniform(0, 8, (4, 4))
    finish, _ = batch_stage_clocks(Schedule.INTERLEAVED, forward, backward, 8, 3, p2p)
    walked = batch_gather_delay(forward, backward, 8, 3, p2p, gather)
    given = batch_gather_delay(forward, backward, 8, 3, p2p, gather, finish.max(axis=1))
    assert np.array_equal(walked, given) and walked.max() > 0


def test_clocks_with_gathers_in_one_walk_are_the_two_walks():
    """The search's one walk of the clocks and the gathers (rows without gathers as columns
    whose gathers take 0 s; rows alike walked once) gives the plain clocks and the gathers'
    delays of the two walks, bit for bit, with and without SM shares."""
    from simulator.workload.chunk_gathers import batch_clocks_with_gathers, batch_gather_delay
    from simulator.workload.wavefront import batch_stage_clocks

    rng = np.random.default_rng(5)
    for m, v in ((8, 3), (12, 2)):
        forward, backward = rng.uniform(1, 3, (6, 4)), rng.uniform(2, 6, (6, 4))
        forward[4], backward[4] = forward[1], backward[1]              # twins (ZeRO-1 and -2)
        p2p = rng.uniform(0, 0.2, 6)
        p2p[4] = p2p[1]
        rows = [1, 2, 4, 5]
        gather = rng.uniform(0, 8, (4, 4))
        gather[2] = gather[0]
        for share in (np.zeros((4, 4)), rng.uniform(0, 0.3, (4, 4))):
            share[2] = share[0]
            finish, last_start = batch_stage_clocks(Schedule.INTERLEAVED, forward, backward, m, v, p2p)
            waits = batch_gather_delay(forward[rows], backward[rows], m, v, p2p[rows], gather,
                                       finish[rows].max(axis=1), share)
            got = batch_clocks_with_gathers(forward, backward, m, v, p2p, rows, gather, share)
            assert np.array_equal(got[0], finish) and np.array_equal(got[1], last_start)
            assert np.array_equal(got[2], waits) and waits.max() > 0
