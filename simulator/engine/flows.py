"""Flow-level network for the discrete-event engine: max-min fair sharing of links.

Model. Active flows share every link they cross; rates are the max-min fair allocation
(progressive filling: repeatedly saturate the link with the smallest fair share and freeze
its flows; Bertsekas & Gallager, "Data Networks", 2nd ed., sec. 6.5.2). Rates are
recomputed whenever a flow starts or ends. A flow of ``n`` bytes that is alone on its path
finishes after ``latency + n / min(capacity on its path)``. Units: bytes, seconds, B/s.

Implementation. The allocation decomposes over connected components (flows linked through
shared links), so a start or an end re-solves only the component it touches; a flow whose
links carry no other flow gets ``min(capacity)`` directly and touches nobody when it ends.
Progress is lazy: a flow stores its bytes left at the time its rate last changed, and only
flows whose rate changes are touched. Changes at one simulated instant are batched into one
re-solve (a zero-delay flush, before time advances). Completions sit in one heap of
``(finish time, stamp, flow)``, stale entries skipped by stamp, behind one simpy wake-up.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import simpy

_DONE = 1e-9        # a flow with at most this fraction of its bytes left has finished
_TIE = 1e-12        # relative tolerance grouping links that saturate at the same level
_MEMO_LIMIT = 4096  # memoised component solutions kept per network


def max_min_rates(paths: list[np.ndarray], capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rate of each flow.

    Parameters
    ----------
    paths : list of numpy.ndarray
        ``paths[i]`` are the edge ids flow ``i`` crosses.
    capacity : numpy.ndarray
        Capacity of every edge (B/s).

    Returns
    -------
    numpy.ndarray
        Rate of each flow (B/s); ``inf`` for an empty path.
    """
    lengths = np.array([len(p) for p in paths], dtype=np.int64)
    rates = np.where(lengths == 0, np.inf, 0.0)
    if not lengths.any():
        return rates
    flat = np.concatenate([np.asarray(p, dtype=np.int64) for p in paths])
    edges, local = np.unique(flat, return_inverse=True)
    owner = np.repeat(np.arange(len(paths)), lengths)
    filled = _progressive_filling(local, owner, np.asarray(capacity, dtype=np.float64)[edges], len(paths))
    rates[lengths > 0] = filled[lengths > 0]
    return rates


def _progressive_filling(edge: np.ndarray, owner: np.ndarray, capacity: np.ndarray, n_flows: int):
    """Progressive filling on an incidence list: entry ``k`` puts flow ``owner[k]`` on ``edge[k]``.

    ``edge`` holds local ids ``0 .. len(capacity) - 1``; flows without entries keep rate 0.
    """
    n_edges = len(capacity)
    left = capacity.copy()
    rates = np.zeros(n_flows)
    while edge.size:                              # entries of the flows not yet frozen
        counts = np.bincount(edge, minlength=n_edges)
        share = np.full(n_edges, np.inf)
        np.divide(left, counts, out=share, where=counts > 0)
        level = share.min()
        frozen = np.zeros(n_flows, dtype=bool)
        frozen[owner[share[edge] <= level * (1 + _TIE)]] = True
        rates[frozen] = level
        gone = frozen[owner]
        left -= level * np.bincount(edge[gone], minlength=n_edges)
        edge, owner = edge[~gone], owner[~gone]
    return rates


class Route:
    """A path prepared for :meth:`FlowNetwork.start_all`: its distinct edge ids and its
    bottleneck capacity (B/s). Build it once per path with :meth:`FlowNetwork.route`."""

    __slots__ = ("edges", "bottleneck")

    def __init__(self, edges: list[int], bottleneck: float):
        self.edges = edges
        self.bottleneck = bottleneck


def make_route(path, capacity) -> Route:
    """The :class:`Route` of ``path`` (edge ids; a repeated edge counts once) on edges of
    ``capacity`` (B/s, any indexable)."""
    edges = list(dict.fromkeys(np.asarray(path, dtype=np.int64).tolist()))
    return Route(edges, min(float(capacity[e]) for e in edges))


