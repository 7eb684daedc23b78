"""A guard on the nesting depth of a JSON byte stream, checked as the parser reads it.

ijson names every parse event by its path from the root (``traceEvents.item.item...``), so a
document nested ``d`` levels deep costs ``O(d^2)`` bytes of prefixes: a 200 KB file of brackets
took gigabytes. A Kineto trace nests about five levels (``traceEvents``, an event, its
``args``, ``Input Dims``, one dimension list). :class:`DepthGuard` wraps the binary stream and
counts ``[`` and ``{`` against ``]`` and ``}`` chunk by chunk (numpy, no per-byte Python),
stopping at :data:`MAX_DEPTH`. Brackets inside strings count too, so the count can only
overstate the depth; a trace's names hold balanced brackets if any, far from the limit.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from simulator.errors import ConfigError

MAX_DEPTH = 1000
"""Nesting a measured JSON file may reach (about 200 times a Kineto trace's)."""
_STEP = np.zeros(256, dtype=np.int32)
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1      # per byte value: +1 opens, -1 closes


class DepthGuard:
    """``stream`` read through, raising :class:`ConfigError` (naming ``source``) once the
    brackets opened but not closed exceed :data:`MAX_DEPTH`."""

    def __init__(self, stream: BinaryIO, source: str, expected: str):
        self.stream, self.source, self.expected = stream, source, expected
        self.depth = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        if chunk:
            running = self.depth + np.cumsum(_STEP[np.frombuffer(chunk, dtype=np.uint8)], dtype=np.int64)
            if running.max(initial=self.depth) > MAX_DEPTH:
                raise ConfigError(f"JSON nested more than {MAX_DEPTH} levels deep; expected "
                                  f"{self.expected}", self.source)
            self.depth = int(running[-1])
        return chunk
