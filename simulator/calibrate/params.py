"""The constants a calibration frees: names, starting values, bounds, and the overlay they make.

A constant is named ``KIND:SPEC.FIELD[.FIELD...]`` with KIND one of ``gpu``, ``link``,
``protocol``, ``stack`` (:data:`KINDS`), SPEC a file stem of ``hardware_specs/`` and the field
path as in the YAML file; a final integer indexes a list (``attention_kernels.fa2.0`` is the
forward fraction of FlashAttention-2). Examples::

    gpu:a100-sxm-80gb.compute.gemm_peak_fraction
    gpu:h100-sxm-96gb-500w.sustained_clock_fraction
    link:ib-ndr.efficiency          link:ib-ndr.latency_us
    protocol:nccl.hop_latency_us.net.ring.Simple
    stack:torchtitan.step_overhead_ms

Bounds come from the field's schema constraint (``Fraction``: (0, 1]; ``NonNegativeFloat``:
[0, inf)); an open bound is moved inside by 1e-6 (in the field's unit) so that the fitted
value validates. ``NAME=LO:HI`` narrows them. The starting value is the library's; a
fraction the library leaves unset starts from the value the model uses in its place
(``attention_*_fraction`` and ``fp8_gemm_peak_fraction``: the GPU's effective fraction;
``sustained_clock_fraction``: 1).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from simulator.config.library import CATEGORIES, HardwareLibrary
from simulator.config.yaml_io import did_you_mean
from simulator.errors import UsageError

KINDS = {"gpu": "gpus", "link": "links", "protocol": "protocols", "stack": "stacks"}
"""Name prefix -> library category."""
_OPEN_MARGIN = 1e-6


@dataclass(frozen=True)
class Parameter:
    """One free constant: where it lives, its library value and its bounds (field units)."""

    name: str
    category: str
    spec: str
    path: tuple[str | int, ...]
    initial: float
    lower: float
    upper: float

    given_bounds: bool = False

    @property
    def scale(self) -> float:
        """Typical size, for step lengths and relative sensitivities: |start|; for a constant
        that starts at 0, the width of the bounds given with ``=LO:HI``, else 1 (field unit)."""
        return abs(self.start) or (self.upper - self.lower if self.given_bounds else 1.0)

    @property
    def start(self) -> float:
        """The initial value moved inside the bounds."""
        return min(max(self.initial, self.lower), self.upper)


def parse_parameters(texts: Iterable[str], library: HardwareLibrary) -> list[Parameter]:
    """:func:`parse_parameter` of each text; a name given twice is a :class:`UsageError`."""
    params = [parse_parameter(text, library) for text in texts]
    names = [p.name for p in params]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"--fit {name} is given twice")
    return params


def parse_parameter(text: str, library: HardwareLibrary) -> Parameter:
    """The constant ``text`` names (``KIND:SPEC.FIELD...[=LO:HI]``, see the module docstring).

    Raises
    ------
    UsageError
        For an unknown kind, spec or field, a field that is not a number, or bounds outside
        the schema's.
    """
    name, _, bounds_text = text.strip().partition("=")
    kind, _, rest = name.partition(":")
    if kind not in KINDS:
        raise UsageError(f"--fit {text}: expected KIND:SPEC.FIELD with KIND one of "
                         f"{', '.join(KINDS)}{did_you_mean(kind, KINDS)}")
    category = KINDS[kind]
    spec_name, _, field = rest.partition(".")
    if spec_name not in library.names(category):
        raise UsageError(f"--fit {text}: no {kind} '{spec_name}'"
                         f"{did_you_mean(spec_name, library.names(category))}; "
                         f"known: {', '.join(library.names(category))}")
    if not field:
        raise UsageError(f"--fit {text}: name a field after the spec, e.g. {kind}:{spec_name}.FIELD")
    path = tuple(int(p) if p.isdigit() else p for p in field.split("."))
    spec = library.load_any(category, spec_name)
    initial = _value(spec, path, text)
    lower, upper = _bounds(CATEGORIES[category], path, text)
    if bounds_text:
        lower, upper = _narrowed(bounds_text, lower, upper, text)
    return Parameter(name, category, spec_name, path, initial, lower, upper, bool(bounds_text))


def _value(spec: BaseModel, path: tuple, text: str) -> float:
    node: Any = spec.model_dump(mode="json")
    for depth, key in enumerate(path):
        keys = (list(node) if isinstance(node, dict) else
                list(range(len(node))) if isinstance(node, list) else [])
        if key not in keys:
            where = ".".join(str(p) for p in path[:depth]) or "the spec"
            raise UsageError(f"--fit {text}: no field '{key}' in {where}"
                             f"{did_you_mean(str(key), [str(k) for k in keys])}; "
                             f"fields: {', '.join(str(k) for k in keys) or 'none'}")
        node = node[key]
        if node is None and depth < len(path) - 1:
            break
    if node is None:
        node = _unset_value(spec, path)
    if node is None:
        raise UsageError(f"--fit {text}: the library leaves this field unset and the model has no "
                         "value to start from; set it in the spec file first")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise UsageError(f"--fit {text}: the field is not a number ({type(node).__name__}); "
                         "name a numeric field")
    return float(node)


def _unset_value(spec: BaseModel, path: tuple) -> float | None:
    """What the model uses for an optional field the library leaves unset (None if nothing)."""
    last = path[-1]
    if path == ("sustained_clock_fraction",):
        return 1.0
    if path[:1] == ("compute",) and last == "fp8_gemm_peak_fraction":
        return spec.compute.fp8_fraction
    if path[:1] == ("compute",) and last in ("attention_forward_fraction", "attention_backward_fraction"):
        return spec.compute.attention_fraction(last == "attention_backward_fraction")
    return None


def _bounds(model: type[BaseModel], path: tuple, text: str) -> tuple[float, float]:
    """Finite-or-infinite [lower, upper] from the field's schema constraints.

    Raises
    ------
    UsageError
        For an integer field (tile sizes, counts): a fit moves constants continuously.
    """
    annotation: Any = model
    metadata: list = []
    for key in path:
        annotation, metadata = _child(annotation, key, text)
    if float not in _members(annotation):
        raise UsageError(f"--fit {text}: an integer field cannot be fitted; free a fraction, "
                         "efficiency, latency or overhead")
    lower, upper, lower_open, upper_open = -math.inf, math.inf, False, False
    for item in _constraints(annotation, metadata):
        if isinstance(item, annotated_types.Gt):
            lower, lower_open = float(item.gt), True
        elif isinstance(item, annotated_types.Ge):
            lower = float(item.ge)
        elif isinstance(item, annotated_types.Lt):
            upper, upper_open = float(item.lt), True
        elif isinstance(item, annotated_types.Le):
            upper = float(item.le)
    return (lower + _OPEN_MARGIN if lower_open else lower,
            upper - _OPEN_MARGIN if upper_open else upper)


def _child(annotation: Any, key: str | int, text: str) -> tuple[Any, list]:
    """The annotation (and field metadata) of ``key`` inside ``annotation``."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            if key in member.model_fields:
                info = member.model_fields[key]
                return info.annotation, list(info.metadata)
        elif get_origin(member) is dict:
            return get_args(member)[1], []
        elif get_origin(member) in (tuple, list) and isinstance(key, int):
            args = get_args(member)
            return (args[0] if get_origin(member) is list or args[-1] is Ellipsis else args[key]), []
    raise UsageError(f"--fit {text}: the schema has no field '{key}' there")


