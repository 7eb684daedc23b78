"""Independent, deliberately simple re-implementations used as test oracles."""

from __future__ import annotations

import numpy as np


def replay_1f1b(forward, backward, microbatches: int) -> float:
    """Finish time of 1F1B from its dependency graph (no closed form used).

    Stage i runs ``p - i - 1`` warm-up forwards, then alternates one forward and one
    backward, then drains its backwards. Forward j on stage i needs forward j on i-1;
    backward j on stage i needs backward j on i+1 and forward j on i.
    """
    f, b = np.asarray(forward, float), np.asarray(backward, float)
    p, m = len(f), microbatches
    f_end = np.full((p, m), np.nan)
    b_end = np.full((p, m), np.nan)
    orders = [_one_f_one_b_order(p, i, m) for i in range(p)]
    clock, cursor = np.zeros(p), [0] * p
    while any(cursor[i] < len(orders[i]) for i in range(p)):
        progressed = False
        for i in range(p):
            while cursor[i] < len(orders[i]):
                kind, j = orders[i][cursor[i]]
                ready = _ready(kind, i, j, p, f_end, b_end)
                if ready is None:
                    break
                start = max(clock[i], ready)
                clock[i] = start + (f[i] if kind == "F" else b[i])
                (f_end if kind == "F" else b_end)[i, j] = clock[i]
                cursor[i] += 1
                progressed = True
        if not progressed:
            raise RuntimeError("1F1B replay deadlocked")
    return float(clock.max())


def _one_f_one_b_order(p: int, stage: int, m: int) -> list[tuple[str, int]]:
    warmup = min(p - stage - 1, m)
    order = [("F", j) for j in range(warmup)]
    for j in range(m - warmup):
        order += [("F", warmup + j), ("B", j)]
    order += [("B", j) for j in range(m - warmup, m)]
    return order


def _ready(kind: str, i: int, j: int, p: int, f_end, b_end) -> float | None:
    if kind == "F":
        dep = 0.0 if i == 0 else f_end[i - 1, j]
    else:
        dep = f_end[i, j] if i == p - 1 else b_end[i + 1, j]
    return None if np.isnan(dep) else float(dep)


def replay_alone_seconds(cluster, replay) -> float:
    """Seconds a collective replay takes on an otherwise idle network of ``cluster``: its
    flows run max-min fair over link capacities scaled by NCCL's point-to-point efficiency."""
    import simpy

    from simulator.engine.des import run_replay
    from simulator.engine.des_plan import PreparedReplay
    from simulator.engine.flows import FlowNetwork

    efficiency = cluster.hw.protocols.bandwidth_efficiency["p2p"]["Simple"]
    env = simpy.Environment()
    capacity = cluster.bandwidth_Bps * efficiency
    env.process(run_replay(env, FlowNetwork(env, capacity), PreparedReplay.of(replay, capacity)))
    env.run()
    return env.now
