"""Streaming reader of Chrome trace JSON as the PyTorch profiler (Kineto) writes it.

Kineto's ``ChromeTraceLogger`` (pytorch/kineto, libkineto/src/output_json.cpp) writes one
JSON object: ``schemaVersion``, ``deviceProperties`` (one entry per GPU: name,
totalGlobalMem, numSms, ...), the metadata PyTorch adds (``distributedInfo``: backend, rank,
world_size, nccl_version, process groups), then ``traceEvents``, a list of Chrome trace
events (``ph``, ``cat``, ``name``, ``pid``, ``tid``, ``ts`` and ``dur`` in microseconds,
``args``), then ``traceName`` and ``baseTimeNanoseconds``. Traces of hundreds of MB are
common, so nothing here holds the whole file: :func:`read_header` parses the top-level keys
up to ``traceEvents`` and stops, :func:`iter_events` yields one event at a time (ijson).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ijson

from simulator.errors import ConfigError
from simulator.measure.files import READ_ERRORS, open_measured
from simulator.measure.json_depth import DepthGuard

EXPECTED = "a PyTorch profiler (Kineto) trace: Chrome trace JSON with 'traceEvents'"
HEADER_KEYS = frozenset({"schemaVersion", "deviceProperties", "distributedInfo",
                         "displayTimeUnit", "traceName", "record_shapes"})


def read_header(path: Path | str) -> dict[str, Any]:
    """The top-level keys of ``HEADER_KEYS`` found before ``traceEvents``.

    Raises
    ------
    ConfigError
        The file is not a JSON object, has no ``traceEvents`` key, or is cut off.
    """
    source = str(path)
    with open_measured(path, EXPECTED) as stream, _json_errors(source):
        events = ijson.parse(DepthGuard(stream, source, EXPECTED), use_float=True)
        first = next(events, None)
        if first is None or first[1] != "start_map":
            kind = {"start_array": "a JSON array"}.get(first[1] if first else "", "not an object")
            raise ConfigError(f"top level is {kind}; expected {EXPECTED}", source)
        return _header_fields(events, source)


def _header_fields(events: Iterator[tuple[str, str, Any]], source: str) -> dict[str, Any]:
    header: dict[str, Any] = {}
    key, builder = None, None
    for prefix, event, value in events:
        if prefix == "" and event in ("map_key", "end_map"):
            if builder is not None:
                header[key] = builder.value
            if event == "map_key" and value == "traceEvents":
                return header
            key, builder = value, (ijson.ObjectBuilder() if value in HEADER_KEYS else None)
        elif builder is not None:
            builder.event(event, value)
    raise ConfigError(f"no 'traceEvents' list found; expected {EXPECTED}", source)


def iter_events(path: Path | str) -> Iterator[dict[str, Any]]:
    """Yield the events of ``traceEvents`` one by one (numbers as int/float).

    Raises
    ------
    ConfigError
        An event is not a JSON object, or the JSON is invalid or truncated.
    """
    source = str(path)
    with open_measured(path, EXPECTED) as stream, _json_errors(source):
        for event in ijson.items(DepthGuard(stream, source, EXPECTED), "traceEvents.item", use_float=True):
            if not isinstance(event, dict):
                raise ConfigError(f"'traceEvents' holds a {type(event).__name__}, not event "
                                  f"objects; expected {EXPECTED}", source, "traceEvents")
            yield event


@contextmanager
def _json_errors(source: str) -> Iterator[None]:
    """Turn parser, gzip and decoding errors into one-line ConfigErrors naming ``source``."""
    try:
        yield
    except ijson.JSONError as exc:
        text = str(exc).strip()
        reason = text.splitlines()[0][:120] if text else "cut off"
        raise ConfigError(f"invalid or truncated JSON ({reason}); expected {EXPECTED}",
                          source) from None
    except READ_ERRORS as exc:
        raise ConfigError(f"damaged or truncated gzip data ({exc}); expected {EXPECTED}",
                          source) from None
    except UnicodeDecodeError:
        raise ConfigError(f"not UTF-8 text; expected {EXPECTED}", source) from None
