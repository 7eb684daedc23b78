"""The built clusters, cost models and shared prices of a search's scenario points, kept for
the search's next chunks and, when its owner passes it again, for the next search.

A cache is an object its owner holds (:func:`simulator.sweep.search.search` makes one per
search unless given one; each Dask worker keeps one on itself), never module state: what
is kept depends only on the scenario point and the hardware library, so a kept value is
the value a new build would give (same scenario, same result).
"""

from __future__ import annotations

from typing import Any

from simulator.config.library import HardwareLibrary
from simulator.config.scenario import Scenario
from simulator.pipeline import session_from_scenario

KEPT = 4
"""Scenario points kept at once (the oldest is dropped first)."""


class SessionCache:
    """At most ``kept`` scenario points' (session, memo of shared prices)."""

    def __init__(self, kept: int = KEPT):
        self.kept = kept
        self._points: dict[tuple[str, str], tuple[Any, dict]] = {}

    def get(self, scenario: Scenario, library: HardwareLibrary) -> tuple[Any, dict]:
        """(session, memo) of ``scenario`` on ``library``: built on first use, kept after."""
        key = (scenario.model_dump_json(), repr(library))
        if key not in self._points:
            while len(self._points) >= self.kept:
                self._points.pop(next(iter(self._points)))
            self._points[key] = (session_from_scenario(scenario, library), {})
        return self._points[key]

    def __len__(self) -> int:
        return len(self._points)
