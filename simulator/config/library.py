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
from simulator.config.yaml_io import did_you_mean, read_yaml_mapping, validate_model
from simulator.errors import ConfigError

CATEGORIES = {"gpus": GpuSpec, "links": LinkSpec, "nodes": NodeSpec, "protocols": ProtocolTable}
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
    """Parse one spec file; cached per (path, modification time), specs are immutable."""
    data = read_yaml_mapping(path)
    spec = validate_model(CATEGORIES[category], data, str(path))
    if spec.name != path.stem:
        raise ConfigError(f"name '{spec.name}' differs from the file name", str(path), "name")
    return spec
