"""NCCL's SMs beside the overlapped data-parallel collectives (simulator/engine/dp_overlap_sms.py):
the closed form, the cool-down chain, and both engines adding the same seconds."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.collectives.group import Group
from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.cost.nccl_sms import nccl_sm_share, overlap_slowed
from simulator.engine import analytical, dp_overlap_sms
from simulator.engine.analytical import gradient_sync_parts, simulate_step, stage_step
from simulator.engine.dp_beside import stage_gather_shares, stage_reduce_shares
from simulator.engine.dp_overlap_sms import cooldown_delays, synced_clocks
from simulator.engine.gradient_sync import rest_gather_seconds
from simulator.topology import build_cluster


def _scenario(tp=1, pp=1, nodes=2, overlap=True, zero_stage=1, gb=16, schedule="1f1b", virtual=1):
    data = {"name": "t", "cluster": {"node": "dgx-h100", "nodes": nodes,
                                     "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "megatron-7.5b"},
            "training": {"global_batch": gb, "micro_batch": 1, "stack": {"base": "megatron-core"}},
            "parallelism": {"tp": tp, "pp": pp, "overlap_grad_reduce": overlap, "zero_stage": zero_stage,
                            "schedule": schedule, "virtual_stages": virtual}}
    scenario = scenario_from_mapping(data, "<test>")
    return scenario, CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))


def test_overlap_slowed_closed_form():
    """C + f min(R, C / (1 - f)): the compute runs at 1 - f of its pace while the collective
    runs; a collective longer than the slowed compute slows all of it; f = 0 changes nothing."""
    assert overlap_slowed(1.0, 0.5, 0.1) == pytest.approx(1.05)
    assert overlap_slowed(1.0, 5.0, 0.1) == pytest.approx(1.0 / 0.9)
    assert overlap_slowed(1.0, 5.0, 0.0) == 1.0
    np.testing.assert_allclose(overlap_slowed(np.array([1.0, 2.0]), np.array([0.5, 0.5]), 0.2), [1.1, 2.1])


def test_cooldown_delays_sum_the_later_stages():
    """Stage s's last backward waits for stage s + 1's: late by the slowdowns after it."""
    np.testing.assert_allclose(cooldown_delays(np.array([1.0, 2.0, 4.0])), [6.0, 4.0, 0.0])
    np.testing.assert_allclose(cooldown_delays(np.array([[1.0, 2.0], [3.0, 5.0]])), [[2.0, 0.0], [5.0, 0.0]])


def test_synced_clocks_without_slowdowns_is_the_plain_rule():
    """Zero slowdowns give max(start + sync, finish + tail) bit for bit (no figure moves where
    nothing overlaps)."""
    start, finish = np.array([1.0, 2.0]), np.array([1.5, 2.5])
    sync, tail = np.array([0.7, 0.1]), np.array([0.05, 0.05])
    out = synced_clocks(start, finish, sync, tail, np.zeros(2))
    assert np.array_equal(out, np.maximum(start + sync, finish + tail))


def test_one_stage_step_pays_the_closed_form(monkeypatch):
    """One stage, data parallel over 2 servers of 8 GPUs (f = 16/132, and with the HBM the
    rings draw on the passes' memory-bound kernels f_r and f_g, simulator/engine/dp_beside.py):
    the step exceeds the step without them by f_r min(R, C / (1 - f_r)) for the reduction
    beside the backward plus f_g min(G, F / (1 - f_g)) for the gathers beside the forward."""
    scenario, collectives = _scenario()
    staged = stage_step(scenario, collectives)
    ctx = staged.ctx
    f = nccl_sm_share(Group(collectives.cluster, ctx.layout.stage_dp_groups(0)[0]))
    assert f == pytest.approx(16 / 132)
    reduce = gradient_sync_parts(ctx)[2][0]
    gathers = rest_gather_seconds(ctx)
    assert reduce > 0 and gathers[0] > 0
    backward, forward = staged.backward[0], staged.forward[0]
    assert reduce < backward            # the reduction hides: only the slowdown shows
    f_r, f_g = stage_reduce_shares(ctx)[0], stage_gather_shares(ctx)[0]
    assert f_r >= f and f_g >= f
    expected = f_r * min(reduce, backward / (1 - f_r)) + f_g * min(gathers[0], forward / (1 - f_g))
    result = simulate_step(scenario, collectives)
    for name in ("stage_reduce_shares", "stage_gather_shares"):
        monkeypatch.setattr(dp_overlap_sms, name, lambda ctx: np.zeros(ctx.layout.pp))
    monkeypatch.setattr(analytical, "stage_beside_shares", lambda ctx: (np.zeros(ctx.layout.pp),) * 2)
    without = simulate_step(scenario, collectives)
    assert result.step_time_s - without.step_time_s == pytest.approx(expected, rel=1e-9)
    assert result.dp_sm_slowdown_s == pytest.approx(expected, rel=1e-9)   # reported as such
    assert without.dp_sm_slowdown_s == 0.0


def test_no_overlap_no_reduction_slowdown():
    """Without overlap_grad_reduce the reduction runs after the backward, beside nothing."""
    scenario, collectives = _scenario(overlap=False)
    staged = stage_step(scenario, collectives)
    reduce = gradient_sync_parts(staged.ctx)[2]
    assert reduce.sum() > 0
    assert not dp_overlap_sms.reduction_slowdowns(staged.ctx, reduce, staged.backward).any()


@pytest.mark.parametrize("kwargs", [dict(tp=2, pp=4, nodes=4, gb=32),
                                    dict(tp=2, pp=4, nodes=4, gb=32, schedule="interleaved-1f1b",
                                         virtual=2),
                                    dict(tp=1, pp=2, nodes=2, gb=8, zero_stage=0)])
def test_engines_agree_with_the_chains(kwargs):
    """Pipelines (the warm-up and cool-down chains): the discrete-event engine with contention
    off gives the analytical step, and with contention on never less."""
    from des_checks import assert_des_brackets_analytical

    scenario, collectives = _scenario(**kwargs)
    staged = stage_step(scenario, collectives)
    reduce = gradient_sync_parts(staged.ctx)[2]
    assert dp_overlap_sms.reduction_slowdowns(staged.ctx, reduce, staged.backward).any()
    assert_des_brackets_analytical(scenario, collectives)
