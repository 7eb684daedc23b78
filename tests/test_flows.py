"""The flow-level network: max-min fair sharing, lazy progress, batched re-solves."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from simulator.engine import flows as flows_module
from simulator.engine.flows import FlowNetwork, max_min_rates


def _finish_times(capacity, specs) -> list[float]:
    """Run ``specs`` = [(start_s, path, nbytes, latency_s)] through ``transfer``; finish times."""
    env = simpy.Environment()
    network = FlowNetwork(env, np.asarray(capacity, dtype=float))
    finish = [np.nan] * len(specs)

    def one(i, start, path, nbytes, latency):
        yield env.timeout(start)
        yield env.process(network.transfer(np.asarray(path, dtype=np.int64), nbytes, latency))
        finish[i] = env.now

    for i, spec in enumerate(specs):
        env.process(one(i, *spec))
    env.run()
    return finish


def test_single_flow_takes_latency_plus_bytes_over_bottleneck():
    finish = _finish_times([10.0, 4.0, 8.0], [(0.0, [0, 1, 2], 100.0, 0.5)])
    assert finish[0] == pytest.approx(0.5 + 100.0 / 4.0, rel=1e-12)


def test_two_flows_on_one_link_share_it_and_finish_together():
    n, c = 6.0, 3.0
    finish = _finish_times([c], [(0.0, [0], n, 0.0), (0.0, [0], n, 0.0)])
    assert finish == pytest.approx([2 * n / c, 2 * n / c], rel=1e-12)


def test_three_flows_follow_max_min_fairness_over_time():
    """A over links 0, 1 (8 B); B over 0 (8 B); C over 1 (4 B); capacities 10 and 4 B/s.

    t in [0, 1]: link 1 saturates first, A = C = 2, B = 8; B ends at 1. t in [1, 2]: A and
    C keep 2 (link 1); C ends at 2 with A at 4 B left. Alone, A runs at 4 and ends at 3.
    """
    finish = _finish_times([10.0, 4.0], [(0.0, [0, 1], 8.0, 0.0), (0.0, [0], 8.0, 0.0),
                                         (0.0, [1], 4.0, 0.0)])
    assert finish == pytest.approx([3.0, 1.0, 2.0], rel=1e-12)


def test_a_finished_flow_frees_its_bandwidth():
    """Second flow starts at n/(2C): the first ends at 1.5 n/C, the second at 2 n/C."""
    n, c = 10.0, 4.0
    finish = _finish_times([c], [(0.0, [0], n, 0.0), (n / (2 * c), [0], n, 0.0)])
    assert finish == pytest.approx([1.5 * n / c, 2 * n / c], rel=1e-12)


def test_a_flow_within_1e9_of_done_counts_as_finished_when_another_joins():
    """At 0.3333333333 s the first flow (1 B at 3 B/s) has 1e-10 B left: it is done there."""
    joins = 0.3333333333
    finish = _finish_times([3.0], [(0.0, [0], 1.0, 0.0), (joins, [0], 1.0, 0.0)])
    assert finish[0] == joins
    assert finish[1] == pytest.approx(joins + 1.0 / 3.0, rel=1e-12)


def test_many_flows_started_at_once_finish_together_after_one_solve(monkeypatch):
    calls = []
    solve = flows_module._progressive_filling
    monkeypatch.setattr(flows_module, "_progressive_filling",
                        lambda *args: calls.append(1) or solve(*args))
    n, c, k = 3.0, 7.0, 200
    env = simpy.Environment()
    network = FlowNetwork(env, np.array([c, 2 * c]))
    done = [network.start(np.array([0, 1]), n) for _ in range(k)]
    env.run()
    assert all(event.processed for event in done)
    assert env.now == pytest.approx(k * n / c, rel=1e-12)
    assert len(calls) == 1


def test_disjoint_flows_cost_few_simpy_events():
    """Uncontended flows take O(1) events each: a wake-up and their completion."""
    env = simpy.Environment()
    scheduled = []
    schedule = env.schedule
    env.schedule = lambda *args, **kw: scheduled.append(1) or schedule(*args, **kw)
    k = 500
    network = FlowNetwork(env, np.ones(k))
    done = [network.start(np.array([i]), 1.0 + i) for i in range(k)]
    env.run()
    assert env.now == pytest.approx(k, rel=1e-12)
    assert all(event.processed for event in done)
    assert len(scheduled) <= 2 * k


def test_zero_bytes_and_empty_paths_take_only_the_latency():
    finish = _finish_times([1.0], [(1.0, [0], 0.0, 0.25), (0.0, [], 5.0, 0.5), (0.0, [0], -1.0, 0.0)])
    assert finish == [1.25, 0.5, 0.0]
    env = simpy.Environment()
    network = FlowNetwork(env, np.ones(1))
    events = [network.start(np.array([0]), 0.0), network.start(np.array([], dtype=np.int64), 3.0)]
    env.run()
    assert env.now == 0.0 and all(e.processed for e in events)


def _reference(capacity, starts, paths, sizes) -> np.ndarray:
    """Slow reference: re-solve every active flow at every start and finish."""
    n = len(sizes)
    left, finish, now = sizes.astype(float), np.full(n, np.nan), 0.0
    while np.isnan(finish).any():
        active = (starts <= now) & np.isnan(finish)
        rates = np.zeros(n)
        if active.any():
            rates[active] = max_min_rates([paths[i] for i in np.flatnonzero(active)], capacity)
        later = starts[starts > now]
        next_start = later.min() if later.size else np.inf
        with np.errstate(divide="ignore"):
            next_finish = now + np.where(active, left / np.where(active, rates, 1.0), np.inf).min()
        step_to = min(next_start, next_finish)
        left[active] -= rates[active] * (step_to - now)
        now = step_to
        ended = active & (left <= 1e-9 * sizes)
        finish[ended] = now
    return finish


@pytest.mark.parametrize("seed", range(25))
def test_matches_a_global_resolve_at_every_event(seed):
    rng = np.random.default_rng(seed)
    n_edges, n_flows = int(rng.integers(3, 9)), int(rng.integers(2, 40))
    capacity = rng.choice([1.0, 2.0, 3.0, 5.0, 10.0], size=n_edges) * rng.uniform(0.5, 2.0)
    paths = [rng.choice(n_edges, size=int(rng.integers(1, 4)), replace=False) for _ in range(n_flows)]
    starts = rng.choice([0.0, 0.5, 1.0, 2.5, 4.0], size=n_flows)
    sizes = rng.choice([1.0, 2.0, 3.5, 8.0], size=n_flows)
    env = simpy.Environment()
    network = FlowNetwork(env, capacity)
    finish = np.full(n_flows, np.nan)

    def batch(t0, members):                 # every flow starting at t0, started at once
        yield env.timeout(t0)
        for i, event in zip(members, [network.start(paths[i], sizes[i]) for i in members],
                            strict=True):
            event.callbacks.append(lambda _e, i=i: finish.__setitem__(i, env.now))

    for t0 in np.unique(starts):
        env.process(batch(t0, np.flatnonzero(starts == t0).tolist()))
    env.run()
    assert finish == pytest.approx(_reference(capacity, starts, paths, sizes), rel=1e-9)


def _textbook_rates(paths, capacity) -> list[float]:
    """Progressive filling, one link at a time, in plain Python."""
    rates, left, active = [0.0] * len(paths), list(map(float, capacity)), set(range(len(paths)))
    while active:
        count = {e: sum(e in paths[i] for i in active) for e in range(len(capacity))}
        share = {e: left[e] / c for e, c in count.items() if c}
        link = min(share, key=share.get)
        for i in [i for i in active if link in paths[i]]:
            rates[i] = share[link]
            active.discard(i)
            for e in paths[i]:
                left[e] -= share[link]
    return rates


@pytest.mark.parametrize("seed", range(10))
def test_max_min_rates_equals_textbook_progressive_filling(seed):
    rng = np.random.default_rng(100 + seed)
    n_edges = int(rng.integers(2, 7))
    capacity = rng.uniform(1.0, 10.0, size=n_edges)
    paths = [rng.choice(n_edges, size=int(rng.integers(1, n_edges + 1)), replace=False)
             for _ in range(int(rng.integers(1, 12)))]
    expected = _textbook_rates([set(p.tolist()) for p in paths], capacity)
    assert max_min_rates(paths, capacity) == pytest.approx(expected, rel=1e-9)
    assert max_min_rates([*paths, np.array([], dtype=np.int64)], capacity)[-1] == np.inf


@pytest.mark.parametrize("seed", range(20))
def test_groups_started_together_match_the_reference(seed):
    """start_all groups of disjoint, equal flows (started as one bundle while alone) with
    single flows joining their links later: every group ends when its last member would."""
    rng = np.random.default_rng(500 + seed)
    n_edges = 12
    capacity = np.full(n_edges, 2.0)
    capacity[rng.choice(n_edges, size=3, replace=False)] = 5.0     # some links never bind
    paths, sizes, starts, groups = [], [], [], []
    for _ in range(int(rng.integers(2, 6))):
        members = int(rng.integers(2, 4))
        edges = rng.permutation(n_edges)[: 2 * members].reshape(members, 2)
        size, t0 = float(rng.choice([1.0, 2.0, 4.0])), float(rng.choice([0.0, 0.3, 1.0, 2.0]))
        groups.append(list(range(len(paths), len(paths) + members)))
        for row in edges:
            paths.append(row)
            sizes.append(size)
            starts.append(t0)
    starts, sizes = np.array(starts), np.array(sizes)
    env = simpy.Environment()
    network = FlowNetwork(env, capacity)
    ends = {}

    def group_run(k, members):
        yield env.timeout(starts[members[0]])
        routes = tuple(network.route(paths[i]) for i in members)
        yield network.start_all(routes, tuple(sizes[i] for i in members))
        ends[k] = env.now

    for k, members in enumerate(groups):
        env.process(group_run(k, members))
    env.run()
    reference = _reference(capacity, starts, paths, sizes)
    expected = [max(reference[i] for i in members) for members in groups]
    assert [ends[k] for k in range(len(groups))] == pytest.approx(expected, rel=1e-9)
