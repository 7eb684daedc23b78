"""The hardware library: find, list and load the YAML files in ``hardware_specs/``.

Lookup order for the library folder: the ``hardware_dir`` argument, the
``CLUSTERSIM_HARDWARE_SPECS`` environment variable, the copy packaged inside an
installed wheel, then ``hardware_specs/`` of a source checkout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from simulator.config.hardware import GpuSpec, LinkSpec, NodeSpec, ProtocolTable
from simulator.config.stack import StackProfile, merged_profile
from simulator.config.yaml_io import did_you_mean, read_yaml_mapping, validate_model
from simulator.errors import ConfigError

CATEGORIES = {"gpus": GpuSpec, "links": LinkSpec, "nodes": NodeSpec, "protocols": ProtocolTable,
              "stacks": StackProfile}
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def default_hardware_dir() -> Path:
    """The hardware_specs folder to use when none is given (see module docstring)."""
    env = os.environ.get("CLUSTERSIM_HARDWARE_SPECS")
    if env:
        return Path(env)
    packaged = _PACKAGE_DIR / "_data" / "hardware_specs"
    if packaged.is_dir():
        return packaged
    return _PACKAGE_DIR.parent / "hardware_specs"


@dataclass(frozen=True)
class HardwareLibrary:
    """Typed access to one hardware_specs folder; files are parsed on first use."""

    root: Path = field(default_factory=default_hardware_dir)

    def names(self, category: str) -> list[str]:
        """Sorted spec names (file stems) in ``category`` (gpus, links, nodes, protocols)."""
        folder = self.root / category
        return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []

    def path(self, category: str, name: str) -> Path:
        return self.root / category / f"{name}.yaml"

    def gpu(self, name: str) -> GpuSpec:
        return self._load("gpus", name)

    def link(self, name: str) -> LinkSpec:
        return self._load("links", name)

    def node(self, name: str) -> NodeSpec:
        return self._load("nodes", name)

    def protocols(self, name: str = "nccl") -> ProtocolTable:
        return self._load("protocols", name)

    def stack(self, name: str) -> StackProfile:
        return self._load("stacks", name)

    def stack_data(self, name: str) -> dict:
        """The raw mapping of stack ``name`` (validated once), for merging overrides into."""
        self.stack(name)
        return read_yaml_mapping(self.path("stacks", name))

    def load_any(self, category: str, name: str):
        """Load spec ``name`` of ``category`` (for ``clustersim specs NAME``)."""
        return self._load(category, name)

    def find(self, name: str) -> list[str]:
        """Categories that hold a spec called ``name``."""
        return [c for c in CATEGORIES if name in self.names(c)]

    def _load(self, category: str, name: str):
        if not isinstance(name, str) or name not in self.names(category):
            singular = category.rstrip("s")
            hint = did_you_mean(name, self.names(category))
            raise ConfigError(
                f"unknown {singular} '{name}'{hint}; known: {', '.join(self.names(category))}"
            )
        path = self.path(category, name)
        return _load_spec(path, path.stat().st_mtime_ns, category)


@lru_cache(maxsize=256)
def _load_spec(path: Path, mtime_ns: int, category: str):
    """Parse one spec file; cached per (path, modification time), specs are immutable.

    A GPU file may derive from another with ``base: NAME`` and give only what differs
    (a power-capped or memory variant); nested mappings, ``sources`` included, merge.
    """
    data = read_yaml_mapping(path)
    if category == "gpus" and "base" in data:
        data = _derived(data, path)
    spec = validate_model(CATEGORIES[category], data, str(path))
    if spec.name != path.stem:
        raise ConfigError(f"name '{spec.name}' differs from the file name", str(path), "name")
    return spec


def _derived(data: dict, path: Path) -> dict:
    """``data`` merged over the GPU it names in ``base`` (one level of derivation)."""
    base = data["base"]
    siblings = sorted(p.stem for p in path.parent.glob("*.yaml"))
    if not isinstance(base, str) or base not in siblings or base == path.stem:
        raise ConfigError(f"base must name another GPU file of this folder; known: {', '.join(siblings)}",
                          str(path), "base")
    parent = read_yaml_mapping(path.parent / f"{base}.yaml")
    if "base" in parent:
        raise ConfigError(f"base GPU '{base}' is itself derived; derive from a datasheet GPU",
                          str(path), "base")
    overrides = {k: v for k, v in data.items() if k != "base"}
    return {**merged_profile(parent, overrides), "derived_from": base}
