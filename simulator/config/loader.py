"""Load a scenario file: YAML -> preset merge -> pydantic -> cross-field checks.

``load_scenario`` is the one entry point; every user mistake comes out as a
:class:`ConfigError` naming the file, the key path and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulator.config.checks import check_scenario
from simulator.config.library import HardwareLibrary
from simulator.config.presets import MODEL_PRESETS
from simulator.config.resolved import ResolvedCluster, resolve_cluster
from simulator.config.scenario import Scenario
from simulator.config.yaml_io import (
    did_you_mean,
    parse_yaml_mapping,
    read_yaml_mapping,
    short_value,
    validate_model,
)
from simulator.errors import ConfigError


def load_scenario(path: Path | str, library: HardwareLibrary | None = None) -> Scenario:
    """Read, validate and check the scenario at ``path``.

    Raises
    ------
    ConfigError
        On any problem with the file; the message names the file and key.
    """
    return scenario_from_mapping(read_yaml_mapping(path), str(path), library)


def scenario_from_text(text: str | bytes, source: str = "<text>",
                       library: HardwareLibrary | None = None) -> Scenario:
    """Like :func:`load_scenario` for YAML given as text (notebooks, tests)."""
    return scenario_from_mapping(parse_yaml_mapping(text, source), source, library)


def scenario_from_mapping(data: dict[str, Any], source: str,
                          library: HardwareLibrary | None = None) -> Scenario:
    """Validate an already-parsed mapping as a scenario (see :func:`load_scenario`)."""
    library = library or HardwareLibrary()
    data = _with_preset(data, source)
    scenario = validate_model(Scenario, data, source)
    try:
        cluster = resolve_cluster(scenario.cluster, library)
        check_scenario(scenario, cluster)
    except ConfigError as exc:
        raise exc.with_source(source) from None
    return scenario


def load_cluster(path: Path | str, library: HardwareLibrary | None = None) -> ResolvedCluster:
    """The resolved hardware of the ``cluster`` section of ``path``."""
    library = library or HardwareLibrary()
    scenario = load_scenario(path, library)
    return resolve_cluster(scenario.cluster, library)


def _with_preset(data: dict[str, Any], source: str) -> dict[str, Any]:
    model = data.get("model")
    if not isinstance(model, dict) or model.get("preset") is None:
        return data
    name = model["preset"]
    if not isinstance(name, str) or name not in MODEL_PRESETS:
        hint = did_you_mean(name, MODEL_PRESETS)
        raise ConfigError(
            f"unknown preset {short_value(name)}{hint}; known: {', '.join(MODEL_PRESETS)}", source,
            "model.preset"
        )
    return {**data, "model": {**MODEL_PRESETS[name], **model}}
