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
from simulator.config.stack import DEFAULT_STACK, StackProfile, merged_profile, stated_bucket
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
    data = _with_stack(_with_preset(data, source), source, library)
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


def _with_stack(data: dict[str, Any], source: str, library: HardwareLibrary) -> dict[str, Any]:
    """``training.stack`` (a name, or a mapping ``{base: NAME, ...overrides}``) replaced by the
    full profile mapping, overrides merged in (see :mod:`simulator.config.stack`)."""
    training = data.get("training")
    if not isinstance(training, dict):
        return data
    wanted = training.get("stack", DEFAULT_STACK)
    overrides: dict[str, Any] = {}
    if isinstance(wanted, StackProfile):
        return data
    if isinstance(wanted, dict) and "name" in wanted and "base" not in wanted:
        profile = validate_model(StackProfile, wanted, source, "training.stack.")  # a whole profile
        return {**data, "training": {**training, "stack": profile}}
    if isinstance(wanted, dict):
        overrides = {k: v for k, v in wanted.items() if k != "base"}
        wanted = wanted.get("base", DEFAULT_STACK)
        if "name" in overrides:
            raise ConfigError("a stack mapping names its profile with 'base', not 'name'", source,
                              "training.stack.name")
    if not isinstance(wanted, str):
        raise ConfigError(f"expected a stack name or a mapping with 'base', got {short_value(wanted)}",
                          source, "training.stack")
    key = "training.stack.base" if overrides else "training.stack"
    try:
        base = library.stack_data(wanted)
    except ConfigError as exc:
        raise ConfigError(exc.message, exc.source or source, exc.key or key) from None
    merged = merged_profile(base, stated_bucket(overrides))
    profile = validate_model(StackProfile, merged, source, "training.stack.")
    return {**data, "training": {**training, "stack": profile}}


def _with_preset(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``model.preset`` expanded: the preset's keys, then the scenario's over them; a section
    both give (``mla``, ``mamba``) merges key by key, so ``mla: {kv_lora_rank: 256}`` changes
    that one field of the preset's latent attention."""
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
    preset = dict(MODEL_PRESETS[name])
    if "mla" in model:                      # latent attention sets its own head widths and heads
        preset.pop("head_dim", None)
        preset.pop("kv_heads", None)
    merged = {key: {**preset[key], **value} if isinstance(value, dict) and isinstance(preset.get(key), dict)
              else value for key, value in model.items()}
    return {**data, "model": {**preset, **merged}}


def scenario_stack(scenario: Scenario, library: HardwareLibrary | None = None) -> StackProfile:
    """The resolved stack profile of ``scenario`` (loaded by name if the scenario was built in
    code rather than by :func:`load_scenario`)."""
    stack = scenario.training.stack if scenario.training is not None else DEFAULT_STACK
    if isinstance(stack, StackProfile):
        return stack
    return (library or HardwareLibrary()).stack(stack)