def _bundle_shape(routes) -> tuple[list[int], float] | None:
    """(all edges, common bottleneck) of routes that share no edge and one bottleneck, else None."""
    edges = [e for route in routes for e in route.edges]
    bottlenecks = {route.bottleneck for route in routes}
    if len(set(edges)) != len(edges) or len(bottlenecks) != 1:
        return None
    return edges, bottlenecks.pop()


class _Group:
    """Flows started together; ``done`` succeeds when the last of them finishes."""

    __slots__ = ("pending", "done")

    def __init__(self, pending: int, done: simpy.Event):
        self.pending = pending
        self.done = done


class _Flow:
    """One active flow: bytes ``left`` at time ``since``, sent at ``rate`` from then on."""

    __slots__ = ("edges", "size", "left", "rate", "since", "stamp", "group", "shared", "members")

    def __init__(self, edges: list[int], size: float, group: _Group, now: float, members=None):
        self.edges = edges
        self.size = size
        self.left = size
        self.rate = 0.0
        self.since = now
        self.stamp = 0          # matches its live heap entry; -1 once finished
        self.group = group
        self.shared = False     # ever indexed in an edge's dict of flows (else: sole holder)
        self.members = members  # a bundle: the routes of identical lone flows it stands for

    def settle(self, now: float) -> None:
        """Account for the bytes sent since the last rate change."""
        self.left -= self.rate * (now - self.since)
        self.since = now


