"""The scenario reference cannot drift from the schema."""

from __future__ import annotations

from pathlib import Path

from simulator.config.reference import leaves, render
from simulator.config.reference_text import MEANINGS

DOC = Path(__file__).resolve().parents[1] / "docs" / "scenario_format.md"


def test_every_schema_key_has_a_meaning_and_no_meaning_is_stale():
    keys = [key for key, _ in leaves()]
    assert sorted(keys) == sorted(MEANINGS), set(keys) ^ set(MEANINGS)


def test_the_doc_is_the_generated_reference():
    """Regenerate with `python -m simulator.config.reference > docs/scenario_format.md`."""
    assert DOC.read_text() == render()
