"""Scenario mappings in tests: a base mapping with some sections' keys changed, and one run of
a mapping through a scenario file (the path users take)."""

from __future__ import annotations

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