class FlowNetwork:
    """Flows on a graph's edges inside a simpy environment, sharing links max-min fairly.

    Parameters
    ----------
    env : simpy.Environment
        The environment the flows live in.
    capacity : numpy.ndarray
        Capacity of every edge (B/s), read once at construction.
    """

    def __init__(self, env: simpy.Environment, capacity: np.ndarray):
        self.env = env
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self._cap = self.capacity.tolist()
        self._on_edge: dict[int, _Flow | dict[_Flow, None]] = {}   # edge -> its flow(s)
        self._routes: dict[bytes, Route] = {}
        self._dirty: dict[int, None] = {}                     # edges whose component changed
        self._flush_pending = False
        self._heap: list[tuple[float, int, _Flow]] = []       # (finish time, stamp, flow)
        self._stamps = itertools.count(1)
        self._wake: simpy.Event | None = None
        self._wake_at = math.inf
        self.flows_started = 0      # diagnostics: every flow with bytes, since construction
        self._solved: dict[tuple[int, ...], dict[int, float]] = {}   # paths -> rate per path
        self._bundles: dict[tuple, tuple[list[int], float] | None] = {}   # routes -> bundle shape

    def transfer(self, path: np.ndarray, nbytes: float, latency: float):
        """A simpy process: wait ``latency`` (s), then move ``nbytes`` over the edge ids in ``path``."""
        if latency > 0:
            yield self.env.timeout(latency)
        if nbytes > 0 and len(path):
            yield self.start(path, nbytes)

    def start(self, path: np.ndarray, nbytes: float) -> simpy.Event:
        """Begin a flow of ``nbytes`` over the edge ids in ``path`` now (no latency).

        Returns
        -------
        simpy.Event
            Succeeds when the flow's last byte arrives (at once for no bytes or no edges).
        """
        if nbytes <= 0 or len(path) == 0:
            return self.env.timeout(0)
        return self.start_all((self.route(path),), (float(nbytes),))

    def start_all(self, routes, nbytes) -> simpy.Event:
        """Begin one flow per :class:`Route` in ``routes`` now, ``nbytes[i]`` bytes each.

        Returns
        -------
        simpy.Event
            Succeeds when the last of the flows finishes (at once if none has bytes).
        """
        env = self.env
        group = _Group(0, env.event())
        now, on_edge, heap, stamps = env.now, self._on_edge, self._heap, self._stamps
        if len(routes) > 1 and self._bundled(routes, nbytes, group):
            routes = nbytes = ()
        for route, size in zip(routes, nbytes, strict=True):
            if size <= 0:
                continue
            group.pending += 1
            flow = _Flow(route.edges, size, group, now)
            if not on_edge.keys().isdisjoint(route.edges):
                self._join(flow)
                continue
            for e in route.edges:                 # alone: the bottleneck rate, nobody else touched
                on_edge[e] = flow
            flow.rate = rate = route.bottleneck
            flow.stamp = stamp = next(stamps)
            heapq.heappush(heap, (now + size / rate, stamp, flow))
        self.flows_started += group.pending
        if not group.pending:
            group.done.succeed()
        elif heap and heap[0][0] < self._wake_at:
            self._arm()
        return group.done

    def _bundled(self, routes, nbytes, group: _Group) -> bool:
        """Start ``routes`` as one bundle if they are disjoint, share a bottleneck and a size,
        and meet no active flow: they then progress identically, so one heap entry and one
        index object stand for all (split into single flows as soon as another flow joins
        one of their links, :meth:`_split`)."""
        shape = self._bundles.get(routes)
        if shape is None:
            shape = self._bundles[routes] = _bundle_shape(routes)
        size = nbytes[0]
        if not shape or size <= 0 or any(n != size for n in nbytes):
            return False
        edges, rate = shape
        if not self._on_edge.keys().isdisjoint(edges):
            return False
        bundle = _Flow(edges, size, group, self.env.now, routes)
        for e in edges:
            self._on_edge[e] = bundle
        group.pending += len(routes)
        bundle.rate = rate
        self._schedule(bundle)
        return True

    def _split(self, bundle: _Flow) -> None:
        """Replace ``bundle`` by one flow per member, each at the bundle's progress."""
        now, on_edge = self.env.now, self._on_edge
        bundle.settle(now)
        bundle.stamp = -1
        for route in bundle.members:
            flow = _Flow(route.edges, bundle.size, bundle.group, now)
            flow.left, flow.rate = bundle.left, bundle.rate
            for e in route.edges:
                on_edge[e] = flow
            self._schedule(flow)

    def route(self, path: np.ndarray) -> Route:
        """The :class:`Route` of ``path`` (edge ids; repeated edges count once), cached."""
        path = np.asarray(path, dtype=np.int64)
        key = path.tobytes()
        known = self._routes.get(key)
        if known is None:
            known = self._routes[key] = make_route(path, self._cap)
        return known

    def _join(self, flow: _Flow) -> None:
        """Index ``flow``, which shares an edge, and re-solve its component before time advances.

        An edge with one flow maps to that flow, an edge with more to a dict of them.
        """
        on_edge = self._on_edge
        for e in flow.edges:
            held = on_edge.get(e)
            if held is not None and held.__class__ is _Flow and held.members is not None:
                self._split(held)
        self._dirty.update(dict.fromkeys(flow.edges))
        if not self._flush_pending:
            self._flush_pending = True
            self.env.timeout(0).callbacks.append(self._on_flush)
        flow.shared = True
        for e in flow.edges:
            held = on_edge.get(e)
            if held is None:
                on_edge[e] = flow
            elif held.__class__ is _Flow:
                held.shared = True
                on_edge[e] = {held: None, flow: None}
            else:
                held[flow] = None

    def _detach(self, flow: _Flow) -> bool:
        """Remove ``flow`` from the index and succeed its event; True when it shared an edge."""
        flow.stamp = -1
        group = flow.group
        group.pending -= len(flow.members) if flow.members is not None else 1
        if not group.pending:
            group.done.succeed()
        on_edge = self._on_edge
        if not flow.shared:
            for e in flow.edges:
                del on_edge[e]
            return False
        shared = False
        for e in flow.edges:
            held = on_edge[e]
            if held is flow:
                del on_edge[e]
                continue
            del held[flow]
            if held:
                shared = True
            else:
                del on_edge[e]
        return shared

    def _schedule(self, flow: _Flow) -> None:
        """Push the finish time of ``flow`` at its current rate (invalidates older entries)."""
        flow.stamp = stamp = next(self._stamps)
        if flow.rate > 0:
            heapq.heappush(self._heap, (flow.since + flow.left / flow.rate, stamp, flow))

    def _arm(self) -> None:
        """Make sure a wake-up is scheduled no later than the earliest live finish time."""
        heap = self._heap
        while heap and heap[0][2].stamp != heap[0][1]:
            heapq.heappop(heap)
        if heap and heap[0][0] < self._wake_at:
            self._wake_at = heap[0][0]
            self._wake = self.env.timeout(max(self._wake_at - self.env.now, 0.0))
            self._wake.callbacks.append(self._on_wake)

    def _on_wake(self, event: simpy.Event) -> None:
        """Finish every flow due now; re-solve the components they leave."""
        if event is not self._wake:
            return                                  # superseded by an earlier wake-up
        self._wake, self._wake_at = None, math.inf
        now, heap, dirty = self.env.now, self._heap, self._dirty
        while heap:
            due, stamp, flow = heap[0]
            if flow.stamp == stamp and due > now and \
                    flow.left - flow.rate * (now - flow.since) > _DONE * flow.size:
                break
            heapq.heappop(heap)
            if flow.stamp == stamp and self._detach(flow):
                dirty.update(dict.fromkeys(flow.edges))
        if dirty:
            self._flush()
        self._arm()

    def _on_flush(self, _event: simpy.Event) -> None:
        self._flush_pending = False
        if self._dirty:
            self._flush()
            self._arm()

    def _flush(self) -> None:
        """Re-solve the components of the dirty edges; reschedule flows whose rate changed."""
        flows = self._component(self._dirty)
        self._dirty = {}
        now = self.env.now
        for flow in flows:
            flow.settle(now)
        live = [f for f in flows if f.left > _DONE * f.size]
        for flow in flows:
            if flow.left <= _DONE * flow.size:
                self._detach(flow)                  # its component is re-solved below anyway
        for flow, rate in zip(live, self._rates(live), strict=True):
            if rate != flow.rate:
                flow.rate = rate
                self._schedule(flow)

    def _component(self, seeds) -> list[_Flow]:
        """Every flow connected to the edges ``seeds`` through shared edges (BFS)."""
        on_edge = self._on_edge
        seen_edges = dict.fromkeys(seeds)
        queue = list(seen_edges)
        found: dict[_Flow, None] = {}
        while queue:
            held = on_edge.get(queue.pop(), ())
            for flow in (held,) if held.__class__ is _Flow else held:
                if flow not in found:
                    found[flow] = None
                    for e in flow.edges:
                        if e not in seen_edges:
                            seen_edges[e] = None
                            queue.append(e)
        return list(found)

    def _rates(self, flows: list[_Flow]) -> list[float]:
        """Max-min fair rates of ``flows`` (a union of whole components).

        The allocation depends only on the multiset of paths, and flows on the same path get
        the same rate, so solutions are memoised by the paths' identities: a collective
        replayed round after round re-solves nothing (routes are shared objects).
        """
        if len(flows) == 1:
            return [min(self._cap[e] for e in flows[0].edges)]
        if not flows:
            return []
        key = tuple(sorted(id(f.edges) for f in flows))
        known = self._solved.get(key)
        if known is None:
            rates = self._solve(flows)
            if len(self._solved) >= _MEMO_LIMIT:
                self._solved.clear()
            known = self._solved[key] = {id(f.edges): r for f, r in zip(flows, rates, strict=True)}
        return [known[id(f.edges)] for f in flows]

    def _solve(self, flows: list[_Flow]) -> list[float]:
        lengths = [len(f.edges) for f in flows]
        flat = np.fromiter(itertools.chain.from_iterable(f.edges for f in flows), dtype=np.int64,
                           count=sum(lengths))
        edges, local = np.unique(flat, return_inverse=True)
        owner = np.repeat(np.arange(len(flows)), lengths)
        return _progressive_filling(local, owner, self.capacity[edges], len(flows)).tolist()
