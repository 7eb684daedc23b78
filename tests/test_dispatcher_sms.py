"""The SMs the flex dispatcher's kernels hold beside overlapped compute
(simulator/cost/dispatcher_sms.py, ``expert_parallel.dispatcher_sms``)."""

from __future__ import annotations

import pytest

from simulator.collectives import Group
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.stack import EpDispatcher
from simulator.cost.dispatcher_sms import dispatcher_sm_share
from simulator.cost.nccl_sms import nccl_sm_share
from simulator.engine.analytical import simulate_step
from simulator.engine.context import make_context
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario


def _data(dispatcher: str, nodes: int = 2, overlap: bool = True, sms: int | None = None) -> dict:
    ep = {"dispatcher": dispatcher, "a2a_overlap": overlap}
    if sms is not None:
        ep["dispatcher_sms"] = sms
    return {"cluster": {"node": "dgx-b200", "nodes": nodes,
                        "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
            "model": {"preset": "qwen3-30b-a3b", "seq_len": 4096, "layers": 4},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": "bf16",
                         "stack": {"base": "megatron-core", "expert_parallel": ep}},
            "parallelism": {"dp": nodes * 8, "ep": nodes * 8, "etp": 1}}


def _session(*args, **kwargs):
    library = HardwareLibrary()
    return session_from_scenario(scenario_from_mapping(_data(*args, **kwargs), "<test>", library), library)


def _expert_group(session) -> Group:
    ctx = make_context(session.scenario, session.collectives)
    return Group(session.collectives.cluster, ctx.layout.expert_group())


@pytest.mark.parametrize("dispatcher, nodes, count", [
    ("deepep", 1, 20), ("deepep", 2, 20),        # DeepEP Buffer.num_sms
    ("hybridep", 1, 24), ("hybridep", 2, 8),     # HybridEP: one NVLink domain, several
])
def test_default_counts_are_the_kernels_own(dispatcher, nodes, count):
    session = _session(dispatcher, nodes)
    sms = session.collectives.cluster.hw.gpu.sm_count
    share = dispatcher_sm_share(_expert_group(session), EpDispatcher(dispatcher))
    assert share == pytest.approx(count / sms)


def test_alltoall_keeps_nccls_share_and_a_stated_count_is_capped_at_the_gpu():
    session = _session("alltoall")
    group = _expert_group(session)
    assert dispatcher_sm_share(group, EpDispatcher.ALLTOALL) == nccl_sm_share(group)
    assert dispatcher_sm_share(group, EpDispatcher.HYBRIDEP, 10_000) == 1.0


def test_more_dispatcher_sms_slow_only_the_overlapped_step():
    """Beside the overlapped all-to-alls the compute has the other SMs: the step grows with the
    dispatcher's count; in line (no overlap) nothing runs beside the kernels, so it is unchanged."""
    def step(sms, overlap):
        session = _session("hybridep", 2, overlap, sms)
        return simulate_step(session.scenario, session.collectives).step_time_s
    overlapped = [step(n, True) for n in (8, 32, 64)]
    assert overlapped[0] < overlapped[1] < overlapped[2]
    assert step(8, False) == step(64, False)


def test_dispatcher_sms_with_the_alltoall_dispatcher_is_refused():
    with pytest.raises(ConfigError) as caught:
        _session("alltoall", sms=32)
    assert caught.value.key == "training.stack.expert_parallel.dispatcher_sms"
