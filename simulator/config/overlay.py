"""Calibration overlays: fitted constants applied on top of the hardware library.

An overlay (the file ``clustersim calibrate -o`` writes) is one YAML mapping::

    gpus:
      a100-sxm-80gb:
        compute: {gemm_peak_fraction: 0.747}
      h100-sxm-96gb-500w:
        sustained_clock_fraction: 0.83
    links:
      ib-ndr: {efficiency: 0.9, latency_us: 3.1}
    protocols:
      nccl: {hop_latency_us: {net: {ring: {Simple: 12.0}}}}
    stacks:
      torchtitan: {step_overhead_ms: 20}
    sources: {...}          # free-form provenance of the fit (inputs, errors); not applied

Each section maps a spec name of ``hardware_specs/<section>/`` to a partial spec that is
merged over the file, nested mappings key by key (:func:`~simulator.config.stack.merged_profile`;
lists and scalars are replaced). A GPU file that derives from another (``base: NAME``)
inherits what the overlay sets on its base, then its own file, then its own overlay entry.
Every merged spec is validated by the same pydantic model as the library's files, so an
unknown field or an out-of-range value is a :class:`~simulator.errors.ConfigError` naming the
overlay file and the key (``gpus.a100-sxm-80gb.compute.gemm_peak_fraction``). Each overlaid
key is recorded in the spec's ``sources`` (``calibrated: FILE``), so ``clustersim specs``
shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config.library import CATEGORIES, HardwareLibrary
from simulator.config.stack import merged_profile
from simulator.config.yaml_io import did_you_mean, read_yaml_mapping, short_value, validate_model
from simulator.errors import ConfigError

SECTIONS = ("gpus", "links", "protocols", "stacks")
"""Library categories an overlay may change (nodes hold structure, not constants)."""
_FIXED_KEYS = ("name", "base", "derived_from", "sources")


@dataclass(frozen=True, eq=False)
class Overlay:
    """A validated-in-shape overlay: ``sections[category][name]`` partial spec mappings.

    Attributes
    ----------
    source : str
        The file it came from (``<fit>`` for one built in memory); errors name it.
    sections : dict
        ``{category: {spec name: partial mapping}}`` for the categories of :data:`SECTIONS`.
    provenance : dict
        The ``sources`` block, kept for the record and never applied.
    """

    source: str
    sections: dict[str, dict[str, dict[str, Any]]]
    provenance: dict[str, Any]

    @classmethod
    def read(cls, path: Path | str) -> Overlay:
        """Parse the overlay file at ``path`` (see the module docstring)."""
        return cls.from_mapping(read_yaml_mapping(path), str(path))

    @classmethod
    def from_mapping(cls, data: dict[str, Any], source: str = "<fit>") -> Overlay:
        """Check the shape of ``data`` (sections of name -> mapping); values are checked
        against the spec models when a :class:`CalibratedLibrary` applies them."""
        sections: dict[str, dict[str, dict[str, Any]]] = {}
        for key, value in data.items():
            if key == "sources":
                if not isinstance(value, dict):
                    raise ConfigError(f"expected a mapping, got {short_value(value)}", source, key)
                continue
            if key not in SECTIONS:
                hint = did_you_mean(str(key), [*SECTIONS, "sources"])
                raise ConfigError(f"unknown key{hint}; allowed keys: {', '.join([*SECTIONS, 'sources'])}",
                                  source, str(key))
            sections[key] = _section(value, source, key)
        return cls(source, sections, dict(data.get("sources") or {}))

    @property
    def fingerprint(self) -> str:
        """Canonical text of the applied sections (equal overlays, equal fingerprints)."""
        return json.dumps(self.sections, sort_keys=True, default=str)

    def names(self, category: str) -> list[str]:
        """Spec names of ``category`` that the overlay changes."""
        return sorted(self.sections.get(category, {}))


def _section(value: Any, source: str, key: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ConfigError(f"expected a mapping of spec names, got {short_value(value)}", source, key)
    for name, entry in value.items():
        where = f"{key}.{name}"
        if not isinstance(entry, dict):
            raise ConfigError(f"expected a mapping of fields, got {short_value(entry)}", source, where)
        for fixed in _FIXED_KEYS:
            if fixed in entry:
                raise ConfigError("an overlay changes values only; it cannot set this key",
                                  source, f"{where}.{fixed}")
    return value


class CalibratedLibrary(HardwareLibrary):
    """A :class:`HardwareLibrary` whose specs have ``overlay`` merged in.

    It has the methods of the library it wraps (``gpu``, ``link``, ``node``, ``protocols``,
    ``stack``, ``stack_data``, ``names``, ``path``, ``load_any``, ``find``, ``root``); specs
    the overlay does not touch are the base library's own objects. Overlays stack: ``base``
    may itself be a :class:`CalibratedLibrary`. Every overlaid spec is validated on
    construction.

    Raises
    ------
    ConfigError
        For an unknown spec name, an unknown field or an out-of-range value, naming the
        overlay file and key.
    """

    base: HardwareLibrary
    overlay: Overlay

    def __init__(self, base: HardwareLibrary, overlay: Overlay):
        object.__setattr__(self, "root", base.root)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "overlay", overlay)
        object.__setattr__(self, "_specs", {})
        for category, entries in overlay.sections.items():
            for name in entries:
                known = base.names(category)
                if name not in known:
                    raise ConfigError(f"unknown {category.rstrip('s')} '{name}'{did_you_mean(name, known)}; "
                                      f"known: {', '.join(known)}", overlay.source, f"{category}.{name}")
                self._load(category, name)

    def __repr__(self) -> str:
        return f"CalibratedLibrary(base={self.base!r}, overlay={self.overlay.source!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CalibratedLibrary) and other.base == self.base
                and other.overlay.fingerprint == self.overlay.fingerprint)

    def __hash__(self) -> int:
        return hash((self.base, self.overlay.fingerprint))

    @property
    def sources(self) -> list[str]:
        """Overlay files in force, the base's first."""
        below = self.base.sources if isinstance(self.base, CalibratedLibrary) else []
        return [*below, self.overlay.source]

    def stack_data(self, name: str) -> dict:
        """The merged mapping of stack ``name`` (see :meth:`HardwareLibrary.stack_data`)."""
        self.stack(name)
        return self._data("stacks", name)

    def _load(self, category: str, name: str):
        spec = self.base._load(category, name)  # known name and valid file, or the usual error
        entries = self.overlay.sections.get(category, {})
        derived_from = getattr(spec, "derived_from", "") if category == "gpus" else ""
        if name not in entries and derived_from not in entries:
            return spec  # as the base library (and any overlay below this one) gives it
        key = (category, name)
        if key not in self._specs:
            data = self._data(category, name)
            self._specs[key] = validate_model(CATEGORIES[category], data, self.overlay.source,
                                              f"{category}.{name}.")
        return self._specs[key]

    def _layer(self, category: str, name: str) -> dict[str, Any]:
        """The file of spec ``name`` with every overlay's entry merged over it (no derivation)."""
        if isinstance(self.base, CalibratedLibrary):
            below = self.base._layer(category, name)
        else:
            below = read_yaml_mapping(self.base.path(category, name))
        entry = self.overlay.sections.get(category, {}).get(name, {})
        if not entry:
            return below
        merged = merged_profile(below, entry)
        notes = {path: f"calibrated: {self.overlay.source}" for path in _leaf_paths(entry)}
        return {**merged, "sources": {**(below.get("sources") or {}), **notes}}

    def _data(self, category: str, name: str) -> dict[str, Any]:
        """:meth:`_layer`, with a derived GPU merged over its (overlaid) base GPU."""
        data = self._layer(category, name)
        if category != "gpus" or "base" not in data:
            return data
        parent = data["base"]
        overrides = {k: v for k, v in data.items() if k != "base"}
        return {**merged_profile(self._layer("gpus", parent), overrides), "derived_from": parent}


def _leaf_paths(mapping: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the non-mapping values of ``mapping``."""
    paths = []
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            paths += _leaf_paths(value, f"{prefix}{key}.")
        else:
            paths.append(f"{prefix}{key}")
    return paths


def calibrated_library(path: Path | str | None, base: HardwareLibrary | None = None
                       ) -> HardwareLibrary:
    """``base`` (default: the hardware library) with the overlay file at ``path`` applied;
    ``base`` itself when ``path`` is None."""
    base = base or HardwareLibrary()
    if path is None:
        return base
    return CalibratedLibrary(base, Overlay.read(path))


def overlay_sources(library: HardwareLibrary) -> str:
    """The overlay files in force in ``library``, comma-separated ("" for a plain library)."""
    return ", ".join(library.sources) if isinstance(library, CalibratedLibrary) else ""