def _members(annotation: Any) -> list[Any]:
    """``annotation`` without Annotated wrappers, a union split into its members."""
    if get_origin(annotation) is Annotated:
        return _members(get_args(annotation)[0])
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _members(arg)]
    return [annotation]


def _constraints(annotation: Any, metadata: list) -> list:
    """Constraint objects in ``metadata`` and in any Annotated wrapper of ``annotation``."""
    found: list = []
    pending = list(metadata)
    stack = [annotation]
    while stack:
        current = stack.pop()
        if get_origin(current) is Annotated:
            pending += list(current.__metadata__)
            stack.append(get_args(current)[0])
        elif get_origin(current) in (typing.Union, types.UnionType):
            stack += list(get_args(current))
    for item in pending:
        found += list(item.metadata) if isinstance(item, FieldInfo) else [item]
    return found


def _narrowed(text: str, lower: float, upper: float, name: str) -> tuple[float, float]:
    low_text, sep, high_text = text.partition(":")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise UsageError(f"--fit {name}: bounds must read LO:HI, e.g. 0.5:0.9") from None
    if not sep or not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise UsageError(f"--fit {name}: bounds must read LO:HI with LO < HI, both finite")
    if low < lower or high > upper:
        raise UsageError(f"--fit {name}: bounds must lie inside the schema's [{lower:g}, {upper:g}]")
    return low, high


def overlay_mapping(params: Sequence[Parameter], values: Sequence[float],
                    library: HardwareLibrary) -> dict[str, Any]:
    """The overlay (``{category: {spec: partial mapping}}``) that sets each parameter to its
    value; a list field is written whole, its other entries as ``library`` has them."""
    out: dict[str, Any] = {}
    for param, value in zip(params, values, strict=True):
        entry = out.setdefault(param.category, {}).setdefault(param.spec, {})
        current = library.load_any(param.category, param.spec).model_dump(mode="json")
        _assign(entry, param.path, float(value), current)
    return out


def _assign(tree: dict, path: tuple, value: float, current: Any) -> None:
    key = path[0]
    below = current.get(key) if isinstance(current, dict) else None
    if len(path) == 1:
        tree[key] = value
    elif isinstance(path[1], int):
        values = tree.setdefault(key, list(below or []))
        values[path[1]] = value
    else:
        _assign(tree.setdefault(key, {}), path[1:], value, below)
