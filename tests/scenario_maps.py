"""Scenario mappings in tests: a base mapping with some sections' keys changed, and one run of
a mapping through a scenario file (the path users take)."""

from __future__ import annotations

from typing import Any

import yaml

from simulator.pipeline import run_scenario


def merged(base: dict, **sections) -> dict:
    """``base`` with each named section's keys updated (a section given whole where ``base``'s is
    not a mapping)."""
    return {key: {**value, **sections.get(key, {})} if isinstance(value, dict) else value
            for key, value in base.items()}


def run_mapping(tmp_path, mapping: dict, engine: str | None = None):
    """``run_scenario`` of ``mapping`` written to a new file under ``tmp_path``."""
    path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return run_scenario(path, engine=engine)


def key_paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path (tuple of keys and list indices) in ``doc``, parents before children."""
    found = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        found.append((*prefix, key))
        found.extend(key_paths(value, (*prefix, key)))
    return found


def value_at(doc: Any, path: tuple) -> Any:
    """The value of ``doc`` at key path ``path`` (:func:`key_paths`)."""
    for key in path:
        doc = doc[key]
    return doc
